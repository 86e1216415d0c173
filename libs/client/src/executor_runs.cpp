#include <algorithm>
#include <array>
#include <atomic>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "impl/runtime.hpp"
#include "sched/common/log_fields.hpp"
#include "sched/protocol/fire_spans.hpp"

namespace sched::client::impl {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// "2026-01-02T03:04:05.678Z": log lines are read by people in other time zones.
// Three lines per run at least: each thread formats a second once, not every line.
std::string LogTimestamp() {
    thread_local std::int64_t cached_second = -1;
    thread_local std::string cached_text;
    const std::int64_t ms = WallMs();
    if (ms / 1000 != cached_second) {
        cached_second = ms / 1000;
        const auto secs = static_cast<std::time_t>(cached_second);
        std::tm tm{};
        gmtime_r(&secs, &tm);
        std::array<char, 32> buf{};
        const auto n = std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%S", &tm);
        cached_text.assign(buf.data(), n);
    }
    return cached_text + fmt::format(".{:03d}Z", static_cast<int>(ms % 1000));
}

// The run's span: a child of the attempt's span the node sent in `traceparent`, with an id
// derived like the node's steps (sched/protocol/fire_spans.hpp). A run sent without one has none.
void PushRunSpan(protocol::SpanExporter& spans, const RunRequest& r, const CallbackResult& result,
                 const std::string& app, const std::string& address) {
    const auto parent = protocol::ParseTraceParent(r.traceparent);
    if (!parent) return;
    constexpr std::int64_t kNanosPerMs = 1'000'000;
    protocol::Span span;
    span.trace_id = parent->trace_id;
    span.span_id = protocol::FireStepSpanId(*parent, protocol::FireStep::kRun);
    span.parent_span_id = parent->span_id;
    span.trace_state = r.tracestate;  // the caller's vendors' state, forwarded unchanged
    span.name = "run";
    span.kind = protocol::SpanKind::kServer;
    span.start_ns = result.started_ms * kNanosPerMs;
    span.end_ns = std::max(result.started_ms, result.finished_ms) * kNanosPerMs;
    span.attributes = {{"sched.fire_id", r.fire_id},
                       {"sched.job_id", r.job_id},
                       {"sched.app", app},
                       {"sched.attempt", r.attempt},
                       {"sched.node", address},
                       {"sched.handler", r.handler},
                       {"sched.status", std::string(protocol::Name(result.outcome))}};
    if (result.outcome != protocol::RunOutcome::kSucceeded) {
        span.error = true;
        span.status_message = result.message;
    }
    spans.Push(std::move(span));
}

}  // namespace

// ---- Runs (Execute runs on a worker thread) ----

// A held run (sent ahead of its due time) waits on a timer of the I/O context, not on a
// worker: the workers stay free for the runs that are due. The runs of one batch sent ahead
// share few due times, so they share few timers. Stop waits while any run is in flight, held
// ones included, so the I/O context outlives every timer armed here.
void Runtime::Launch(std::vector<RunPtr> runs) {
    const auto now = Clock::now();
    std::vector<RunPtr> due_now;
    std::map<Clock::time_point, std::vector<RunPtr>> held;
    std::vector<std::pair<std::shared_ptr<HeldGroup>, Clock::time_point>> arm;
    {
        std::lock_guard lock(held_mu_);
        for (auto& run : runs) {
            const auto at = run->not_before;
            if (at <= now) {
                due_now.push_back(std::move(run));
                continue;
            }
            // Only first attempts: their scheduled time is their due time, so equal scheduled
            // times are one instant; a retry's due time is its own.
            if (run->request.attempt != 0 || run->request.scheduled_ms <= 0) {
                held[at].push_back(std::move(run));
                continue;
            }
            auto& groups = held_groups_[run->request.scheduled_ms];
            const auto near = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
                return at - g->at <= kAlignHeldMs && g->at - at <= kAlignHeldMs;
            });
            std::shared_ptr<HeldGroup> group;
            if (near == groups.end()) {
                group = std::make_shared<HeldGroup>();
                group->scheduled_ms = run->request.scheduled_ms;
                group->at = at;
                groups.push_back(group);
                arm.emplace_back(group, at);
            } else {
                group = *near;
                if (at < group->at) {
                    // An earlier hold: the group starts then (its first timer finds it started).
                    group->at = at;
                    arm.emplace_back(group, at);
                }
            }
            group->runs.push_back(std::move(run));
        }
    }
    if (!due_now.empty()) StartTogether(std::move(due_now), now);
    for (const auto& [group, at] : arm) ArmHeld(group, at);
    for (auto& [at, due] : held) {
        auto timer = std::make_shared<net::steady_timer>(io_, at);
        timer->async_wait([this, timer, when = at, due = std::move(due)](const boost::system::error_code&) mutable {
            StartTogether(std::move(due), when);
        });
    }
}

