#pragma once

/// What the UI's dashboard shows (`GET /api/v1/dashboard`): fires over a recent window by outcome,
/// per-job success and dispatch lag, and the fires running or overdue right now. Read-only
/// aggregates over `job_fire`, bounded in rows returned whatever the table holds.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/model/fire.hpp"
#include "sched/store/fire.hpp"

namespace sched::store {

/// The number of FireStatus values (the index of a status in OutcomeBucket::times).
inline constexpr std::size_t kFireStatusCount = static_cast<std::size_t>(model::FireStatus::kSkipped) + 1;

/// Scheduled times in [start_ms, start_ms + bucket) by the status of their fire. A misfire summary
/// row counts as the `skipped_count` times it stands for.
struct OutcomeBucket {
    std::int64_t start_ms = 0;
    std::array<std::int64_t, kFireStatusCount> times{};
};

/// One job's fires scheduled in the window.
struct JobActivity {
    std::int64_t job_id = 0;
    std::string name;  ///< "" when the job was deleted since
    std::string app;
    std::int64_t succeeded = 0;
    std::int64_t failed = 0;   ///< failed, timeout, killed and lost
    std::int64_t skipped = 0;  ///< scheduled times that got no run (the ledger), summary rows expanded
    std::int64_t active = 0;   ///< pending, dispatching or running
    std::int64_t dispatched = 0;
    std::int64_t lag_sum_ms = 0;  ///< over dispatched fires: dispatched_at - due_at
    std::int64_t lag_max_ms = 0;
    std::optional<std::int64_t> last_success_ms;  ///< the latest finished_at of a succeeded fire

    std::int64_t Ended() const { return succeeded + failed; }
};

/// A fire that has not ended.
struct ActiveFire {
    std::int64_t id = 0;
    std::int64_t job_id = 0;
    std::string job_name;
    std::int64_t scheduled_time = 0;
    std::int64_t due_at = 0;
    model::FireStatus status = model::FireStatus::kPending;
    std::optional<std::string> assigned_node;
    std::optional<std::string> executor_address;
    std::optional<std::int64_t> started_at;
};

struct FireActivity {
    std::int64_t now_ms = 0;  ///< the database clock
    std::int64_t from_ms = 0;
    std::int64_t bucket_ms = 0;
    std::vector<OutcomeBucket> buckets;  ///< contiguous from from_ms to now, oldest first
    std::vector<JobActivity> jobs;       ///< at most max_jobs: most failures first, then most fires
    std::int64_t jobs_total = 0;         ///< jobs with fires in the window
    std::int64_t running = 0;            ///< dispatching or running now (any scheduled time)
    std::int64_t pending = 0;
    std::int64_t overdue = 0;               ///< pending and due more than overdue_after_ms ago
    std::vector<ActiveFire> running_fires;  ///< at most max_fires, longest running first
    std::vector<ActiveFire> overdue_fires;  ///< at most max_fires, most overdue first
};

struct ActivityQuery {
    std::int64_t window_ms = 3'600'000;
    std::int64_t bucket_ms = 60'000;  ///< window_ms / bucket_ms must be at most kMaxBuckets
    std::int64_t overdue_after_ms = 5'000;
    std::size_t max_jobs = 100;
    std::size_t max_fires = 20;
};

class FireStats {
  public:
    static constexpr std::int64_t kMaxBuckets = 1'440;

    explicit FireStats(db::Database& db) : db_(db) {}

    /// The window ends at the database clock's now. Statements: the DB clock, one grouped count
    /// per bucket and status and one per job and status (ranges over idx_fire_time), the listed jobs' names, one count
    /// of the fires not ended, and the running and overdue lists only when there are such fires. Throws
    /// std::invalid_argument for a query outside its bounds (the API validates first).
    Result<FireActivity> Activity(const ActivityQuery& query);

  private:
    db::Database& db_;
};

}  // namespace sched::store
