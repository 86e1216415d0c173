#pragma once

/// Fire metrics shared by the processes that end fires (the web module's callback API, the
/// slave) and the master's cluster gauges, read with a few aggregate queries.
///
/// Series (docs/architecture/metrics.md): the job label is the job id (stable across renames);
/// a job's name appears only on sched_job_last_success_timestamp_seconds.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sched/common/metrics.hpp"
#include "sched/db/database.hpp"
#include "sched/store/fire.hpp"

namespace sched::store {

/// sched_fire_outcomes_total{app,job,status} and sched_fire_duration_seconds{app}.
/// Thread-safe (the registry's families are).
class FireOutcomeMetrics {
  public:
    explicit FireOutcomeMetrics(MetricsRegistry& registry);
    /// A fire of `job_id` (of `app`) ended with `status`; `duration_s` is finished - started
    /// when both are known (observed into the duration histogram).
    void Ended(const std::string& app, std::int64_t job_id, FireStatus status,
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
};
std::vector<FireJob> JobsOfFires(soci::session& s, const std::vector<std::int64_t>& fire_ids);

/// The cluster-wide gauges the leading master exports, from five aggregate SELECTs (by the
/// status index, the executor table, and one GROUP BY over the retained succeeded fires).
struct ClusterGauges {
    std::int64_t pending = 0;  ///< pending + dispatching
    std::int64_t running = 0;
    std::int64_t overdue = 0;  ///< pending, due more than misfire_threshold_ms ago (DB clock)
    std::vector<std::pair<std::string, std::int64_t>> executors_live;  ///< per app with jobs or instances
    struct LastSuccess {
        std::string app;
        std::int64_t job_id = 0;
        std::string name;
        std::int64_t finished_ms = 0;
    };
    std::vector<LastSuccess> last_success;  ///< jobs with a succeeded fire still in the history
};
Result<ClusterGauges> ReadClusterGauges(db::Database& db, std::int64_t misfire_threshold_ms,
                                        std::int64_t executor_ttl_ms);

}  // namespace sched::store
