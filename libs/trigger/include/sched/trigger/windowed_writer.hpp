#pragma once

/// Writes that can wait a little, gathered into one database call per window: the slave's
/// `running` records and its fire endings. The first item added after a flush schedules the
/// next one `window` later; a flush takes everything added by then and hands it to `write` on
/// the DB pool. A failed write is retried with backoff (pauses from `retry.first_pause`,
/// doubling up to `retry.max_pause`) until `retry.max_attempts` attempts or `retry.give_up_after`
/// since the flush began, whichever comes first (0 = no such limit); after Stop(), one attempt.
/// `write` takes the batch by reference and may remove what it wrote, so a retry redoes only
/// the rest. What is still unwritten when the writer gives up is passed to `gave_up`.
///
/// An item added with a `hold` is written by the first flush at least `hold` after its Add, and
/// until then can be taken back (Withdraw): the `running` record of a run whose end is known
/// first is never written. A flush takes only the items whose hold is over and schedules the
/// next one for the rest, when the earliest of them is due but at least `window` later; an item
/// added meanwhile waits for that flush (so give one writer's items similar holds). After
/// Stop() or Hurry() a flush takes every item and waits at most a window; Hurry() also starts
/// at once a flush waiting for its window or for a hold.
///
/// Thread-safe. A flush in progress keeps what it needs alive (shared state), so the writer may
/// be destroyed while the I/O context still holds a flush; Busy() lets an owner wait instead.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "sched/common/backoff.hpp"
#include "sched/common/duration.hpp"
#include "sched/common/net.hpp"
#include "sched/common/on_pool.hpp"
#include "sched/common/status.hpp"

namespace sched::trigger {

struct WriteRetry {
    Micros first_pause = std::chrono::milliseconds(100);
    Micros max_pause = std::chrono::seconds(2);
    int max_attempts = 0;     ///< 0: no limit
    Micros give_up_after{0};  ///< 0: no limit
};

template <typename T>
class WindowedWriter {
  public:
    /// Writes `batch` (blocking; on the DB pool), removing from it what it wrote.
    using Write = std::function<Status(std::vector<T>& batch)>;
    /// Told of a failed attempt: the error, what is left, and whether the writer gives up now.
    using Failed = std::function<void(const Status& error, const std::vector<T>& left, bool giving_up)>;

    WindowedWriter(net::any_io_executor io, net::thread_pool& db_pool, Micros window, WriteRetry retry, Write write,
                   Failed failed)
        : shared_(
              std::make_shared<Shared>(std::move(io), db_pool, window, retry, std::move(write), std::move(failed))) {}

    /// Queues `item` for the first flush at least `hold` from now.
    void Add(T item, Micros hold = Micros{0}) {
        const auto& s = shared_;
        bool spawn = false;
        {
            std::lock_guard lock(s->mu);
            s->items.push_back({std::chrono::steady_clock::now() + hold, std::move(item)});
            spawn = !std::exchange(s->scheduled, true);
            if (spawn) ++s->writing;
        }
        if (spawn) net::co_spawn(s->strand, Flush(s, s->window), net::detached);
    }

    /// Takes back the queued items for which `pred` holds and that no flush has taken yet (a
    /// taken item may be being written, or written). Returns them in the order they were added.
    template <typename Pred>
    std::vector<T> Withdraw(const Pred& pred) {
        std::vector<T> out;
        std::lock_guard lock(shared_->mu);
        auto& items = shared_->items;
        const auto kept = std::stable_partition(
            items.begin(), items.end(), [&pred](const Queued& q) { return !pred(static_cast<const T&>(q.item)); });
        for (auto it = kept; it != items.end(); ++it) out.push_back(std::move(it->item));
        items.erase(kept, items.end());
        return out;
    }

    /// Calls `fn` on each queued item no flush has taken yet, under the writer's lock.
    template <typename Fn>
    void ForEachQueued(const Fn& fn) const {
        std::lock_guard lock(shared_->mu);
        for (const auto& q : shared_->items) fn(static_cast<const T&>(q.item));
    }

    /// From now on a failed write is not retried (an owner stopping waits only so long), and the
    /// writer is hurried (Hurry).
    void Stop() {
        shared_->stopping = true;
        Hurry();
    }

