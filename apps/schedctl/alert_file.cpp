#include "alert_file.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string>

#include "bounded_yaml.hpp"
#include "named_section.hpp"

namespace sched::ctl {
namespace {

constexpr std::array<std::string_view, 9> kFields = {
    "name", "job_id", "events", "consecutive_failures", "no_success_within_ms", "url", "secret", "enabled", "version"};
// What the API answers but never takes: copied from a rule read back, they would be 400s.
constexpr std::array<std::string_view, 3> kReadOnly = {"id", "has_secret", "created_at_ms"};

Status Invalid(std::string_view file, const std::string& what) {
    return Status(Code::kInvalidArgument, std::string(file) + ": " + what);
}

// The fields of a rule in the `alerts:` section: the rule file's, with the job named.
constexpr std::array<std::string_view, 8> kSectionFields = {
    "name", "job", "events", "consecutive_failures", "no_success_within_ms", "url", "secret", "enabled"};

// One rule of the section into `out`; the problem ("events: ...") and where it is, or nullopt.
std::optional<std::pair<YAML::Node, std::string>> SectionRule(const YAML::Node& node, nlohmann::json& out) {
    if (!node.IsMap()) return std::pair{node, std::string("expected a mapping of alert rule fields")};
    for (const auto& kv : node) {
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
        if (key == "id" || key == "job_id" || key == "version") {
            return std::pair{kv.first, key + ": not allowed (rules are keyed by name; name a job with job:)"};
        }
        if (std::find(kSectionFields.begin(), kSectionFields.end(), key) == kSectionFields.end()) {
            return std::pair{kv.first, key + ": unknown field"};
        }
        if (out.contains(key)) return std::pair{kv.first, key + ": given twice"};
        if (key == "events") {
            if (!kv.second.IsSequence())
                return std::pair{kv.first, std::string("events: expected a list of event names")};
            nlohmann::json events = nlohmann::json::array();
            for (const auto& item : kv.second) {
                if (!item.IsScalar()) return std::pair{kv.first, std::string("events: expected a list of event names")};
                events.push_back(item.Scalar());
            }
            out[key] = std::move(events);
            continue;
        }
        if (!kv.second.IsScalar() && !kv.second.IsNull()) return std::pair{kv.first, key + ": expected a single value"};
        if (key == "job" && kv.second.IsScalar() && kv.second.Scalar().empty()) {
            return std::pair{kv.first, std::string("job: expected a job's name (leave job out for every job)")};
        }
        out[key] = kv.second.IsNull() ? nlohmann::json() : ScalarToJson(kv.second);
    }
    for (const char* required : {"name", "events", "url"}) {
        if (!out.contains(required)) return std::pair{node, std::string(required) + ": required"};
    }
    if (!out["name"].is_string() || out["name"].get_ref<const std::string&>().empty()) {
        return std::pair{node, std::string("name: expected a non-empty string")};
    }
    if (out.contains("job") && !out["job"].is_null() && !out["job"].is_string()) out["job"] = out["job"].dump();
    return std::nullopt;
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

Result<std::optional<std::vector<AlertRuleSpec>>> ParseAlertSection(std::string_view text, std::string_view file_name) {
    return ParseNamedSection(text, file_name, {"alerts", "alert rules", "rules", kMaxAlertRulesPerFile},
                             [](const YAML::Node& node, nlohmann::json& fields) -> std::optional<EntryProblem> {
                                 if (auto problem = SectionRule(node, fields)) {
                                     return EntryProblem{problem->first, problem->second};
                                 }
                                 return std::nullopt;
                             });
}

nlohmann::json RulesByJobName(const nlohmann::json& rules, const nlohmann::json& jobs) {
    const auto names = JobNamesById(jobs);
    nlohmann::json out = nlohmann::json::array();
    if (!rules.is_array()) return out;
    for (nlohmann::json rule : rules) {
        if (rule.is_object() && rule.contains("job_id")) {
            const nlohmann::json id = rule["job_id"];
            rule["job"] = id.is_number_integer() ? nlohmann::json(JobNameOrId(names, id.get<std::int64_t>()))
                                                 : nlohmann::json(nullptr);
            rule.erase("job_id");
        }
        out.push_back(std::move(rule));
    }
    return out;
}

Plan PlanAlertRuleChanges(const std::vector<AlertRuleSpec>& desired, const nlohmann::json& current, bool prune) {
    const WantedValue want = [](const nlohmann::json& stated,
                                const std::string& field) -> std::optional<nlohmann::json> {
        if (field == "name") return std::nullopt;  // the key
        if (stated.contains(field)) return stated[field];
        // Left out: the API's default. Unlike a job's enabled (paused by operators, by the master
        // after failures), a rule's is only ever set by an edit: managed like the other fields.
        if (field == "consecutive_failures") return 1;
        if (field == "enabled") return true;
        if (field == "job" || field == "no_success_within_ms") return nlohmann::json(nullptr);
        return std::nullopt;
    };
    static const std::vector<std::string> fields = {
        "job", "events", "consecutive_failures", "no_success_within_ms", "url", "enabled", "managed_by"};
    Plan plan = PlanByName(desired, current, prune, fields, want);
    // The secret is write-only: an update carries the file's (else the server keeps its own).
    std::map<std::string, const nlohmann::json*> stated;
    for (const auto& spec : desired) stated.emplace(spec.name, &spec.fields);
    for (auto& c : plan.changes) {
        if (c.kind != ChangeKind::kUpdate) continue;
        const auto it = stated.find(c.name);
        if (it != stated.end() && it->second->contains("secret")) c.body["secret"] = (*it->second)["secret"];
        c.body["name"] = c.name;
    }
    return plan;
}

Result<nlohmann::json> ResolveRuleJob(const nlohmann::json& body, const nlohmann::json& jobs) {
    if (!body.is_object()) return body;
    nlohmann::json out = body;
    if (out.contains("job") && out["job"].is_string()) {
        const std::string job = out["job"].get<std::string>();
        const auto by_name = IndexByName(jobs);
        const auto it = by_name.find(job);
        if (it == by_name.end()) return Status(Code::kNotFound, "job: no job named " + nlohmann::json(job).dump());
        out["job_id"] = (*it->second)["id"];
    }
    out.erase("job");
    for (auto it = out.begin(); it != out.end();) {
        it = it->is_null() ? out.erase(it) : std::next(it);
    }
    return out;
}

}  // namespace sched::ctl
