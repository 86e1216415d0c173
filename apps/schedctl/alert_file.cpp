#include "alert_file.hpp"

#include <array>
#include <string>

#include "bounded_yaml.hpp"

namespace sched::ctl {
namespace {

constexpr std::array<std::string_view, 9> kFields = {
    "name", "job_id", "events", "consecutive_failures", "no_success_within_ms", "url", "secret", "enabled", "version"};
// What the API answers but never takes: copied from a rule read back, they would be 400s.
constexpr std::array<std::string_view, 3> kReadOnly = {"id", "has_secret", "created_at_ms"};

Status Invalid(std::string_view file, const std::string& what) {
    return Status(Code::kInvalidArgument, std::string(file) + ": " + what);
}

}  // namespace

Result<nlohmann::json> ParseAlertRuleDocument(std::string_view text, std::string_view file_name) {
    auto loaded = LoadBoundedYaml(text, file_name);
    if (!loaded.ok()) return loaded.status();
    if (!loaded->IsMap()) return Invalid(file_name, "expected a mapping of alert rule fields");
    nlohmann::json out = nlohmann::json::object();
    for (const auto& kv : *loaded) {
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
        if (std::find(kReadOnly.begin(), kReadOnly.end(), key) != kReadOnly.end()) continue;
        if (std::find(kFields.begin(), kFields.end(), key) == kFields.end()) {
            return Invalid(file_name, key + ": unknown field");
        }
        if (out.contains(key)) return Invalid(file_name, key + ": given twice");
        if (key == "events") {
            if (!kv.second.IsSequence()) return Invalid(file_name, "events: expected a list of event names");
            nlohmann::json events = nlohmann::json::array();
            for (const auto& item : kv.second) {
                if (!item.IsScalar()) return Invalid(file_name, "events: expected a list of event names");
                events.push_back(item.Scalar());
            }
            out[key] = std::move(events);
            continue;
        }
        if (!kv.second.IsScalar() && !kv.second.IsNull()) return Invalid(file_name, key + ": expected a single value");
        out[key] = kv.second.IsNull() ? nlohmann::json() : ScalarToJson(kv.second);
    }
    return out;
}

nlohmann::json MergeAlertRuleUpdate(const nlohmann::json& current, const nlohmann::json& file_fields) {
    nlohmann::json body = nlohmann::json::object();
    for (const auto field : kFields) {
        const std::string key(field);
        if (file_fields.contains(key)) {
            body[key] = file_fields[key];
        } else if (current.contains(key) && key != "secret") {
            body[key] = current[key];
        }
    }
    const bool no_success =
        body.contains("events") && body["events"].is_array() &&
        std::find(body["events"].begin(), body["events"].end(), "no_success") != body["events"].end();
    if (!no_success && !file_fields.contains("no_success_within_ms")) body.erase("no_success_within_ms");
    for (auto it = body.begin(); it != body.end();) {
        it = it->is_null() ? body.erase(it) : std::next(it);
    }
    return body;
}

}  // namespace sched::ctl
