#include "sched/trigger/timeout_watch.hpp"

#include <optional>

#include <spdlog/spdlog.h>

#include "sched/common/on_pool.hpp"
#include "sched/protocol/run.hpp"
#include "sched/protocol/run_answer.hpp"

namespace sched::trigger {

using model::FireStatus;

namespace {

// After the time the executor said its own timeout still gives the run: that deadline passes
// first, and the run ends `timeout` by the executor's own report.
constexpr std::int64_t kRecheckSlackMs = 50;

}  // namespace

TimeoutWatch::TimeoutWatch(net::any_io_executor io, net::thread_pool& db_pool, dispatch::ExecutorClient& executors,
                           Micros call_timeout, Ports ports, std::string node_id)
    : io_(std::move(io)),
      db_pool_(db_pool),
      executors_(executors),
      call_timeout_(call_timeout),
      ports_(std::move(ports)),
      node_id_(std::move(node_id)) {}

void TimeoutWatch::Watch(std::int64_t fire_id, std::string app, std::string address, std::int64_t timeout_ms,
                         std::int64_t held_ms, std::optional<PendingFireSpan> ended) {
    net::co_spawn(io_, Run(fire_id, std::move(app), std::move(address), timeout_ms, held_ms, std::move(ended)),
                  net::detached);
}

net::awaitable<void> TimeoutWatch::Run(std::int64_t fire_id, std::string app, std::string address,
                                       std::int64_t timeout_ms, std::int64_t held_ms,
                                       std::optional<PendingFireSpan> ended) {
    std::int64_t wait_ms = held_ms + timeout_ms;
    Result<FireStatus> status = FireStatus::kRunning;
    Result<http::ClientResponse> killed = Status(Code::kUnavailable, "no kill sent");
    // The run's own timeout counts from its handler's start, which comes after this watch began
    // when the run waited behind its job's running fire: the executor then leaves it alone and
    // says how long it still has (KillAnswer::timeout_in_ms), and the watch asks again after that.
    for (bool ask = true; ask;) {
        net::steady_timer timer(io_);
        timer.expires_after(std::chrono::milliseconds(wait_ms));
        try {
            co_await timer.async_wait(net::use_awaitable);
        } catch (const boost::system::system_error&) {
            co_return;
        }
        auto read = [this, fire_id] {
            return ports_.status_of(fire_id);
        };
        status = co_await OnPool(db_pool_, read);
        // Still dispatching: accepted, but its running record is not written yet (or failed).
        if (!status.ok() || (*status != FireStatus::kRunning && *status != FireStatus::kDispatching)) co_return;
        const http::CallOptions call{.timeout = call_timeout_};
        const protocol::KillRequest kill{.fire_id = fire_id, .reason = protocol::KillReason::kTimeout};
        const std::string kill_body = protocol::ToJson(kill).dump();
        const std::string kill_url = "http://" + address + std::string(protocol::kKillPath);
        killed = co_await executors_.Send(app, http::Method::kPost, kill_url, kill_body, call);
        ask = false;
        if (killed.ok() && killed->status == 200) {
            const auto body = killed->Json();
            const auto answer = body.ok() ? protocol::ReadKillAnswer(*body) : protocol::Parsed<protocol::KillAnswer>{};
            if (body.ok() && answer.ok() && answer.value.timeout_in_ms) {
                wait_ms = *answer.value.timeout_in_ms + kRecheckSlackMs;
                ask = true;
            }
        }
    }
    if (!killed.ok() || !killed->ok()) {
        spdlog::warn("slave {}: kill of timed-out fire {} on {} failed", node_id_, fire_id, address);
    }
    const std::int64_t now = ports_.now_ms();
    // The span goes with the end and is pushed only if the end's compare-and-set moves the row:
    // a result that landed in between pushed its own `ended` (the same span id).
    ports_.ended({.id = fire_id,
                  .from = *status,
                  .to = FireStatus::kTimeout,
                  .message = "timed out after " + std::to_string(timeout_ms) + " ms",
                  .reason = std::nullopt,  // it ran: no ledger reason
                  .finished_at = now,
                  .span = std::move(ended)});
}

}  // namespace sched::trigger
