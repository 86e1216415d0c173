#include "sched/trigger/slave.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "impl/on_pool.hpp"
#include "sched/store/job.hpp"
#include "sched/store/registry.hpp"

namespace sched::trigger {

using namespace std::chrono_literals;
using store::FireStatus;

namespace {

std::int64_t Ms(Micros d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

struct Claim {
    store::Fire fire;
    std::optional<store::Job> job;
    std::int64_t epoch = 0;  // the cluster's current lease epoch, sent with the dispatch
    std::int64_t claimed_at = 0;
};

// Job params are stored as text; a JSON document goes to the handler as JSON, anything else
// as a string, so `{"ms": 5}` arrives as an object and `hello` as "hello".
nlohmann::json ParamsJson(const std::string& text) {
    if (text.empty()) return nlohmann::json::object();
    auto j = nlohmann::json::parse(text, nullptr, false);
    return j.is_discarded() ? nlohmann::json(text) : j;
}

std::string ErrorField(const rest::ClientResponse& r) {
    auto j = r.Json();
    if (!j.ok() || !j->contains("error")) return "";
    const auto& e = (*j)["error"];
    return e.contains("field") && e["field"].is_string() ? e["field"].get<std::string>() : "";
}

}  // namespace

SlaveConfig SlaveConfig::FromYaml(const ConfigNode& node) {
    SlaveConfig c;
    c.enabled = node.Bool("enabled", c.enabled);
    c.capacity = static_cast<int>(node.Int("capacity", c.capacity, 1, 1'000'000));
    c.poll_interval = node.Duration("poll-interval", c.poll_interval, 10ms, std::chrono::minutes(1));
    c.dispatch_timeout = node.Duration("dispatch-timeout", c.dispatch_timeout, 10ms, std::chrono::minutes(1));
    c.executor_ttl = node.Duration("executor-ttl", c.executor_ttl, 100ms, std::chrono::hours(1));
    if (node.Has("executor-token")) {
        throw ConfigError(node.path().empty() ? "executor-token" : node.path() + ".executor-token",
                          "removed: slaves no longer send executors a token; they sign each call with the app's "
                          "signing key (docs/protocol.md). Delete the key; give services an executor token instead");
    }
    return c;
}

struct Slave::State {
    std::mutex mu;
    std::set<std::int64_t> known;  // scheduled or being dispatched here
    std::map<std::int64_t, std::shared_ptr<net::steady_timer>> timers;
    std::shared_ptr<net::steady_timer> poll_timer;
    std::atomic<bool> stopping{false};
};

Slave::Slave(net::any_io_executor io, net::thread_pool& db_pool, std::shared_ptr<db::Database> db, const DbTime& time,
             rest::HttpClient& http, std::string node_id, std::string lease_name, SlaveConfig config,
             MetricsRegistry& metrics)
    : io_(std::move(io)),
      db_pool_(db_pool),
      db_(std::move(db)),
      time_(time),
      http_(http),
      node_id_(std::move(node_id)),
      lease_name_(std::move(lease_name)),
      config_(std::move(config)),
      executors_(
          std::make_unique<web::ExecutorSigner>([db = db_] { return db; }, db_pool_, [&time] { return time.NowMs(); })),
      state_(std::make_shared<State>()),
      lag_(metrics
               .Histogram("sched_fire_lag_seconds", "Dispatch time minus due time of accepted fires.", {},
                          {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10})
               .Labels({})),
      dispatched_(metrics.Counter("sched_slave_fires_total", "Fires this slave finished dispatching, by outcome.",
                                  {"outcome"})),
      dispatch_errors_(
          metrics.Counter("sched_dispatch_errors_total", "Failed /v1/run attempts, by reason.", {"reason"})) {}

Slave::~Slave() = default;

std::size_t Slave::Scheduled() const {
    std::lock_guard lock(state_->mu);
    return state_->known.size();
}

void Slave::Start() {
    started_ms_ = time_.NowMs();
    net::co_spawn(io_, PollLoop(), net::detached);
}

net::awaitable<void> Slave::PollLoop() {
    auto state = state_;
    state->poll_timer = std::make_shared<net::steady_timer>(io_);
    bool recovered = false;
    while (!state->stopping) {
        if (!recovered) {
            auto ended = co_await impl::OnPool(db_pool_, [this] { return EndDispatchesOfAnEarlierRun(); });
            recovered = ended.ok();
            if (!ended.ok()) {
                spdlog::warn("slave {}: cannot end the dispatches of an earlier run yet: {}", node_id_,
                             ended.status().ToString());
            } else if (*ended > 0) {
                spdlog::warn("slave {}: {} fires were dispatching when this node's previous process ended: marked lost",
                             node_id_, *ended);
            }
        }
        auto fires = co_await impl::OnPool(db_pool_, [this] {
            return db_->Run([this](soci::session& s) {
                return store::FireRepository::ListAssigned(s, node_id_, {FireStatus::kPending}, 10000);
            });
        });
        if (fires.ok()) {
            for (const auto& f : *fires) Track(f);
        } else {
            spdlog::warn("slave {}: cannot poll assigned fires: {}", node_id_, fires.status().ToString());
        }
        state->poll_timer->expires_after(config_.poll_interval);
        boost::system::error_code ec;
        try {
            co_await state->poll_timer->async_wait(net::use_awaitable);
        } catch (const boost::system::system_error&) {
            // Cancelled by Stop().
        }
    }
}

Result<int> Slave::EndDispatchesOfAnEarlierRun() {
    // A process that restarts under its node id within node-ttl never looks dead to the master,
    // so the master's orphan rule (dispatching fires of dead slaves become lost) never sees the
    // fires its previous incarnation was dispatching. Those claimed before this process started
    // (dispatched_at, DB time) are that earlier run's: the run may or may not have reached the
    // executor, hence lost, as for a dead slave.
    return db_->InTransaction(db::TxMode::kWrite, [this](soci::session& s) -> Result<int> {
        int ended = 0;
        for (const auto& fire : store::FireRepository::ListAssigned(s, node_id_, {FireStatus::kDispatching}, 10000)) {
            // Claimed by this process already (a notification can beat this first poll, and a
            // failed attempt is retried later): ours, not the earlier run's.
            if (fire.dispatched_at.value_or(0) >= started_ms_) continue;
            const std::string message = "slave " + node_id_ + " restarted while dispatching";
            ended += store::FireRepository::Transition(
                s, fire.id, {FireStatus::kDispatching}, FireStatus::kLost,
                {.finished_at = time_.NowMs(), .result_message = message, .followup = true});
        }
        return ended;
    });
}

void Slave::Notify(std::vector<std::int64_t> fire_ids) {
    if (state_->stopping || fire_ids.empty()) return;
    net::co_spawn(
        io_,
        [this, ids = std::move(fire_ids)]() -> net::awaitable<void> {
            auto fires = co_await impl::OnPool(db_pool_, [this, &ids] {
                return db_->Run([&](soci::session& s) {
                    std::vector<store::Fire> out;
                    for (auto id : ids) {
                        if (auto f = store::FireRepository::Find(s, id)) out.push_back(*f);
                    }
                    return out;
                });
            });
            if (!fires.ok()) co_return;  // the poll will find them
            for (const auto& f : *fires) {
                if (f.status == FireStatus::kPending && f.assigned_node == node_id_) Track(f);
            }
        },
        net::detached);
}

void Slave::Track(const store::Fire& fire) {
    {
        std::lock_guard lock(state_->mu);
        if (state_->stopping || !state_->known.insert(fire.id).second) return;
    }
    net::co_spawn(io_, RunFire(fire), net::detached);
}

net::awaitable<void> Slave::RunFire(store::Fire fire) {
    auto state = state_;
    auto timer = std::make_shared<net::steady_timer>(io_);
    {
        std::lock_guard lock(state->mu);
        state->timers[fire.id] = timer;
    }
    // The due time is on the database clock; the timer runs on the local steady clock. Their
    // difference is taken at the last moment, so a DbTime refresh in between is honoured.
    const std::int64_t wait_ms = fire.due_at - time_.NowMs();
    if (wait_ms > 0) {
        timer->expires_after(std::chrono::milliseconds(wait_ms));
        try {
            co_await timer->async_wait(net::use_awaitable);
        } catch (const boost::system::system_error&) {
        }
    }
    {
        std::lock_guard lock(state->mu);
        state->timers.erase(fire.id);
    }
    if (!state->stopping) co_await Dispatch(fire);
    std::lock_guard lock(state->mu);
    state->known.erase(fire.id);
}

// Every argument of a co_await'ed call is a named value, never a temporary (a literal, a
// concatenation, a ?: result, a braced list): g++ 12 destroys such temporaries twice in a
// coroutine frame (a double free seen here) or rejects them ("array used as initializer").
net::awaitable<void> Slave::Dispatch(store::Fire fire) {
    ++in_flight_;
    struct Done {
        std::atomic<std::size_t>& n;
        ~Done() { --n; }
    } done{in_flight_};

    const std::int64_t now = time_.NowMs();
    auto claim = co_await impl::OnPool(db_pool_, [this, &fire, now] {
        return db_->InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<std::optional<Claim>> {
            Claim c;
            soci::indicator ind = soci::i_null;
            s << "SELECT epoch FROM scheduler_lock WHERE namespace = :name", soci::use(lease_name_),
                soci::into(c.epoch, ind);
            // The epoch sent in /v1/run is recorded with the claim: a callback must carry it.
            if (store::FireRepository::Transition(s, fire.id, {FireStatus::kPending}, FireStatus::kDispatching,
                                                  {.dispatch_epoch = c.epoch, .dispatched_at = now}) != 1) {
                return std::optional<Claim>();  // claimed elsewhere, or no longer pending
            }
            c.fire = fire;
            c.claimed_at = now;
            c.job = store::JobRepository::Find(s, fire.job_id);
            return std::optional<Claim>(c);
        });
    });
    if (!claim.ok()) {
        // Still pending: the poll retries it.
        spdlog::warn("slave {}: cannot claim fire {}: {}", node_id_, fire.id, claim.status().ToString());
        co_return;
    }
    if (!*claim) co_return;
    const Claim& c = **claim;
    if (!c.job) {
        const std::string why = "job deleted";
        co_await Finish(fire.id, FireStatus::kDispatching, FireStatus::kSkipped, why);
        co_return;
    }
    const store::Job& job = *c.job;
    if (!job.enabled && fire.kind != store::FireKind::kManual) {
        const std::string why = "job paused";
        co_await Finish(fire.id, FireStatus::kDispatching, FireStatus::kSkipped, why);
        co_return;
    }

