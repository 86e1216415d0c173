#pragma once

/// The slave's two seams (docs/architecture/slave.md): where its fires are stored
/// (FireClaimStore, below) and how it calls executors (dispatch::ExecutorClient). Slave talks
/// only to these interfaces, so its grouping, claiming and dispatch logic is unit-tested with
/// fakes (libs/trigger/test/slave_test.cpp); the node wires the SQL store below and the signing
/// HTTP client.
///
/// FireClaimStore calls block (database): the slave makes them on its DB pool, never on an I/O
/// thread. Every method is safe to call from several threads.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/protocol/fires_notice.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/fire_claims.hpp"
#include "sched/store/job.hpp"
#include "sched/store/registry.hpp"
#include "sched/trigger/fire_trace.hpp"

namespace sched::trigger {

/// What one group claim won: the fires (now `dispatching`, stamped with the claim's token and
/// the lease epoch) and the definitions of their jobs that still exist; and what the jobs'
/// concurrency limits made of the others (store::FireClaims::Admit).
struct ClaimedGroup {
    std::int64_t epoch = 0;
    std::vector<model::Fire> fires;
    std::vector<model::Job> jobs;
    /// Back to `pending`, waiting for a seat of their job's limit: to be claimed again later.
    std::vector<std::int64_t> held;
    /// Of `held`, the first in line of their job (the next to get a seat).
    std::set<std::int64_t> first_in_line;
    /// Ended `skipped` by their job's overlap policy.
    std::vector<std::int64_t> skipped;
    /// Ended `skipped` (misfire) before they could wait for a seat: late past the threshold.
    std::vector<std::int64_t> late;
    /// Running fires of those jobs to stop (kill): cancel-other, terminate-other.
    std::vector<model::Fire> stop;
    /// The params of the workflow runs (by run id) of fires among `fires` whose run was
    /// triggered with params: each step of such a run gets them instead of its job's
    /// (docs/workflows.md "Manual trigger").
    std::map<std::int64_t, std::string> run_params;
    /// Of `fires`, those planned already claimed for the node (no claim token), and the node's
    /// committed sent_through as the claim read it: a planned fire due after it is not sent.
    std::set<std::int64_t> planned;
    std::optional<std::int64_t> sent_through;
};

/// What taking planned fires found (FireClaimStore::TakePlanned).
struct PlannedTaken {
    int lost = 0;                   ///< planned fires an earlier process may have sent: ended lost
    std::int64_t sent_through = 0;  ///< the node's committed sent_through
};

/// A fire's end as the slave records it: by CAS from `from`, with its message and, for a fire
/// that did not run, the ledger's reason. An accepted run whose `running` record was never
/// written (the end came first) carries that record's instance and start instead.
struct FireEnding {
    std::int64_t id = 0;
    model::FireStatus from = model::FireStatus::kDispatching;
    model::FireStatus to = model::FireStatus::kFailed;
    std::string message;
    std::optional<model::FireReason> reason;
    std::int64_t finished_at = 0;
    std::optional<std::string> executor_address;
    std::optional<std::int64_t> started_at;
    /// The fire's `ended` span (FireTracer on), pushed only when this ending moved the row: one
    /// that found the fire ended already (a result, the master's sweep) leaves it to the winner's.
    std::optional<PendingFireSpan> span;
};

/// Pushes the spans of those of `endings` whose ids are in `moved`, ended at their finished_at.
void PushEndedSpans(const std::vector<FireEnding>& endings, const std::vector<std::int64_t>& moved);

/// A new claim token: random and positive (a 63-bit value fits every backend's BIGINT/INTEGER),
/// so that two slaves, or two processes under one node id, never share one. Thread-safe.
std::int64_t NewClaimToken();

/// Fires read by FireClaimStore::FindPending as the slave queues them (id and due time).
std::vector<protocol::NoticedFire> AsNoticed(const std::vector<model::Fire>& fires);

class FireClaimStore {
  public:
    virtual ~FireClaimStore() = default;

