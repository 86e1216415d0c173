#include "sched/store/routing.hpp"

#include <array>

namespace sched::store {

namespace {

constexpr std::array<std::string_view, 10> kNames = {"first",
                                                     "last",
                                                     "round-robin",
                                                     "random",
                                                     "consistent-hash",
                                                     "least-frequently-used",
                                                     "least-recently-used",
                                                     "failover",
                                                     "busy-over",
                                                     "sharding-broadcast"};

}  // namespace

std::string_view RoutingName(Routing r) {
    return kNames.at(static_cast<std::size_t>(r));
}

std::optional<Routing> ParseRouting(std::string_view name) {
    for (std::size_t i = 0; i < kNames.size(); ++i) {
        if (kNames[i] == name) return static_cast<Routing>(i);
    }
    return std::nullopt;
}

const std::vector<std::string>& RoutingNames() {
    static const std::vector<std::string> kAll(kNames.begin(), kNames.end());
    return kAll;
}

}  // namespace sched::store