    auto instances = co_await impl::OnPool(
        db_pool_, [this, &job] { return store::ExecutorRepository(*db_).ListLive(job.app, Ms(config_.executor_ttl)); });
    std::vector<std::string> addresses;
    if (instances.ok()) {
        for (const auto& e : *instances) {
            if (std::find(e.handlers.begin(), e.handlers.end(), job.handler) != e.handlers.end()) {
                addresses.push_back(e.address);
            }
        }
    }
    const auto routing = ParseRouting(job.routing).value_or(Routing::kRoundRobin);
    const auto order = router_.Order(routing, job.id, addresses, fire.shard_index);
    const Probe probe = ProbeFor(routing);
    rest::CallOptions call{.timeout = config_.dispatch_timeout};

    const nlohmann::json run_json = {{"fire_id", fire.id},
                                     {"job_id", job.id},
                                     {"attempt", fire.attempt},
                                     {"epoch", c.epoch},
                                     {"handler", job.handler},
                                     {"params", ParamsJson(job.params)},
                                     {"scheduled_ms", fire.scheduled_time},
                                     {"timeout_ms", job.timeout_ms},
                                     {"shard_index", fire.shard_index},
                                     {"shard_total", fire.shard_total},
                                     {"block_strategy", job.block_strategy}};
    const std::string run = run_json.dump();
    const std::string app = job.app;
    std::string reasons;
    const auto note = [&](const std::string& address, const std::string& reason, const std::string& metric) {
        reasons += (reasons.empty() ? "" : "; ") + address + ": " + reason;
        dispatch_errors_.Labels({metric}).Inc();
    };
    for (const auto& address : order) {
        const std::string base = "http://" + address;
        if (probe == Probe::kBeat) {
            const std::string beat_url = base + "/v1/beat";
            const std::string no_body;
            auto beat = co_await executors_->Send(http_, app, rest::Method::kGet, beat_url, no_body, call);
            if (!beat.ok() || !beat->ok()) {
                note(address, "beat failed", "beat");
                continue;
            }
        } else if (probe == Probe::kIdleBeat) {
            const std::string idle_body = nlohmann::json{{"job_id", job.id}}.dump();
            const std::string idle_url = base + "/v1/idle-beat";
            auto idle = co_await executors_->Send(http_, app, rest::Method::kPost, idle_url, idle_body, call);
            if (!idle.ok() || !idle->ok()) {
                note(address, idle.ok() ? "busy" : idle.status().message(), "busy");
                continue;
            }
        }
        const std::string run_url = base + "/v1/run";
        auto response = co_await executors_->Send(http_, app, rest::Method::kPost, run_url, run, call);
        if (!response.ok()) {
            note(address, response.status().message(), "transport");
            continue;
        }
        if (response->status == 202) {
            const std::int64_t started = time_.NowMs();
            router_.RecordDispatch(job.id, address);
            lag_.Observe(static_cast<double>(std::max<std::int64_t>(0, c.claimed_at - fire.due_at)) / 1000.0);
            dispatched_.Labels({"accepted"}).Inc();
            auto running = co_await impl::OnPool(db_pool_, [this, &fire, &address, started] {
                // A fast handler's callback may have finished the fire already: then this CAS
                // finds it no longer dispatching, which is fine.
                return store::FireRepository(*db_).Transition(fire.id, {FireStatus::kDispatching}, FireStatus::kRunning,
                                                              {.executor_address = address, .started_at = started});
            });
            if (!running.ok() && running.code() != Code::kAborted) {
                spdlog::warn("slave {}: fire {} accepted by {} but not recorded running: {}", node_id_, fire.id,
                             address, running.ToString());
            }
            if (job.timeout_ms > 0)
                net::co_spawn(io_, WatchTimeout(fire.id, app, address, job.timeout_ms), net::detached);
            co_return;
        }
        const std::string field = ErrorField(*response);
        if (response->status == 409 && field == "block_strategy") {
            dispatched_.Labels({"discarded"}).Inc();
            const std::string why =
                "discarded: the job is still running on " + address + " (block strategy discard-later)";
            co_await Finish(fire.id, FireStatus::kDispatching, FireStatus::kSkipped, why);
            co_return;
        }
        note(address, "HTTP " + std::to_string(response->status) + (field.empty() ? "" : " (" + field + ")"),
             "http_" + std::to_string(response->status));
    }
    dispatched_.Labels({"failed"}).Inc();
    std::string why = "no executor accepted the fire: " + reasons;
    if (order.empty()) why = "no live executor of app " + job.app + " serves handler " + job.handler;
    co_await Finish(fire.id, FireStatus::kDispatching, FireStatus::kFailed, why);
}

net::awaitable<void> Slave::WatchTimeout(std::int64_t fire_id, std::string app, std::string address,
                                         std::int64_t timeout_ms) {
    net::steady_timer timer(io_);
    timer.expires_after(std::chrono::milliseconds(timeout_ms));
    try {
        co_await timer.async_wait(net::use_awaitable);
    } catch (const boost::system::system_error&) {
        co_return;
    }
    auto fire = co_await impl::OnPool(db_pool_, [this, fire_id] { return store::FireRepository(*db_).Get(fire_id); });
    if (!fire.ok() || fire->status != FireStatus::kRunning) co_return;
    rest::CallOptions call{.timeout = config_.dispatch_timeout};
    const std::string kill_body = nlohmann::json{{"fire_id", fire_id}}.dump();
    const std::string kill_url = "http://" + address + "/v1/kill";
    auto killed = co_await executors_->Send(http_, app, rest::Method::kPost, kill_url, kill_body, call);
    if (!killed.ok() || !killed->ok()) {
        spdlog::warn("slave {}: kill of timed-out fire {} on {} failed", node_id_, fire_id, address);
    }
    const std::string why = "timed out after " + std::to_string(timeout_ms) + " ms";
    co_await Finish(fire_id, FireStatus::kRunning, FireStatus::kTimeout, why);
}

net::awaitable<void> Slave::Finish(std::int64_t fire_id, FireStatus from, FireStatus to, std::string message) {
    const std::int64_t now = time_.NowMs();
    auto done = co_await impl::OnPool(db_pool_, [&] {
        return store::FireRepository(*db_).Transition(
            fire_id, {from}, to, {.finished_at = now, .result_message = message, .followup = true});
    });
    if (!done.ok() && done.code() != Code::kAborted) {
        spdlog::warn("slave {}: cannot record fire {} as {}: {}", node_id_, fire_id, store::FireStatusName(to),
                     done.ToString());
    }
}

net::awaitable<void> Slave::Stop() {
    auto state = state_;
    std::vector<std::shared_ptr<net::steady_timer>> timers;
    {
        std::lock_guard lock(state->mu);
        state->stopping = true;
        for (auto& [id, t] : state->timers) timers.push_back(t);
    }
    if (state->poll_timer) state->poll_timer->cancel();
    for (auto& t : timers) t->cancel();
    auto handed = co_await impl::OnPool(db_pool_, [this] {
        return db_->Run([this](soci::session& s) { return store::FireRepository::UnassignPending(s, node_id_); });
    });
    if (handed.ok()) {
        spdlog::info("slave {}: handed {} pending fires back to the master", node_id_, *handed);
    } else {
        spdlog::warn(
            "slave {}: could not hand pending fires back ({}); the master reassigns them when this "
            "node's heartbeat expires",
            node_id_, handed.status().ToString());
    }
}

}  // namespace sched::trigger
