#include "sched/trigger/slave_ports.hpp"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "sched/lock/fenced.hpp"
#include "sched/store/fire_claims.hpp"
#include "sched/store/shard.hpp"
#include "sched/store/workflow_run.hpp"
#include "sched/trigger/misfire_verdict.hpp"
#include "sched/trigger/slave.hpp"

namespace sched::trigger {

using model::FireStatus;

std::int64_t NewClaimToken() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::int64_t token = 0;
    while (token == 0) token = static_cast<std::int64_t>(rng() >> 1);
    return token;
}

std::vector<protocol::NoticedFire> AsNoticed(const std::vector<model::Fire>& fires) {
    std::vector<protocol::NoticedFire> out;
    out.reserve(fires.size());
    for (const auto& f : fires) {
        out.push_back({.id = f.id, .due_at = f.due_at, .planned = f.status == model::FireStatus::kDispatching});
    }
    return out;
}

SqlFireClaimStore::SqlFireClaimStore(std::shared_ptr<db::Database> db, std::string lease_name,
                                     std::int64_t misfire_threshold_ms)
    : db_(std::move(db)),
      lease_name_(std::move(lease_name)),
      lease_pattern_(store::ShardLeasePattern(lease_name_)),
      misfire_threshold_ms_(misfire_threshold_ms) {}

Result<std::vector<std::int64_t>> SqlFireClaimStore::ListPendingIds(const std::string& node, int limit) {
    return db_->Run([&](soci::session& s) { return store::FireClaims::ListPendingIds(s, node, limit); });
}

Result<std::vector<model::Fire>> SqlFireClaimStore::FindPending(const std::string& node,
                                                                const std::vector<std::int64_t>& ids) {
    return db_->Run([&](soci::session& s) { return store::FireClaims::FindPending(s, node, ids); });
}

Result<ClaimedGroup> SqlFireClaimStore::Claim(const std::string& node, const std::vector<std::int64_t>& ids,
                                              std::int64_t token, std::int64_t now_ms,
                                              const store::ClaimOptions& options) {
    // One transaction, one commit, two statements for the whole group: the claim and the fires it
    // won with their jobs. The epoch sent in /v1/run is recorded with the claim (a callback must
    // carry it); it is the sum of the shard lease rows' epochs (the lease's own epoch with one
    // shard), read by the claim's UPDATE itself so that it is the one in force when the fires
    // left pending.
    return db_->InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<ClaimedGroup> {
        ClaimedGroup group;
        auto claimed = store::FireClaims::Claim(s, node, ids, token, {lease_name_, lease_pattern_}, now_ms, options);
        group.planned = std::move(claimed.planned);
        group.sent_through = claimed.sent_through;
        // Epochs only grow: the newest stamp is this try's (a fire an earlier try of the same
        // claim won carries that try's, older or equal), and the group is sent under it.
        for (const auto& f : claimed.fires) group.epoch = std::max(group.epoch, f.dispatch_epoch.value_or(0));
        std::map<std::int64_t, model::Job> jobs = std::move(claimed.jobs);
        // Two or three statements more (the seats read, the holders not seen ended read, the
        // seats written) only for groups with a job whose policy limits its runs.
        const store::LateJudge late = [this, now_ms](const model::Fire& f, const model::Job& job,
                                                     const std::vector<model::Fire>& group) {
            return MisfireVerdict(group, f, job, now_ms, misfire_threshold_ms_);
        };
        auto admission =
            store::FireClaims::Admit(s, db_->dialect(), std::move(claimed.fires), jobs, token, now_ms, late);
        group.fires = std::move(admission.admitted);
        group.held = std::move(admission.held);
        group.first_in_line = std::move(admission.first_in_line);
        group.skipped = std::move(admission.skipped);
        group.late = std::move(admission.late);
        group.stop = std::move(admission.stop);
        for (auto& [id, job] : jobs) group.jobs.push_back(std::move(job));
        // One more only for groups with workflow step fires.
        std::set<std::int64_t> run_ids;
        for (const auto& f : group.fires) {
            if (f.workflow_run_id) run_ids.insert(*f.workflow_run_id);
        }
        if (!run_ids.empty()) {
            group.run_params =
                store::WorkflowRunRepository::ParamsOf(s, std::vector<std::int64_t>(run_ids.begin(), run_ids.end()));
        }
        return group;
    });
}

Result<std::optional<std::int64_t>> SqlFireClaimStore::Restamp(std::int64_t id, std::int64_t token) {
    // One transaction: the epoch read is the one in force when the fire is stamped, and the
    // stamp lands only while the claim still holds the fire.
    return db_->InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<std::optional<std::int64_t>> {
        const auto epoch = lock::ReadEpochSum(s, lease_name_, lease_pattern_);
        if (!epoch || !store::FireClaims::Restamp(s, id, token, *epoch)) return std::optional<std::int64_t>();
        return epoch;
    });
}

