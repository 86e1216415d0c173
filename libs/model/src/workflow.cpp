#include "sched/model/workflow.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <stdexcept>
#include <utility>

namespace sched::model {

std::string QuotedName(std::string_view text) {
    std::string out = "\"";
    for (std::size_t i = 0; i < text.size() && i < 64; ++i) {
        const char c = text[i];
        out += (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    if (text.size() > 64) out += "...";
    return out + "\"";
}

std::string FieldPath(std::string_view list, std::size_t i, std::string_view field) {
    std::string out = std::string(list) + "[" + std::to_string(i) + "]";
    if (!field.empty()) out += "." + std::string(field);
    return out;
}

namespace {

// Step names appear in the path of a cycle; they are valid names by then, so shown as they are.
std::string Path(const std::vector<WorkflowStep>& steps, const std::vector<std::size_t>& path) {
    std::string out;
    for (const auto i : path) out += (out.empty() ? "" : " -> ") + steps[i].name;
    return out;
}

bool IsNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
}

// "" when `name` is 1..max characters of [A-Za-z0-9_.-], else what is wrong with it.
std::string NameProblem(std::string_view name, std::size_t max) {
    if (name.empty()) return "must not be empty";
    if (name.size() > max) return "at most " + std::to_string(max) + " characters, got " + std::to_string(name.size());
    if (!std::all_of(name.begin(), name.end(), IsNameChar)) {
        return QuotedName(name) + " has a character outside [A-Za-z0-9_.-]";
    }
    return "";
}

// The first cycle met by a depth-first walk from each step in step order (children in edge
// order), as the steps on it with the first repeated at the end; empty when there is none.
// Iterative: the walk's stack is explicit.
std::vector<std::size_t> FindCycle(const std::vector<std::vector<WorkflowGraph::Link>>& children) {
    enum class Mark { kNew, kOnPath, kDone };
    std::vector<Mark> mark(children.size(), Mark::kNew);
    for (std::size_t root = 0; root < children.size(); ++root) {
        if (mark[root] != Mark::kNew) continue;
        // (step, index of the next child to visit)
        std::vector<std::pair<std::size_t, std::size_t>> stack{{root, 0}};
        mark[root] = Mark::kOnPath;
        while (!stack.empty()) {
            auto& [step, next] = stack.back();
            if (next == children[step].size()) {
                mark[step] = Mark::kDone;
                stack.pop_back();
                continue;
            }
            const std::size_t child = children[step][next++].step;
            if (mark[child] == Mark::kOnPath) {
                std::vector<std::size_t> cycle;
                auto it = std::find_if(stack.begin(), stack.end(), [&](const auto& e) { return e.first == child; });
                for (; it != stack.end(); ++it) cycle.push_back(it->first);
                cycle.push_back(child);
                return cycle;
            }
            if (mark[child] == Mark::kNew) {
                mark[child] = Mark::kOnPath;
                stack.emplace_back(child, 0);
            }
        }
    }
    return {};
}

}  // namespace

Result<WorkflowGraph> WorkflowGraph::Make(std::vector<WorkflowStep> steps, const std::vector<WorkflowEdge>& edges) {
    if (steps.empty()) return InvalidArgument("steps: a workflow needs at least one step");
    if (steps.size() > kMaxWorkflowSteps) {
        return InvalidArgument("steps: at most " + std::to_string(kMaxWorkflowSteps) + " steps, got " +
                               std::to_string(steps.size()));
    }
    if (edges.size() > kMaxWorkflowEdges) {
        return InvalidArgument("edges: at most " + std::to_string(kMaxWorkflowEdges) + " edges, got " +
                               std::to_string(edges.size()));
    }
    std::map<std::string_view, std::size_t> index;
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const auto field = FieldPath("steps", i, "name");
        if (auto problem = NameProblem(steps[i].name, kMaxStepNameLength); !problem.empty()) {
            return InvalidArgument(field + ": " + problem);
        }
        if (auto [it, added] = index.emplace(steps[i].name, i); !added) {
            return InvalidArgument(field + ": " + QuotedName(steps[i].name) + " is also " +
                                   FieldPath("steps", it->second, "name"));
        }
        if (steps[i].job_id <= 0) {
            return InvalidArgument(FieldPath("steps", i, "job_id") + ": expected a positive job id, got " +
                                   std::to_string(steps[i].job_id));
        }
    }
    WorkflowGraph g;
    g.parents_.resize(steps.size());
    g.children_.resize(steps.size());
    std::map<std::pair<std::size_t, std::size_t>, std::size_t> seen;  // (parent, child) -> edge index
    for (std::size_t i = 0; i < edges.size(); ++i) {
        const auto parent = index.find(edges[i].parent);
        if (parent == index.end()) {
            return InvalidArgument(FieldPath("edges", i, "parent") + ": no step named " + QuotedName(edges[i].parent));
        }
        const auto child = index.find(edges[i].child);
        if (child == index.end()) {
            return InvalidArgument(FieldPath("edges", i, "child") + ": no step named " + QuotedName(edges[i].child));
        }
        if (parent->second == child->second) {
            return InvalidArgument(FieldPath("edges", i, "child") + ": cycle " + edges[i].parent + " -> " +
                                   edges[i].child + " (an edge from a step to itself)");
        }
        if (auto [it, added] = seen.emplace(std::make_pair(parent->second, child->second), i); !added) {
            return InvalidArgument(FieldPath("edges", i) + ": " + edges[i].parent + " -> " + edges[i].child +
                                   " is also " + FieldPath("edges", it->second) + " (one edge per pair of steps)");
        }
        g.children_[parent->second].push_back({child->second, edges[i].condition});
        g.parents_[child->second].push_back({parent->second, edges[i].condition});
    }
    if (auto cycle = FindCycle(g.children_); !cycle.empty()) {
        return InvalidArgument("edges: cycle " + Path(steps, cycle));
    }
    // Kahn's order, the lowest ready index first: deterministic, and the step order where the
    // edges leave a choice.
    std::vector<std::size_t> waiting(steps.size());
    std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
    for (std::size_t i = 0; i < steps.size(); ++i) {
        waiting[i] = g.parents_[i].size();
        if (waiting[i] == 0) ready.push(i);
    }
    while (!ready.empty()) {
        const std::size_t i = ready.top();
        ready.pop();
        g.order_.push_back(i);
        for (const auto& link : g.children_[i]) {
            if (--waiting[link.step] == 0) ready.push(link.step);
        }
    }
    g.steps_ = std::move(steps);
    return g;
}

std::optional<std::size_t> WorkflowGraph::IndexOf(std::string_view name) const {
    for (std::size_t i = 0; i < steps_.size(); ++i) {
        if (steps_[i].name == name) return i;
    }
    return std::nullopt;
}

std::vector<std::size_t> WorkflowGraph::Roots() const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < steps_.size(); ++i) {
        if (parents_[i].empty()) out.push_back(i);
    }
    return out;
}

