#include "sched/trigger/run_sender.hpp"

#include "sched/trigger/misfire_verdict.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "sched/common/backoff.hpp"
#include "sched/common/log_fields.hpp"
#include "sched/common/on_pool.hpp"
#include "sched/protocol/run.hpp"
#include "sched/protocol/run_answer.hpp"
#include "sched/protocol/run_batch.hpp"
#include "sched/trigger/fire_trace.hpp"

namespace sched::trigger {

void TraceClaimed(const DispatchGroup& group, std::int64_t started_ms, std::int64_t ended_ms) {
    if (!protocol::FireTracer::On()) return;
    for (const auto& fire : group.fires) {
        const auto job = group.jobs.find(fire.job_id);
        const std::string_view app = job == group.jobs.end() ? std::string_view() : std::string_view(job->second.app);
        protocol::FireTracer::Step(FireRefOf(fire, app), protocol::FireStep::kClaimed, started_ms * kNanosPerMs,
                                   ended_ms * kNanosPerMs);
    }
}

using namespace std::chrono_literals;
using model::FireStatus;

namespace {

// Job params are stored as text; a JSON document goes to the handler as JSON, anything else
// as a string, so `{"ms": 5}` arrives as an object and `hello` as "hello".
nlohmann::json ParamsJson(const std::string& text) {
    if (text.empty()) return nlohmann::json::object();
    auto j = nlohmann::json::parse(text, nullptr, false);
    return j.is_discarded() ? nlohmann::json(text) : j;
}

// The executor's answer to one /v1/run (a body that is not JSON reads as a refusal naming no field).
protocol::RunAnswer ReadAnswer(const http::ClientResponse& r) {
    auto j = r.Json();
    return protocol::ReadRunAnswer(r.status, j.ok() ? *j : nlohmann::json());
}

// A /v1/run body for `fire` of `job`, claimed in a group at `epoch`. A step of a workflow run
// triggered with params gets the run's params instead of its job's (docs/workflows.md).
nlohmann::json RunJson(const model::Fire& fire, const model::Job& job, std::int64_t epoch,
                       const std::map<std::int64_t, std::string>& run_params) {
    protocol::RunRequest run;
    run.fire_id = fire.id;
    run.job_id = job.id;
    run.attempt = fire.attempt;
    run.epoch = epoch;
    run.handler = job.handler;
    const auto run_it = fire.workflow_run_id ? run_params.find(*fire.workflow_run_id) : run_params.end();
    run.params = ParamsJson(run_it != run_params.end() ? run_it->second : job.params);
    run.scheduled_ms = fire.scheduled_time;
    run.timeout_ms = job.timeout_ms;
    run.shard_index = fire.shard_index;
    run.shard_total = fire.shard_total;
    // The cluster enforced the job's policy at the claim (FireClaims::Admit): `overlap` tells an
    // executor to run it on arrival; one older than the field judges the old name instead.
    run.block_strategy = ExecutorStrategy(job.block_strategy);
    run.overlap = job.block_strategy;
    run.traceparent = protocol::RunTrace(FireRefOf(fire, job.app)).TraceParent();
    // The caller's tracestate, checked when the trigger stored it, travels with its trace.
    if (fire.trace_parent && fire.trace_state) run.tracestate = *fire.trace_state;
    return protocol::ToJson(run);
}

// A line about one fire, with the fields a collector filters on (log_fields.hpp); the trace id
// is the one its runs carry, derived only when the line is written.
template <typename... Args>
void LogFire(spdlog::level::level_enum level, const model::Fire& fire, std::string_view app, std::int64_t epoch,
             spdlog::format_string_t<Args...> format, Args&&... args) {
    if (!spdlog::should_log(level)) return;
    const std::string trace = protocol::RunTrace(FireRefOf(fire, app)).trace_id;
    LogWithFields(level,
                  {{"app", app},
                   {"job", fire.job_id},
                   {"fire", fire.id},
                   {"attempt", fire.attempt},
                   {"epoch", epoch},
                   {"trace_id", trace}},
                  format, std::forward<Args>(args)...);
}

std::int64_t Ms(Micros d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// A batch stays well under the executor's body limit (1 MiB by default): larger bodies are cut
// into several requests.
constexpr std::size_t kBatchBodyBytes = std::size_t{512} * 1024;
// Room for a run's separator and its start_in_ms field in a batch's byte budget.
constexpr std::size_t kStartInBytes = 32;
// How much later than a held run's due time the node's timeout watch starts (see Accepted).
constexpr std::int64_t kHeldTimeoutSlackMs = 50;
// A fire due sooner than this is not sent ahead: the hold would be shorter than the request.
constexpr std::int64_t kMinAheadMs = 2;

bool IsBlockRefusal(const protocol::RunAnswer& answer) {
    constexpr std::string_view kBlock = "block_strategy";
    const std::string& field = answer.field();
    // "block_strategy" for /v1/run, "runs[i].block_strategy" in a batch's answer.
    return answer.status == 409 && field.size() >= kBlock.size() &&
           field.compare(field.size() - kBlock.size(), kBlock.size(), kBlock) == 0 &&
           (field.size() == kBlock.size() || field[field.size() - kBlock.size() - 1] == '.');
}

}  // namespace

RunSender::RunSender(net::any_io_executor io, net::thread_pool& db_pool, std::shared_ptr<FireQueue> queue,
                     dispatch::ExecutorClient& executors, ExecutorDirectory& directory, const DbTime& time,
                     RunSenderConfig config, Ports ports, std::string node_id, MetricsRegistry& metrics)
    : io_(std::move(io)),
      db_pool_(db_pool),
      shared_(std::make_shared<Shared>()),
      executors_(executors),
      directory_(directory),
      time_(time),
      config_(config),
      ports_(std::move(ports)),
      node_id_(std::move(node_id)),
      lag_(metrics
               .Histogram("sched_fire_lag_seconds", "Dispatch time minus due time of accepted fires.", {},
                          {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10})
               .Labels({})),
      dispatched_(metrics.Counter("sched_slave_fires_total", "Fires this slave finished dispatching, by outcome.",
                                  {"outcome"})),
      dispatch_errors_(
          metrics.Counter("sched_dispatch_errors_total", "Failed /v1/run attempts, by reason.", {"reason"})),
      fire_outcomes_(metrics),
      run_batches_(metrics
                       .Counter("sched_slave_run_batches_total",
                                "POST /v1/runs requests: the fires of one due time for one executor instance.")
                       .Labels({})) {
    shared_->queue = std::move(queue);
    // Known outcomes are exported from the start, at 0, so rate() and alerts see them.
    for (const char* outcome : {"accepted", "discarded", "failed", "misfire"}) dispatched_.Labels({outcome});
}

void RunSender::Send(std::shared_ptr<const DispatchGroup> group) {
    net::co_spawn(io_, SendGroup(std::move(group)), net::detached);
}

net::awaitable<void> RunSender::SendGroup(GroupPtr group) {
    std::vector<model::Fire> at_due = config_.send_ahead ? SendAhead(group) : group->fires;
    co_await SendAtDue(group, std::move(at_due));
}

std::vector<model::Fire> RunSender::SendAhead(const GroupPtr& group) {
    const std::int64_t now = time_.NowMs();
    std::vector<model::Fire> at_due;
    Batches batches;
    for (const auto& fire : group->fires) {
        if (fire.due_at - now >= kMinAheadMs) {
            const auto job = group->jobs.find(fire.job_id);
            if (job != group->jobs.end() && ExecutorStrategy(job->second.block_strategy) == BlockStrategy::kSerial) {
                if (auto address = BatchAddress(*group, fire, now, Batch::kAhead)) {
                    batches[{job->second.app, *address}].push_back(fire);
                    continue;
                }
            }
        }
        at_due.push_back(fire);
    }
    SendBatches(group, batches, Batch::kAhead);
    return at_due;
}

void RunSender::SendBatches(const GroupPtr& group, Batches& batches, Batch kind) {
    for (auto& [key, list] : batches) {
        for (std::size_t from = 0; from < list.size(); from += protocol::kMaxRunsPerBatch) {
            const std::size_t to = std::min(list.size(), from + protocol::kMaxRunsPerBatch);
            std::vector<model::Fire> chunk(std::make_move_iterator(list.begin() + static_cast<std::ptrdiff_t>(from)),
                                           std::make_move_iterator(list.begin() + static_cast<std::ptrdiff_t>(to)));
            net::co_spawn(io_, SendBatch(group, key.first, key.second, std::move(chunk), kind), net::detached);
        }
    }
}

net::awaitable<void> RunSender::SendAtDue(GroupPtr group, std::vector<model::Fire> fires) {
    net::steady_timer timer(io_);
    std::size_t i = 0;
    while (i < fires.size()) {
        const std::int64_t due = fires[i].due_at;
        // The due time is on the database clock, the timer on the local steady clock: their
        // difference is taken at the last moment, so a DbTime refresh in between is honoured.
        const std::int64_t wait_ms = due - time_.NowMs();
        if (wait_ms > 0) {
            timer.expires_after(std::chrono::milliseconds(wait_ms));
            try {
                co_await timer.async_wait(net::use_awaitable);
            } catch (const boost::system::system_error&) {
            }
        }
        std::vector<model::Fire> now_due;
        for (; i < fires.size() && fires[i].due_at <= due; ++i) now_due.push_back(std::move(fires[i]));
        DispatchDue(group, std::move(now_due));
    }
}

// Per fire, SendOne would probe, pick an instance and call /v1/run: a burst for one instance
// would be as many requests. Here the fires whose routing needs no probe go to their
// first-choice instance in one request each, and only what a batch did not place takes the
// per-fire path, which tries the other instances in order.
void RunSender::DispatchDue(const GroupPtr& group, std::vector<model::Fire> fires) {
    const std::int64_t now = time_.NowMs();
    Batches batches;
    for (auto& fire : fires) {
        if (fires.size() > 1) {
            if (auto address = BatchAddress(*group, fire, now, Batch::kAtDue)) {
                const std::string app = group->jobs.at(fire.job_id).app;
                batches[{app, *address}].push_back(std::move(fire));
                continue;
            }
        }
        net::co_spawn(io_, SendOne(group, std::move(fire)), net::detached);
    }
    // A batch of one is a /v1/run: the per-fire path, which also tries the other instances.
    for (auto it = batches.begin(); it != batches.end();) {
        if (it->second.size() == 1) {
            net::co_spawn(io_, SendOne(group, std::move(it->second.front())), net::detached);
            it = batches.erase(it);
        } else {
            ++it;
        }
    }
    SendBatches(group, batches, Batch::kAtDue);
}

std::optional<std::string> RunSender::BatchAddress(const DispatchGroup& group, const model::Fire& fire,
                                                   std::int64_t now_ms, Batch kind) {
    const auto job_it = group.jobs.find(fire.job_id);
    if (job_it == group.jobs.end()) return std::nullopt;
    const model::Job& job = job_it->second;
    if (!job.enabled && fire.kind != model::FireKind::kManual) return std::nullopt;
    if (MisfireVerdict(group.fires, fire, job, now_ms, Ms(config_.misfire_threshold))) return std::nullopt;
    const Routing routing = job.routing;
    if (ProbeFor(routing) != Probe::kNone) return std::nullopt;
    const auto order = router_.Order(routing, job.id, Serving(*group.registry, job.app, job.handler), fire.shard_index);
    if (order.empty()) return std::nullopt;
    const BatchRoute route = kind == Batch::kAhead ? BatchRoute::kRunsAhead : BatchRoute::kRuns;
    if (directory_.RefusesBatch(order.front(), route)) return std::nullopt;
    return order.front();
}

// Every argument of a co_await'ed call is a named value, never a temporary (a literal, a
// concatenation, a ?: result, a braced list): g++ 12 destroys such temporaries twice in a
// coroutine frame (a double free seen here) or rejects them ("array used as initializer").
net::awaitable<void> RunSender::SendBatch(GroupPtr group, std::string app, std::string address,
                                          std::vector<model::Fire> fires, Batch kind) {
    const bool ahead = kind == Batch::kAhead;
    const std::string_view path = ahead ? protocol::kRunsAheadPath : protocol::kRunsPath;
    shared_->in_flight += fires.size();
    std::vector<bool> placed(fires.size(), false);
    std::size_t from = 0;
    // Until every run is placed, or the instance cannot take a batch now (the rest then go one
    // by one below).
    while (from < fires.size()) {
        // Cut by bytes: params can make runs large.
        std::vector<std::string> texts;
        std::size_t bytes = 0;
        std::size_t to = from;
        for (; to < fires.size(); ++to) {
            std::string run =
                RunJson(fires[to], group->jobs.at(fires[to].job_id), group->epoch, group->run_params).dump();
            if (to > from && bytes + run.size() + kStartInBytes > kBatchBodyBytes) break;
            bytes += run.size() + kStartInBytes;
            texts.push_back(std::move(run));
        }
        const std::size_t count = to - from;
        const bool slot = co_await directory_.AcquireCall(address);
        if (!slot) break;
        // The time left to each due time is taken once the runs are written and the call slot
        // is held, just before the request leaves: the executor counts it from the request's arrival.
        const std::int64_t now = time_.NowMs();
        std::string runs;
        runs.reserve(bytes);
        for (std::size_t k = 0; k < count; ++k) {
            if (k > 0) runs += ',';
            if (ahead) {
                const std::int64_t due = fires[from + k].due_at;
                runs +=
                    protocol::WithStartIn(texts[k], std::clamp<std::int64_t>(due - now, 0, protocol::kMaxStartInMs));
            } else {
                runs += texts[k];
            }
        }
        const std::string body = protocol::RunsBatchBody(runs);
        const std::string url = "http://" + address + std::string(path);
        const http::CallOptions call{.timeout = config_.dispatch_timeout};
        const std::int64_t sent_at = time_.NowMs();
        auto response = co_await executors_.Send(app, http::Method::kPost, url, body, call);
        directory_.ReleaseCall(address);
        run_batches_.Inc();
        std::optional<std::vector<protocol::RunAnswer>> answers;
        if (response.ok() && response->status == 200) {
            if (auto parsed = response->Json(); parsed.ok()) answers = protocol::ReadBatchAnswer(*parsed, count);
        }
        if (!answers) {
            if (response.ok() && response->status == 404) {
                spdlog::info("slave {}: executor {} does not serve {} (an older client SDK): {}", node_id_, address,
                             path, ahead ? "runs go at their due time" : "runs go one by one");
                directory_.RefuseBatch(address, ahead ? BatchRoute::kRunsAhead : BatchRoute::kRuns);
            } else {
                dispatch_errors_.Labels({"batch"}).Inc();
                spdlog::warn("slave {}: batch of {} runs to {} failed ({}): {}", node_id_, count, address,
                             response.ok() ? "HTTP " + std::to_string(response->status) : response.status().message(),
                             ahead ? "sending them at their due time" : "sending them one by one");
            }
            break;
        }
        for (std::size_t k = 0; k < count; ++k) {
            const model::Fire& fire = fires[from + k];
            const model::Job& job = group->jobs.at(fire.job_id);
            const protocol::RunAnswer& answer = (*answers)[k];
            if (answer.accepted()) {
                Accepted(fire, job, address, sent_at);
                shared_->queue->Forget(fire.id);
                placed[from + k] = true;
            } else if (IsBlockRefusal(answer)) {
                dispatched_.Labels({"discarded"}).Inc();
                End(fire, &job, FireStatus::kSkipped,
                    "discarded: the job is still running on " + address + " (block strategy discard-later)",
                    model::FireReason::kBlocked);
                shared_->queue->Forget(fire.id);
                placed[from + k] = true;
            }
            // Anything else (busy, capacity, stale epoch, a bad field) takes the per-fire path
            // below, which answers it as it would for /v1/run.
        }
        from = to;
    }
    shared_->in_flight -= fires.size();
    if (ahead) {
        // Sent again at their due time, where they are batched or sent one by one as any fire.
        std::vector<model::Fire> at_due;
        for (std::size_t k = 0; k < fires.size(); ++k) {
            if (!placed[k]) at_due.push_back(std::move(fires[k]));
        }
        if (!at_due.empty()) co_await SendAtDue(std::move(group), std::move(at_due));
        co_return;
    }
    for (std::size_t k = 0; k < fires.size(); ++k) {
        if (!placed[k]) net::co_spawn(io_, SendOne(group, std::move(fires[k])), net::detached);
    }
}

net::awaitable<void> RunSender::SendOne(GroupPtr group, model::Fire fire) {
    // Runs also when the I/O context destroys this coroutine unfinished, possibly after the
    // sender is gone (a node stopped while a dispatch hung): it touches only the shared state.
    struct Done {
        std::shared_ptr<Shared> shared;
        std::int64_t id;
        ~Done() {
            --shared->in_flight;
            shared->queue->Forget(id);
        }
    } done{shared_, fire.id};
    ++shared_->in_flight;

    const auto job_it = group->jobs.find(fire.job_id);
    if (job_it == group->jobs.end()) {
        End(fire, nullptr, FireStatus::kSkipped, "job deleted", model::FireReason::kJobDeleted);
        co_return;
    }
    const model::Job& job = job_it->second;
    if (!job.enabled && fire.kind != model::FireKind::kManual) {
        End(fire, &job, FireStatus::kSkipped, "job paused", model::FireReason::kPaused);
        co_return;
    }
    if (auto late = MisfireVerdict(group->fires, fire, job, time_.NowMs(), Ms(config_.misfire_threshold))) {
        dispatched_.Labels({"misfire"}).Inc();
        LogFire(spdlog::level::warn, fire, job.app, group->epoch, "slave {}: fire {} of job {} ({}) skipped: {}",
                node_id_, fire.id, job.id, job.name, *late);
        End(fire, &job, FireStatus::kSkipped, *late, model::FireReason::kMisfire);
        co_return;
    }

    std::vector<std::string> addresses = Serving(*group->registry, job.app, job.handler);
    if (addresses.empty()) {
        // No instance in the group's copy of the registry. Right after a database outage that
        // copy can predate the instances' first heartbeat since (their rows aged past
        // executor-ttl while nothing could be written): look again, with backoff, until
        // dispatch-timeout before failing the fire.
        const auto until = std::chrono::steady_clock::now() + config_.dispatch_timeout;
        Backoff backoff(100ms, 1s);
        net::steady_timer pause(io_);
        while (addresses.empty() && std::chrono::steady_clock::now() + backoff.base() < until && !shared_->stopping) {
            const Micros wait = backoff.Next();
            pause.expires_after(wait);
            try {
                co_await pause.async_wait(net::use_awaitable);
            } catch (const boost::system::system_error&) {
            }
            addresses = co_await directory_.LiveCandidates(job.app, job.handler, wait);
        }
    }
    const Routing routing = job.routing;
    const auto order = router_.Order(routing, job.id, addresses, fire.shard_index);
    const Probe probe = ProbeFor(routing);
    http::CallOptions call{.timeout = config_.dispatch_timeout};

    std::int64_t epoch = group->epoch;
    std::string run = RunJson(fire, job, epoch, group->run_params).dump();
    bool restamped = false;
    const std::string app = job.app;
    std::string reasons;
    const auto note = [&](const std::string& address, const std::string& reason, const std::string& metric) {
        reasons += (reasons.empty() ? "" : "; ") + address + ": " + reason;
        dispatch_errors_.Labels({metric}).Inc();
    };
    // Instances that answer 429/503 are busy, not broken: while every instance is busy the
    // order is tried again with backoff until dispatch-timeout, so a burst larger than the
    // executors' limits is delivered late rather than failed.
    const auto give_up_at = std::chrono::steady_clock::now() + config_.dispatch_timeout;
    Backoff backoff(10ms, 200ms);
    for (;;) {
        bool all_busy = !order.empty();
        reasons.clear();
        for (std::size_t a = 0; a < order.size(); ++a) {
            const std::string& address = order[a];
            const std::string base = "http://" + address;
            if (probe == Probe::kBeat) {
                const std::string beat_url = base + std::string(protocol::kBeatPath);
                const std::string no_body;
                auto beat = co_await executors_.Send(app, http::Method::kGet, beat_url, no_body, call);
                if (!beat.ok() || !beat->ok()) {
                    all_busy = false;
                    note(address, "beat failed", "beat");
                    continue;
                }
            } else if (probe == Probe::kIdleBeat) {
                const std::string idle_body = protocol::ToJson(protocol::IdleBeatRequest{.job_id = job.id}).dump();
                const std::string idle_url = base + std::string(protocol::kIdleBeatPath);
                auto idle = co_await executors_.Send(app, http::Method::kPost, idle_url, idle_body, call);
                if (!idle.ok() || !idle->ok()) {
                    all_busy = false;
                    note(address, idle.ok() ? "busy" : idle.status().message(), "busy");
                    continue;
                }
            }
            const bool slot = co_await directory_.AcquireCall(address);
            if (!slot) {
                note(address, "max-calls-per-executor calls open for dispatch-timeout", "saturated");
                continue;
            }
            const std::string run_url = base + std::string(protocol::kRunPath);
            const std::int64_t sent_at = time_.NowMs();
            auto response = co_await executors_.Send(app, http::Method::kPost, run_url, run, call);
            directory_.ReleaseCall(address);
            if (!response.ok()) {
                all_busy = false;
                note(address, response.status().message(), "transport");
                continue;
            }
            const protocol::RunAnswer answer = ReadAnswer(*response);
            if (answer.accepted()) {
                if (restamped && answer.duplicate) {
                    // The instance took this run before the re-stamp (an answer this node did not
                    // get). A current SDK reports it under the newest epoch it was sent with; an
                    // older one under the first, which the cluster refuses (stale_epoch), and
                    // the fire then ends only by its job's timeout or its executor's loss.
                    LogFire(spdlog::level::warn, fire, app, epoch,
                            "slave {}: fire {} re-stamped to epoch {} was already running on {} (duplicate)", node_id_,
                            fire.id, epoch, address);
                }
                Accepted(fire, job, address, sent_at);
                co_return;
            }
            const std::string& field = answer.field();
            if (answer.status == 409 && field == "epoch" && !restamped) {
                // The instance has seen a newer master than the one in force at the claim (a
                // failover since, e.g. while the group waited for its due time). The fire is
                // still this claim's to send if it is still dispatching under its token: stamp
                // it with the current epoch and ask the same instance again, once.
                restamped = true;
                const std::int64_t token = group->token;
                const std::int64_t id = fire.id;
                auto restamp = [this, id, token] {
                    return ports_.restamp(id, token);
                };
                auto fresh = co_await OnPool(db_pool_, restamp);
                if (fresh.ok() && !fresh->has_value()) {
                    LogFire(spdlog::level::warn, fire, app, epoch,
                            "slave {}: fire {} is no longer this node's to send (its claim was ended elsewhere)",
                            node_id_, fire.id);
                    co_return;
                }
                if (fresh.ok() && **fresh > epoch) {
                    LogFire(spdlog::level::info, fire, app, **fresh,
                            "slave {}: fire {} re-stamped from epoch {} to {} after {} refused the older one", node_id_,
                            fire.id, epoch, **fresh, address);
                    epoch = **fresh;
                    run = RunJson(fire, job, epoch, group->run_params).dump();
                    --a;  // the same instance again
                    continue;
                }
            }
            if (IsBlockRefusal(answer)) {
                dispatched_.Labels({"discarded"}).Inc();
                End(fire, &job, FireStatus::kSkipped,
                    "discarded: the job is still running on " + address + " (block strategy discard-later)",
                    model::FireReason::kBlocked);
                co_return;
            }
            if (response->status != 429 && response->status != 503) all_busy = false;
            note(address, "HTTP " + std::to_string(response->status) + (field.empty() ? "" : " (" + field + ")"),
                 "http_" + std::to_string(response->status));
        }
        if (!all_busy || std::chrono::steady_clock::now() + backoff.base() >= give_up_at) break;
        net::steady_timer pause(io_);
        pause.expires_after(backoff.Next());
        try {
            co_await pause.async_wait(net::use_awaitable);
        } catch (const boost::system::system_error&) {
        }
    }
    dispatched_.Labels({"failed"}).Inc();
    std::string why = "no executor accepted the fire: " + reasons;
    if (order.empty()) why = "no live executor of app " + job.app + " serves handler " + job.handler;
    End(fire, &job, FireStatus::kFailed, std::move(why), model::FireReason::kNoExecutor);
}

void RunSender::Kill(std::int64_t fire_id, std::string app, std::string address) {
    net::co_spawn(io_, SendKill(fire_id, std::move(app), std::move(address)), net::detached);
}

net::awaitable<void> RunSender::SendKill(std::int64_t fire_id, std::string app, std::string address) {
    const http::CallOptions call{.timeout = config_.dispatch_timeout};
    const std::string body = protocol::ToJson(protocol::KillRequest{.fire_id = fire_id}).dump();
    const std::string url = "http://" + address + std::string(protocol::kKillPath);
    auto killed = co_await executors_.Send(app, http::Method::kPost, url, body, call);
    if (!killed.ok() || !killed->ok()) {
        spdlog::warn("slave {}: kill of fire {} on {} (stopped by its job's overlap policy) failed: {}", node_id_,
                     fire_id, address,
                     killed.ok() ? "HTTP " + std::to_string(killed->status) : killed.status().message());
    }
}

void RunSender::Accepted(const model::Fire& fire, const model::Job& job, const std::string& address,
                         std::int64_t sent_at) {
    // A run sent ahead starts at its due time: that is its started_at. Its timeout is watched
    // from the 202 plus the hold asked for plus kHeldTimeoutSlackMs: the executor starts it a
    // little after the due time (the request's transit, start_in_ms rounded up to whole
    // milliseconds), and its own deadline must pass first, as for a run sent at its due time
    // (whose watch starts after the executor started it), so that it ends `timeout` by its own
    // report rather than `killed` by the node's kill.
    const std::int64_t now = time_.NowMs();
    const std::int64_t held_ms = fire.due_at > sent_at ? fire.due_at - sent_at + kHeldTimeoutSlackMs : std::int64_t{0};
    ports_.accepted({.fire_id = fire.id,
                     .app = job.app,
                     .address = address,
                     .started_at = std::max(now, fire.due_at),
                     .timeout_ms = job.timeout_ms,
                     .held_ms = held_ms,
                     .stoppable = OverlapPolicy(job.block_strategy) == BlockStrategy::kCancelOther ||
                                  OverlapPolicy(job.block_strategy) == BlockStrategy::kTerminateOther,
                     .trace = protocol::FireTracer::On() && job.timeout_ms > 0
                                  ? std::optional(PendingFireSpan::Ended(fire, job.app, 0, FireStatus::kTimeout))
                                  : std::nullopt});
    router_.RecordDispatch(job.id, address);
    LogFire(spdlog::level::debug, fire, job.app, fire.dispatch_epoch.value_or(fire.epoch),
            "slave {}: fire {} accepted by {} (due in {} ms)", node_id_, fire.id, address, fire.due_at - now);
    lag_.Observe(static_cast<double>(std::max<std::int64_t>(0, sent_at - fire.due_at)) / 1000.0);
    dispatched_.Labels({"accepted"}).Inc();
    if (protocol::FireTracer::On()) {
        protocol::FireTracer::Step(FireRefOf(fire, job.app), protocol::FireStep::kSent, sent_at * kNanosPerMs,
                                   now * kNanosPerMs);
    }
}

// Queued with the slave's other endings: a burst that cannot be sent (no live instance of its
// app, every instance refusing) is then one transaction, not one per fire.
void RunSender::End(const model::Fire& fire, const model::Job* job, FireStatus to, std::string message,
                    std::optional<model::FireReason> reason) {
    if (job) fire_outcomes_.Ended(job->app, job->id, to);
    LogFire(spdlog::level::debug, fire, job ? std::string_view(job->app) : std::string_view(),
            fire.dispatch_epoch.value_or(fire.epoch), "slave {}: fire {} ended {} before it ran: {}", node_id_, fire.id,
            model::FireStatusName(to), message);
    const std::int64_t now = time_.NowMs();
    ports_.ended({.id = fire.id,
                  .from = FireStatus::kDispatching,
                  .to = to,
                  .message = std::move(message),
                  .reason = reason,
                  .finished_at = now,
                  .span = protocol::FireTracer::On()
                              ? std::optional(PendingFireSpan::Ended(
                                    fire, job ? std::string_view(job->app) : std::string_view(), now, to))
                              : std::nullopt});
}

}  // namespace sched::trigger