Result<std::vector<store::ExecutorInstance>> SqlFireClaimStore::LiveExecutors(std::int64_t ttl_ms) {
    return store::ExecutorRepository(*db_).ListAllLive(ttl_ms);
}

Result<int> SqlFireClaimStore::MarkRunning(const std::vector<store::StartedFire>& fires, const std::string& address) {
    return db_->Run([&](soci::session& s) { return store::FireClaims::MarkRunning(s, fires, address); });
}

Result<std::vector<std::int64_t>> SqlFireClaimStore::Finish(const std::vector<FireEnding>& endings) {
    // One commit for a window's endings (a burst for an app with no live instance ends every
    // fire here): each is still its own CAS, so a fire a callback or the sweep ended first
    // keeps that end.
    return db_->InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<std::vector<std::int64_t>> {
        std::vector<std::int64_t> moved;
        for (const auto& e : endings) {
            const store::FireUpdate update{.executor_address = e.executor_address,
                                           .started_at = e.started_at,
                                           .finished_at = e.finished_at,
                                           .result_message = e.message,
                                           .reason = e.reason,
                                           .followup = true};
            // Only an accepted run times out, and its `running` record may land between the
            // watch's read of the status and this end (the record waits record-running-after):
            // either state ends.
            const int n = e.to == FireStatus::kTimeout
                              ? store::FireRepository::Transition(
                                    s, e.id, {FireStatus::kDispatching, FireStatus::kRunning}, e.to, update)
                              : store::FireRepository::Transition(s, e.id, {e.from}, e.to, update);
            if (n == 1) moved.push_back(e.id);
        }
        return moved;
    });
}

void PushEndedSpans(const std::vector<FireEnding>& endings, const std::vector<std::int64_t>& moved) {
    const std::set<std::int64_t> won(moved.begin(), moved.end());
    std::vector<PendingFireSpan> spans;
    for (const auto& e : endings) {
        if (!e.span || !won.contains(e.id)) continue;
        spans.push_back(*e.span);
        spans.back().end_ms = e.finished_at;
    }
    PushFireSpans(spans);
}

Result<FireStatus> SqlFireClaimStore::StatusOf(std::int64_t id) {
    auto fire = store::FireRepository(*db_).Get(id);
    if (!fire.ok()) return fire.status();
    return fire->status;
}

Result<int> SqlFireClaimStore::EndEarlierDispatches(const std::string& node, std::int64_t started_ms,
                                                    std::int64_t now_ms) {
    return db_->InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<int> {
        int ended = 0;
        // Claimed by this process already (a notification can beat the first poll): ours. A
        // planned fire (no claim token) is TakePlanned's to judge.
        for (const std::int64_t id : store::FireClaims::ClaimedBefore(s, node, started_ms, 10000)) {
            const std::string message = "slave " + node + " restarted while dispatching";
            ended += store::FireRepository::Transition(s, id, {FireStatus::kDispatching}, FireStatus::kLost,
                                                       {.finished_at = now_ms,
                                                        .result_message = message,
                                                        .reason = model::FireReason::kSlaveRestarted,
                                                        .followup = true});
        }
        return ended;
    });
}

Result<std::optional<PlannedTaken>> SqlFireClaimStore::TakePlanned(const std::string& node, std::int64_t now_ms) {
    return db_->InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<std::optional<PlannedTaken>> {
        const auto through = store::FireClaims::TakePlanned(s, node);
        if (!through) return std::optional<PlannedTaken>();
        return std::optional<PlannedTaken>(PlannedTaken{
            .lost = store::FireClaims::LoseSentBefore(s, node, *through, now_ms), .sent_through = *through});
    });
}

Result<int> SqlFireClaimStore::HandBack(const std::string& node, const std::optional<std::set<std::int64_t>>& sent) {
    return db_->InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<int> {
        return store::FireClaims::HandBack(s, node, sent);
    });
}

// The slave on the cluster's database: these SQL ports, and executors called with the apps'
// signing keys.
Slave::Slave(net::any_io_executor io, net::thread_pool& db_pool, const std::shared_ptr<db::Database>& db,
             const DbTime& time, http::HttpClient& http, std::string node_id, std::string lease_name,
             SlaveConfig config, MetricsRegistry& metrics)
    : Slave(std::move(io), db_pool,
            std::make_unique<SqlFireClaimStore>(
                db, std::move(lease_name),
                std::chrono::duration_cast<std::chrono::milliseconds>(config.misfire_threshold).count()),
            std::make_unique<dispatch::SignedExecutorClient>(
                http, std::make_shared<dispatch::ExecutorSigner>([db] { return db; }, db_pool,
                                                                 [&time] { return time.NowMs(); })),
            time, std::move(node_id), config, metrics) {}

}  // namespace sched::trigger
