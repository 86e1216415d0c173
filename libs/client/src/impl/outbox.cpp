#include "impl/outbox.hpp"

#include <algorithm>
#include <iterator>

namespace sched::client::impl {

Outbox::Outbox(std::size_t max_results, std::size_t max_bytes)
    : max_results_(std::max<std::size_t>(max_results, 1)), max_bytes_(max_bytes) {}

void Outbox::Push(CallbackResult result) {
    std::lock_guard lock(mu_);
    std::string url = result.callback_url;
    by_url_[std::move(url)].push_back(Entry{.seq = next_seq_++, .result = std::move(result)});
    ++size_;
}

std::vector<CallbackResult> Outbox::TakeBatch() {
    std::lock_guard lock(mu_);
    std::vector<CallbackResult> batch;
    if (by_url_.empty()) return batch;
    // One queue per trigger node: a handful, scanned. (One deque for all URLs, cut at the first
    // result of another URL, sent batches of 3-5 results with several nodes; walked past the other
    // URLs' results instead, it moved every waiting result at every batch: with 1,000 results
    // waiting and batches of 100, 5,000 moves under the lock the workers report through.)
    auto oldest = std::min_element(by_url_.begin(), by_url_.end(), [](const auto& a, const auto& b) {
        return a.second.front().seq < b.second.front().seq;
    });
    auto& queue = oldest->second;
    batch.reserve(std::min(queue.size(), max_results_));
    std::size_t bytes = 0;
    while (!queue.empty() && batch.size() < max_results_) {
        bytes += queue.front().result.WireBytes();
        // Logs make results large: a batch stays under the web module's body limit.
        if (!batch.empty() && bytes > max_bytes_) break;
        batch.push_back(std::move(queue.front().result));
        queue.pop_front();
    }
    size_ -= batch.size();
    if (queue.empty()) by_url_.erase(oldest);
    return batch;
}

void Outbox::Requeue(std::vector<CallbackResult> batch) {
    std::lock_guard lock(mu_);
    // Backwards, each to the front of its URL's queue: the batch keeps its order and goes first.
    for (std::size_t i = batch.size(); i-- > 0;) {
        std::string url = batch[i].callback_url;
        by_url_[std::move(url)].push_front(Entry{.seq = front_seq_--, .result = std::move(batch[i])});
    }
    size_ += batch.size();
}

std::vector<CallbackResult> Outbox::TakeAll() {
    std::lock_guard lock(mu_);
    std::vector<Entry> entries;
    entries.reserve(size_);
    for (auto& [url, queue] : by_url_) {
        entries.insert(entries.end(), std::make_move_iterator(queue.begin()), std::make_move_iterator(queue.end()));
    }
    by_url_.clear();
    size_ = 0;
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.seq < b.seq; });
    std::vector<CallbackResult> all;
    all.reserve(entries.size());
    for (auto& e : entries) all.push_back(std::move(e.result));
    return all;
}

std::size_t Outbox::size() const {
    std::lock_guard lock(mu_);
    return size_;
}

}  // namespace sched::client::impl
