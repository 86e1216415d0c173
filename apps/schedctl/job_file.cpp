#include "job_file.hpp"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "bounded_yaml.hpp"
#include "sched/common/job_vocabulary.hpp"
#include "sched/http/json.hpp"

namespace sched::ctl {

static_assert(YamlBounds{}.max_bytes == kMaxJobFileBytes, "a job file is read with the job file's size bound");

namespace {

enum class FieldType { kString, kInt, kBool, kAny };

struct FieldInfo {
    std::string_view name;
    FieldType type;
    nlohmann::json default_value;
};

const std::vector<FieldInfo>& Fields() {
    static const std::vector<FieldInfo> fields = {
        {"name", FieldType::kString, nullptr},
        {"app", FieldType::kString, nullptr},
        {"handler", FieldType::kString, nullptr},
        {"params", FieldType::kAny, ""},
        {"schedule_type", FieldType::kString, nullptr},
        {"schedule_expr", FieldType::kString, ""},
        {"time_zone", FieldType::kString, "UTC"},
        {"misfire_policy", FieldType::kString, std::string(MisfirePolicyName(MisfirePolicy::kFireOnceNow))},
        {"routing", FieldType::kString, std::string(RoutingName(Routing::kRoundRobin))},
        {"block_strategy", FieldType::kString, std::string(BlockStrategyName(BlockStrategy::kSerial))},
        {"concurrency_limit", FieldType::kInt, 1},
        {"timeout_ms", FieldType::kInt, 0},
        {"retry_max", FieldType::kInt, 0},
        {"retry_backoff_ms", FieldType::kInt, 1000},
        {"shard_total", FieldType::kInt, 1},
        {"at_least_once", FieldType::kBool, false},
        {"enabled", FieldType::kBool, nullptr},
        {"description", FieldType::kString, ""},
        {"pause_after_failures", FieldType::kInt, 0},
        // Schedule options (docs/cron.md): jitter and the per-job DST choice.
        {"jitter_ms", FieldType::kInt, 0},
        {"dst_gap", FieldType::kString, "auto"},
        {"dst_overlap", FieldType::kString, "auto"},
        // Calendar and bounds (docs/schedules.md); instants as epoch ms, so that diff compares
        // them with what the server stores.
        {"calendar", FieldType::kString, nullptr},
        {"start_at", FieldType::kInt, nullptr},
        {"end_at", FieldType::kInt, nullptr},
        {"max_runs", FieldType::kInt, nullptr},
        // A limit shared with other jobs (docs/api.md "Concurrency keys"); defined through the API.
        {"concurrency_key", FieldType::kString, nullptr},
    };
    return fields;
}

// Whether `text` is a name of the vocabulary `Parse` reads.
template <auto Parse>
Status VocabularyCheck(const std::string& text) {
    return Parse(text).status();
}

// The job vocabulary is checked at the file's edge with the server's one name table, so that a
// typo is reported with its place in the file rather than as a 400 halfway through an apply.
std::optional<std::string> CheckVocabulary(const nlohmann::json& fields) {
    static constexpr std::pair<std::string_view, Status (*)(const std::string&)> kChecks[] = {
        {"schedule_type", VocabularyCheck<ParseScheduleType>},
        {"misfire_policy", VocabularyCheck<ParseMisfirePolicy>},
        {"routing", VocabularyCheck<ParseRouting>},
        {"block_strategy", VocabularyCheck<ParseBlockStrategy>},
    };
    for (const auto& [field, check] : kChecks) {
        const auto it = fields.find(std::string(field));
        if (it == fields.end() || !it->is_string()) continue;
        if (Status s = check(it->get_ref<const std::string&>()); !s.ok())
            return std::string(field) + ": " + s.message();
    }
    return std::nullopt;
}

// kInvalidArgument "<file>: <what>".
Status InvalidIn(const std::string& file, const std::string& what) {
    return {Code::kInvalidArgument, file + ": " + what};
}

// The document of `text`, which must be a mapping (else `expected`).
Result<YAML::Node> LoadMapping(std::string_view text, const std::string& file, const std::string& expected) {
    auto loaded = LoadBoundedYaml(text, file);
    if (!loaded.ok()) return loaded.status();
    if (!loaded->IsMap()) return InvalidIn(file, expected);
    return loaded;
}

const FieldInfo* FindField(std::string_view name) {
    for (const auto& f : Fields()) {
        if (f.name == name) return &f;
    }
    return nullptr;
}

std::string Quoted(std::string_view s) {
    return nlohmann::json(std::string(s)).dump();
}

// Recursion is bounded by kMaxParamsDepth (yaml-cpp itself limits the parse depth).
Result<nlohmann::json> NodeToJson(const YAML::Node& node, std::size_t depth) {
    if (depth > kMaxParamsDepth) {
        return Status(Code::kInvalidArgument, "nesting deeper than " + std::to_string(kMaxParamsDepth) + " levels");
    }
    switch (node.Type()) {
        case YAML::NodeType::Null:
        case YAML::NodeType::Undefined:
            return nlohmann::json(nullptr);
        case YAML::NodeType::Scalar:
            return ScalarToJson(node);
        case YAML::NodeType::Sequence: {
            nlohmann::json out = nlohmann::json::array();
            for (const auto& item : node) {
                auto v = NodeToJson(item, depth + 1);
                if (!v.ok()) return v.status();
                out.push_back(std::move(*v));
            }
            return out;
        }
        case YAML::NodeType::Map: {
            nlohmann::json out = nlohmann::json::object();
            for (const auto& kv : node) {
                if (!kv.first.IsScalar()) return Status(Code::kInvalidArgument, "keys must be strings");
                auto v = NodeToJson(kv.second, depth + 1);
                if (!v.ok()) return v.status();
                out[kv.first.Scalar()] = std::move(*v);
            }
            return out;
        }
    }
    return nlohmann::json(nullptr);
}

Result<nlohmann::json> FieldValue(const FieldInfo& info, const YAML::Node& node) {
    if (info.type == FieldType::kAny) {
        auto value = NodeToJson(node, 0);
        if (!value.ok()) return value;
        // The API stores a string as it is and any other value as its JSON text, at most
        // kMaxParamsBytes either way: said here, at its place in the file, not halfway through an apply.
        const bool fits = value->is_string() ? value->get_ref<const std::string&>().size() <= kMaxParamsBytes
                                             : http::DumpWithin(*value, kMaxParamsBytes).has_value();
        if (!fits) {
            return Status(Code::kInvalidArgument,
                          "larger than " + std::to_string(kMaxParamsBytes) + " bytes (the API's limit)");
        }
        return value;
    }
    if (!node.IsScalar()) return Status(Code::kInvalidArgument, "expected a scalar");
    const nlohmann::json v = ScalarToJson(node);
    switch (info.type) {
        case FieldType::kString:
            // An unquoted 5 or true is still the text the operator wrote.
            if (v.is_null()) return Status(Code::kInvalidArgument, "expected a string");
            return nlohmann::json(node.Scalar());
        case FieldType::kInt:
            if (!v.is_number_integer()) return Status(Code::kInvalidArgument, "expected an integer");
            return v;
        case FieldType::kBool:
            if (!v.is_boolean()) return Status(Code::kInvalidArgument, "expected true or false");
            return v;
        case FieldType::kAny:
            break;
    }
    return v;
}

}  // namespace

const std::vector<std::string>& JobFileFields() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const auto& f : Fields()) out.emplace_back(f.name);
        return out;
    }();
    return names;
}

