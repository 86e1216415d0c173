#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "impl/runtime.hpp"
#include "sched/common/backoff.hpp"
#include "sched/protocol/run_result.hpp"

namespace sched::client::impl {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

void Runtime::SpoolOrRequeue(std::vector<CallbackResult> batch) {
    if (batch.empty()) return;
    const Status s = spool_->Append(batch);
    if (s.ok()) {
        counters_.spooled += batch.size();
        counters_.spool_pending = spool_->pending();
        return;
    }
    // Keep them in memory rather than lose them; the next round tries the disk again.
    spdlog::error("executor {}: {}", options_.app, s.ToString());
    outbox_.Requeue(std::move(batch));
}

void Runtime::SpoolOutbox() {
    SpoolOrRequeue(outbox_.TakeAll());
}

net::awaitable<bool> Runtime::PostResults(const std::vector<CallbackResult>& batch) {
    nlohmann::json body = nlohmann::json::array();
    // A node before the field refuses a result carrying it: only when every web endpoint said it
    // takes it (the preferred callback_url, a node of the same cluster, falls through to them on
    // a refusal).
    const bool carry_trace = results_carry_trace_.load();
    for (const auto& r : batch) {
        body.push_back(r.ToJson());
        if (!carry_trace) body.back().erase("traceparent");
    }
    // Moved, not copied: a copy of a batch's document was one allocation per field of every
    // result in it.
    auto answer = co_await PostToWeb(std::string(protocol::kCallbackPath), std::move(body), batch.front().callback_url);
    if (!answer) {
        ++counters_.callback_failures;
        co_return false;
    }
    LogRefused(batch, *answer);
    co_return true;
}

void Runtime::LogRefused(const std::vector<CallbackResult>& batch, const http::ClientResponse& answer) const {
    // A batch is answered 200 with one outcome per result (docs/protocol.md): delivered, but a
    // result the cluster did not apply (stale_epoch, wrong_executor, conflict, ...) leaves its
    // fire to whatever else ends it. Sending it again would be refused again; saying so here is
    // what ties a fire left `running` to the run that did end.
    auto body = answer.Json();
    if (!body.ok() || !body->is_object()) return;
    const auto results = body->find("results");
    if (results == body->end() || !results->is_array()) return;
    std::size_t refused = 0;
    std::string first;
    for (std::size_t i = 0; i < results->size() && i < batch.size(); ++i) {
        const auto& item = (*results)[i];
        if (!item.is_object()) continue;
        const std::string outcome = item.value("outcome", std::string());
        if (outcome.empty() || outcome == "applied" || outcome == "duplicate") continue;
        if (refused++ < 3) {
            const CallbackResult& r = batch[i];
            first += fmt::format("{}fire {} attempt {} epoch {}: {}", first.empty() ? "" : "; ", r.fire_id, r.attempt,
                                 r.epoch, outcome);
        }
    }
    if (refused > 0) {
        spdlog::warn("executor {}: the cluster did not apply {} of {} result(s) ({}{})", options_.app, refused,
                     batch.size(), first, refused > 3 ? "; ..." : "");
    }
}

net::awaitable<bool> Runtime::FlushResults() {
    // Spooled results are the oldest: they go first.
    while (spool_->pending() > 0) {
        const auto batch = spool_->Peek(static_cast<std::size_t>(options_.callback_batch_size));
        if (!co_await PostResults(batch)) {
            // While no endpoint answers, every new result goes to disk at once.
            SpoolOutbox();
            co_return false;
        }
        if (const Status s = spool_->Ack(batch.size()); !s.ok())
            spdlog::error("executor {}: {}", options_.app, s.ToString());
        counters_.delivered += batch.size();
        counters_.spool_pending = spool_->pending();
    }
    // What was queued when this flush began goes out now; results that arrive while its
    // requests are in flight wait for the next flush, sharing a batch. (Draining until the
    // queue was empty sent a request every few ms with 3-5 results each: on a quiet machine at
    // 1,000 fires/s, 217 callback transactions/s.) A backlog still drains at full speed: it
    // was queued when the flush began.
    const std::size_t due = outbox_.size();
    for (std::size_t sent = 0; sent < due;) {
        auto batch = outbox_.TakeBatch();
        if (batch.empty()) break;
        sent += batch.size();
        if (!co_await PostResults(batch)) {
            SpoolOrRequeue(std::move(batch));
            SpoolOutbox();
            co_return false;
        }
        counters_.delivered += batch.size();
    }
    co_return true;
}

net::awaitable<void> Runtime::CallbackLoop() {
    const auto flush = std::chrono::duration_cast<Clock::duration>(options_.callback_flush_interval);
    // After a failed round the pause doubles from 2 * flush-interval up to callback-max-backoff.
    Backoff backoff(std::min<Micros>(options_.callback_flush_interval * 2, options_.callback_max_backoff),
                    options_.callback_max_backoff);
    for (;;) {
        const bool final_round = callback_stop_.load();
        const bool ok = co_await FlushResults();
        if (ok != web_reachable_) {
            if (ok) {
                spdlog::info("executor {}: results delivered again", options_.app);
            } else {
                spdlog::warn("executor {}: no web endpoint accepts results; spooling them to {}", options_.app,
                             spool_->dir().string());
            }
            web_reachable_ = ok;
        }
        if (final_round) break;
        if (ok) backoff.Reset();
        if (callback_stop_) continue;  // straight to the final round
        if (ok) {
            callback_timer_.expires_after(flush);
        } else {
            callback_timer_.expires_after(backoff.Next());
        }
        boost::system::error_code ec;
        co_await callback_timer_.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
}

}  // namespace sched::client::impl
