#pragma once

/// Fire metrics shared by the processes that end fires (the web module's callback API, the
/// slave) and the master's cluster gauges, read with a few aggregate queries.
///
/// Series (docs/architecture/metrics.md): the job_id label is the job id (stable across renames);
/// a job's name appears only on sched_job_last_success_timestamp_seconds.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sched/common/metrics.hpp"
#include "sched/db/database.hpp"
#include "sched/model/fire.hpp"
#include "sched/store/fire.hpp"

namespace sched::store {

/// sched_fire_outcomes_total{app,job_id,status} and sched_fire_duration_seconds{app}.
/// Thread-safe (the registry's families are).
class FireOutcomeMetrics {
  public:
    explicit FireOutcomeMetrics(MetricsRegistry& registry);
    /// A fire of `job_id` (of `app`) ended with `status`; `duration_s` is finished - started
    /// when both are known (observed into the duration histogram).
    void Ended(const std::string& app, std::int64_t job_id, model::FireStatus status,
               std::optional<double> duration_s = std::nullopt);

  private:
    Family<CounterChild>& outcomes_;
    Family<HistogramChild>& duration_;
};

/// The job and app of each fire in `fire_ids` that still exists (one SELECT per 500 ids),
/// inside the caller's transaction.
struct FireJob {
    std::int64_t fire_id = 0;
    std::int64_t job_id = 0;
    std::string app;
    std::int64_t scheduled_time = 0;          ///< set by FireResults::ApplyMany (for the fire's trace)
    std::int64_t created_at = 0;              ///< likewise
    std::optional<std::string> trace_parent;  ///< likewise: a manual trigger's caller context
};
std::vector<FireJob> JobsOfFires(soci::session& s, const std::vector<std::int64_t>& fire_ids);

/// A job's latest success as the results path saw it: what RecordLastSuccesses writes.
struct JobSuccess {
    std::int64_t job_id = 0;
    std::int64_t finished_ms = 0;  ///< the succeeded fire's finish time (the executor's clock)
    std::int64_t fire_id = 0;      ///< that fire
};

/// Of two successes of one job, the one a job's row keeps: the later finish, and of one finish
/// the larger fire id.
bool LaterSuccess(const JobSuccess& a, const JobSuccess& b);

/// Writes `successes` into job_last_success, one row per job: a job's finished_at moves only
/// forward (a result applied late with an older finish leaves it), and with it its fire_id and
/// fire_finished_at (= finished_at: the fire is known) and recorded_at, the database clock. A
/// finish more than a minute ahead of the database clock counts as a minute ahead, a missing one
/// (0) as the database clock. One INSERT ... ON DUPLICATE KEY UPDATE (SQLite: ON CONFLICT) per
/// 500 jobs; a job named twice keeps its LaterSuccess. Session-level; throws soci errors.
void RecordLastSuccesses(soci::session& s, const std::vector<JobSuccess>& successes);

/// The latest succeeded fire of each job, kept from one read to the next so that a read costs
/// the jobs whose success moved since the last one, neither the fires' history nor every job.
/// It reads job_last_success (RecordLastSuccesses, written by the results path): the first read
/// (per tracker: a new master starts a new one) reads every row with its job's name; a later
/// read only the rows recorded after the previous read's database time minus
/// `recent_overlap_ms` (a range of idx_last_success_recorded, each joined with its job by
/// primary key); once `deep_interval_ms` has passed since the last deep read, the read is deep
/// again: every row, so that a deleted job drops out and a renamed one shows its new name. The
/// overlap covers a row recorded by a statement that read its clock before this read's and
/// committed after it, and a Galera node's clock a little behind this one's. A job keeps its
/// last success after the history purge deleted that fire.
class LastSuccessTracker {
  public:
    struct Job {
        std::string app;
        std::int64_t job_id = 0;
        std::string name;
        std::int64_t finished_ms = 0;
    };
    explicit LastSuccessTracker(std::int64_t deep_interval_ms = std::int64_t{10} * 60 * 1000,
                                std::int64_t recent_overlap_ms = std::int64_t{5} * 1000)
        : deep_interval_ms_(deep_interval_ms), recent_overlap_ms_(std::min(recent_overlap_ms, deep_interval_ms)) {}

    /// One read inside the caller's transaction at the database's time; throws soci errors.
    void Refresh(soci::session& s);
    /// The same at `now_ms`, the database clock's time as the caller read it.
    void Refresh(soci::session& s, std::int64_t now_ms);
    /// Every tracked job, by job id.
    std::vector<Job> Jobs() const;
    /// Whether the next Refresh reads every job's row (no read yet).
    bool first_read() const { return !read_at_ms_.has_value(); }
    /// Rows of job_last_success the last Refresh read.
    std::size_t last_rows_read() const { return last_rows_read_; }

  private:
    std::int64_t deep_interval_ms_;
    std::int64_t recent_overlap_ms_;
    std::optional<std::int64_t> read_at_ms_;       // the database clock at the previous read
    std::optional<std::int64_t> deep_read_at_ms_;  // ... at the previous deep (or first) read
    std::map<std::int64_t, Job> by_job_;
    std::size_t last_rows_read_ = 0;
};

/// The cluster-wide gauges the leading master exports, from four aggregate SELECTs (by the
/// status index and the executor table) and a LastSuccessTracker's read.
struct ClusterGauges {
    std::int64_t pending = 0;  ///< pending + dispatching
    std::int64_t running = 0;
    std::int64_t overdue = 0;  ///< pending, due more than misfire_threshold_ms ago (DB clock)
    std::vector<std::pair<std::string, std::int64_t>> executors_live;  ///< per app with jobs or instances
    using LastSuccess = LastSuccessTracker::Job;
    std::vector<LastSuccess> last_success;  ///< jobs with a succeeded fire (LastSuccessTracker)
};
/// `last_success` is refreshed in the same read transaction when `refresh_last_success` (or it
/// has not read yet), and copied into the result either way: a caller may refresh it less often
/// than the other gauges.
Result<ClusterGauges> ReadClusterGauges(db::Database& db, std::int64_t misfire_threshold_ms,
                                        std::int64_t executor_ttl_ms, LastSuccessTracker& last_success,
                                        bool refresh_last_success = true);

}  // namespace sched::store
