#pragma once

/// Retention of fire history: the master deletes ended fires in small batches so `job_fire`
/// stays bounded (unpruned it grows by ~1 GB/day at 50 every-second jobs).
///
/// What goes: fires in a final state (model::IsFinal) with followup = 0 (a fire whose retry or
/// fixed-delay advance is still to be done stays), together with the rows of the tables keyed by
/// their fire_id (store::FireRepository::DeleteMany), for one of two reasons:
///   - age: ended (finished_at, or scheduled_time when NULL) and scheduled more than
///     `history-retention` ago, by the database clock (DbTime);
///   - cap: scheduled before the job's `history-max-per-job` newest fires (of any state; fires
///     sharing the boundary's scheduled time are all kept). Only jobs that still exist are
///     capped; fires of deleted jobs leave by age.
/// The audit log (store::AuditRepository) follows the same `history-retention`: entries older
/// than it are deleted in the same kind of fenced batches, after the fires' age batches.
///
/// Every batch is its own short transaction fenced with the lease epoch (lock::Fence): at most
/// `purge-batch` ids are selected, then deleted with one DELETE (per table). Nothing runs
/// inside the scan's transaction, and a node that lost the lease deletes nothing (LeaseLost).
/// Keys (MasterConfig, section `scheduler`): history-retention, history-max-per-job,
/// purge-interval, purge-batch.
///
/// Metrics: sched_master_fires_purged_total{reason="age"|"cap"}, sched_master_purge_batches_total.
///
/// Not thread-safe: one loop (TriggerNode's purge thread, while it leads) calls it.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "sched/common/metrics.hpp"
#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/lock/fenced.hpp"
#include "sched/trigger/db_time.hpp"
#include "sched/trigger/master.hpp"

namespace sched::trigger {

struct PurgeReport {
    int by_age = 0;       ///< fires deleted for their age
    int by_cap = 0;       ///< fires deleted beyond their job's cap
    int batches = 0;      ///< fenced transactions that deleted something
    int jobs_capped = 0;  ///< jobs checked against the cap this round
    int audit = 0;        ///< audit log entries deleted for their age
    int deliveries = 0;   ///< ended alert deliveries deleted for their age
};

class HistoryPurger {
  public:
    HistoryPurger(std::shared_ptr<db::Database> db, lock::Fence& fence, const DbTime& time, MasterConfig config,
                  MetricsRegistry& metrics);

    /// One age batch: deletes at most purge-batch expired fires in one fenced transaction.
    /// Returns how many; fewer than purge-batch means none was left. LeaseLost: nothing deleted.
    Result<int> PurgeExpiredBatch(std::int64_t epoch);

    /// One audit batch: deletes at most purge-batch audit entries older than history-retention
    /// (DB clock) in one fenced transaction. Returns how many. LeaseLost: nothing deleted.
    Result<int> PurgeAuditBatch(std::int64_t epoch);

    /// One batch of alert deliveries: deletes at most purge-batch delivered or failed deliveries
    /// created before history-retention, in one fenced transaction. Returns how many.
    Result<int> PurgeDeliveryBatch(std::int64_t epoch);

    /// One cap batch for one job: deletes at most purge-batch of its purgeable fires scheduled
    /// before its history-max-per-job newest, in one fenced transaction. Returns how many.
    Result<int> PurgeOverCapBatch(std::int64_t epoch, std::int64_t job_id);
    /// The same with the boundary (FireRepository::CapBoundary) already read, or nullopt to
    /// read it inside the batch.
    Result<int> PurgeOverCapBatch(std::int64_t epoch, std::int64_t job_id, std::optional<std::int64_t> boundary);

    /// A round: age batches until one is not full, then audit and then alert delivery batches the same way, then the
    /// cap for the next purge-batch jobs (a cursor over job ids that wraps around, so every job is checked every few
    /// rounds): one read finds which of them are over the cap (FireRepository::CapBoundaries), and only those get
    /// batches, each job's until one is not full. At most kMaxBatchesPerRound batches, and it stops early when
    /// `should_stop()` says so. The first error ends the round (it is retried at the next one); what was committed
    /// before stays deleted and counted.
    Result<PurgeReport> PurgeRound(std::int64_t epoch, const std::function<bool()>& should_stop = {});

    /// A backlog (a first start after an upgrade) drains at up to this many batches per round.
    static constexpr int kMaxBatchesPerRound = 100;

    const MasterConfig& config() const { return config_; }

  private:
    /// One fenced batch of a table that goes by age alone: `purge_before(session, cutoff, limit)`
    /// with cutoff = DB now - history-retention.
    Result<int> PurgeTableBatch(std::int64_t epoch, int (*purge_before)(soci::session&, std::int64_t, int));

    std::shared_ptr<db::Database> db_;
    lock::Fence& fence_;
    const DbTime& time_;
    MasterConfig config_;
    std::int64_t cap_cursor_ = 0;  // the last job id checked against the cap
    CounterChild& purged_by_age_;
    CounterChild& purged_by_cap_;
    CounterChild& batches_;
};

}  // namespace sched::trigger