    /// The ids of the pending and the dispatching fires assigned to `node`, earliest scheduled
    /// first, at most `limit` of each (the poll; the slave reads in full only those it does not
    /// know and has not sent, by FindPending).
    virtual Result<std::vector<std::int64_t>> ListPendingIds(const std::string& node, int limit) = 0;
    /// The fires among `ids` that are pending or planned and assigned to `node` (the poll's
    /// unknown ids, a notice without due times).
    virtual Result<std::vector<model::Fire>> FindPending(const std::string& node,
                                                         const std::vector<std::int64_t>& ids) = 0;
    /// Claims the fires among `ids` pending for `node` in one transaction
    /// (store::FireClaims::Claim), reads the lease epoch and the fires' jobs in it, and admits
    /// the fires to their jobs' concurrency limits (store::FireClaims::Admit). A retry after an
    /// error must pass the same `token`: the error may have hidden a commit.
    /// Planned fires among `ids` are returned as well, unwritten; `options` raise the node's
    /// sent_through first and may skip the UPDATE of pending fires (store::FireClaims::Claim).
    virtual Result<ClaimedGroup> Claim(const std::string& node, const std::vector<std::int64_t>& ids,
                                       std::int64_t token, std::int64_t now_ms, const store::ClaimOptions& options) = 0;
    /// After an executor refused a fire's epoch as stale (a failover between the claim and the
    /// send: the executor has seen the new master's epoch), stamps the fire with the lease's
    /// current epoch if this claim still holds it (`dispatching` under `token`). Returns that
    /// epoch, or nullopt when the fire is no longer this claim's (then it must not be sent).
    virtual Result<std::optional<std::int64_t>> Restamp(std::int64_t id, std::int64_t token) = 0;
    /// Every app's instances with a heartbeat younger than `ttl_ms`.
    virtual Result<std::vector<store::ExecutorInstance>> LiveExecutors(std::int64_t ttl_ms) = 0;
    /// Records `running` for the dispatching fires among `fires`, accepted by `address`.
    virtual Result<int> MarkRunning(const std::vector<store::StartedFire>& fires, const std::string& address) = 0;
    /// Ends the fires of `endings` in one transaction, each by CAS from its `from`; a fire no
    /// longer in its `from` (a callback or the sweep ended it first) is left as it is. Returns
    /// the ids of those that moved.
    virtual Result<std::vector<std::int64_t>> Finish(const std::vector<FireEnding>& endings) = 0;
    /// The fire's current status (kNotFound when gone).
    virtual Result<model::FireStatus> StatusOf(std::int64_t id) = 0;
    /// Marks lost the fires `node` was dispatching that were claimed before `started_ms` (by an
    /// earlier process under the same node id); returns how many.
    virtual Result<int> EndEarlierDispatches(const std::string& node, std::int64_t started_ms, std::int64_t now_ms) = 0;
    /// From now on `node` takes planned fires: its sent_through is set (0 when it had none),
    /// and the planned fires due at or before it, which a previous process under the node id may
    /// have sent, end lost (store::FireClaims::TakePlanned, LoseSentBefore). nullopt while the
    /// node has no trigger_node row (no heartbeat yet): no fire is planned for it then.
    virtual Result<std::optional<PlannedTaken>> TakePlanned(const std::string& node, std::int64_t now_ms) = 0;
    /// Gives back every pending fire assigned to `node` and, with `sent`, every planned one not
    /// in it; returns how many (store::FireClaims::HandBack).
    virtual Result<int> HandBack(const std::string& node, const std::optional<std::set<std::int64_t>>& sent) = 0;
};

/// The store on the cluster's database. The epoch of a claim is the sum over the election's lease
/// rows, read by the claim's UPDATE: `lease_name` and its shards' rows (store::LeaseRows,
/// store::ShardLeaseName; a re-stamp reads the same sum with lock::ReadEpochSum);
/// a claimed fire of a job with a concurrency limit is judged against `misfire_threshold_ms`
/// (MisfireVerdict) before it may wait for a seat.
class SqlFireClaimStore final : public FireClaimStore {
  public:
    SqlFireClaimStore(std::shared_ptr<db::Database> db, std::string lease_name, std::int64_t misfire_threshold_ms);

    Result<std::vector<std::int64_t>> ListPendingIds(const std::string& node, int limit) override;
    Result<std::vector<model::Fire>> FindPending(const std::string& node,
                                                 const std::vector<std::int64_t>& ids) override;
    Result<ClaimedGroup> Claim(const std::string& node, const std::vector<std::int64_t>& ids, std::int64_t token,
                               std::int64_t now_ms, const store::ClaimOptions& options) override;
    Result<std::optional<std::int64_t>> Restamp(std::int64_t id, std::int64_t token) override;
    Result<std::vector<store::ExecutorInstance>> LiveExecutors(std::int64_t ttl_ms) override;
    Result<int> MarkRunning(const std::vector<store::StartedFire>& fires, const std::string& address) override;
    Result<std::vector<std::int64_t>> Finish(const std::vector<FireEnding>& endings) override;
    Result<model::FireStatus> StatusOf(std::int64_t id) override;
    Result<int> EndEarlierDispatches(const std::string& node, std::int64_t started_ms, std::int64_t now_ms) override;
    Result<std::optional<PlannedTaken>> TakePlanned(const std::string& node, std::int64_t now_ms) override;
    Result<int> HandBack(const std::string& node, const std::optional<std::set<std::int64_t>>& sent) override;

  private:
    std::shared_ptr<db::Database> db_;
    std::string lease_name_;
    std::string lease_pattern_;
    std::int64_t misfire_threshold_ms_;
};

}  // namespace sched::trigger
