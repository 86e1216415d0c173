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

}  // namespace sched
