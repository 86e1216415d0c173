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

/// A job's `block_strategy`: its overlap policy, what happens to a fire of the job when
/// `concurrency_limit` of its fires are already dispatching or running anywhere in the cluster
/// (decided where fires are claimed, docs/architecture/concurrency.md). The
/// policies are Temporal's; the first three names are those of earlier releases, kept as
/// aliases (each stored and answered as written):
enum class BlockStrategy {
    kSerial,          ///< "serial": the alias of buffer-all
    kDiscardLater,    ///< "discard-later": the alias of skip
    kCoverEarly,      ///< "cover-early": the alias of terminate-other
    kSkip,            ///< "skip": the new fire ends skipped (reason blocked)
    kBufferOne,       ///< "buffer-one": it waits for a slot; a second waiting fire is skipped
    kBufferAll,       ///< "buffer-all": it waits for a slot, however many wait
    kCancelOther,     ///< "cancel-other": the running fires are asked to stop; it waits for them
    kTerminateOther,  ///< "terminate-other": the running fires are killed and it starts at once
    kAllowAll,        ///< "allow-all": no limit at all (concurrency_limit is not applied)
};

/// The stored, API and wire spelling, in enum order.
inline constexpr auto kBlockStrategyNames =
    MakeNameTable<BlockStrategy>({"serial", "discard-later", "cover-early", "skip", "buffer-one", "buffer-all",
                                  "cancel-other", "terminate-other", "allow-all"});

/// The policy a strategy stands for: its own, or the one its alias names (serial -> buffer-all,
/// discard-later -> skip, cover-early -> terminate-other).
constexpr BlockStrategy OverlapPolicy(BlockStrategy strategy) {
    switch (strategy) {
        case BlockStrategy::kSerial:
            return BlockStrategy::kBufferAll;
        case BlockStrategy::kDiscardLater:
            return BlockStrategy::kSkip;
        case BlockStrategy::kCoverEarly:
            return BlockStrategy::kTerminateOther;
        default:
            return strategy;
    }
}

/// The name an executor of any release understands for `/v1/run`'s block_strategy (one of the
/// first three): what an executor that does not know that the cluster enforced the policy
/// (`overlap` on the wire) does with a second run of the job: queue it, refuse it, or cancel
/// the first.
constexpr BlockStrategy ExecutorStrategy(BlockStrategy strategy) {
    switch (OverlapPolicy(strategy)) {
        case BlockStrategy::kSkip:
            return BlockStrategy::kDiscardLater;
        case BlockStrategy::kTerminateOther:
        case BlockStrategy::kCancelOther:
            return BlockStrategy::kCoverEarly;
        default:
            return BlockStrategy::kSerial;
    }
}

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
/// discard-later, ..., allow-all, got "x"" (the jobs API's and `/v1/run`'s 400 text for
/// `block_strategy`), the name echoed as given.
Result<BlockStrategy> ParseBlockStrategy(std::string_view name);

}  // namespace sched