// Runs let go at one instant go to the workers as a few tasks that take them in order from a
// shared list, not as one task each: posted one by one, a burst's thousand runs kept the
// posting thread and the workers on the pool's queue lock, and the first node's 333 runs took
// about twice as long to start as the next node's. Each task takes the next run until none is
// left, so a long handler holds up only its own task while the others go on.
void Runtime::StartTogether(std::vector<RunPtr> runs, Clock::time_point startable_at) {
    for (const auto& run : runs) run->startable_at = startable_at;
    struct Together {
        std::vector<RunPtr> runs;
        std::atomic<std::size_t> next{0};
    };
    auto together = std::make_shared<Together>();
    together->runs = std::move(runs);
    const std::size_t tasks =
        std::min(together->runs.size(), static_cast<std::size_t>(std::max(1, options_.worker_threads)));
    for (std::size_t t = 0; t < tasks; ++t) {
        net::post(*workers_, [this, together] {
            for (std::size_t k = together->next++; k < together->runs.size(); k = together->next++) {
                Execute(together->runs[k]);
            }
        });
    }
}

void Runtime::ArmHeld(const std::shared_ptr<HeldGroup>& group, Clock::time_point at) {
    auto timer = std::make_shared<net::steady_timer>(io_, at);
    timer->async_wait([this, timer, group](const boost::system::error_code&) { StartHeld(group); });
}

void Runtime::StartHeld(const std::shared_ptr<HeldGroup>& group) {
    std::vector<RunPtr> due;
    Clock::time_point at;
    {
        std::lock_guard lock(held_mu_);
        if (group->started) return;
        group->started = true;
        due = std::move(group->runs);
        at = group->at;
        auto it = held_groups_.find(group->scheduled_ms);
        if (it != held_groups_.end()) {
            std::erase(it->second, group);
            if (it->second.empty()) held_groups_.erase(it);
        }
    }
    if (!due.empty()) StartTogether(std::move(due), at);
}

std::string Runtime::LogLine(const std::string& text) {
    return LogTimestamp() + " " + text;
}

void Runtime::FireLog(std::int64_t fire_id, const std::string& text, LineSource source) {
    logs_.Append(fire_id, LogLine(text), source);
}

void Runtime::FinishLog(CallbackResult& result, const std::string& text) {
    if (auto tail = logs_.Finish(result.fire_id, LogLine(text), options_.log_tail_bytes > 0)) {
        result.log = std::move(tail->text);
        result.log_truncated_bytes = tail->truncated_bytes;
    }
}

// `event`: "started", then the outcome ("succeeded", "failed", "timeout", "killed"). Debug: one
// line per run start and end, with the trace id, so the handler's work can be found from the
// fire and the other way round.
void Runtime::LogRun(const RunRequest& r, const std::string& trace_id, std::string_view event) const {
    LogWithFields(spdlog::level::debug,
                  {{"app", options_.app},
                   {"job", r.job_id},
                   {"fire", r.fire_id},
                   {"attempt", r.attempt},
                   {"epoch", r.epoch},
                   {"trace_id", trace_id},
                   {"event", event}},
                  "run of fire {} {} ({})", r.fire_id, event, r.handler);
}

