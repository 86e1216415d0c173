#pragma once

/// A job: what to run, where, and when (stored in table `job` by store::JobRepository).
///
/// `version` is the job's optimistic-concurrency token for people and tools: every edit
/// increments it and must name the version it read. Times are epoch milliseconds.

#include <cstdint>
#include <optional>
#include <string>

#include "sched/common/job_vocabulary.hpp"

namespace sched::model {

/// Who paused a job, when and why (migration 009): set by the API's pause and the master's
/// automatic pause, cleared on resume.
struct JobPause {
    std::string by;       ///< the token's name, or kSchedulerActor ("scheduler")
    std::int64_t at = 0;  ///< DB clock, epoch ms
    std::string note;     ///< "" when none was given
};

struct Job {
    std::int64_t id = 0;
    std::string name;
    std::string app;
    std::string handler;
    std::string params;
    /// Stored by its name (kScheduleTypeNames). A stored name this build does not know (a newer
    /// build's, a hand edit) reads as kManual with a warning in the log: such a job never fires on
    /// its own, as when its schedule failed to parse before.
    ScheduleType schedule_type = ScheduleType::kCron;
    std::string schedule_expr;
    std::string time_zone = "UTC";
    /// Stored by its name (kMisfirePolicyNames); an unknown stored name reads as kFireOnceNow (one
    /// run stands for the late times), with a warning in the log.
    MisfirePolicy misfire_policy = MisfirePolicy::kFireOnceNow;
    /// Stored by its name (kRoutingNames); an unknown stored name reads as kRoundRobin (the API's
    /// default), with a warning in the log.
    Routing routing = Routing::kRoundRobin;
    /// Stored by its name (kBlockStrategyNames); an unknown stored name reads as kSerial (the API's
    /// and the executor's default: nothing is refused or cancelled), with a warning in the log.
    BlockStrategy block_strategy = BlockStrategy::kSerial;
    int concurrency_limit = 1;
    /// The concurrency key (ConcurrencyKeyRepository) whose limits the job shares with the other
    /// jobs naming it; "" = none.
    std::string concurrency_key;
    std::int64_t timeout_ms = 0;  ///< 0 = no timeout
    int retry_max = 0;
    std::int64_t retry_backoff_ms = 1000;
    int shard_total = 1;
    bool at_least_once = false;
    bool enabled = true;
    std::optional<std::int64_t> next_fire_time;
    std::optional<std::int64_t> last_fire_time;
    std::int64_t version = 0;
    std::int64_t created_at = 0;
    std::int64_t updated_at = 0;
    std::string description;
    /// The master pauses the job after this many failed/timeout/lost runs in a row (0 = never;
    /// trigger::Alerter).
    int pause_after_failures = 0;
    /// Schedule options (docs/cron.md): each fire runs a deterministic 0..jitter_ms ms after its
    /// scheduled time (0 = none), and the DST choice of a cron schedule.
    std::int64_t jitter_ms = 0;
    std::string dst_gap = "auto";      ///< auto | skip | shift-forward
    std::string dst_overlap = "auto";  ///< auto | first | last | both
    /// The file that declares the job (`schedctl apply` sets its name; migration 018), or none
    /// for a job made by hand. The UI shows such a job read-only; the API still takes changes.
    std::optional<std::string> managed_by;
    /// Set while the job is paused by a pause (API or master); not an editable field.
    std::optional<JobPause> paused;

    // Calendar and bounds (migration 010, docs/schedules.md).
    /// The name of a calendar (CalendarRepository) whose excluded periods get no fire; "" = none.
    std::string calendar;
    std::optional<std::int64_t> start_at;  ///< no scheduled fire before this instant
    std::optional<std::int64_t> end_at;    ///< no scheduled fire after it; then the job completes
    std::optional<std::int64_t> max_runs;  ///< the job completes after this many scheduled fires
    /// Scheduled fires planned while max_runs was set (the master adds to it; RecordRuns).
    std::int64_t planned_runs = 0;
    /// Set when the job ended by itself (end_at passed, max_runs reached): no next_fire_time,
    /// still enabled; completed_reason "end_at" | "max_runs" ("" while not completed).
    std::optional<std::int64_t> completed_at;
    std::string completed_reason;
};

/// How many fires (shards) one time of `job` becomes: its shard_total, or for sharding-broadcast
/// the live instances of its app, `live_executors()` (called only then); at least 1 either way.
/// The master's scan, backfill and the API's manual trigger share this rule.
template <typename CountLive>
int ShardsPerFire(const Job& job, CountLive&& live_executors) {
    const int shards =
        job.routing == Routing::kShardingBroadcast ? static_cast<int>(live_executors()) : job.shard_total;
    return shards < 1 ? 1 : shards;
}

/// Whether a fire of `job` may be claimed earlier than `claim-ahead`, to fill a node's small
/// group (docs/architecture/slave.md "One queue, group claims"): only when its claim judges
/// nothing by the time it is made. A fire of a buffer-all (`serial`) or allow-all job without a
/// concurrency key runs or waits in line whenever it is claimed; `skip` and `buffer-one` judge
/// the runs going at the claim, `cancel-other` and `terminate-other` stop them then, and a key's
/// rate limit counts the claim's time as the start.
inline bool MayClaimEarly(const Job& job) {
    if (!job.concurrency_key.empty()) return false;
    const BlockStrategy policy = OverlapPolicy(job.block_strategy);
    return policy == BlockStrategy::kBufferAll || policy == BlockStrategy::kAllowAll;
}

}  // namespace sched::model