nlohmann::json DefaultFieldValue(std::string_view field) {
    const FieldInfo* info = FindField(field);
    return info ? info->default_value : nlohmann::json(nullptr);
}

Result<std::vector<JobSpec>> ParseJobFile(std::string_view text, std::string_view file_name) {
    const std::string file(file_name);
    const auto fail = [&file](const std::string& what) {
        return InvalidIn(file, what);
    };
    auto loaded = LoadMapping(text, file, "expected a mapping with the keys jobs, calendars, workflows and alerts");
    if (!loaded.ok()) return loaded.status();
    const YAML::Node& root = *loaded;
    for (const auto& kv : root) {
        // calendars:, workflows: and alerts: are read by ParseCalendarSection, ParseWorkflowSection
        // and ParseAlertSection.
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
        if (key != "jobs" && key != "calendars" && key != "workflows" && key != "alerts") {
            return fail("line " + std::to_string(kv.first.Mark().line + 1) + ": " +
                        (kv.first.IsScalar() ? kv.first.Scalar() : std::string("?")) +
                        ": unknown key (expected jobs, calendars, workflows or alerts)");
        }
    }
    const YAML::Node jobs = root["jobs"];
    if (!jobs || jobs.IsNull()) return std::vector<JobSpec>{};
    if (!jobs.IsSequence()) return fail("jobs: expected a list of jobs");
    if (jobs.size() > kMaxJobsPerFile) {
        return fail("jobs: more than " + std::to_string(kMaxJobsPerFile) + " jobs");
    }
    std::vector<JobSpec> out;
    std::set<std::string> names;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        const YAML::Node job = jobs[i];
        std::string where = "jobs[" + std::to_string(i) + "]";
        if (!job.IsMap()) return fail(where + ": expected a mapping of job fields");
        if (job["name"] && job["name"].IsScalar()) where += " (name " + Quoted(job["name"].Scalar()) + ")";
        JobSpec spec;
        for (const auto& kv : job) {
            const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
            if (key == "id" || key == "version") {
                return InvalidIn(file,
                                 where + ": " + key + ": not allowed (the server assigns it; jobs are keyed by name)");
            }
            const FieldInfo* info = FindField(key);
            if (!info) return fail(where + ": " + key + ": unknown field");
            if (spec.fields.contains(key)) return fail(where + ": " + key + ": given twice");
            auto value = FieldValue(*info, kv.second);
            if (!value.ok()) return fail(where + ": " + key + ": " + value.status().message());
            spec.fields[key] = std::move(*value);
        }
        for (const char* required : {"name", "app", "handler", "schedule_type"}) {
            if (!spec.fields.contains(required)) return fail(where + ": " + required + ": required");
            if (spec.fields[required].get_ref<const std::string&>().empty()) {
                return fail(where + ": " + required + ": must not be empty");
            }
        }
        if (auto invalid = CheckVocabulary(spec.fields)) return fail(where + ": " + *invalid);
        spec.name = spec.fields["name"].get<std::string>();
        if (spec.name.size() > 191) return fail(where + ": name: longer than 191 characters");
        if (!names.insert(spec.name).second) return fail(where + ": name: " + Quoted(spec.name) + " appears twice");
        out.push_back(std::move(spec));
    }
    return out;
}