void Runtime::Execute(const RunPtr& run) {
    const RunRequest& r = run->request;
    const std::int64_t started_ms = WallMs();
    const auto timeout = milliseconds(r.timeout_ms);
    // The timeout counts from here, the handler's start, whatever the run waited for before.
    const auto start = Clock::now();
    const auto deadline = run->MarkStarted(start);
    if (metrics_) metrics_->RunStarted(std::chrono::duration<double>(start - run->startable_at).count());
    std::shared_ptr<net::steady_timer> timer;
    if (r.timeout_ms > 0) {
        timer = std::make_shared<net::steady_timer>(strand_);
        net::post(strand_, [timer, run, timeout] {
            timer->expires_after(timeout);
            timer->async_wait([run](const boost::system::error_code& ec) {
                if (!ec) run->token.Cancel(CancelReason::kTimeout);
            });
        });
    }
    JobContext ctx(r, run->token, deadline,
                   [this, id = r.fire_id](const std::string& line) { FireLog(id, line, LineSource::kHandler); });
    // The trace id in the fire's own log and on the process's lines.
    std::string trace_id = ctx.trace_id();
    FireLog(r.fire_id, "started: shard " + std::to_string(r.shard_index) + "/" + std::to_string(r.shard_total) +
                           (trace_id.empty() ? "" : ", trace " + trace_id));
    LogRun(r, trace_id, "started");
    Status status;
    if (run->token.cancelled()) {
        status = Cancelled("cancelled before it started");
    } else {
        try {
            status = handlers_.at(r.handler)(ctx);
        } catch (const std::exception& e) {
            status = Internal(std::string("handler threw: ") + e.what());
        } catch (...) {
            status = Internal("handler threw a non-standard exception");
        }
    }
    if (timer) net::post(strand_, [timer] { timer->cancel(); });

    CallbackResult result;
    result.fire_id = r.fire_id;
    result.attempt = r.attempt;
    result.started_ms = started_ms;
    result.finished_ms = WallMs();
    result.callback_url = r.callback_url;
    result.traceparent = r.traceparent;
    // After a cancellation the reason decides, whatever the handler returned: the scheduler
    // asked for it to stop, and it must not count as a normal success or failure.
    const auto end_as = [&result](protocol::RunOutcome outcome, Code code, std::string message) {
        result.outcome = outcome;
        result.code = std::string(CodeName(code));
        result.message = std::move(message);
    };
    switch (run->token.reason()) {
        case CancelReason::kTimeout:
            // Without a timeout of its own, only the node's watch (a kill with reason timeout) ends it.
            end_as(protocol::RunOutcome::kTimeout, Code::kDeadlineExceeded,
                   r.timeout_ms > 0 ? "timed out after " + std::to_string(r.timeout_ms) + " ms"
                                    : std::string("timed out: the job's timeout, watched by the node"));
            break;
        case CancelReason::kKilled:
            end_as(protocol::RunOutcome::kKilled, Code::kCancelled, "killed by request");
            break;
        case CancelReason::kCovered:
            end_as(protocol::RunOutcome::kKilled, Code::kCancelled,
                   "covered by fire " + std::to_string(run->covered_by.load()));
            break;
        case CancelReason::kShutdown:
            end_as(protocol::RunOutcome::kKilled, Code::kCancelled, "executor shutting down");
            break;
        case CancelReason::kNone:
            end_as(status.ok() ? protocol::RunOutcome::kSucceeded : protocol::RunOutcome::kFailed, status.code(),
                   status.ok() ? ctx.result_message() : status.message());
            break;
    }
    // The rest of the run's end (its log closed, its span, its slot freed, its result queued)
    // waits behind the work already queued for the workers, and the workers take the runs let
    // go together before it (StartTogether): in a burst every handler starts before any run is
    // booked, so the last start is not delayed by the bookkeeping of those before it. Posted,
    // not deferred: a deferred end would wait for the whole task of runs this worker is in,
    // behind any long handler it meets later.
    net::post(*workers_, [this, run, result = std::move(result), trace_id = std::move(trace_id)]() mutable {
        EndRun(run, std::move(result), trace_id);
    });
}

void Runtime::EndRun(const RunPtr& run, CallbackResult result, const std::string& trace_id) {
    const RunRequest& r = run->request;
    // The tail with the close, under one lock: a closed log may be forgotten at once (more fires
    // running than log-retained-fires), and its result would go without it.
    FinishLog(result, "finished: " + std::string(protocol::Name(result.outcome)) +
                          (result.message.empty() ? "" : ": " + result.message));
    LogRun(r, trace_id, protocol::Name(result.outcome));
    if (spans_) PushRunSpan(*spans_, r, result, options_.app, address_);
    const double handler_seconds = static_cast<double>(result.finished_ms - result.started_ms) / 1e3;
    // Free the slot before reporting: whoever sees the result may ask at once whether we are idle.
    RunPtr next = registry_.Finish(run);
    // Read once the run has left the registry: a repeat of it under a newer epoch (its fire
    // re-stamped by the node) is applied under the registry's lock while it is in flight, and
    // finds it gone after, so no newer epoch can arrive between this read and the report.
    result.epoch = run->ResultEpoch();
    Report(std::move(result), r.handler, handler_seconds);
    if (next) Launch({std::move(next)});
}

void Runtime::ReportNeverStarted(const RunPtr& run, const std::string& message) {
    const RunRequest& r = run->request;
    const bool timed_out = run->token.reason() == CancelReason::kTimeout;
    CallbackResult result;
    result.fire_id = r.fire_id;
    result.attempt = r.attempt;
    result.epoch = run->ResultEpoch();  // removed from the registry already: final
    result.outcome = timed_out ? protocol::RunOutcome::kTimeout : protocol::RunOutcome::kKilled;
    result.code = std::string(CodeName(timed_out ? Code::kDeadlineExceeded : Code::kCancelled));
    result.message = message;
    result.started_ms = result.finished_ms = WallMs();
    result.callback_url = r.callback_url;
    result.traceparent = r.traceparent;
    FinishLog(result, std::string(protocol::Name(result.outcome)) + ": " + message);
    Report(std::move(result), r.handler, -1);
}

void Runtime::Report(CallbackResult result, const std::string& handler, double handler_seconds) {
    if (metrics_) metrics_->RunEnded(handler, std::string(protocol::Name(result.outcome)), handler_seconds);
    result.address = address_;  // the server checks that the result comes from the instance that ran it
    switch (result.outcome) {
        case protocol::RunOutcome::kSucceeded:
            ++counters_.succeeded;
            break;
        case protocol::RunOutcome::kFailed:
            ++counters_.failed;
            break;
        case protocol::RunOutcome::kTimeout:
            ++counters_.timed_out;
            break;
        case protocol::RunOutcome::kKilled:
            ++counters_.killed;
            break;
    }
    outbox_.Push(std::move(result));
}

}  // namespace sched::client::impl
