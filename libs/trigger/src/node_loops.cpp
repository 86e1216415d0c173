#include "sched/trigger/node.hpp"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "impl/node_impl.hpp"
#include "sched/protocol/fires_notice.hpp"
#include "sched/store/fire_metrics.hpp"
#include "sched/store/shard.hpp"
#include "sched/trigger/shard_count_watch.hpp"

namespace sched::trigger {

using namespace std::chrono_literals;

void TriggerNode::OnShardLeading(int shard, std::int64_t epoch) {
    if (config_.scheduler.shards == 1) {
        spdlog::info("node {} is master at epoch {}", node_id_, epoch);
    } else {
        spdlog::info("node {} leads shard {} at epoch {}", node_id_, shard, epoch);
    }
    std::lock_guard lock(mu_);
    shard_epochs_[static_cast<std::size_t>(shard)] = epoch;
    cv_.notify_all();
}

void TriggerNode::OnShardStopped(int shard, const lock::LeadershipEnd& end) {
    const auto level = end.reason == lock::StopReason::kResigned ? spdlog::level::info : spdlog::level::warn;
    if (config_.scheduler.shards == 1) {
        spdlog::log(level, "node {} stopped leading epoch {}: {} {}", node_id_, end.epoch,
                    lock::StopReasonName(end.reason), end.detail);
    } else {
        spdlog::log(level, "node {} stopped leading shard {} epoch {}: {} {}", node_id_, shard, end.epoch,
                    lock::StopReasonName(end.reason), end.detail);
    }
    // The shard's master loop re-checks IsLeading(epoch) before every scan and every scan is
    // fenced, so clearing the epoch here is enough to stop its work.
    {
        std::lock_guard lock(mu_);
        shard_epochs_[static_cast<std::size_t>(shard)].reset();
    }
    // A shard given back for balance: the node below its share takes it at its nudge, not a
    // tick later. (A stopping node nudges once, after releasing every lease.)
    if (end.reason == lock::StopReason::kResigned && !stopping_) NudgePeers(false);
}

void TriggerNode::OnShardLeader(int shard, const std::string& node, std::int64_t epoch) {
    std::lock_guard lock(impl_->leader_mu);
    impl_->leaders[static_cast<std::size_t>(shard)] = std::make_pair(node, epoch);
}

void TriggerNode::MasterLoop(int shard) {
    const auto index = static_cast<std::size_t>(shard);
    Master& master = *impl_->masters[index];
    while (!stopping_) {
        std::optional<std::int64_t> epoch;
        {
            std::unique_lock lock(mu_);
            cv_.wait_for(lock, 200ms, [this, index] { return stopping_ || shard_epochs_[index].has_value(); });
            epoch = shard_epochs_[index];
        }
        if (stopping_) break;
        if (!epoch || !impl_->leases->IsLeading(shard, *epoch)) continue;
        // A wake that came during the last probe or scan is seen by the next probe: the flag
        // is cleared only when a sleep ends. After a scan, a wake ends the sleep no sooner than
        // scan-min-interval: a storm of wakes (results failing by the thousand) then costs what
        // the busy master cost before wakes existed, not a scan per wake.
        const auto sleep = [this, index](Micros d, Micros deaf) {
            std::unique_lock lock(mu_);
            deaf = std::min(deaf, d);
            if (deaf > Micros{0}) cv_.wait_for(lock, deaf, [this] { return stopping_.load(); });
            cv_.wait_for(lock, d - deaf, [this, index] { return stopping_.load() || master_wakes_[index] != 0; });
            master_wakes_[index] = 0;
        };
        if (const auto quiet = master.Quiet(*epoch)) {
            sleep(*quiet, Micros{0});
            continue;
        }
        auto report = master.Scan(*epoch);
        Micros pause = config_.scheduler.scan_interval;
        if (report.ok()) {
            Notify(*report, *epoch, shard);
            pause = master.SleepAfter(*report);
        } else if (lock::IsLeaseLost(report.status())) {
            spdlog::warn("master scan of shard {} refused: {}", shard, report.status().ToString());
            std::lock_guard lock(mu_);
            if (shard_epochs_[index] == epoch) shard_epochs_[index].reset();
            continue;
        } else {
            spdlog::warn("master scan of shard {} failed: {}", shard, report.status().ToString());
            pause = config_.scheduler.scan_interval;  // not at once on a wake: the database is failing
            std::unique_lock lock(mu_);
            cv_.wait_for(lock, pause, [this] { return stopping_.load(); });
            continue;
        }
        sleep(pause, config_.scheduler.scan_min_interval);
    }
}

int TriggerNode::WakeLocalMasters() {
    int woken = 0;
    {
        std::lock_guard lock(mu_);
        for (std::size_t i = 0; i < shard_epochs_.size(); ++i) {
            if (!shard_epochs_[i]) continue;
            master_wakes_[i] = 1;
            ++woken;
        }
    }
    if (woken > 0) {
        impl_->master_wakes->Inc(woken);
        cv_.notify_all();
    }
    return woken;
}

void TriggerNode::WakeMasters() {
    // This node's own masters through wake_self; every other leader by POST.
    if (impl_->waker) {
        impl_->waker->Wake();
    } else {
        WakeLocalMasters();  // not started: no other leader is known yet
    }
}

void TriggerNode::ResultsApplied(const std::vector<std::int64_t>& fire_ids) {
    // The routes are served before the slave exists (Start); started_ is set after it is.
    if (started_ && impl_->slave) impl_->slave->ResultsApplied(fire_ids);
    // Whichever node dispatched them: the SDK posts a flush's results to one node.
    if (started_ && impl_->run_ends) impl_->run_ends->Forward(fire_ids);
}

void TriggerNode::ClusterGaugesLoop() {
    // Every few seconds is enough for dashboards and alerts; the queries are aggregates over
    // indexes (pending/running/overdue, live executors) and the retained succeeded fires.
    constexpr auto kInterval = std::chrono::seconds(5);
    const auto ms = [](Micros d) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    };
    // One per term: a new term reads every job's last success once, then only what ended since.
    std::optional<std::int64_t> tracked_epoch;
    std::unique_ptr<store::LastSuccessTracker> last_success;
    // A refresh reads the jobs whose last success the results path recorded since the previous
    // one (job_last_success), so its cost follows the jobs with activity; every 30 s, since the
    // gauge serves alerts on hours without a success and the rows are themselves written at
    // most once per job per 10 s (web::LastSuccessWriter).
    constexpr auto kLastSuccessInterval = std::chrono::seconds(30);
    std::chrono::steady_clock::time_point last_success_read{};
    while (!stopping_) {
        const auto epoch = LeadingEpochAfter(kInterval);
        if (stopping_) break;
        if (!epoch) {
            std::lock_guard lock(impl_->gauges_mu);
            impl_->gauges.reset();
            continue;
        }
        if (tracked_epoch != epoch || !last_success) {
            tracked_epoch = epoch;
            last_success = std::make_unique<store::LastSuccessTracker>();
        }
        const auto now = std::chrono::steady_clock::now();
        const bool refresh = last_success->first_read() || now - last_success_read >= kLastSuccessInterval;
        auto read = store::ReadClusterGauges(*db_, ms(config_.scheduler.misfire_threshold),
                                             ms(config_.scheduler.executor_ttl), *last_success, refresh);
        if (read.ok() && refresh) last_success_read = now;
        if (!read.ok()) {
            spdlog::warn("master cluster gauges: {}", read.status().ToString());
            continue;
        }
        std::lock_guard lock(impl_->gauges_mu);
        impl_->gauges = std::move(*read);
    }
}

