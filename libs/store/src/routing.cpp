#include "sched/store/routing.hpp"

#include "sched/common/name_table.hpp"

namespace sched::store {

namespace {

constexpr auto kNames =
    MakeNameTable<Routing>({"first", "last", "round-robin", "random", "consistent-hash", "least-frequently-used",
                            "least-recently-used", "failover", "busy-over", "sharding-broadcast"});

}  // namespace

std::string_view RoutingName(Routing r) {
    return kNames.Name(r);
}

std::optional<Routing> ParseRouting(std::string_view name) {
    return kNames.Parse(name);
}

const std::vector<std::string>& RoutingNames() {
    static const std::vector<std::string> kAll(kNames.names().begin(), kNames.names().end());
    return kAll;
}

}  // namespace sched::store
