#include "sched/model/workflow_run.hpp"

#include <cstddef>

#include <nlohmann/json.hpp>

namespace sched::model {

namespace {

// The definition's JSON keys, each spelled once for the writer and the reader.
constexpr const char* kStepsKey = "steps";
constexpr const char* kEdgesKey = "edges";
constexpr const char* kNameKey = "name";
constexpr const char* kJobIdKey = "job_id";
constexpr const char* kParentKey = "parent";
constexpr const char* kChildKey = "child";
constexpr const char* kConditionKey = "condition";

// 64 steps and 256 edges of 64-character names take well under this.
constexpr std::size_t kMaxDefinitionBytes = 1 << 20;

}  // namespace

std::string WorkflowDefinitionToJson(const WorkflowDefinition& d) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& step : d.steps) steps.push_back({{kNameKey, step.name}, {kJobIdKey, step.job_id}});
    nlohmann::json edges = nlohmann::json::array();
    for (const auto& edge : d.edges) {
        edges.push_back({{kParentKey, edge.parent},
                         {kChildKey, edge.child},
                         {kConditionKey, std::string(kEdgeConditionNames.Name(edge.condition))}});
    }
    return nlohmann::json{{kStepsKey, std::move(steps)}, {kEdgesKey, std::move(edges)}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<WorkflowDefinition> ParseWorkflowDefinition(std::string_view text) {
    if (text.size() > kMaxDefinitionBytes) return InvalidArgument("definition: larger than 1 MiB");
    const auto json = nlohmann::json::parse(text, nullptr, false);
    if (json.is_discarded() || !json.is_object()) return InvalidArgument("definition: not a JSON object");
    const auto steps = json.find(kStepsKey);
    const auto edges = json.find(kEdgesKey);
    if (steps == json.end() || !steps->is_array()) return InvalidArgument("definition.steps: expected an array");
    if (edges == json.end() || !edges->is_array()) return InvalidArgument("definition.edges: expected an array");
    // Counted before the items are read: ValidateWorkflowGraph would refuse more anyway.
    if (steps->size() > kMaxWorkflowSteps || edges->size() > kMaxWorkflowEdges) {
        return InvalidArgument("definition: too many steps or edges");
    }
    WorkflowDefinition d;
    for (const auto& item : *steps) {
        if (!item.is_object() || !item.contains(kNameKey) || !item[kNameKey].is_string() || !item.contains(kJobIdKey) ||
            !item[kJobIdKey].is_number_integer()) {
            return InvalidArgument("definition.steps: expected {name, job_id}");
        }
        d.steps.push_back({item[kNameKey].get<std::string>(), item[kJobIdKey].get<std::int64_t>()});
    }
    for (const auto& item : *edges) {
        if (!item.is_object() || !item.contains(kParentKey) || !item[kParentKey].is_string() ||
            !item.contains(kChildKey) || !item[kChildKey].is_string() || !item.contains(kConditionKey) ||
            !item[kConditionKey].is_string()) {
            return InvalidArgument("definition.edges: expected {parent, child, condition}");
        }
        const auto condition = kEdgeConditionNames.Parse(item[kConditionKey].get<std::string>());
        if (!condition) return InvalidArgument("definition.edges: unknown condition");
        d.edges.push_back({item[kParentKey].get<std::string>(), item[kChildKey].get<std::string>(), *condition});
    }
    if (auto valid = ValidateWorkflowGraph(d.steps, d.edges); !valid.ok()) {
        return InvalidArgument("definition." + valid.message());
    }
    return d;
}

}  // namespace sched::model
