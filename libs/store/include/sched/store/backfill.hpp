#pragma once

/// Backfills: one row per request to run a job for every scheduled time in a past range, in
/// table `job_backfill` (sql/*/011_backfill.sql; docs/architecture/backfill.md).
///
/// The fires a backfill creates are ordinary job_fire rows of kind `backfill`, keyed like every
/// fire (job, scheduled_time, kind, attempt, shard), so running the same range twice inserts
/// nothing the second time. The master advances running backfills inside its fenced scan
/// (trigger::AdvanceBackfills) from the stored cursor, so a failover resumes where it stopped.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <soci/soci.h>

#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/model/fire.hpp"
#include "sched/store/fire.hpp"

namespace sched::store {

/// serial: one fire of the backfill unfinished at a time; parallel: up to max_parallel.
enum class BackfillOverlap { kSerial, kParallel };
/// "serial", "parallel".
std::string_view BackfillOverlapName(BackfillOverlap o);
std::optional<BackfillOverlap> ParseBackfillOverlap(std::string_view name);

/// running -> completed (every scheduled time of the range has an ended fire) | cancelled.
enum class BackfillState { kRunning, kCompleted, kCancelled };
/// "running", "completed", "cancelled".
std::string_view BackfillStateName(BackfillState s);
std::optional<BackfillState> ParseBackfillState(std::string_view name);

struct Backfill {
    std::int64_t id = 0;
    std::int64_t job_id = 0;
    std::int64_t range_from = 0;  ///< inclusive, epoch ms
    std::int64_t range_to = 0;    ///< exclusive, epoch ms
    BackfillOverlap overlap = BackfillOverlap::kSerial;
    int max_parallel = 1;  ///< 1 for serial
    BackfillState state = BackfillState::kRunning;
    /// Every scheduled time before it has been handled (a fire created, or one existed).
    std::int64_t cursor_ms = 0;
    int planned = 0;   ///< scheduled times in the range
    int existing = 0;  ///< of those, times that already had a fire (not run again)
    int created = 0;   ///< fires this backfill inserted (shards count once per time)
    std::string created_by;
    std::int64_t created_at = 0;
    std::int64_t updated_at = 0;
    std::optional<std::int64_t> finished_at;
};

/// The backfill fires (kind backfill) of a job in a range, by outcome; each shard counts.
struct BackfillFireCounts {
    std::int64_t running = 0;    ///< pending, dispatching or running
    std::int64_t succeeded = 0;  ///< succeeded
    std::int64_t failed = 0;     ///< any other final status (failed, timeout, killed, lost, skipped)
};

class BackfillRepository {
  public:
    explicit BackfillRepository(db::Database& db) : db_(db) {}

    /// kNotFound when there is none.
    Result<Backfill> Get(std::int64_t id);
    /// The job's backfills, newest first, ids < before_id (0 = from the newest), at most limit.
    Result<std::vector<Backfill>> ListForJob(std::int64_t job_id, std::int64_t before_id, int limit);
    /// running -> cancelled (no more fires are created; those created still run). kNotFound;
    /// kFailedPrecondition when it is not running (the message says its state).
    Result<Backfill> Cancel(std::int64_t id);
    Result<BackfillFireCounts> Counts(const Backfill& backfill);

    // ---- session-level operations, for transactions ----

    /// Inserts a backfill (state and counters as given); returns its id.
    static std::int64_t Insert(soci::session& s, const Backfill& backfill);
    static std::optional<Backfill> Find(soci::session& s, std::int64_t id);
    /// Running backfills of `shard`'s jobs with id > after_id, in id order, at most limit (idx_backfill_state).
    static std::vector<Backfill> ListRunning(soci::session& s, std::int64_t after_id, int limit,
                                             const JobShard& shard = {});
    /// How many running backfills the job has (idx_backfill_job).
    static int CountRunning(soci::session& s, std::int64_t job_id);
    /// Stores the master's progress: the cursor, the counters, the state and finished_at, only
    /// while the row is still running (a cancel wins). Returns whether it was stored.
    static bool SaveProgress(soci::session& s, const Backfill& backfill, std::int64_t now_ms);
    /// Scheduled times in [from, to) at which the job has a backfill fire not yet ended.
    static int CountUnfinished(soci::session& s, std::int64_t job_id, std::int64_t from, std::int64_t to);
    /// The job's scheduled times in [from, to) that already have a fire and so are not run
    /// again, with its kind: a fire of kind schedule, manual, misfire or backfill that is not a
    /// misfire skip (status skipped, reason misfire: those times never ran, so a backfill runs
    /// them). Where a time has several, a non-backfill kind wins. At most `limit` rows read.
    static std::map<std::int64_t, model::FireKind> ExistingTimes(soci::session& s, std::int64_t job_id,
                                                                 std::int64_t from, std::int64_t to, int limit);
    static BackfillFireCounts CountFires(soci::session& s, std::int64_t job_id, std::int64_t from, std::int64_t to);

  private:
    db::Database& db_;
};

}  // namespace sched::store
