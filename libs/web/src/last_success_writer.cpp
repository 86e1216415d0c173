#include "impl/last_success_writer.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

#include "sched/common/status.hpp"

namespace sched::web::impl {

void LastSuccessWriter::Add(const std::vector<store::JobSuccess>& successes, const net::any_io_executor& ex) {
    if (successes.empty()) return;
    {
        std::lock_guard lock(mu_);
        KeepLocked(successes);
        if (writer_on_) return;  // the running writer takes them with its next write
        writer_on_ = true;
    }
    auto self = shared_from_this();
    auto write = [self]() -> net::awaitable<void> {
        co_await self->WriteWhileWaiting();
    };
    net::co_spawn(ex, write, net::detached);
}

void LastSuccessWriter::KeepLocked(const std::vector<store::JobSuccess>& successes) {
    for (const auto& j : successes) {
        auto [it, added] = waiting_.emplace(j.job_id, j.finished_ms);
        if (!added) it->second = std::max(it->second, j.finished_ms);
    }
}

std::size_t LastSuccessWriter::waiting() const {
    std::lock_guard lock(mu_);
    return waiting_.size();
}

net::awaitable<void> LastSuccessWriter::WriteWhileWaiting() {
    // The statement goes to the pool and nothing waits for it there: the pool task holds the
    // writer, never this coroutine, so an I/O context stopped or destroyed before the pool is
    // joined (a process's stop) leaves nothing to resume. The writer stays on for a window after
    // each write, so a failed write (kept again by Write) is taken by the next turn, and the
    // first success after a quiet window is written at once.
    net::steady_timer timer(co_await net::this_coro::executor);
    for (;;) {
        std::vector<store::JobSuccess> batch;
        {
            std::lock_guard lock(mu_);
            if (waiting_.empty()) {
                writer_on_ = false;
                co_return;
            }
            batch.reserve(waiting_.size());
            for (const auto& [job, finished] : waiting_) batch.push_back({job, finished});
            waiting_.clear();
        }
        net::post(db_pool_, [self = shared_from_this(), batch = std::move(batch)] { self->Write(batch); });
        timer.expires_after(window_);
        boost::system::error_code ec;
        co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
}

void LastSuccessWriter::Write(const std::vector<store::JobSuccess>& batch) {
    auto db = database_();
    const Status written = db ? db->Run([&](soci::session& s) { store::RecordLastSuccesses(s, batch); })
                              : Unavailable("the database is not open yet");
    if (written.ok()) return;
    // Kept for the writer's next turn, a window later; a job that succeeded again meanwhile
    // keeps the later time.
    spdlog::warn("last successes of {} jobs not recorded, tried again in {} ms: {}", batch.size(),
                 std::chrono::duration_cast<std::chrono::milliseconds>(window_).count(), written.ToString());
    std::lock_guard lock(mu_);
    KeepLocked(batch);
}

}  // namespace sched::web::impl