std::vector<std::size_t> WorkflowGraph::Descendants(std::size_t i) const {
    std::vector<bool> reached(steps_.size(), false);
    std::vector<std::size_t> todo{i};
    reached[i] = true;
    while (!todo.empty()) {
        const std::size_t step = todo.back();
        todo.pop_back();
        for (const auto& link : children_[step]) {
            if (!reached[link.step]) {
                reached[link.step] = true;
                todo.push_back(link.step);
            }
        }
    }
    std::vector<std::size_t> out;
    for (const auto step : order_) {
        if (reached[step]) out.push_back(step);
    }
    return out;
}

Status ValidateWorkflowGraph(const std::vector<WorkflowStep>& steps, const std::vector<WorkflowEdge>& edges) {
    return WorkflowGraph::Make(steps, edges).status();
}

Status ValidateWorkflow(const Workflow& w) {
    if (auto problem = NameProblem(w.name, kMaxWorkflowNameLength); !problem.empty()) {
        return InvalidArgument("name: " + problem);
    }
    if (w.description.size() > kMaxWorkflowDescriptionLength) {
        return InvalidArgument("description: at most " + std::to_string(kMaxWorkflowDescriptionLength) +
                               " bytes, got " + std::to_string(w.description.size()));
    }
    if (w.max_concurrent_runs < 1 || w.max_concurrent_runs > kMaxConcurrentRuns) {
        return InvalidArgument("max_concurrent_runs: expected 1.." + std::to_string(kMaxConcurrentRuns) + ", got " +
                               std::to_string(w.max_concurrent_runs));
    }
    if (w.run_timeout_ms < 0 || w.run_timeout_ms > kMaxRunTimeoutMs) {
        return InvalidArgument("run_timeout_ms: expected 0 (none) .. " + std::to_string(kMaxRunTimeoutMs) + ", got " +
                               std::to_string(w.run_timeout_ms));
    }
    return ValidateWorkflowGraph(w.steps, w.edges);
}

std::string WorkflowErrorField(const Status& status) {
    if (status.code() != Code::kInvalidArgument && status.code() != Code::kFailedPrecondition) return "";
    const std::string& m = status.message();
    const auto end = m.find(": ");
    if (end == std::string::npos || end == 0) return "";
    const bool field_like = std::all_of(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(end), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '[' || c == ']';
    });
    return field_like ? m.substr(0, end) : "";
}

}  // namespace sched::model
