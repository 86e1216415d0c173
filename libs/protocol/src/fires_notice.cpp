#include "sched/protocol/fires_notice.hpp"

#include <string>

namespace sched::protocol {

namespace {

constexpr const char* kEpoch = "epoch";
constexpr const char* kFireIds = "fire_ids";

// A field name from the request, as an error names it: bounded, so a hostile key cannot make
// the answer (or a log line) as large as the body.
std::string ShownField(const std::string& key) {
    constexpr std::size_t kMax = 64;
    return key.size() <= kMax ? key : key.substr(0, kMax) + "...";
}

Parsed<FiresNotice> Bad(std::string field, const std::string& problem) {
    std::string message = field + ": " + problem;
    return {.value = {}, .error = http::ApiError{Code::kInvalidArgument, std::move(message), std::move(field)}};
}

}  // namespace

nlohmann::json ToJson(const FiresNotice& notice) {
    return {{kEpoch, notice.epoch}, {kFireIds, notice.fire_ids}};
}

Parsed<FiresNotice> ParseFiresNotice(const nlohmann::json& body) {
    if (!body.is_object()) return Bad("body", "expected a JSON object {epoch, fire_ids}");
    FiresNotice n;
    for (auto it = body.begin(); it != body.end(); ++it) {
        const std::string& key = it.key();
        const nlohmann::json& value = it.value();
        if (key == kEpoch) {
            if (!value.is_number_integer() || value.get<std::int64_t>() < 1) {
                return Bad(kEpoch, "expected an integer >= 1");
            }
            n.epoch = value.get<std::int64_t>();
        } else if (key == kFireIds) {
            if (!value.is_array()) return Bad(kFireIds, "expected an array of integers");
            if (value.size() > kMaxNoticeFires) {
                return Bad(kFireIds, "at most " + std::to_string(kMaxNoticeFires) + " ids");
            }
            n.fire_ids.reserve(value.size());
            for (const auto& id : value) {
                if (!id.is_number_integer() || id.get<std::int64_t>() < 1) {
                    return Bad(kFireIds, "expected an array of integers >= 1");
                }
                n.fire_ids.push_back(id.get<std::int64_t>());
            }
        } else {
            return Bad(ShownField(key), "unknown field");
        }
    }
    for (const char* required : {kEpoch, kFireIds}) {
        if (!body.contains(required)) return Bad(required, "required");
    }
    return {.value = std::move(n), .error = std::nullopt};
}

}  // namespace sched::protocol
