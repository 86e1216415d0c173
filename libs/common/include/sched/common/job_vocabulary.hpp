#pragma once

/// The job vocabulary shared by every part that reads or writes a job: the schedule type, the
/// misfire policy, the routing and the block strategy, each an enum with one name table (the `job`
/// columns', the API's and the `/v1/run` wire's spelling). Parsed once at the edges (the store's
/// row mapping, the jobs API, schedctl's job file, the SDK's reading of `/v1/run`) and compared as
/// enums inside. Here in `common` because the cron library (which computes with the schedule
/// types), the store (which maps them to columns), the protocol (which sends the block strategy)
/// and schedctl (linked with common and http only) all need the one table. docs/cron.md describes
/// the types and the misfire policies, sched/trigger/routing.hpp the routings.

#include <string_view>

#include "sched/common/name_table.hpp"
#include "sched/common/status.hpp"

namespace sched {

/// A job's `schedule_type` (sched/cron/schedule.hpp describes each type's `schedule_expr`).
enum class ScheduleType { kCron, kFixedRate, kFixedDelay, kOnce, kManual };

/// "cron", "fixed-rate", "fixed-delay", "once", "manual" (the stored spelling).
inline constexpr auto kScheduleTypeNames =
    MakeNameTable<ScheduleType>({"cron", "fixed-rate", "fixed-delay", "once", "manual"});

/// A job's `misfire_policy` (sched/cron/misfire.hpp describes what each does).
enum class MisfirePolicy { kSkip, kFireOnceNow, kFireAll };

/// "skip", "fire-once-now", "fire-all" (the stored spelling).
inline constexpr auto kMisfirePolicyNames = MakeNameTable<MisfirePolicy>({"skip", "fire-once-now", "fire-all"});

inline std::string_view ScheduleTypeName(ScheduleType type) {
    return kScheduleTypeNames.Name(type);
}
/// Inverse of ScheduleTypeName (exact, lower-case). kInvalidArgument "unknown schedule type 'x'
/// (expected cron, fixed-rate, fixed-delay, once or manual)"; the text is shown cut to 64
/// characters with control and non-ASCII bytes as '?'.
Result<ScheduleType> ParseScheduleType(std::string_view name);

inline std::string_view MisfirePolicyName(MisfirePolicy policy) {
    return kMisfirePolicyNames.Name(policy);
}
/// Inverse of MisfirePolicyName (exact, lower-case). kInvalidArgument "unknown misfire policy 'x'
/// (expected skip, fire-once-now or fire-all)", the text shown as for ParseScheduleType.
Result<MisfirePolicy> ParseMisfirePolicy(std::string_view name);

/// A job's `routing`: how a slave picks the executor instance for a fire (sched/trigger/routing.hpp
/// describes each strategy; kShardingBroadcast also makes one fire per live instance, ShardsPerFire
/// in sched/store/job.hpp).
enum class Routing {
    kFirst,
    kLast,
    kRoundRobin,
    kRandom,
    kConsistentHash,
    kLeastFrequentlyUsed,
    kLeastRecentlyUsed,
    kFailover,
    kBusyOver,
    kShardingBroadcast,
};

/// The stored and API spelling, in enum order.
inline constexpr auto kRoutingNames =
    MakeNameTable<Routing>({"first", "last", "round-robin", "random", "consistent-hash", "least-frequently-used",
                            "least-recently-used", "failover", "busy-over", "sharding-broadcast"});

/// A job's `block_strategy`: what an executor does when a run arrives for a job that already has
/// one running or queued there. Sent on `/v1/run` (sched/protocol/run.hpp).
enum class BlockStrategy {
    kSerial,        ///< "serial": queue it behind the running one
    kDiscardLater,  ///< "discard-later": refuse the new run (409, field block_strategy)
    kCoverEarly,    ///< "cover-early": cancel the running one and run the new one
};

/// The stored, API and wire spelling, in enum order.
inline constexpr auto kBlockStrategyNames = MakeNameTable<BlockStrategy>({"serial", "discard-later", "cover-early"});

inline std::string_view RoutingName(Routing routing) {
    return kRoutingNames.Name(routing);
}
/// Inverse of RoutingName (exact, lower-case). kInvalidArgument "expected one of first, last, ...,
/// sharding-broadcast, got "x"": the jobs API's 400 text for `routing` (after "routing: "),
/// the name echoed as given.
Result<Routing> ParseRouting(std::string_view name);

inline std::string_view BlockStrategyName(BlockStrategy strategy) {
    return kBlockStrategyNames.Name(strategy);
}
/// Inverse of BlockStrategyName (exact, lower-case). kInvalidArgument "expected one of serial,
/// discard-later, cover-early, got "x"" (the jobs API's and `/v1/run`'s 400 text for
/// `block_strategy`), the name echoed as given.
Result<BlockStrategy> ParseBlockStrategy(std::string_view name);

}  // namespace sched