Result<std::string> ReadBoundedFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status(Code::kNotFound, path + ": cannot read the file");
    std::string text;
    text.resize(kMaxJobFileBytes + 1);
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    return text;
}

Result<std::vector<JobSpec>> LoadJobFile(const std::string& path) {
    auto text = ReadBoundedFile(path);
    if (!text.ok()) return text.status();
    return ParseJobFile(*text, path);
}

Result<nlohmann::json> ParseJobDocument(std::string_view text, std::string_view file_name) {
    const std::string file(file_name);
    auto loaded = LoadMapping(text, file, "expected a mapping of job fields");
    if (!loaded.ok()) return loaded.status();
    const YAML::Node& root = *loaded;
    nlohmann::json out = nlohmann::json::object();
    for (const auto& kv : root) {
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
        if (key == "version") {
            auto v = FieldValue({"version", FieldType::kInt, nullptr}, kv.second);
            if (!v.ok()) return InvalidIn(file, key + ": " + v.status().message());
            out[key] = std::move(*v);
            continue;
        }
        const FieldInfo* info = FindField(key);
        if (!info) return InvalidIn(file, key + ": unknown field");
        auto value = FieldValue(*info, kv.second);
        if (!value.ok()) return InvalidIn(file, key + ": " + value.status().message());
        out[key] = std::move(*value);
    }
    if (auto invalid = CheckVocabulary(out)) return InvalidIn(file, *invalid);
    return out;
}

}  // namespace sched::ctl