    /// From now on every flush takes every item, held or not, and waits at most a window; a
    /// flush waiting now starts at once. An owner stopping writes what it holds at once instead
    /// of a hold later (a node's SIGTERM waited up to `record-running-after` for its `running`
    /// records before it gave its lease up). Failed writes are retried as before.
    void Hurry() {
        shared_->hurry = true;
        // The waits' timers are touched only on the writer's strand.
        net::post(shared_->strand, [s = shared_] {
            for (net::steady_timer* timer : s->waiting) timer->cancel();
        });
    }

    /// Items queued or being written (from Add to the end of their flush's last attempt).
    bool Busy() const { return shared_->writing.load() > 0; }

  private:
    struct Queued {
        std::chrono::steady_clock::time_point ripe;  // written by the first flush from then on
        T item;
    };
    struct Shared {
        Shared(net::any_io_executor io_, net::thread_pool& pool, Micros window_, WriteRetry retry_, Write write_,
               Failed failed_)
            : io(std::move(io_)),
              db_pool(pool),
              window(window_),
              retry(retry_),
              write(std::move(write_)),
              failed(std::move(failed_)),
              strand(net::make_strand(io)) {}
        net::any_io_executor io;
        net::thread_pool& db_pool;
        const Micros window;
        const WriteRetry retry;
        const Write write;
        const Failed failed;
        mutable std::mutex mu;  // guards `items` and `scheduled`
        std::vector<Queued> items;
        bool scheduled = false;
        // Flushes from their spawn to their last attempt (`scheduled` clears when a flush takes
        // its batch, before it writes it).
        std::atomic<int> writing{0};
        std::atomic<bool> stopping{false};
        std::atomic<bool> hurry{false};
        // The flushes run on it, so Hurry() can end their waits.
        net::strand<net::any_io_executor> strand;
        std::set<net::steady_timer*> waiting;  // on `strand`: flushes waiting for their time
    };

    static net::awaitable<void> Flush(std::shared_ptr<Shared> s, Micros wait) {
        net::steady_timer timer(s->strand);
        // Hurried: a window at most (a flush spawned for a hold before Hurry() may start after
        // Hurry() ended the waits of its time).
        timer.expires_after(s->hurry ? std::min(wait, s->window) : wait);
        s->waiting.insert(&timer);
        try {
            co_await timer.async_wait(net::use_awaitable);
        } catch (const boost::system::system_error&) {
        }
        s->waiting.erase(&timer);
        std::vector<T> batch;
        std::optional<Micros> next;
        {
            std::lock_guard lock(s->mu);
            const auto now = std::chrono::steady_clock::now();
            const bool all = s->hurry.load();
            const auto held = std::stable_partition(s->items.begin(), s->items.end(),
                                                    [all, now](const Queued& q) { return all || q.ripe <= now; });
            for (auto it = s->items.begin(); it != held; ++it) batch.push_back(std::move(it->item));
            s->items.erase(s->items.begin(), held);
            if (s->items.empty()) {
                s->scheduled = false;
            } else {
                // Still held: the next flush is due when the first of them is, and at least a
                // window from now, so held items cost at most one statement per window.
                auto first = s->items.front().ripe;
                for (const auto& q : s->items) first = std::min(first, q.ripe);
                next = std::max(s->window, std::chrono::duration_cast<Micros>(first - now));
                ++s->writing;
            }
        }
        if (next) net::co_spawn(s->strand, Flush(s, *next), net::detached);
        const auto started = std::chrono::steady_clock::now();
        Backoff backoff(s->retry.first_pause, s->retry.max_pause);
        for (int attempt = 1; !batch.empty(); ++attempt) {
            auto write = [&s, &batch] {
                return s->write(batch);
            };
            const Status written = co_await OnPool(s->db_pool, write);
            if (written.ok()) break;
            const bool out_of_attempts = s->retry.max_attempts > 0 && attempt >= s->retry.max_attempts;
            const bool out_of_time =
                s->retry.give_up_after > Micros{0} &&
                std::chrono::steady_clock::now() + backoff.base() >= started + s->retry.give_up_after;
            const bool give_up = s->stopping || out_of_attempts || out_of_time;
            if (s->failed) s->failed(written, batch, give_up);
            if (give_up) break;
            timer.expires_after(backoff.Next());
            try {
                co_await timer.async_wait(net::use_awaitable);
            } catch (const boost::system::system_error&) {
            }
        }
        --s->writing;
    }

    std::shared_ptr<Shared> shared_;
};

}  // namespace sched::trigger
