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
/// Thread-safe. A flush in progress keeps what it needs alive (shared state), so the writer may
/// be destroyed while the I/O context still holds a flush; Busy() lets an owner wait instead.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
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

    /// Queues `item` for the next flush.
    void Add(T item) {
        const auto& s = shared_;
        bool spawn = false;
        {
            std::lock_guard lock(s->mu);
            s->items.push_back(std::move(item));
            spawn = !std::exchange(s->scheduled, true);
            if (spawn) ++s->writing;
        }
        if (spawn) net::co_spawn(s->io, Flush(s), net::detached);
    }

    /// From now on a failed write is not retried (an owner stopping waits only so long).
    void Stop() { shared_->stopping = true; }

    /// Items queued or being written (from Add to the end of their flush's last attempt).
    bool Busy() const { return shared_->writing.load() > 0; }

  private:
    struct Shared {
        Shared(net::any_io_executor io_, net::thread_pool& pool, Micros window_, WriteRetry retry_, Write write_,
               Failed failed_)
            : io(std::move(io_)),
              db_pool(pool),
              window(window_),
              retry(retry_),
              write(std::move(write_)),
              failed(std::move(failed_)) {}
        net::any_io_executor io;
        net::thread_pool& db_pool;
        const Micros window;
        const WriteRetry retry;
        const Write write;
        const Failed failed;
        std::mutex mu;  // guards `items` and `scheduled`
        std::vector<T> items;
        bool scheduled = false;
        // Flushes from their spawn to their last attempt (`scheduled` clears when a flush takes
        // its batch, before it writes it).
        std::atomic<int> writing{0};
        std::atomic<bool> stopping{false};
    };

    static net::awaitable<void> Flush(std::shared_ptr<Shared> s) {
        net::steady_timer timer(s->io);
        timer.expires_after(s->window);
        try {
            co_await timer.async_wait(net::use_awaitable);
        } catch (const boost::system::system_error&) {
        }
        std::vector<T> batch;
        {
            std::lock_guard lock(s->mu);
            batch.swap(s->items);
            s->scheduled = false;
        }
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
