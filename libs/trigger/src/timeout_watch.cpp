#include "sched/trigger/timeout_watch.hpp"

#include <optional>

#include <spdlog/spdlog.h>

#include "sched/common/on_pool.hpp"
#include "sched/protocol/run.hpp"
#include "sched/protocol/run_answer.hpp"

namespace sched::trigger {

using store::FireStatus;

TimeoutWatch::TimeoutWatch(net::any_io_executor io, net::thread_pool& db_pool, dispatch::ExecutorClient& executors,
                           Micros call_timeout, Ports ports, std::string node_id)
    : io_(std::move(io)),
      db_pool_(db_pool),
      executors_(executors),
      call_timeout_(call_timeout),
      ports_(std::move(ports)),
      node_id_(std::move(node_id)) {}

void TimeoutWatch::Watch(std::int64_t fire_id, std::string app, std::string address, std::int64_t timeout_ms,
                         std::int64_t held_ms) {
    net::co_spawn(io_, Run(fire_id, std::move(app), std::move(address), timeout_ms, held_ms), net::detached);
}

net::awaitable<void> TimeoutWatch::Run(std::int64_t fire_id, std::string app, std::string address,
                                       std::int64_t timeout_ms, std::int64_t held_ms) {
    net::steady_timer timer(io_);
    timer.expires_after(std::chrono::milliseconds(held_ms + timeout_ms));
    try {
        co_await timer.async_wait(net::use_awaitable);
    } catch (const boost::system::system_error&) {
        co_return;
    }
    auto read = [this, fire_id] {
        return ports_.status_of(fire_id);
    };
    auto status = co_await OnPool(db_pool_, read);
    // Still dispatching: accepted, but its running record is not written yet (or failed).
    if (!status.ok() || (*status != FireStatus::kRunning && *status != FireStatus::kDispatching)) co_return;
    const http::CallOptions call{.timeout = call_timeout_};
    const std::string kill_body = protocol::ToJson(protocol::KillRequest{.fire_id = fire_id}).dump();
    const std::string kill_url = "http://" + address + std::string(protocol::kKillPath);
    auto killed = co_await executors_.Send(app, http::Method::kPost, kill_url, kill_body, call);
    if (!killed.ok() || !killed->ok()) {
        spdlog::warn("slave {}: kill of timed-out fire {} on {} failed", node_id_, fire_id, address);
    }
    ports_.ended({.id = fire_id,
                  .from = *status,
                  .to = FireStatus::kTimeout,
                  .message = "timed out after " + std::to_string(timeout_ms) + " ms",
                  .reason = std::nullopt,  // it ran: no ledger reason
                  .finished_at = ports_.now_ms()});
}

}  // namespace sched::trigger
