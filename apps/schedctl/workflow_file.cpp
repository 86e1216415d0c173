#include "workflow_file.hpp"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <limits>
#include <map>
#include <set>

#include "bounded_yaml.hpp"
#include "named_section.hpp"
#include "sched/common/job_vocabulary.hpp"

namespace sched::ctl {
namespace {

std::string Quoted(std::string_view s) {
    return nlohmann::json(std::string(s)).dump();
}

// A problem at `at`: the message says which field; the caller adds the file and the workflow.
struct Problem {
    YAML::Node at;
    std::string what;
};

using Checked = std::optional<Problem>;

Checked String(const YAML::Node& value, const std::string& key, std::size_t max, std::string& out) {
    if (!value.IsScalar() || value.Scalar().empty()) return Problem{value, key + ": expected a non-empty string"};
    if (value.Scalar().size() > max) return Problem{value, key + ": longer than " + std::to_string(max) + " bytes"};
    out = value.Scalar();
    return std::nullopt;
}

Checked Integer(const YAML::Node& value, const std::string& key, std::int64_t min, std::int64_t max,
                std::int64_t& out) {
    const std::string text = value.IsScalar() ? value.Scalar() : std::string();
    const char* end = text.data() + text.size();
    auto [p, ec] = std::from_chars(text.data(), end, out);
    if (text.empty() || ec != std::errc() || p != end) return Problem{value, key + ": expected an integer"};
    if (out < min || out > max) {
        return Problem{value, key + ": expected " + std::to_string(min) + " to " + std::to_string(max)};
    }
    return std::nullopt;
}

// The step and edge lists: bounded before their items are read; each item a mapping of known keys.
Checked List(const YAML::Node& value, const std::string& key, std::size_t max) {
    if (!value.IsSequence()) return Problem{value, key + ": expected a list"};
    if (value.size() > max) return Problem{value, key + ": more than " + std::to_string(max) + " entries"};
    return std::nullopt;
}

Checked Item(const YAML::Node& item, const std::string& where, std::initializer_list<std::string_view> allowed,
             std::map<std::string, YAML::Node>& out) {
    if (!item.IsMap()) return Problem{item, where + ": expected a mapping"};
    for (const auto& kv : item) {
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
        bool known = false;
        for (auto a : allowed) known = known || a == key;
        if (!known) return Problem{kv.first, where + "." + key + ": unknown field"};
        if (!out.emplace(key, kv.second).second) return Problem{kv.first, where + "." + key + ": given twice"};
    }
    return std::nullopt;
}

Checked Steps(const YAML::Node& value, nlohmann::json& out) {
    if (auto p = List(value, "steps", kMaxWorkflowSteps)) return p;
    if (value.size() == 0) return Problem{value, "steps: at least one step"};
    out = nlohmann::json::array();
    std::set<std::string> names;
    for (std::size_t i = 0; i < value.size(); ++i) {
        const std::string where = "steps[" + std::to_string(i) + "]";
        std::map<std::string, YAML::Node> keys;
        if (auto p = Item(value[i], where, {"name", "job"}, keys)) return p;
        nlohmann::json step = nlohmann::json::object();
        for (const char* key : {"name", "job"}) {
            if (!keys.contains(key)) return Problem{value[i], where + "." + key + ": required"};
            std::string text;
            const std::size_t max = std::string_view(key) == "name" ? kMaxStepNameBytes : kMaxWorkflowFieldBytes;
            if (auto p = String(keys[key], where + "." + key, max, text)) return p;
            step[key] = std::move(text);
        }
        if (!names.insert(step["name"].get<std::string>()).second) {
            return Problem{value[i], where + ".name: " + step["name"].dump() + " appears twice"};
        }
        out.push_back(std::move(step));
    }
    return std::nullopt;
}

Checked Edges(const YAML::Node& value, nlohmann::json& out) {
    out = nlohmann::json::array();
    if (value.IsNull()) return std::nullopt;
    if (auto p = List(value, "edges", kMaxWorkflowEdges)) return p;
    for (std::size_t i = 0; i < value.size(); ++i) {
        const std::string where = "edges[" + std::to_string(i) + "]";
        std::map<std::string, YAML::Node> keys;
        if (auto p = Item(value[i], where, {"parent", "child", "condition"}, keys)) return p;
        // The API's default, written out: the server answers every edge with its condition.
        nlohmann::json edge = {{"condition", "on-success"}};
        for (const char* key : {"parent", "child", "condition"}) {
            if (!keys.contains(key)) {
                if (std::string_view(key) == "condition") continue;
                return Problem{value[i], where + "." + key + ": required"};
            }
            std::string text;
            if (auto p = String(keys[key], where + "." + key, kMaxStepNameBytes, text)) return p;
            edge[key] = std::move(text);
        }
        const std::string condition = edge["condition"].get<std::string>();
        if (condition != "on-success" && condition != "on-failure" && condition != "always") {
            return Problem{keys["condition"], where + ".condition: expected on-success, on-failure or always"};
        }
        out.push_back(std::move(edge));
    }
    return std::nullopt;
}

// One field of a workflow into `fields`.
Checked Field(const std::string& key, const YAML::Node& value, nlohmann::json& fields) {
    std::string text;
    std::int64_t n = 0;
    if (key == "name") {
        if (auto p = String(value, key, kMaxWorkflowNameBytes, text)) return p;
        fields[key] = text;
    } else if (key == "description") {
        if (!value.IsNull() && !value.IsScalar()) return Problem{value, key + ": expected a string"};
        text = value.IsScalar() ? value.Scalar() : std::string();
        if (text.size() > kMaxWorkflowDescriptionBytes) {
            return Problem{value, key + ": longer than " + std::to_string(kMaxWorkflowDescriptionBytes) + " bytes"};
        }
        fields[key] = text;
    } else if (key == "schedule_type" || key == "misfire_policy" || key == "time_zone" || key == "schedule_expr") {
        if (!value.IsScalar()) return Problem{value, key + ": expected a string"};
        text = value.Scalar();
        if (text.size() > kMaxWorkflowFieldBytes) {
            return Problem{value, key + ": longer than " + std::to_string(kMaxWorkflowFieldBytes) + " bytes"};
        }
        // The vocabulary is checked here, with its place in the file, not halfway through an apply.
        const Status known = key == "schedule_type"    ? ParseScheduleType(text).status()
                             : key == "misfire_policy" ? ParseMisfirePolicy(text).status()
                                                       : Status::Ok();
        if (!known.ok()) return Problem{value, key + ": " + known.message()};
        if (key == "time_zone" && text.empty()) text = "UTC";
        fields[key] = text;
    } else if (key == "max_concurrent_runs") {
        if (auto p = Integer(value, key, 1, 100, n)) return p;
        fields[key] = n;
    } else if (key == "run_timeout_ms") {
        if (auto p = Integer(value, key, 0, 7LL * 24 * 3600 * 1000, n)) return p;
        fields[key] = n;
    } else if (key == "paused") {
        if (!value.IsScalar() || (value.Scalar() != "true" && value.Scalar() != "false")) {
            return Problem{value, key + ": expected true or false"};
        }
        fields[key] = value.Scalar() == "true";
    } else if (key == "steps") {
        if (auto p = Steps(value, fields[key])) return p;
    } else if (key == "edges") {
        if (auto p = Edges(value, fields[key])) return p;
    } else {
        return Problem{value, key + ": unknown field"};
    }
    return std::nullopt;
}

// A workflow mapping's fields; `version_allowed` for update -f.
Checked Fields(const YAML::Node& node, bool version_allowed, nlohmann::json& fields) {
    for (const auto& kv : node) {
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
        if (fields.contains(key)) return Problem{kv.first, key + ": given twice"};
        if (key == "version" && version_allowed) {
            std::int64_t v = 0;
            if (auto p = Integer(kv.second, key, 1, std::numeric_limits<std::int64_t>::max(), v)) return p;
            fields[key] = v;
            continue;
        }
        if (key == "id" || key == "version") {
            return Problem{kv.first, key + ": not allowed (the server assigns it; workflows are keyed by name)"};
        }
        const auto& known = WorkflowFileFields();
        if (std::find(known.begin(), known.end(), key) == known.end()) {
            return Problem{kv.first, key + ": unknown field"};
        }
        if (auto p = Field(key, kv.second, fields)) {
            // A problem inside a value is placed at the key when the value has no place of its own.
            if (p->at.Mark().is_null()) p->at = kv.first;
            return p;
        }
    }
    return std::nullopt;
}

nlohmann::json DefaultWorkflowValue(std::string_view field) {
    if (field == "description" || field == "schedule_expr") return "";
    if (field == "schedule_type") return "manual";
    if (field == "time_zone") return "UTC";
    if (field == "misfire_policy") return std::string(MisfirePolicyName(MisfirePolicy::kFireOnceNow));
    if (field == "max_concurrent_runs") return 1;
    if (field == "run_timeout_ms") return 0;
    if (field == "edges") return nlohmann::json::array();
    return nullptr;  // name, steps: required; paused: managed only when stated
}

}  // namespace

const std::vector<std::string>& WorkflowFileFields() {
    static const std::vector<std::string> fields = {
        "name",           "description",         "schedule_type",  "schedule_expr", "time_zone",
        "misfire_policy", "max_concurrent_runs", "run_timeout_ms", "paused",        "steps",
        "edges"};
    return fields;
}

Result<std::optional<std::vector<WorkflowSpec>>> ParseWorkflowSection(std::string_view text,
                                                                      std::string_view file_name) {
    return ParseNamedSection(text, file_name, {"workflows", "workflows", "workflows", kMaxWorkflowsPerFile},
                             [](const YAML::Node& node, nlohmann::json& fields) -> std::optional<EntryProblem> {
                                 if (!node.IsMap()) return EntryProblem{node, "expected a mapping of workflow fields"};
                                 if (auto p = Fields(node, false, fields)) return EntryProblem{p->at, p->what};
                                 for (const char* required : {"name", "steps"}) {
                                     if (!fields.contains(required)) {
                                         return EntryProblem{node, std::string(required) + ": required"};
                                     }
                                 }
                                 return std::nullopt;
                             });
}

Result<nlohmann::json> ParseWorkflowDocument(std::string_view text, std::string_view file_name, bool partial) {
    const std::string file(file_name);
    auto loaded = LoadBoundedYaml(text, file);
    if (!loaded.ok()) return loaded.status();
    if (!loaded->IsMap()) return Status(Code::kInvalidArgument, file + ": expected a mapping of workflow fields");
    nlohmann::json fields = nlohmann::json::object();
    if (auto p = Fields(*loaded, partial, fields)) {
        return Status(Code::kInvalidArgument, file + ": " + LineOf(p->at) + p->what);
    }
    if (!partial) {
        for (const char* required : {"name", "steps"}) {
            if (!fields.contains(required))
                return Status(Code::kInvalidArgument, file + ": " + required + ": required");
        }
    }
    return fields;
}

nlohmann::json StepsByJobName(const nlohmann::json& workflows, const nlohmann::json& jobs) {
    const auto names = JobNamesById(jobs);
    nlohmann::json out = nlohmann::json::array();
    if (!workflows.is_array()) return out;
    for (nlohmann::json w : workflows) {
        if (w.is_object() && w.contains("steps") && w["steps"].is_array()) {
            for (auto& step : w["steps"]) {
                if (!step.is_object() || !step.contains("job_id") || !step["job_id"].is_number_integer()) continue;
                step["job"] = JobNameOrId(names, step["job_id"].get<std::int64_t>());
                step.erase("job_id");
            }
        }
        out.push_back(std::move(w));
    }
    return out;
}

Plan PlanWorkflowChanges(const std::vector<WorkflowSpec>& desired, const nlohmann::json& current, bool prune) {
    const WantedValue want = [](const nlohmann::json& stated,
                                const std::string& field) -> std::optional<nlohmann::json> {
        if (field == "name") return std::nullopt;  // the key
        nlohmann::json value = stated.contains(field) ? stated[field] : DefaultWorkflowValue(field);
        if (value.is_null()) return std::nullopt;  // paused left out: not managed
        return value;
    };
    static const std::vector<std::string> fields = WithManagedBy(WorkflowFileFields());
    return PlanByName(desired, current, prune, fields, want);
}

Result<nlohmann::json> ResolveStepJobs(const nlohmann::json& body, const nlohmann::json& jobs) {
    if (!body.is_object() || !body.contains("steps")) return body;
    const auto by_name = IndexByName(jobs);
    nlohmann::json out = body;
    for (std::size_t i = 0; i < out["steps"].size(); ++i) {
        auto& step = out["steps"][i];
        const std::string job = step.value("job", std::string());
        const auto it = by_name.find(job);
        if (it == by_name.end()) {
            return Status(Code::kNotFound, "steps[" + std::to_string(i) + "].job: no job named " + Quoted(job));
        }
        step["job_id"] = (*it->second)["id"];
        step.erase("job");
    }
    return out;
}

}  // namespace sched::ctl
