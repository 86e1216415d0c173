#include "impl/last_success_writer.hpp"

#include <string>
#include <utility>

#include <spdlog/spdlog.h>

#include "sched/common/status.hpp"

namespace sched::web::impl {
namespace {

// Each job's latest success (its finish and fire) in `into`.
void KeepLatest(std::map<std::int64_t, store::JobSuccess>& into, const std::vector<store::JobSuccess>& successes) {
    for (const auto& j : successes) {
        auto [it, added] = into.emplace(j.job_id, j);
        if (!added && store::LaterSuccess(j, it->second)) it->second = j;
    }
}

std::vector<store::JobSuccess> Batch(const std::map<std::int64_t, store::JobSuccess>& latest) {
    std::vector<store::JobSuccess> out;
    out.reserve(latest.size());
    for (const auto& [job, success] : latest) out.push_back(success);
    return out;
}

}  // namespace

void LastSuccessWriter::Add(const std::vector<store::JobSuccess>& successes, const net::any_io_executor& ex) {
    if (successes.empty()) return;
    std::map<std::int64_t, store::JobSuccess> now_latest;
    bool start_turns = false;
    {
        std::lock_guard lock(mu_);
        const auto now = Clock::now();
        for (const auto& j : successes) {
            const auto written = written_at_.find(j.job_id);
            const bool recent = written != written_at_.end() && now - written->second < window_;
            KeepLatest(recent && !now_latest.contains(j.job_id) ? waiting_ : now_latest, {j});
            if (!recent) written_at_[j.job_id] = now;
        }
        // The turns run for a window after any write, so that a failed one is taken again.
        if (!turns_on_) start_turns = turns_on_ = true;
    }
    if (!now_latest.empty()) PostWrite(Batch(now_latest));
    if (!start_turns) return;
    auto self = shared_from_this();
    auto turns = [self]() -> net::awaitable<void> {
        co_await self->Turns();
    };
    net::co_spawn(ex, turns, net::detached);
}

std::size_t LastSuccessWriter::waiting() const {
    std::lock_guard lock(mu_);
    return waiting_.size();
}

net::awaitable<void> LastSuccessWriter::Turns() {
    // A turn a window after the previous one writes what waited. The statement goes to the
    // pool and nothing waits for it there: the pool task holds the writer, never this
    // coroutine, so an I/O context stopped or destroyed before the pool is joined (a process's
    // stop) leaves nothing to resume.
    net::steady_timer timer(co_await net::this_coro::executor);
    for (;;) {
        timer.expires_after(window_);
        boost::system::error_code ec;
        co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
        std::vector<store::JobSuccess> batch;
        {
            std::lock_guard lock(mu_);
            const auto now = Clock::now();
            std::erase_if(written_at_, [&](const auto& w) { return now - w.second >= window_; });
            if (waiting_.empty()) {
                if (written_at_.empty()) {
                    turns_on_ = false;
                    co_return;
                }
                continue;
            }
            batch = Batch(waiting_);
            waiting_.clear();
            for (const auto& j : batch) written_at_[j.job_id] = now;
        }
        PostWrite(std::move(batch));
    }
}

void LastSuccessWriter::PostWrite(std::vector<store::JobSuccess> batch) {
    net::post(db_pool_, [self = shared_from_this(), batch = std::move(batch)] { self->Write(batch); });
}

void LastSuccessWriter::Write(const std::vector<store::JobSuccess>& batch) {
    auto db = database_();
    const Status written = db ? db->Run([&](soci::session& s) { store::RecordLastSuccesses(s, batch); })
                              : Unavailable("the database is not open yet");
    if (written.ok()) return;
    // Kept for the next turn, a window later; a job that succeeded again meanwhile keeps the
    // later time.
    spdlog::warn("last successes of {} jobs not recorded, tried again in {} ms: {}", batch.size(),
                 std::chrono::duration_cast<std::chrono::milliseconds>(window_).count(), written.ToString());
    std::lock_guard lock(mu_);
    KeepLatest(waiting_, batch);
}

}  // namespace sched::web::impl
