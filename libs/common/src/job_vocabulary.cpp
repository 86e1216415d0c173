#include "sched/common/job_vocabulary.hpp"

#include <string>

namespace sched {

namespace {

// The name is untrusted text: shown bounded and printable only.
std::string Quoted(std::string_view s) {
    std::string out = "'";
    for (char c : s.substr(0, 64)) {
        const auto u = static_cast<unsigned char>(c);
        out += (u >= 0x20 && u < 0x7f) ? c : '?';
    }
    if (s.size() > 64) out += "...";
    return out + "'";
}

}  // namespace

Result<ScheduleType> ParseScheduleType(std::string_view name) {
    if (auto type = kScheduleTypeNames.Parse(name)) return *type;
    return InvalidArgument("unknown schedule type " + Quoted(name) + " (expected " + kScheduleTypeNames.Expected() +
                           ")");
}

Result<MisfirePolicy> ParseMisfirePolicy(std::string_view name) {
    if (auto policy = kMisfirePolicyNames.Parse(name)) return *policy;
    return InvalidArgument("unknown misfire policy " + Quoted(name.substr(0, 64)) + " (expected " +
                           kMisfirePolicyNames.Expected() + ")");
}

}  // namespace sched
