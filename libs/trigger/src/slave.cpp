#include "sched/trigger/slave.hpp"

#include <algorithm>
#include <functional>
#include <set>

#include <spdlog/spdlog.h>

#include "sched/common/on_pool.hpp"

namespace sched::trigger {

using namespace std::chrono_literals;
using model::FireStatus;

namespace {

std::int64_t Ms(Micros d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// The most unknown fires a poll reads whole in one statement (an id list; a restarted node may
// find thousands assigned to it).
constexpr std::size_t kFindChunk = 1000;
// The most pending (and the most dispatching) ids one poll lists.
constexpr int kPollLimit = 10000;

}  // namespace

Slave::Slave(net::any_io_executor io, net::thread_pool& db_pool, std::unique_ptr<FireClaimStore> store,
             std::unique_ptr<dispatch::ExecutorClient> executors, const DbTime& time, std::string node_id,
             SlaveConfig config, MetricsRegistry& metrics)
    : io_(std::move(io)),
      strand_(net::make_strand(io_)),
      poll_strand_(net::make_strand(io_)),
      db_pool_(db_pool),
      store_(std::move(store)),
      executors_(std::move(executors)),
      time_(time),
      node_id_(std::move(node_id)),
      config_(config),
      loops_(std::make_shared<Loops>()),
      queue_(std::make_shared<FireQueue>(Ms(config_.claim_ahead), FireQueue::kMaxQueued,
                                         FireQueue::Bursts{.min_fires = static_cast<std::size_t>(config_.max_group),
                                                           .claim_rate = static_cast<double>(config_.burst_claim_rate),
                                                           .max_lead_ms = Ms(config_.burst_claim_ahead)},
                                         FireQueue::Fill{.min_fires = static_cast<std::size_t>(config_.group_fill),
                                                         .span_ms = Ms(config_.group_span)})),
      directory_(
          io_, db_pool_, [this] { return store_->LiveExecutors(Ms(config_.executor_ttl)); },
          {.refresh = config_.executor_refresh,
           .max_calls_per_executor = config_.max_calls_per_executor,
           .call_wait = config_.dispatch_timeout},
          node_id_),
      running_(io_, db_pool_,
               {.record_window = config_.record_window,
                .record_running_after = config_.record_running_after,
                .retry = {.first_pause = 100ms, .max_pause = 2s, .give_up_after = config_.dispatch_timeout},
                .written =
                    [this](const std::vector<std::int64_t>& ids) {
                        sent_.Erase(ids);
                    }},
               *store_, node_id_, metrics),
      // One transaction per record-window for every end queued in it, each still its own CAS. A
      // database error is retried (pauses of 100 ms doubling, for up to dispatch-timeout); after
      // that the fires stay `dispatching` or `running` and the master's sweep ends them (lost,
      // timed out), so nothing is left without an outcome.
      endings_(
          io_, db_pool_, config_.record_window,
          {.first_pause = 100ms, .max_pause = 2s, .give_up_after = config_.dispatch_timeout},
          [this](std::vector<FireEnding>& batch) -> Status {
              auto moved = store_->Finish(batch);
              if (!moved.ok()) return moved.status();
              PushEndedSpans(batch, *moved);
              // Rows that have left `dispatching`: those moved, and those a CAS from
              // `dispatching` (or a timeout's, from either) did not find there. An end from
              // `running` that found the fire still `dispatching` waits for its record.
              const std::set<std::int64_t> ended(moved->begin(), moved->end());
              std::vector<std::int64_t> left_dispatching;
              for (const auto& e : batch) {
                  if (ended.contains(e.id) || e.from == FireStatus::kDispatching || e.to == FireStatus::kTimeout) {
                      left_dispatching.push_back(e.id);
                  }
              }
              sent_.Erase(left_dispatching);
              if (!moved->empty() && wake_masters_) wake_masters_();
              batch.clear();
              return Status::Ok();
          },
          [this](const Status& error, const std::vector<FireEnding>& left, bool giving_up) {
              spdlog::warn("slave {}: cannot record the end of {} fires (first: {} as {}){}: {}", node_id_, left.size(),
                           left.front().id, model::FireStatusName(left.front().to),
                           giving_up ? "; the master's sweep ends them" : " yet, retrying", error.ToString());
          }),
      timeouts_(io_, db_pool_, *executors_, config_.dispatch_timeout,
                {.status_of = std::bind_front(&FireClaimStore::StatusOf, store_.get()),
                 .ended = [this](FireEnding e) { End(std::move(e)); },
                 .now_ms = std::bind_front(&DbTime::NowMs, &time_)},
                node_id_),
      claimer_(strand_, db_pool_, node_id_),
      sender_(io_, db_pool_, queue_, *executors_, directory_, time_,
              {.dispatch_timeout = config_.dispatch_timeout,
               .send_ahead = config_.send_ahead,
               .misfire_threshold = config_.misfire_threshold},
              {.accepted = [this](AcceptedRun run) { Accepted(std::move(run)); },
               .ended = [this](FireEnding e) { End(std::move(e)); },
               .restamp = std::bind_front(&FireClaimStore::Restamp, store_.get())},
              node_id_, metrics),
      claims_(metrics.Counter("sched_slave_claims_total", "Group claims committed by this slave.").Labels({})),
      claimed_fires_(
          metrics.Counter("sched_slave_claimed_fires_total", "Fires won by this slave's group claims.").Labels({})),
      misfires_(metrics.Counter("sched_slave_fires_total", "", {"outcome"}).Labels({"misfire"})),
      concurrency_(metrics.Counter("sched_slave_concurrency_total",
                                   "Fires a claim did not send because their job's concurrency limit was reached: "
                                   "held back (to be claimed again), skipped by the overlap policy; and running "
                                   "fires stopped for a new one (cancel-other, terminate-other).",
                                   {"outcome"})) {
    for (const char* outcome : {"held", "skipped", "stopped"}) concurrency_.Labels({outcome});
}

Slave::~Slave() = default;

std::size_t Slave::Scheduled() const {
    return queue_->Known();
}

std::size_t Slave::InFlight() const {
    return sender_.InFlight();
}

void Slave::Start() {
    started_ms_ = time_.NowMs();
    loops_->poll_timer = std::make_shared<net::steady_timer>(poll_strand_);
    loops_->group_loop_done = false;
    net::co_spawn(poll_strand_, PollLoop(), net::detached);
    net::co_spawn(strand_, GroupLoop(), net::detached);
}

net::awaitable<void> Slave::PollLoop() {
    auto loops = loops_;
    bool recovered = false;
    while (!loops->stopping) {
        if (!recovered) recovered = co_await Recover();
        // The ids first; only the fires not known here (a notification lost, a node restarted)
        // are read whole, in chunks. Normally every one is known and the poll is one index read.
        auto list = [this] {
            return store_->ListPendingIds(node_id_, kPollLimit);
        };
        auto ids = co_await OnPool(db_pool_, list);
        if (ids.ok()) {
            const auto unknown = sent_.Without(queue_->Unknown(*ids));
            for (std::size_t from = 0; from < unknown.size(); from += kFindChunk) {
                const std::vector<std::int64_t> chunk(
                    unknown.begin() + static_cast<std::ptrdiff_t>(from),
                    unknown.begin() + static_cast<std::ptrdiff_t>(std::min(unknown.size(), from + kFindChunk)));
                auto find = [this, &chunk] {
                    return store_->FindPending(node_id_, chunk);
                };
                auto fires = co_await OnPool(db_pool_, find);
                if (!fires.ok()) {
                    spdlog::warn("slave {}: cannot read polled fires: {}", node_id_, fires.status().ToString());
                    break;
                }
                Queue(NotSent(AsNoticed(*fires)));
            }
        } else {
            spdlog::warn("slave {}: cannot poll assigned fires: {}", node_id_, ids.status().ToString());
        }
        // Stop's cancel runs on this strand: one that ran while the poll was reading would be lost.
        if (loops->stopping) break;
        loops->poll_timer->expires_after(config_.poll_interval);
        try {
            co_await loops->poll_timer->async_wait(net::use_awaitable);
        } catch (const boost::system::system_error&) {
            // Cancelled by Stop().
        }
    }
}

net::awaitable<bool> Slave::Recover() {
    const std::int64_t now = time_.NowMs();
    if (!claimed_recovered_) {
        // A process that restarts under its node id within node-ttl never looks dead to the
        // master, so the master's orphan rule (dispatching fires of dead slaves become lost)
        // never sees the fires its previous incarnation was dispatching: those claimed before
        // this process started are that earlier run's; they may or may not have reached the
        // executor, hence lost, as for a dead slave.
        auto end_earlier = [this, now] {
            return store_->EndEarlierDispatches(node_id_, started_ms_, now);
        };
        auto ended = co_await OnPool(db_pool_, end_earlier);
        if (!ended.ok()) {
            spdlog::warn("slave {}: cannot end the dispatches of an earlier run yet: {}", node_id_,
                         ended.status().ToString());
            co_return false;
        }
        if (*ended > 0) {
            spdlog::warn("slave {}: {} fires were dispatching when this node's previous process ended: marked lost",
                         node_id_, *ended);
        }
        claimed_recovered_ = true;
    }
    // The same for the planned fires, by the sent_through the earlier process committed; then
    // this process takes planned fires. Until then it sends none and raises nothing.
    auto take = [this, now] {
        return store_->TakePlanned(node_id_, now);
    };
    auto taken = co_await OnPool(db_pool_, take);
    if (!taken.ok()) {
        spdlog::warn("slave {}: cannot take planned fires yet: {}", node_id_, taken.status().ToString());
        co_return false;
    }
    if (!*taken) co_return false;  // no trigger_node row yet (no heartbeat): the next poll asks again
    if ((*taken)->lost > 0) {
        spdlog::warn(
            "slave {}: {} planned fires were due at or before this node's sent-through ({}) when its previous "
            "process ended: marked lost",
            node_id_, (*taken)->lost, (*taken)->sent_through);
    }
    sent_.Ready((*taken)->sent_through);
    co_return true;
}

std::vector<protocol::NoticedFire> Slave::NotSent(const std::vector<protocol::NoticedFire>& fires) const {
    std::vector<protocol::NoticedFire> out;
    out.reserve(fires.size());
    for (const auto& f : fires) {
        if (!sent_.Contains(f.id)) out.push_back(f);
    }
    return out;
}

std::size_t Slave::ResultsApplied(const std::vector<std::int64_t>& fire_ids) {
    sent_.Erase(fire_ids);
    return running_.WithdrawEnded(fire_ids);
}

void Slave::Notify(const std::vector<protocol::NoticedFire>& fires) {
    if (loops_->stopping || fires.empty()) return;
    Wake(queue_->AdmitNotice(NotSent(fires), time_.NowMs()));
}

void Slave::NotifyIds(std::vector<std::int64_t> fire_ids) {
    if (loops_->stopping || fire_ids.empty()) return;
    net::co_spawn(
        io_,
        [this, ids = std::move(fire_ids)]() -> net::awaitable<void> {
            auto find = [this, &ids] {
                return store_->FindPending(node_id_, ids);
            };
            auto fires = co_await OnPool(db_pool_, find);
            if (!fires.ok()) co_return;  // the poll will find them
            Queue(NotSent(AsNoticed(*fires)));
        },
        net::detached);
}

void Slave::Queue(const std::vector<protocol::NoticedFire>& fires) {
    Wake(queue_->Admit(fires));
}

void Slave::Wake(const FireQueue::Admitted& admitted) {
    if (admitted.filled) {
        spdlog::warn("slave {}: {} fires queued, claimed or being sent; more wait for a later poll", node_id_,
                     FireQueue::kMaxQueued);
    }
    // The cancel runs on the loop's strand, so it cannot slip between the loop's look at the
    // queue and its wait (both happen in one run on the strand).
    if (admitted.wake) {
        net::post(strand_, [loops = loops_] {
            if (loops->wake) loops->wake->cancel();
        });
    }
}

// Runs on strand_. One timer for every waiting fire: it wakes when the earliest is within
// claim-ahead of due, and claims the group FireQueue::TakeGroup hands out; with claim-ahead 0,
// the fires due now.
net::awaitable<void> Slave::GroupLoop() {
    auto loops = loops_;
    loops->wake = std::make_shared<net::steady_timer>(strand_);
    std::optional<std::int64_t> burst_logged;
    while (!loops->stopping) {
        const std::int64_t now = time_.NowMs();
        auto group = queue_->TakeGroup(now, config_.max_group, Ms(config_.poll_interval));
        if (group.burst_due_at && group.burst_due_at != burst_logged) {
            // Once per burst: a top of the hour's claims, and how early they start, in the log.
            burst_logged = group.burst_due_at;
            spdlog::info("slave {}: claiming a burst of {} fires due in {} ms ({} ms before claim-ahead)", node_id_,
                         group.ids.size() + group.burst_left, *group.burst_due_at - now,
                         *group.burst_due_at - now - Ms(config_.claim_ahead));
        }
        if (!group.ids.empty()) {
            co_await ClaimAndSend(std::move(group.ids), {.raise_sent_through = sent_.RaiseFor(group.latest_due_ms),
                                                         .only_planned = group.all_planned});
            continue;
        }
        loops->wake->expires_after(std::chrono::milliseconds(std::max<std::int64_t>(0, group.wait_ms)));
        try {
            co_await loops->wake->async_wait(net::use_awaitable);
        } catch (const boost::system::system_error&) {
            // Woken by a new fire or by Stop.
        }
    }
    loops->group_loop_done = true;
}

// Runs on strand_ (part of the group loop): claims stay in order and one at a time, each
// bounded by max-group; GroupClaimer retries a failed claim, in parts after conflicts.
net::awaitable<void> Slave::ClaimAndSend(std::vector<std::int64_t> ids, store::ClaimOptions options) {
    auto loops = loops_;
    const std::int64_t token = NewClaimToken();
    const auto claim_started = std::chrono::steady_clock::now();
    const std::int64_t claim_started_ms = time_.NowMs();
    // Planned fires due after the committed sent_through are sent only once it is raised past
    // them, in the claim's transaction before its read (SentFires::RaiseFor).
    GroupClaimer::Attempt attempt = [this, token, options](const std::vector<std::int64_t>& part) {
        return store_->Claim(node_id_, part, token, time_.NowMs(), options);
    };
    GroupClaimer::OnPart send = [this, token, claim_started, claim_started_ms](std::vector<std::int64_t> part,
                                                                               ClaimedGroup claimed) {
        return SendClaimed(std::move(part), token, std::move(claimed), claim_started, claim_started_ms);
    };
    auto stopping = [loops] {
        return loops->stopping.load();
    };
    const auto left = co_await claimer_.Claim(std::move(ids), std::move(attempt), stopping, std::move(send));
    for (const auto id : left) queue_->Forget(id);  // still pending: handed back by Stop
}

net::awaitable<void> Slave::SendClaimed(std::vector<std::int64_t> ids, std::int64_t token, ClaimedGroup claimed,
                                        std::chrono::steady_clock::time_point claim_started,
                                        std::int64_t claim_started_ms) {
    claims_.Inc();
    sent_.Committed(claimed.sent_through);
    // A planned fire is sent once: not again while this slave holds it as sent, and only at or
    // below the sent_through this claim read (a notice's due time is unread: a fire due later
    // than it said waits for a claim that raises enough, after the poll finds it again).
    std::erase_if(claimed.fires, [&](const model::Fire& f) {
        return claimed.planned.contains(f.id) && !sent_.Sendable(f.id, f.due_at, claimed.sent_through);
    });
    std::vector<std::int64_t> planned_sent;
    for (const auto& f : claimed.fires) {
        if (claimed.planned.contains(f.id)) planned_sent.push_back(f.id);
    }
    sent_.Add(planned_sent);
    claimed_fires_.Inc(static_cast<double>(claimed.fires.size()));
    std::set<std::int64_t> won;
    for (const auto& f : claimed.fires) won.insert(f.id);
    Limited(claimed, won);
    const std::set<std::int64_t> held(claimed.held.begin(), claimed.held.end());
    if (!claimed.late.empty()) misfires_.Inc(static_cast<double>(claimed.late.size()));
    if ((!claimed.late.empty() || !claimed.skipped.empty()) && wake_masters_) wake_masters_();
    for (auto id : ids) {
        // Claimed elsewhere, no longer pending, or skipped by its job's policy; a held fire
        // stays known (queued again by Limited).
        if (!won.contains(id) && !held.contains(id)) {
            queue_->Forget(id);
            held_.Forget(id);
        }
    }
    if (claimed.fires.empty()) co_return;

    auto group = std::make_shared<DispatchGroup>();
    group->epoch = claimed.epoch;
    group->token = token;
    group->fires = std::move(claimed.fires);
    std::vector<std::string> apps;
    for (auto& job : claimed.jobs) {
        apps.push_back(job.app);
        group->jobs.emplace(job.id, std::move(job));
    }
    group->run_params = std::move(claimed.run_params);
    TraceClaimed(*group, claim_started_ms, time_.NowMs());
    group->registry = co_await directory_.ForClaim(claim_started, apps);
    sender_.Send(std::move(group));
}

void Slave::Limited(const ClaimedGroup& claimed, const std::set<std::int64_t>& won) {
    for (const auto id : won) held_.Forget(id);
    if (!claimed.held.empty()) {
        concurrency_.Labels({"held"}).Inc(static_cast<double>(claimed.held.size()));
        Wake(queue_->Requeue(held_.HeldAgain(claimed.held, claimed.first_in_line, time_.NowMs())));
    }
    if (!claimed.skipped.empty()) concurrency_.Labels({"skipped"}).Inc(static_cast<double>(claimed.skipped.size()));
    std::map<std::int64_t, std::string> apps;
    for (const auto& job : claimed.jobs) apps[job.id] = job.app;
    for (const auto& fire : claimed.stop) {
        concurrency_.Labels({"stopped"}).Inc();
        // Accepted here but not recorded `running` yet (record-running-after): the instance is
        // in the queued record.
        const std::optional<std::string> address =
            fire.executor_address ? fire.executor_address : running_.QueuedAddress(fire.id);
        if (!address || !apps.contains(fire.job_id)) continue;  // not sent yet: nothing to kill
        sender_.Kill(fire.id, apps.at(fire.job_id), *address);
    }
}

void Slave::Accepted(AcceptedRun run) {
    running_.Add(run);
    if (run.timeout_ms > 0) {
        timeouts_.Watch(run.fire_id, std::move(run.app), std::move(run.address), run.timeout_ms, run.held_ms,
                        std::move(run.trace));
    }
}

void Slave::End(FireEnding ending) {
    // A run accepted but not yet recorded `running`: its record is dropped and the end, a CAS
    // from `dispatching`, carries the record's instance and start. A record some flush took
    // already lands before or after the end: before, the end (a timeout, the only end of an
    // accepted run here) moves from `running` too (SqlFireClaimStore::Finish); after, the
    // record's CAS from `dispatching` finds the fire ended and changes nothing.
    if (auto withdrawn = running_.Withdraw(ending.id)) {
        ending.from = FireStatus::kDispatching;
        ending.executor_address = std::move(withdrawn->address);
        ending.started_at = withdrawn->fire.started_at;
    }
    endings_.Add(std::move(ending));
}

net::awaitable<void> Slave::Stop() {
    auto loops = loops_;
    loops->stopping = true;
    queue_->Close();
    sender_.Stop();
    endings_.Stop();  // Stop waits for the endings only as long as it drains the sends
    // The runs still going are recorded `running` now, not `record-running-after` past their
    // start: the drain below waits for those records, and the node gives its lease up after it.
    running_.Hurry();
    // Each timer is cancelled on the strand its loop runs on: a timer is not thread-safe.
    net::post(poll_strand_, [loops] {
        if (loops->poll_timer) loops->poll_timer->cancel();
    });
    net::post(strand_, [loops] {
        if (loops->wake) loops->wake->cancel();
    });
    // The planned fires it has not sent go back with the pending ones, once no claim runs: a
    // claim's read and its send are one step, and the ids of what it sent are known only after.
    const auto drain_until = std::chrono::steady_clock::now() + config_.dispatch_timeout;
    net::steady_timer pause(io_);
    // Short steps: the loop ends within a claim, and the node gives its lease up only after Stop.
    while (!loops->group_loop_done && std::chrono::steady_clock::now() < drain_until) {
        pause.expires_after(1ms);
        co_await pause.async_wait(net::use_awaitable);
    }
    std::optional<std::set<std::int64_t>> sent;
    if (loops->group_loop_done) sent = sent_.Ids();
    auto hand_back = [this, &sent] {
        return store_->HandBack(node_id_, sent);
    };
    auto handed = co_await OnPool(db_pool_, hand_back);
    if (handed.ok()) {
        spdlog::info("slave {}: handed {} pending and unsent planned fires back to the master{}", node_id_, *handed,
                     sent ? "" : " (not the planned ones: a claim was still running)");
        if (*handed > 0 && wake_masters_) wake_masters_();
    } else {
        spdlog::warn(
            "slave {}: could not hand pending fires back ({}); the master reassigns them when this "
            "node's heartbeat expires",
            node_id_, handed.status().ToString());
    }
    // The claimed fires are this node's to send: wait for their dispatches to end and their
    // running records to be written, so each outcome (running, failed, refused) is recorded
    // instead of left `dispatching`.
    const auto busy = [this] {
        return sender_.InFlight() > 0 || running_.Busy() || endings_.Busy();
    };
    while (busy() && std::chrono::steady_clock::now() < drain_until) {
        pause.expires_after(10ms);
        co_await pause.async_wait(net::use_awaitable);
    }
    if (const std::size_t left = sender_.InFlight(); left > 0) {
        spdlog::warn(
            "slave {}: stopping with {} dispatches still in flight after {} ms; they stay dispatching "
            "until this node's next start or the master's sweep ends them lost",
            node_id_, left, Ms(config_.dispatch_timeout));
    }
}

}  // namespace sched::trigger
