#include "sched/trigger/db_time.hpp"

#include <algorithm>

namespace sched::trigger {

using std::chrono::duration_cast;
using std::chrono::microseconds;

DbTime::DbTime(const Clock& clock, std::function<Result<std::int64_t>()> read_db_now_us, int window)
    : clock_(clock), read_(std::move(read_db_now_us)), window_(static_cast<std::size_t>(std::max(1, window))) {}

Status DbTime::Refresh() {
    const auto wall_before = clock_.System();
    const auto steady_before = clock_.Steady();
    auto db_now = read_();
    const auto steady_after = clock_.Steady();
    if (!db_now.ok()) return db_now.status();
    // The round trip is measured on the monotonic clock: a wall-clock step during the query
    // must not masquerade as a fast or slow sample.
    const auto rtt = duration_cast<microseconds>(steady_after - steady_before);
    const auto local_mid_us = duration_cast<microseconds>(wall_before.time_since_epoch()).count() + rtt.count() / 2;
    const Sample sample{microseconds(*db_now - local_mid_us), rtt};
    std::lock_guard lock(mu_);
    samples_.push_back(sample);
    while (samples_.size() > window_) samples_.pop_front();
    best_ = *std::min_element(samples_.begin(), samples_.end(),
                              [](const Sample& a, const Sample& b) { return a.rtt < b.rtt; });
    return Status::Ok();
}

std::int64_t DbTime::NowUs() const {
    const auto local = duration_cast<microseconds>(clock_.System().time_since_epoch()).count();
    std::lock_guard lock(mu_);
    return local + (best_ ? best_->offset.count() : 0);
}

std::int64_t DbTime::NowMs() const {
    return NowUs() / 1000;
}

microseconds DbTime::Offset() const {
    std::lock_guard lock(mu_);
    return best_ ? best_->offset : microseconds{0};
}

microseconds DbTime::RoundTrip() const {
    std::lock_guard lock(mu_);
    return best_ ? best_->rtt : microseconds{0};
}

bool DbTime::Synced() const {
    std::lock_guard lock(mu_);
    return best_.has_value();
}

}  // namespace sched::trigger
