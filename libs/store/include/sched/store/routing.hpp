#pragma once

/// The job vocabulary's routing names (the `routing` column of a job): one table, read by the
/// web module when a job is saved and by the trigger's Router when a fire is dispatched
/// (sched/trigger/routing.hpp describes what each strategy does).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sched::store {

enum class Routing {
    kFirst,                ///< "first"
    kLast,                 ///< "last"
    kRoundRobin,           ///< "round-robin"
    kRandom,               ///< "random"
    kConsistentHash,       ///< "consistent-hash"
    kLeastFrequentlyUsed,  ///< "least-frequently-used"
    kLeastRecentlyUsed,    ///< "least-recently-used"
    kFailover,             ///< "failover"
    kBusyOver,             ///< "busy-over"
    kShardingBroadcast,    ///< "sharding-broadcast"
};

std::string_view RoutingName(Routing r);
std::optional<Routing> ParseRouting(std::string_view name);
/// Every accepted spelling in enum order, for validation messages ("first, last, ...").
const std::vector<std::string>& RoutingNames();

}  // namespace sched::store
