#include "sched/trigger/slave.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "sched/common/backoff.hpp"
#include "sched/common/on_pool.hpp"
#include "sched/cron/misfire.hpp"
#include "sched/protocol/run.hpp"
#include "sched/protocol/run_answer.hpp"
#include "sched/protocol/run_batch.hpp"

namespace sched::trigger {

using namespace std::chrono_literals;
using store::FireStatus;

namespace {

std::int64_t Ms(Micros d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

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

// A /v1/run body for `fire` of `job`, claimed in a group at `epoch`. `run_params`: the
// group's workflow-run params; a step of a run triggered with params gets them instead of
// its job's (docs/workflows.md "Manual trigger").
nlohmann::json RunJson(const store::Fire& fire, const store::Job& job, std::int64_t epoch,
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
    run.block_strategy = job.block_strategy;
    return protocol::ToJson(run);
}

// A batch stays well under the executor's body limit (1 MiB by default): larger bodies are cut
// into several requests.
constexpr std::size_t kBatchBodyBytes = std::size_t{512} * 1024;
// How long an instance that answered 404 for /v1/runs (an older SDK) gets runs one by one
// before a batch is tried again (it may have been upgraded in place).
constexpr auto kNoBatchRetry = std::chrono::minutes(1);
// Room for a run's separator and its start_in_ms field in a batch's byte budget.
constexpr std::size_t kStartInBytes = 32;
// How much later than a held run's due time the node's timeout watch starts (see Accepted).
constexpr std::int64_t kHeldTimeoutSlackMs = 50;
// The most unknown fires a poll reads whole in one statement (an id list; a restarted node may
// find thousands assigned to it).
constexpr std::size_t kFindChunk = 1000;
// A fire due sooner than this is not sent ahead: the hold would be shorter than the request.
constexpr std::int64_t kMinAheadMs = 2;

std::int64_t NewClaimToken() {
    // Random, so that two slaves (or two processes under one node id) never share a token; a
    // positive 63-bit value fits every backend's BIGINT/INTEGER.
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::int64_t token = 0;
    while (token == 0) token = static_cast<std::int64_t>(rng() >> 1);
    return token;
}

using Registry = std::map<std::string, std::vector<store::ExecutorInstance>>;

// The addresses of `app`'s live instances that serve `handler`.
std::vector<std::string> Serving(const Registry& registry, const std::string& app, const std::string& handler) {
    std::vector<std::string> addresses;
    if (auto it = registry.find(app); it != registry.end()) {
        for (const auto& e : it->second) {
            if (std::find(e.handlers.begin(), e.handlers.end(), handler) != e.handlers.end()) {
                addresses.push_back(e.address);
            }
        }
    }
    return addresses;
}

}  // namespace

SlaveConfig SlaveConfig::FromYaml(const ConfigNode& node) {
    SlaveConfig c;
    c.enabled = node.Bool("enabled", c.enabled);
    c.capacity = static_cast<int>(node.Int("capacity", c.capacity, 1, 1'000'000));
    c.poll_interval = node.Duration("poll-interval", c.poll_interval, 10ms, std::chrono::minutes(1));
    c.dispatch_timeout = node.Duration("dispatch-timeout", c.dispatch_timeout, 10ms, std::chrono::minutes(1));
    c.executor_ttl = node.Duration("executor-ttl", c.executor_ttl, 100ms, std::chrono::hours(1));
    c.claim_ahead = node.Duration("claim-ahead", c.claim_ahead, Micros{0}, std::chrono::seconds(1));
    c.send_ahead = node.Bool("send-ahead", c.send_ahead);
    c.max_group = static_cast<int>(node.Int("max-group", c.max_group, 1, 10'000));
    c.record_window = node.Duration("record-window", c.record_window, Micros{0}, std::chrono::seconds(1));
    c.max_calls_per_executor =
        static_cast<int>(node.Int("max-calls-per-executor", c.max_calls_per_executor, 1, 10'000));
    c.executor_refresh = node.Duration("executor-refresh", c.executor_refresh, 10ms, std::chrono::minutes(1));
    if (node.Has("executor-token")) {
        throw ConfigError(node.path().empty() ? "executor-token" : node.path() + ".executor-token",
                          "removed: slaves no longer send executors a token; they sign each call with the app's "
                          "signing key (docs/protocol.md). Delete the key; give services an executor token instead");
    }
    return c;
}

/// One claimed group: what every Send of it reads (immutable once built).
struct Slave::Group {
    std::int64_t epoch = 0;
    std::int64_t token = 0;          // the claim's: a fire is still this group's while it carries it
    std::vector<store::Fire> fires;  // won by the claim, earliest due first
    std::map<std::int64_t, store::Job> jobs;
    std::map<std::int64_t, std::string> run_params;  // of workflow runs triggered with params
    std::shared_ptr<const Registry> registry;
};

struct Slave::State {
    std::mutex mu;                 // guards the queue, `known`, `wake_at_ms` and the running batch
    std::set<std::int64_t> known;  // queued, claimed or being sent here; at most kMaxQueued
    bool queue_full_logged = false;
    std::set<std::pair<std::int64_t, std::int64_t>> due;                 // queued, by (due_at, id)
    std::int64_t wake_at_ms = std::numeric_limits<std::int64_t>::min();  // when the group loop wakes
    std::atomic<bool> stopping{false};
    std::atomic<std::size_t> in_flight{0};  // fires in Send or SendBatch
    std::shared_ptr<net::steady_timer> poll_timer;

    // Running records waiting for the next flush: per executor address, the fires it accepted,
    // each with its 202's time; `running_writing` counts the flushes not yet written, from
    // their spawn to their last UPDATE (Stop waits for them: `flush_scheduled` is cleared when
    // a flush takes its batch, before it writes it).
    std::map<std::string, std::vector<store::StartedFire>> running;
    bool flush_scheduled = false;
    std::atomic<int> running_writing{0};
    // Ends (failed, skipped, timed out...) waiting for the next flush, and whether one is
    // scheduled; `endings_writing` counts the flushes still writing (Stop waits for both).
    std::vector<FireEnding> endings;
    bool endings_scheduled = false;
    std::atomic<int> endings_writing{0};

    // Only on the strand: the wake timer, the registry, the call slots.
    std::shared_ptr<net::steady_timer> wake;
    std::shared_ptr<const Registry> registry;
    std::chrono::steady_clock::time_point registry_at{};
    struct Waiter {
        explicit Waiter(net::strand<net::any_io_executor>& s) : timer(s) {}
        net::steady_timer timer;
        bool granted = false;
    };
    struct Calls {
        int open = 0;
        std::deque<std::shared_ptr<Waiter>> waiters;
    };
    std::map<std::string, Calls> calls;

    // Instances that do not serve /v1/runs, or /v1/runs-ahead, until when (guarded by `mu`).
    std::map<std::string, std::chrono::steady_clock::time_point> no_batch;
    std::map<std::string, std::chrono::steady_clock::time_point> no_ahead;
};

Slave::Slave(net::any_io_executor io, net::thread_pool& db_pool, const std::shared_ptr<db::Database>& db,
             const DbTime& time, http::HttpClient& http, std::string node_id, std::string lease_name,
             SlaveConfig config, MetricsRegistry& metrics)
    : Slave(std::move(io), db_pool, std::make_unique<SqlFireClaimStore>(db, std::move(lease_name)),
            std::make_unique<SignedExecutorClient>(
                http, std::make_unique<dispatch::ExecutorSigner>([db] { return db; }, db_pool,
                                                                 [&time] { return time.NowMs(); })),
            time, std::move(node_id), config, metrics) {}

Slave::Slave(net::any_io_executor io, net::thread_pool& db_pool, std::unique_ptr<FireClaimStore> store,
             std::unique_ptr<ExecutorClient> executors, const DbTime& time, std::string node_id, SlaveConfig config,
             MetricsRegistry& metrics)
    : io_(std::move(io)),
      strand_(net::make_strand(io_)),
      db_pool_(db_pool),
      store_(std::move(store)),
      executors_(std::move(executors)),
      time_(time),
      node_id_(std::move(node_id)),
      config_(config),
      state_(std::make_shared<State>()),
      lag_(metrics
               .Histogram("sched_fire_lag_seconds", "Dispatch time minus due time of accepted fires.", {},
                          {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10})
               .Labels({})),
      dispatched_(metrics.Counter("sched_slave_fires_total", "Fires this slave finished dispatching, by outcome.",
                                  {"outcome"})),
      dispatch_errors_(
          metrics.Counter("sched_dispatch_errors_total", "Failed /v1/run attempts, by reason.", {"reason"})),
      claims_(metrics.Counter("sched_slave_claims_total", "Group claims committed by this slave.").Labels({})),
      claimed_fires_(
          metrics.Counter("sched_slave_claimed_fires_total", "Fires won by this slave's group claims.").Labels({})),
      fire_outcomes_(metrics),
      running_batches_(metrics
                           .Counter("sched_slave_running_batches_total",
                                    "Statements recording accepted fires as running (one per executor per window).")
                           .Labels({})),
      run_batches_(metrics
                       .Counter("sched_slave_run_batches_total",
                                "POST /v1/runs requests: the fires of one due time for one executor instance.")
                       .Labels({})) {
    // Known outcomes are exported from the start, at 0, so rate() and alerts see them.
    for (const char* outcome : {"accepted", "discarded", "failed", "misfire"}) dispatched_.Labels({outcome});
}

Slave::~Slave() = default;

std::size_t Slave::Scheduled() const {
    std::lock_guard lock(state_->mu);
    return state_->known.size();
}

void Slave::Start() {
    started_ms_ = time_.NowMs();
    net::co_spawn(io_, PollLoop(), net::detached);
    net::co_spawn(strand_, GroupLoop(), net::detached);
}

net::awaitable<void> Slave::PollLoop() {
    auto state = state_;
    state->poll_timer = std::make_shared<net::steady_timer>(io_);
    bool recovered = false;
    while (!state->stopping) {
        if (!recovered) {
            // A process that restarts under its node id within node-ttl never looks dead to the
            // master, so the master's orphan rule (dispatching fires of dead slaves become lost)
            // never sees the fires its previous incarnation was dispatching: those claimed
            // before this process started are that earlier run's; they may or may not have
            // reached the executor, hence lost, as for a dead slave.
            const std::int64_t now = time_.NowMs();
            auto ended = co_await OnPool(
                db_pool_, [this, now] { return store_->EndEarlierDispatches(node_id_, started_ms_, now); });
            recovered = ended.ok();
            if (!ended.ok()) {
                spdlog::warn("slave {}: cannot end the dispatches of an earlier run yet: {}", node_id_,
                             ended.status().ToString());
            } else if (*ended > 0) {
                spdlog::warn("slave {}: {} fires were dispatching when this node's previous process ended: marked lost",
                             node_id_, *ended);
            }
        }
        // The ids first; only the fires not known here (a notification lost, a node restarted)
        // are read whole, in chunks. Normally every one is known and the poll is one index read.
        auto ids = co_await OnPool(db_pool_, [this] { return store_->ListPendingIds(node_id_, 10000); });
        if (ids.ok()) {
            const auto unknown = Unknown(*ids);
            for (std::size_t from = 0; from < unknown.size(); from += kFindChunk) {
                const std::vector<std::int64_t> chunk(
                    unknown.begin() + static_cast<std::ptrdiff_t>(from),
                    unknown.begin() + static_cast<std::ptrdiff_t>(std::min(unknown.size(), from + kFindChunk)));
                auto fires = co_await OnPool(db_pool_, [this, &chunk] { return store_->FindPending(node_id_, chunk); });
                if (!fires.ok()) {
                    spdlog::warn("slave {}: cannot read polled fires: {}", node_id_, fires.status().ToString());
                    break;
                }
                Track(Queued(*fires));
            }
        } else {
            spdlog::warn("slave {}: cannot poll assigned fires: {}", node_id_, ids.status().ToString());
        }
        state->poll_timer->expires_after(config_.poll_interval);
        try {
            co_await state->poll_timer->async_wait(net::use_awaitable);
        } catch (const boost::system::system_error&) {
            // Cancelled by Stop().
        }
    }
}

std::vector<std::int64_t> Slave::Unknown(const std::vector<std::int64_t>& ids) const {
    std::vector<std::int64_t> unknown;
    std::lock_guard lock(state_->mu);
    for (const std::int64_t id : ids) {
        if (!state_->known.contains(id)) unknown.push_back(id);
    }
    return unknown;
}

// Queued as the master wrote them, unread: the claim reads each row anyway (and holds the
// slave to its own pending fires), so reading them here too was a second SELECT of every fire
// between the scan and the claim (issue 20: 1,147 statements and 60,000 rows examined per
// 15,000 fires at 1,000 fires/s, as MariaDB ranged over every pending fire of the node).
// Unread also means unchecked: ids that name no fire of this node, or a due time far ahead,
// stay queued until that time. Hence the horizon here and the cap in Track (a notice needs the
// cluster token, but a peer's bug must not grow this node's memory without bound).
void Slave::Notify(const std::vector<protocol::NoticedFire>& fires) {
    if (state_->stopping || fires.empty()) return;
    const std::int64_t horizon = time_.NowMs() + kNoticeHorizonMs;
    std::vector<protocol::NoticedFire> near;
    near.reserve(fires.size());
    for (const auto& f : fires) {
        if (f.due_at <= horizon) near.push_back(f);
    }
    Track(near);
}

void Slave::NotifyIds(std::vector<std::int64_t> fire_ids) {
    if (state_->stopping || fire_ids.empty()) return;
    net::co_spawn(
        io_,
        [this, ids = std::move(fire_ids)]() -> net::awaitable<void> {
            auto fires = co_await OnPool(db_pool_, [this, &ids] { return store_->FindPending(node_id_, ids); });
            if (!fires.ok()) co_return;  // the poll will find them
            Track(Queued(*fires));
        },
        net::detached);
}

std::vector<protocol::NoticedFire> Slave::Queued(const std::vector<store::Fire>& fires) {
    std::vector<protocol::NoticedFire> out;
    out.reserve(fires.size());
    for (const auto& f : fires) out.push_back({.id = f.id, .due_at = f.due_at});
    return out;
}

// A poll's or a notice's fires are queued under one lock: queued one by one, the group loop
// (on another thread) could wake between two of them and claim a burst in pieces, each piece a
// group of its own with its own claim and no batch request shared with the rest.
void Slave::Track(const std::vector<protocol::NoticedFire>& fires) {
    auto state = state_;
    bool poke = false;
    {
        std::lock_guard lock(state->mu);
        if (state->stopping) return;
        if (state->known.size() < kMaxQueued * 9 / 10) state->queue_full_logged = false;  // room again
        for (const auto& fire : fires) {
            if (state->known.size() >= kMaxQueued) {
                if (!state->queue_full_logged) {
                    spdlog::warn("slave {}: {} fires queued, claimed or being sent; more wait for a later poll",
                                 node_id_, kMaxQueued);
                    state->queue_full_logged = true;
                }
                break;
            }
            if (!state->known.insert(fire.id).second) continue;
            state->due.emplace(fire.due_at, fire.id);
            // The group loop sleeps until wake_at_ms; a fire to claim before then wakes it. The
            // cancel runs on the loop's strand, so it cannot slip between the loop's look at the
            // queue and its wait (both happen in one run on the strand).
            poke = poke || fire.due_at - Ms(config_.claim_ahead) < state->wake_at_ms;
        }
    }
    if (poke) {
        net::post(strand_, [state] {
            if (state->wake) state->wake->cancel();
        });
    }
}

std::size_t Slave::InFlight() const {
    return state_->in_flight.load();
}

void Slave::Forget(std::int64_t fire_id) {
    std::lock_guard lock(state_->mu);
    state_->known.erase(fire_id);
}

// Runs on strand_. One timer for every waiting fire: it wakes when the earliest is within
// claim-ahead of due, and claims as one group every fire due within the next claim-ahead
// after that (so fires spread over time are claimed in groups too, each between claim-ahead
// and twice claim-ahead before its due time); with claim-ahead 0, the fires due now.
net::awaitable<void> Slave::GroupLoop() {
    auto state = state_;
    state->wake = std::make_shared<net::steady_timer>(strand_);
    const std::int64_t ahead = Ms(config_.claim_ahead);
    while (!state->stopping) {
        const std::int64_t now = time_.NowMs();
        std::vector<std::int64_t> ready;
        std::int64_t wait_ms = Ms(config_.poll_interval);
        {
            std::lock_guard lock(state->mu);
            const bool woken = !state->due.empty() && state->due.begin()->first <= now + ahead;
            const std::int64_t horizon = now + 2 * ahead;
            while (woken && !state->due.empty() && state->due.begin()->first <= horizon &&
                   static_cast<int>(ready.size()) < config_.max_group) {
                ready.push_back(state->due.begin()->second);
                state->due.erase(state->due.begin());
            }
            if (!state->due.empty()) wait_ms = std::min(wait_ms, state->due.begin()->first - ahead - now);
            // While it claims, the loop looks at the queue again before it sleeps: no wake-up needed.
            state->wake_at_ms = ready.empty() ? now + wait_ms : std::numeric_limits<std::int64_t>::min();
        }
        if (!ready.empty()) {
            co_await ClaimAndSend(std::move(ready));
            continue;
        }
        state->wake->expires_after(std::chrono::milliseconds(std::max<std::int64_t>(0, wait_ms)));
        try {
            co_await state->wake->async_wait(net::use_awaitable);
        } catch (const boost::system::system_error&) {
            // Woken by Track or Stop.
        }
    }
}

// Runs on strand_ (part of the group loop): claims stay in order and one at a time, each
// bounded by max-group.
net::awaitable<void> Slave::ClaimAndSend(std::vector<std::int64_t> ids) {
    auto state = state_;
    const std::int64_t token = NewClaimToken();
    const auto claim_started = std::chrono::steady_clock::now();
    Backoff backoff(10ms, 1s);
    std::optional<ClaimedGroup> claimed;
    while (!claimed) {
        const std::int64_t now = time_.NowMs();
        auto got =
            co_await OnPool(db_pool_, [this, &ids, token, now] { return store_->Claim(node_id_, ids, token, now); });
        if (got.ok()) {
            claimed = std::move(*got);
            break;
        }
        spdlog::warn("slave {}: cannot claim a group of {} fires (retrying in {} ms): {}", node_id_, ids.size(),
                     Ms(backoff.base()), got.status().ToString());
        if (state->stopping) {
            // Still pending, or claimed with this token by a commit the error hid: the master
            // hands the first to another slave and ends the second as lost with this node.
            for (auto id : ids) Forget(id);
            co_return;
        }
        net::steady_timer pause(strand_);
        pause.expires_after(backoff.Next());
        try {
            co_await pause.async_wait(net::use_awaitable);
        } catch (const boost::system::system_error&) {
        }
    }
    claims_.Inc();
    claimed_fires_.Inc(static_cast<double>(claimed->fires.size()));
    std::set<std::int64_t> won;
    for (const auto& f : claimed->fires) won.insert(f.id);
    for (auto id : ids) {
        if (!won.contains(id)) Forget(id);  // claimed elsewhere, or no longer pending
    }
    if (claimed->fires.empty()) co_return;

    auto group = std::make_shared<Group>();
    group->epoch = claimed->epoch;
    group->token = token;
    group->fires = std::move(claimed->fires);
    for (auto& job : claimed->jobs) group->jobs.emplace(job.id, std::move(job));
    group->run_params = std::move(claimed->run_params);

    // The registry changes every few seconds (heartbeats), not every fire: one read per
    // executor-refresh, and again when a fire's app has no instance in a copy read before this
    // claim began (a service that just registered).
    bool refresh = !state->registry || std::chrono::steady_clock::now() - state->registry_at > config_.executor_refresh;
    if (!refresh && state->registry_at < claim_started) {
        for (const auto& [id, job] : group->jobs) {
            if (!state->registry->contains(job.app)) {
                refresh = true;
                break;
            }
        }
    }
    if (refresh) co_await ReadRegistry();
    group->registry = state->registry;
    net::co_spawn(io_, SendGroup(std::move(group)), net::detached);
}

// With send-ahead, the fires an executor can hold go now, one POST /v1/runs-ahead per
// instance, each run with the time left to its due time; the rest leave at their due time.
net::awaitable<void> Slave::SendGroup(std::shared_ptr<const Group> group) {
    std::vector<store::Fire> at_due = config_.send_ahead ? SendAhead(group) : group->fires;
    co_await SendAtDue(group, std::move(at_due));
}

// Only fires whose job runs serially: an executor admits a run on arrival, so under
// discard-later a run still going then (but done by the due time) would discard the held one,
// and cover-early would end it early. Serial holds the run behind it, as at the due time.
std::vector<store::Fire> Slave::SendAhead(const std::shared_ptr<const Group>& group) {
    const std::int64_t now = time_.NowMs();
    std::vector<store::Fire> at_due;
    Batches batches;
    for (const auto& fire : group->fires) {
        if (fire.due_at - now >= kMinAheadMs) {
            const auto job = group->jobs.find(fire.job_id);
            if (job != group->jobs.end() && job->second.block_strategy == BlockStrategy::kSerial) {
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

void Slave::SendBatches(const std::shared_ptr<const Group>& group, Batches& batches, Batch kind) {
    for (auto& [key, list] : batches) {
        for (std::size_t from = 0; from < list.size(); from += protocol::kMaxRunsPerBatch) {
            const std::size_t to = std::min(list.size(), from + protocol::kMaxRunsPerBatch);
            std::vector<store::Fire> chunk(std::make_move_iterator(list.begin() + static_cast<std::ptrdiff_t>(from)),
                                           std::make_move_iterator(list.begin() + static_cast<std::ptrdiff_t>(to)));
            net::co_spawn(io_, SendBatch(group, key.first, key.second, std::move(chunk), kind), net::detached);
        }
    }
}

// One timer for `fires` (earliest due first): each due time's fires leave at it, all at once
// and concurrently.
net::awaitable<void> Slave::SendAtDue(std::shared_ptr<const Group> group, std::vector<store::Fire> fires) {
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
        std::vector<store::Fire> now_due;
        for (; i < fires.size() && fires[i].due_at <= due; ++i) now_due.push_back(std::move(fires[i]));
        DispatchDue(group, std::move(now_due));
    }
}

// Runs on strand_: a call slot to `address`, waiting up to dispatch-timeout for one to free up.
net::awaitable<bool> Slave::AcquireCall(std::string address) {
    auto state = state_;
    auto& calls = state->calls[address];
    if (calls.open < config_.max_calls_per_executor) {
        ++calls.open;
        co_return true;
    }
    auto waiter = std::make_shared<State::Waiter>(strand_);
    waiter->timer.expires_after(config_.dispatch_timeout);
    calls.waiters.push_back(waiter);
    try {
        co_await waiter->timer.async_wait(net::use_awaitable);
    } catch (const boost::system::system_error&) {
        // Cancelled by ReleaseCall, which handed over its slot.
    }
    if (waiter->granted) co_return true;
    auto& q = state->calls[address].waiters;
    q.erase(std::remove(q.begin(), q.end(), waiter), q.end());
    co_return false;
}

void Slave::ReleaseCall(const std::string& address) {
    auto state = state_;
    net::post(strand_, [state, address] {
        auto& calls = state->calls[address];
        if (!calls.waiters.empty()) {
            auto next = calls.waiters.front();
            calls.waiters.pop_front();
            next->granted = true;  // the slot passes to it; `open` is unchanged
            next->timer.cancel();
            return;
        }
        --calls.open;
    });
}

// Every argument of a co_await'ed call is a named value, never a temporary (a literal, a
// concatenation, a ?: result, a braced list): g++ 12 destroys such temporaries twice in a
// coroutine frame (a double free seen here) or rejects them ("array used as initializer").
net::awaitable<void> Slave::Send(std::shared_ptr<const Group> group, store::Fire fire) {
    // Runs also when the I/O context destroys this coroutine unfinished, possibly after the
    // Slave is gone (a node stopped while a dispatch hung): it touches only the shared state.
    struct Done {
        std::shared_ptr<State> state;
        std::int64_t id;
        ~Done() {
            --state->in_flight;
            std::lock_guard lock(state->mu);
            state->known.erase(id);
        }
    } done{state_, fire.id};
    ++state_->in_flight;

    const auto job_it = group->jobs.find(fire.job_id);
    if (job_it == group->jobs.end()) {
        const std::string why = "job deleted";
        const std::optional<store::FireReason> reason = store::FireReason::kJobDeleted;
        co_await Finish(fire.id, FireStatus::kDispatching, FireStatus::kSkipped, why, reason);
        co_return;
    }
    const store::Job& job = job_it->second;
    if (!job.enabled && fire.kind != store::FireKind::kManual) {
        const std::string why = "job paused";
        const std::optional<store::FireReason> reason = store::FireReason::kPaused;
        fire_outcomes_.Ended(job.app, job.id, FireStatus::kSkipped);
        co_await Finish(fire.id, FireStatus::kDispatching, FireStatus::kSkipped, why, reason);
        co_return;
    }
    if (auto late = MisfireVerdict(*group, fire, job, time_.NowMs())) {
        dispatched_.Labels({"misfire"}).Inc();
        spdlog::warn("slave {}: fire {} of job {} ({}) skipped: {}", node_id_, fire.id, job.id, job.name, *late);
        const std::string why = *late;
        const std::optional<store::FireReason> reason = store::FireReason::kMisfire;
        fire_outcomes_.Ended(job.app, job.id, FireStatus::kSkipped);
        co_await Finish(fire.id, FireStatus::kDispatching, FireStatus::kSkipped, why, reason);
        co_return;
    }

    std::vector<std::string> addresses = Candidates(*group, job);
    if (addresses.empty()) {
        // No instance in the group's copy of the registry. Right after a database outage that
        // copy can predate the instances' first heartbeat since (their rows aged past
        // executor-ttl while nothing could be written): look again, with backoff, until
        // dispatch-timeout before failing the fire.
        const auto until = std::chrono::steady_clock::now() + config_.dispatch_timeout;
        Backoff backoff(100ms, 1s);
        net::steady_timer pause(io_);
        while (addresses.empty() && std::chrono::steady_clock::now() + backoff.base() < until && !state_->stopping) {
            const Micros wait = backoff.Next();
            pause.expires_after(wait);
            try {
                co_await pause.async_wait(net::use_awaitable);
            } catch (const boost::system::system_error&) {
            }
            auto look = LiveCandidates(job.app, job.handler, wait);
            addresses = co_await net::co_spawn(strand_, std::move(look), net::use_awaitable);
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
                auto beat = co_await executors_->Send(app, http::Method::kGet, beat_url, no_body, call);
                if (!beat.ok() || !beat->ok()) {
                    all_busy = false;
                    note(address, "beat failed", "beat");
                    continue;
                }
            } else if (probe == Probe::kIdleBeat) {
                const std::string idle_body = protocol::ToJson(protocol::IdleBeatRequest{.job_id = job.id}).dump();
                const std::string idle_url = base + std::string(protocol::kIdleBeatPath);
                auto idle = co_await executors_->Send(app, http::Method::kPost, idle_url, idle_body, call);
                if (!idle.ok() || !idle->ok()) {
                    all_busy = false;
                    note(address, idle.ok() ? "busy" : idle.status().message(), "busy");
                    continue;
                }
            }
            auto acquire = AcquireCall(address);
            const bool slot = co_await net::co_spawn(strand_, std::move(acquire), net::use_awaitable);
            if (!slot) {
                note(address, "max-calls-per-executor calls open for dispatch-timeout", "saturated");
                continue;
            }
            const std::string run_url = base + std::string(protocol::kRunPath);
            const std::int64_t sent_at = time_.NowMs();
            auto response = co_await executors_->Send(app, http::Method::kPost, run_url, run, call);
            ReleaseCall(address);
            if (!response.ok()) {
                all_busy = false;
                note(address, response.status().message(), "transport");
                continue;
            }
            const protocol::RunAnswer answer = ReadAnswer(*response);
            if (answer.accepted()) {
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
                auto fresh = co_await OnPool(db_pool_, [this, id, token] { return store_->Restamp(id, token); });
                if (fresh.ok() && !fresh->has_value()) {
                    spdlog::warn("slave {}: fire {} is no longer this node's to send (its claim was ended elsewhere)",
                                 node_id_, fire.id);
                    co_return;
                }
                if (fresh.ok() && **fresh > epoch) {
                    spdlog::info("slave {}: fire {} re-stamped from epoch {} to {} after {} refused the older one",
                                 node_id_, fire.id, epoch, **fresh, address);
                    epoch = **fresh;
                    run = RunJson(fire, job, epoch, group->run_params).dump();
                    --a;  // the same instance again
                    continue;
                }
            }
            if (answer.status == 409 && field == "block_strategy") {
                dispatched_.Labels({"discarded"}).Inc();
                const std::string why =
                    "discarded: the job is still running on " + address + " (block strategy discard-later)";
                const std::optional<store::FireReason> reason = store::FireReason::kBlocked;
                fire_outcomes_.Ended(job.app, job.id, FireStatus::kSkipped);
                co_await Finish(fire.id, FireStatus::kDispatching, FireStatus::kSkipped, why, reason);
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
    const std::optional<store::FireReason> reason = store::FireReason::kNoExecutor;
    fire_outcomes_.Ended(job.app, job.id, FireStatus::kFailed);
    co_await Finish(fire.id, FireStatus::kDispatching, FireStatus::kFailed, why, reason);
}

std::vector<std::string> Slave::Candidates(const Group& group, const store::Job& job) const {
    return Serving(*group.registry, job.app, job.handler);
}

net::awaitable<std::vector<std::string>> Slave::LiveCandidates(std::string app, std::string handler, Micros max_age) {
    auto state = state_;
    if (!state->registry || std::chrono::steady_clock::now() - state->registry_at > max_age) co_await ReadRegistry();
    co_return Serving(*state->registry, app, handler);
}

net::awaitable<void> Slave::ReadRegistry() {
    auto state = state_;
    const auto read_at = std::chrono::steady_clock::now();
    auto live = co_await OnPool(db_pool_, [this] { return store_->LiveExecutors(Ms(config_.executor_ttl)); });
    if (live.ok()) {
        auto registry = std::make_shared<Registry>();
        for (auto& e : *live) (*registry)[e.app].push_back(std::move(e));
        state->registry = std::move(registry);
        state->registry_at = read_at;
        co_return;
    }
    spdlog::warn("slave {}: cannot read the executor registry (using the copy of {} ms ago): {}", node_id_,
                 std::chrono::duration_cast<std::chrono::milliseconds>(read_at - state->registry_at).count(),
                 live.status().ToString());
    if (!state->registry) state->registry = std::make_shared<Registry>();
}

void Slave::Accepted(const store::Fire& fire, const store::Job& job, const std::string& address, std::int64_t sent_at) {
    // A run sent ahead starts at its due time: that is its started_at. Its timeout is watched
    // from the 202 plus the hold asked for plus kHeldTimeoutSlackMs: the executor starts it a
    // little after the due time (the request's transit, start_in_ms rounded up to whole
    // milliseconds), and its own deadline must pass first, as for a run sent at its due time
    // (whose watch starts after the executor started it), so that it ends `timeout` by its own
    // report rather than `killed` by the node's kill.
    const std::int64_t now = time_.NowMs();
    RecordRunning(fire.id, address, std::max(now, fire.due_at));
    const std::int64_t held_ms = fire.due_at > sent_at ? fire.due_at - sent_at + kHeldTimeoutSlackMs : std::int64_t{0};
    router_.RecordDispatch(job.id, address);
    lag_.Observe(static_cast<double>(std::max<std::int64_t>(0, sent_at - fire.due_at)) / 1000.0);
    dispatched_.Labels({"accepted"}).Inc();
    if (job.timeout_ms > 0) {
        net::co_spawn(io_, WatchTimeout(fire.id, job.app, address, job.timeout_ms, held_ms), net::detached);
    }
}

std::optional<std::string> Slave::BatchAddress(const Group& group, const store::Fire& fire, std::int64_t now_ms,
                                               Batch kind) {
    const auto job_it = group.jobs.find(fire.job_id);
    if (job_it == group.jobs.end()) return std::nullopt;
    const store::Job& job = job_it->second;
    if (!job.enabled && fire.kind != store::FireKind::kManual) return std::nullopt;
    if (MisfireVerdict(group, fire, job, now_ms)) return std::nullopt;
    const Routing routing = job.routing;
    if (ProbeFor(routing) != Probe::kNone) return std::nullopt;
    const auto order = router_.Order(routing, job.id, Candidates(group, job), fire.shard_index);
    if (order.empty()) return std::nullopt;
    std::lock_guard lock(state_->mu);
    auto& refused = kind == Batch::kAhead ? state_->no_ahead : state_->no_batch;
    if (auto it = refused.find(order.front()); it != refused.end()) {
        if (std::chrono::steady_clock::now() < it->second) return std::nullopt;
        refused.erase(it);
    }
    return order.front();
}

// The fires of one due time. Per fire, Send would probe, pick an instance and call /v1/run;
// a burst for one instance would be as many requests. Here the fires whose routing needs no
// probe go to their first-choice instance in one request each, and only what a batch did not
// place (busy, refused, transport error) takes the per-fire path, which tries the other
// instances in order as before.
void Slave::DispatchDue(const std::shared_ptr<const Group>& group, std::vector<store::Fire> fires) {
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
        net::co_spawn(io_, Send(group, std::move(fire)), net::detached);
    }
    // A batch of one is a /v1/run: the per-fire path, which also tries the other instances.
    for (auto it = batches.begin(); it != batches.end();) {
        if (it->second.size() == 1) {
            net::co_spawn(io_, Send(group, std::move(it->second.front())), net::detached);
            it = batches.erase(it);
        } else {
            ++it;
        }
    }
    SendBatches(group, batches, Batch::kAtDue);
}

net::awaitable<void> Slave::SendBatch(std::shared_ptr<const Group> group, std::string app, std::string address,
                                      std::vector<store::Fire> fires, Batch kind) {
    const bool ahead = kind == Batch::kAhead;
    const std::string_view path = ahead ? protocol::kRunsAheadPath : protocol::kRunsPath;
    state_->in_flight += fires.size();
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
        auto acquire = AcquireCall(address);
        const bool slot = co_await net::co_spawn(strand_, std::move(acquire), net::use_awaitable);
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
        auto response = co_await executors_->Send(app, http::Method::kPost, url, body, call);
        ReleaseCall(address);
        run_batches_.Inc();
        std::optional<std::vector<protocol::RunAnswer>> answers;
        if (response.ok() && response->status == 200) {
            if (auto parsed = response->Json(); parsed.ok()) answers = protocol::ReadBatchAnswer(*parsed, count);
        }
        if (!answers) {
            if (response.ok() && response->status == 404) {
                spdlog::info("slave {}: executor {} does not serve {} (an older client SDK): {}", node_id_, address,
                             path, ahead ? "runs go at their due time" : "runs go one by one");
                std::lock_guard lock(state_->mu);
                (ahead ? state_->no_ahead : state_->no_batch)[address] =
                    std::chrono::steady_clock::now() + kNoBatchRetry;
            } else {
                dispatch_errors_.Labels({"batch"}).Inc();
                spdlog::warn("slave {}: batch of {} runs to {} failed ({}): {}", node_id_, count, address,
                             response.ok() ? "HTTP " + std::to_string(response->status) : response.status().message(),
                             ahead ? "sending them at their due time" : "sending them one by one");
            }
            break;
        }
        for (std::size_t k = 0; k < count; ++k) {
            const store::Fire& fire = fires[from + k];
            const store::Job& job = group->jobs.at(fire.job_id);
            const protocol::RunAnswer& answer = (*answers)[k];
            if (answer.accepted()) {
                Accepted(fire, job, address, sent_at);
                Forget(fire.id);
                placed[from + k] = true;
                continue;
            }
            const std::string& field = answer.field();
            constexpr std::string_view kBlock = ".block_strategy";
            if (answer.status == 409 && field.size() >= kBlock.size() &&
                field.compare(field.size() - kBlock.size(), kBlock.size(), kBlock) == 0) {
                dispatched_.Labels({"discarded"}).Inc();
                const std::string why =
                    "discarded: the job is still running on " + address + " (block strategy discard-later)";
                const std::optional<store::FireReason> reason = store::FireReason::kBlocked;
                fire_outcomes_.Ended(job.app, job.id, FireStatus::kSkipped);
                co_await Finish(fire.id, FireStatus::kDispatching, FireStatus::kSkipped, why, reason);
                Forget(fire.id);
                placed[from + k] = true;
            }
            // Anything else (busy, capacity, stale epoch, a bad field) takes the per-fire path
            // below, which answers it as it would for /v1/run.
        }
        from = to;
    }
    state_->in_flight -= fires.size();
    if (ahead) {
        // Sent again at their due time, where they are batched or sent one by one as any fire.
        std::vector<store::Fire> at_due;
        for (std::size_t k = 0; k < fires.size(); ++k) {
            if (!placed[k]) at_due.push_back(std::move(fires[k]));
        }
        if (!at_due.empty()) co_await SendAtDue(std::move(group), std::move(at_due));
        co_return;
    }
    for (std::size_t k = 0; k < fires.size(); ++k) {
        if (!placed[k]) net::co_spawn(io_, Send(group, std::move(fires[k])), net::detached);
    }
}

std::optional<std::string> Slave::MisfireVerdict(const Group& group, const store::Fire& fire, const store::Job& job,
                                                 std::int64_t now_ms) const {
    // Only planned times: manual, retry and misfire fires run whenever they are sent. A planned
    // fire normally leaves at its time; it is late when this node was stopped (SIGSTOP, a VM
    // pause, a long GC of the database) past its time, and then the job's policy decides as the
    // master's would have (PlanMisfire), instead of sending every stale fire at once.
    // Lateness counts from when the fire could first be sent: its time, or its creation when
    // the master planned it already due (the master judged it then, by the same threshold;
    // judging it again from its time would skip on-time fires the master just kept).
    if (fire.kind != store::FireKind::kSchedule) return std::nullopt;
    const std::int64_t threshold =
        std::chrono::duration_cast<std::chrono::milliseconds>(config_.misfire_threshold).count();
    const std::int64_t late = now_ms - std::max(fire.scheduled_time, fire.created_at);
    if (late <= threshold) return std::nullopt;
    const std::string how_late = "misfire: planned for " + std::to_string(fire.scheduled_time) + ", sent " +
                                 std::to_string(late) + " ms late (misfire-threshold " + std::to_string(threshold) +
                                 " ms)";
    switch (job.misfire_policy) {
        case cron::MisfirePolicy::kFireAll:
            return std::nullopt;
        case cron::MisfirePolicy::kSkip:
            return how_late + "; policy skip";
        case cron::MisfirePolicy::kFireOnceNow:
            // One run stands for the late times: the latest late fire of the job (same shard) in
            // this group runs, the earlier ones are folded into it.
            for (const auto& other : group.fires) {
                if (other.job_id == fire.job_id && other.kind == store::FireKind::kSchedule &&
                    other.shard_index == fire.shard_index && other.scheduled_time > fire.scheduled_time &&
                    now_ms - std::max(other.scheduled_time, other.created_at) > threshold) {
                    return how_late + "; folded into fire " + std::to_string(other.id) + " planned for " +
                           std::to_string(other.scheduled_time) + " (policy fire-once-now)";
                }
            }
            return std::nullopt;
    }
    return std::nullopt;
}

void Slave::RecordRunning(std::int64_t fire_id, const std::string& address, std::int64_t started_at) {
    bool spawn = false;
    {
        std::lock_guard lock(state_->mu);
        state_->running[address].push_back({.id = fire_id, .started_at = started_at});
        spawn = !std::exchange(state_->flush_scheduled, true);
        if (spawn) ++state_->running_writing;
    }
    if (spawn) net::co_spawn(io_, FlushRunning(), net::detached);
}

// One UPDATE per executor instance per record-window for every fire it accepted, each with
// its own 202's time as started_at. A fast handler's callback may have ended a fire already;
// the UPDATE then leaves it (and a result judged while the fire was dispatching is applied
// either way, see FireResults).
net::awaitable<void> Slave::FlushRunning() {
    auto state = state_;
    net::steady_timer timer(io_);
    timer.expires_after(config_.record_window);
    try {
        co_await timer.async_wait(net::use_awaitable);
    } catch (const boost::system::system_error&) {
    }
    std::map<std::string, std::vector<store::StartedFire>> batch;
    {
        std::lock_guard lock(state->mu);
        batch.swap(state->running);
        state->flush_scheduled = false;
    }
    // Named references, not a structured binding: clang (clang-tidy) before 16 cannot capture one.
    for (auto& entry : batch) {
        const auto& address = entry.first;
        auto& fires = entry.second;
        Backoff backoff(100ms, Micros::max());  // three attempts: pauses of 100 and 200 ms
        for (int attempt = 1;; ++attempt) {
            auto moved =
                co_await OnPool(db_pool_, [this, &fires, &address] { return store_->MarkRunning(fires, address); });
            if (moved.ok()) {
                running_batches_.Inc();
                break;
            }
            if (attempt == 3) {
                // The executor's callback still ends them (it accepts a dispatching fire).
                spdlog::warn("slave {}: {} fires accepted by {} not recorded running: {}", node_id_, fires.size(),
                             address, moved.status().ToString());
                break;
            }
            timer.expires_after(backoff.Next());
            try {
                co_await timer.async_wait(net::use_awaitable);
            } catch (const boost::system::system_error&) {
            }
        }
    }
    --state->running_writing;
}

net::awaitable<void> Slave::WatchTimeout(std::int64_t fire_id, std::string app, std::string address,
                                         std::int64_t timeout_ms, std::int64_t held_ms) {
    net::steady_timer timer(io_);
    timer.expires_after(std::chrono::milliseconds(held_ms + timeout_ms));
    try {
        co_await timer.async_wait(net::use_awaitable);
    } catch (const boost::system::system_error&) {
        co_return;
    }
    auto status = co_await OnPool(db_pool_, [this, fire_id] { return store_->StatusOf(fire_id); });
    // Still dispatching: accepted, but its running record is not written yet (or failed).
    if (!status.ok() || (*status != FireStatus::kRunning && *status != FireStatus::kDispatching)) co_return;
    http::CallOptions call{.timeout = config_.dispatch_timeout};
    const std::string kill_body = protocol::ToJson(protocol::KillRequest{.fire_id = fire_id}).dump();
    const std::string kill_url = "http://" + address + std::string(protocol::kKillPath);
    auto killed = co_await executors_->Send(app, http::Method::kPost, kill_url, kill_body, call);
    if (!killed.ok() || !killed->ok()) {
        spdlog::warn("slave {}: kill of timed-out fire {} on {} failed", node_id_, fire_id, address);
    }
    const std::string why = "timed out after " + std::to_string(timeout_ms) + " ms";
    const std::optional<store::FireReason> ran;  // it ran: no ledger reason
    co_await Finish(fire_id, *status, FireStatus::kTimeout, why, ran);
}

// Queued for the next flush, like the running records: a burst that cannot be sent (no live
// instance of its app, every instance refusing) would otherwise be one transaction per fire.
net::awaitable<void> Slave::Finish(std::int64_t fire_id, FireStatus from, FireStatus to, std::string message,
                                   std::optional<store::FireReason> reason) {
    auto state = state_;
    bool spawn = false;
    {
        std::lock_guard lock(state->mu);
        state->endings.push_back({.id = fire_id,
                                  .from = from,
                                  .to = to,
                                  .message = std::move(message),
                                  .reason = reason,
                                  .finished_at = time_.NowMs()});
        spawn = !std::exchange(state->endings_scheduled, true);
        if (spawn) ++state->endings_writing;
    }
    if (spawn) net::co_spawn(io_, FlushEndings(), net::detached);
    co_return;
}

// One transaction per record-window for every end queued in it, each still its own CAS. A
// database error is retried (pauses of 100 ms doubling, for up to dispatch-timeout); after that
// the fires stay `dispatching` or `running` and the master's sweep ends them (lost, timed out),
// so nothing is left without an outcome.
net::awaitable<void> Slave::FlushEndings() {
    auto state = state_;
    net::steady_timer timer(io_);
    timer.expires_after(config_.record_window);
    try {
        co_await timer.async_wait(net::use_awaitable);
    } catch (const boost::system::system_error&) {
    }
    std::vector<FireEnding> batch;
    {
        std::lock_guard lock(state->mu);
        batch.swap(state->endings);
        state->endings_scheduled = false;
    }
    const auto give_up_at = std::chrono::steady_clock::now() + config_.dispatch_timeout;
    Backoff backoff(100ms, 2s);
    for (;;) {
        auto moved = co_await OnPool(db_pool_, [this, &batch] { return store_->Finish(batch); });
        if (moved.ok()) break;
        // Once stopping, one try: Stop waits for this flush only as long as it drains the sends.
        if (state->stopping || std::chrono::steady_clock::now() + backoff.base() >= give_up_at) {
            spdlog::warn(
                "slave {}: cannot record the end of {} fires (first: {} as {}): {}; the master's sweep ends them",
                node_id_, batch.size(), batch.front().id, store::FireStatusName(batch.front().to),
                moved.status().ToString());
            break;
        }
        spdlog::warn("slave {}: cannot record the end of {} fires yet (retrying): {}", node_id_, batch.size(),
                     moved.status().ToString());
        timer.expires_after(backoff.Next());
        try {
            co_await timer.async_wait(net::use_awaitable);
        } catch (const boost::system::system_error&) {
        }
    }
    --state->endings_writing;
}

net::awaitable<void> Slave::Stop() {
    auto state = state_;
    {
        std::lock_guard lock(state->mu);
        state->stopping = true;
        for (const auto& [due_at, id] : state->due) state->known.erase(id);
        state->due.clear();
    }
    if (state->poll_timer) state->poll_timer->cancel();
    net::post(strand_, [state] {
        if (state->wake) state->wake->cancel();
    });
    auto handed = co_await OnPool(db_pool_, [this] { return store_->UnassignPending(node_id_); });
    if (handed.ok()) {
        spdlog::info("slave {}: handed {} pending fires back to the master", node_id_, *handed);
    } else {
        spdlog::warn(
            "slave {}: could not hand pending fires back ({}); the master reassigns them when this "
            "node's heartbeat expires",
            node_id_, handed.status().ToString());
    }
    // The claimed fires are this node's to send: wait for their dispatches to end and their
    // running records to be written, so each outcome (running, failed, refused) is recorded
    // instead of left `dispatching`.
    const auto drain_until = std::chrono::steady_clock::now() + config_.dispatch_timeout;
    const auto busy = [&state] {
        std::lock_guard lock(state->mu);
        return state->in_flight.load() > 0 || state->running_writing.load() > 0 || state->endings_writing.load() > 0;
    };
    net::steady_timer pause(io_);
    while (busy() && std::chrono::steady_clock::now() < drain_until) {
        pause.expires_after(10ms);
        co_await pause.async_wait(net::use_awaitable);
    }
    if (const std::size_t left = state->in_flight.load(); left > 0) {
        spdlog::warn(
            "slave {}: stopping with {} dispatches still in flight after {} ms; they stay dispatching "
            "until this node's next start or the master's sweep ends them lost",
            node_id_, left, Ms(config_.dispatch_timeout));
    }
}

}  // namespace sched::trigger