std::optional<std::int64_t> TriggerNode::LeadingEpochAfter(Micros interval) {
    std::optional<std::int64_t> epoch;
    {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, interval, [this] { return stopping_.load(); });
        epoch = shard_epochs_[0];
    }
    if (stopping_ || !epoch || !impl_->leases->IsLeading(0, *epoch)) return std::nullopt;
    return epoch;
}

void TriggerNode::PurgeLoop() {
    while (!stopping_) {
        const auto epoch = LeadingEpochAfter(config_.scheduler.purge_interval);
        if (stopping_) break;
        if (!epoch) continue;
        const auto started = std::chrono::steady_clock::now();
        auto round = impl_->purger->PurgeRound(*epoch, [this] { return stopping_.load(); });
        const auto elapsed_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
        if (!round.ok()) {
            // Batches committed before the error stay deleted; the rest is retried next interval.
            spdlog::warn("master history purge failed after {} ms: {}", elapsed_ms, round.status().ToString());
        } else if (round->by_age + round->by_cap + round->audit + round->deliveries > 0) {
            spdlog::info(
                "master history purge: {} fires deleted ({} by age, {} beyond the per-job cap), {} audit entries "
                "and {} alert deliveries by age, in {} batches, {} ms",
                round->by_age + round->by_cap, round->by_age, round->by_cap, round->audit, round->deliveries,
                round->batches, elapsed_ms);
        }
    }
}

