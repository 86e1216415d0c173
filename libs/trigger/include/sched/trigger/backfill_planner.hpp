#pragma once

/// Backfills (store/backfill.hpp; docs/architecture/backfill.md): which past scheduled times
/// get a fire next, and the master's step that creates them inside its fenced scan.
///
/// The planning is pure (cron::FireTimesInRange, PlanBackfillStep) so the overlap rules are unit
/// tested: a serial backfill never has two fires unfinished at once, a parallel one at most
/// max_parallel, and the cursor stored with each step is where the next step (on this or, after
/// a failover, another master) resumes.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "sched/cron/schedule.hpp"
#include "sched/cron/times_in_range.hpp"
#include "sched/db/dialect.hpp"
#include "sched/protocol/fires_notice.hpp"
#include "sched/store/backfill.hpp"
#include "sched/store/shard.hpp"
#include "sched/trigger/assigner.hpp"
#include "sched/trigger/fire_trace.hpp"

namespace sched::trigger {

struct BackfillStep {
    std::vector<std::int64_t> create;  ///< times to give a fire now, ascending
    int existing = 0;                  ///< times passed over because they already have a fire
    std::int64_t cursor = 0;           ///< where the next step starts
    bool exhausted = false;            ///< every time of the range is handled (cursor = range end)
};
/// One step from `cursor`: `times` are the next scheduled times at or after it (ascending, as
/// cron::FireTimesInRange gives them; `more` when the range holds times beyond them);
/// `existing` the times that already have a fire; `slots` how many more fires may be
/// unfinished now (max_parallel minus the backfill's unfinished times; <= 0: none). Times with
/// a fire are passed over without taking a slot; the step stops at the first time it has no
/// slot for, which becomes the cursor.
BackfillStep PlanBackfillStep(const std::vector<std::int64_t>& times, bool more, const std::set<std::int64_t>& existing,
                              int slots, std::int64_t cursor, std::int64_t range_to);

/// What one Advance did, for the scan's report.
struct BackfillProgress {
    int fires_created = 0;
    int completed = 0;
    std::map<std::string, std::vector<protocol::NoticedFire>> assigned;  ///< new fires per slave node
    std::vector<PendingFireSpan> spans;  ///< the new fires' `planned` spans, when a tracer is installed
};

/// The master's step 1b: advances up to `per_scan` running backfills (round-robin over scans),
/// each by at most `times_per_step` scheduled times: a paused job's backfill waits, a deleted
/// job's (or one whose schedule no longer has times of its own) is cancelled; new fires are
/// kind backfill, pending, due now (lateness counts from their creation, not from the past
/// scheduled time), assigned by `assigner` like the scan's other fires, and keyed like any fire
/// (insert-if-absent). A backfill completes when its cursor reached the range's end and none of
/// its fires is unfinished. Not thread-safe (the master's loop).
class BackfillAdvancer {
  public:
    explicit BackfillAdvancer(int per_scan = 20, std::size_t times_per_step = 500)
        : per_scan_(per_scan), times_per_step_(times_per_step) {}

    /// Inside the scan's fenced transaction. `live_executors(app)` counts the live instances of
    /// an app (for sharding-broadcast jobs). Only backfills of `shard`'s jobs.
    BackfillProgress Advance(soci::session& s, const db::Dialect& dialect, std::int64_t epoch, std::int64_t now,
                             Assigner& assigner, const std::function<int(const std::string& app)>& live_executors,
                             const store::JobShard& shard = {});

  private:
    int per_scan_;
    std::size_t times_per_step_;
    std::int64_t after_id_ = 0;  // round-robin cursor over running backfills
};

}  // namespace sched::trigger
