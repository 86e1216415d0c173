#include "sched/common/job_vocabulary.hpp"

#include <string>

#include "sched/common/quoted.hpp"

namespace sched {

// The name is untrusted text: QuotedForMessage shows it bounded and printable only.

Result<ScheduleType> ParseScheduleType(std::string_view name) {
    if (auto type = kScheduleTypeNames.Parse(name)) return *type;
    return InvalidArgument("unknown schedule type " + QuotedForMessage(name) + " (expected " +
                           kScheduleTypeNames.Expected() + ")");
}

Result<MisfirePolicy> ParseMisfirePolicy(std::string_view name) {
    if (auto policy = kMisfirePolicyNames.Parse(name)) return *policy;
    return InvalidArgument("unknown misfire policy " + QuotedForMessage(name.substr(0, 64)) + " (expected " +
                           kMisfirePolicyNames.Expected() + ")");
}

// The routing and block strategy messages are the ones the jobs API and /v1/run have always
// answered (JsonFields::Enum's form), so that clients matching on them keep working.

Result<Routing> ParseRouting(std::string_view name) {
    if (auto routing = kRoutingNames.Parse(name)) return *routing;
    return InvalidArgument("expected one of " + kRoutingNames.Expected(", ") + ", got \"" + std::string(name) + "\"");
}

Result<BlockStrategy> ParseBlockStrategy(std::string_view name) {
    if (auto strategy = kBlockStrategyNames.Parse(name)) return *strategy;
    return InvalidArgument("expected one of " + kBlockStrategyNames.Expected(", ") + ", got \"" + std::string(name) +
                           "\"");
}

}  // namespace sched