void TriggerNode::AlertLoop() {
    while (!stopping_) {
        const auto epoch = LeadingEpochAfter(config_.scheduler.alert_interval);
        if (stopping_) break;
        if (!epoch) continue;
        auto round = impl_->alerter->Round(*epoch, [this] { return stopping_.load(); });
        if (!round.ok()) {
            // What committed stays; the cursor and the pending deliveries are retried next round.
            spdlog::warn("master alerts round failed: {}", round.status().ToString());
        } else if (round->deliveries_created + round->delivered + round->retried + round->failed > 0) {
            spdlog::info("master alerts: {} deliveries created, {} delivered, {} to retry, {} failed",
                         round->deliveries_created, round->delivered, round->retried, round->failed);
        }
    }
}

void TriggerNode::Notify(const ScanReport& report, std::int64_t epoch, int shard) {
    for (const auto& [node, fires] : report.assigned) {
        if (node == node_id_) {
            if (impl_->slave) impl_->slave->Notify(fires);
            continue;
        }
        auto it = report.node_addresses.find(node);
        if (it == report.node_addresses.end()) continue;
        protocol::FiresNotice notice = protocol::MakeFiresNotice(epoch, fires, shard);
        const std::string url = impl_->http->PeerUrl(it->second, protocol::kFiresNoticePath);
        net::co_spawn(
            io_,
            [this, url, notice = std::move(notice)]() mutable -> net::awaitable<void> {
                http::CallOptions call{.timeout = std::chrono::seconds(1), .bearer_token = config_.token};
                auto r = co_await impl_->http->PostJson(url, protocol::ToJson(notice), call);
                // A node older than a field (a rolling upgrade) refuses it: without planned, its
                // claims run their UPDATE; without fill, its fires are claimed at claim-ahead;
                // without due_at, the ids alone, which it
                // reads itself, rather than its poll up to a second later. One field at a time,
                // as such a node names the first it does not know.
                for (int tries = 0; tries < 3 && r.ok(); ++tries) {
                    if (protocol::RefusedPlanned(r->status, r->body) && !notice.planned.empty()) {
                        notice.planned.clear();
                    } else if (protocol::RefusedFill(r->status, r->body) && !notice.fill.empty()) {
                        notice.fill.clear();
                    } else if (protocol::RefusedDueAt(r->status, r->body) && notice.due_at) {
                        notice.due_at.reset();
                        notice.fill.clear();
                        notice.planned.clear();
                    } else {
                        break;
                    }
                    r = co_await impl_->http->PostJson(url, protocol::ToJson(notice), call);
                }
                // Best effort: the slave's poll finds the fires anyway.
                if (!r.ok() || !r->ok()) spdlog::debug("notify {} failed", url);
            },
            net::detached);
    }
}

bool TriggerNode::WatchShards(bool read_count) {
    const int shards = config_.scheduler.shards;
    // A node paused while the cluster was re-sharded would plan with the old count: it gives up
    // its shards (the balancer yields them all and takes none) until it is restarted.
    Result<std::optional<int>> recorded = std::optional<int>();
    if (read_count) recorded = db_->Run([](soci::session& s) { return store::ReadShardCount(s); });
    if (read_count && recorded.ok()) {
        std::string refused;
        if (*recorded && **recorded != shards) {
            refused = "scheduler.shards is " + std::to_string(shards) + " but the cluster now plans in " +
                      std::to_string(**recorded) +
                      " shards: restart this node with scheduler.shards: " + std::to_string(**recorded);
        }
        impl_->leases->balancer().SetEnabled(refused.empty(), refused);
        std::lock_guard serving_lock(serving_mu_);
        shards_refused_ = std::move(refused);
    }
    const bool read = recorded.ok();
    if (shards == 1) return read;
    // Who competes for shards: a heartbeat within ttl - margin (at least two heartbeats), so a
    // dead node stops counting before its leases expire, and the survivors, whose share has
    // grown, take its shards at their first round after the expiry.
    const Micros window = std::max(config_.election.ttl - config_.election.margin, 2 * config_.heartbeat_interval);
    auto competing = store::TriggerNodeRepository(*db_).ListCompeting(
        std::chrono::duration_cast<std::chrono::milliseconds>(window).count());
    if (!competing.ok()) return read;
    std::vector<std::string> ids;
    ids.reserve(competing->size());
    for (const auto& n : *competing) ids.push_back(n.node_id);
    impl_->leases->balancer().SetParticipants(std::move(ids));
    return read;
}

void TriggerNode::HeartbeatLoop() {
    store::TriggerNodeRepository nodes(*db_);
    auto next_clock = std::chrono::steady_clock::now();
    // Start() checked the count just before this loop began.
    ShardCountWatch shard_count(2 * config_.heartbeat_interval, std::chrono::seconds(30));
    shard_count.Read(std::chrono::steady_clock::now());
    while (!stopping_) {
        const auto beat_started = std::chrono::steady_clock::now();
        Status s = nodes.Heartbeat({.node_id = node_id_,
                                    .address = advertised_,
                                    .capacity = config_.slave.enabled ? config_.slave.capacity : 0,
                                    .state = config_.slave.enabled ? "active" : "standby"});
        const auto beat_ended = std::chrono::steady_clock::now();
        if (s.ok() != db_ok_.load()) {
            if (s.ok()) {
                spdlog::info("node {}: database reachable again", node_id_);
            } else {
                spdlog::warn("node {}: heartbeat failed: {}", node_id_, s.ToString());
            }
        }
        db_ok_ = s.ok();
        const bool read_count = shard_count.ReadDue(beat_started, beat_ended, s.ok());
        if (s.ok() && WatchShards(read_count) && read_count) shard_count.Read(beat_ended);
        if (config_.database.topology == db::Topology::kGalera) {
            // A Galera node that left the primary component, or is a donor, may still answer.
            auto facts = db::ReadServerFacts(*db_);
            const Status serving = facts.ok() ? db::CheckServing(*facts, config_.database.topology) : facts.status();
            std::lock_guard serving_lock(serving_mu_);
            if (serving.ok() != db_not_serving_.empty()) {
                if (serving.ok()) {
                    spdlog::info("node {}: database node serves again", node_id_);
                } else {
                    spdlog::warn("node {}: database node cannot serve: {}", node_id_, serving.message());
                }
            }
            db_not_serving_ = serving.ok() ? "" : serving.message();
        }
        if (std::chrono::steady_clock::now() >= next_clock) {
            if (Status c = time_->Refresh(); !c.ok()) spdlog::debug("DB clock refresh failed: {}", c.ToString());
            next_clock = std::chrono::steady_clock::now() + config_.clock_refresh;
        }
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, config_.heartbeat_interval, [this] { return stopping_.load(); });
    }
}

}  // namespace sched::trigger
