#include "sched/model/workflow_progress.hpp"

#include <algorithm>
#include <map>

namespace sched::model {

namespace {

// The state a step's counted fires give it, and when it ended (the latest finish among the
// shards' last tries), for its children's readiness.
struct Counted {
    StepState state = StepState::kWaiting;
    std::optional<Fire> shown;
    int fires = 0;
    std::optional<std::int64_t> ended_at;
};

bool IsPlannerSkip(const Fire& f) {
    return f.status == FireStatus::kSkipped && f.attempt % kStepAttemptStride == 0 &&
           (f.reason == FireReason::kUpstream || f.reason == FireReason::kRunTimeout);
}

Counted Count(const std::vector<const Fire*>& fires) {
    Counted c;
    c.fires = static_cast<int>(fires.size());
    // A skip row is the step's whole story in its generation: the planner writes it at try 0
    // only when the step has no fire there, and the insert-if-absent key keeps a run fire out.
    for (const Fire* f : fires) {
        if (IsPlannerSkip(*f)) {
            c.state = StepState::kSkipped;
            c.shown = *f;
            c.ended_at = f->finished_at;
            return c;
        }
    }
    // Per shard, the highest try (then the highest id) is the shard's state.
    std::map<int, const Fire*> last;
    for (const Fire* f : fires) {
        auto& slot = last[f->shard_index];
        if (!slot || f->attempt > slot->attempt || (f->attempt == slot->attempt && f->id > slot->id)) slot = f;
    }
    bool running = false;
    bool all_succeeded = true;
    const Fire* first_bad = nullptr;
    for (const auto& [shard, f] : last) {
        // An ended fire whose follow-up is still flagged may yet get a retry: not an outcome.
        if (!IsFinal(f->status) || f->followup) running = true;
        if (f->status != FireStatus::kSucceeded) {
            all_succeeded = false;
            if (!first_bad) first_bad = f;
        }
        if (f->finished_at) c.ended_at = std::max(c.ended_at.value_or(*f->finished_at), *f->finished_at);
    }
    c.shown = first_bad ? *first_bad : *last.begin()->second;
    c.state = running ? StepState::kRunning : all_succeeded ? StepState::kSucceeded : StepState::kFailed;
    if (running) c.ended_at.reset();
    return c;
}

bool Holds(EdgeCondition condition, StepState parent) {
    switch (condition) {
        case EdgeCondition::kOnSuccess:
            return parent == StepState::kSucceeded;
        case EdgeCondition::kOnFailure:
            return parent == StepState::kFailed;
        case EdgeCondition::kAlways:
            return true;
    }
    return false;
}

std::string Outcome(StepState state) {
    switch (state) {
        case StepState::kSucceeded:
            return "succeeded";
        case StepState::kFailed:
            return "failed";
        default:
            return "was skipped";
    }
}

bool Ended(StepState s) {
    return s == StepState::kSucceeded || s == StepState::kFailed || s == StepState::kSkipped;
}

}  // namespace

RunProgress EvaluateRun(const WorkflowGraph& graph, const WorkflowRun& run, const std::vector<Fire>& fires) {
    const std::size_t n = graph.size();
    RunProgress p;
    p.steps.resize(n);

    // The steps the last re-run reset count only the current generation's fires.
    std::vector<bool> reset(n, false);
    std::optional<std::size_t> rerun_step;
    if (run.generation > 0 && run.from_step) {
        rerun_step = graph.IndexOf(*run.from_step);
        if (rerun_step) {
            for (const std::size_t d : graph.Descendants(*rerun_step)) reset[d] = true;
        }
    }

    std::vector<std::map<int, std::vector<const Fire*>>> by_generation(n);
    for (const auto& f : fires) {
        if (f.workflow_run_id != run.id || !f.workflow_step) continue;
        const auto index = graph.IndexOf(*f.workflow_step);
        if (!index) continue;
        by_generation[*index][f.attempt / kStepAttemptStride].push_back(&f);
    }

    std::vector<Counted> counted(n);
    for (std::size_t i = 0; i < n; ++i) {
        const auto& gens = by_generation[i];
        std::optional<int> generation;
        if (reset[i]) {
            if (gens.contains(run.generation)) generation = run.generation;
        } else if (!gens.empty()) {
            generation = gens.rbegin()->first;
        }
        if (!generation) continue;
        counted[i] = Count(gens.at(*generation));
        // The state the caller sees is the stored one: a step decided below is still waiting
        // until the master's writes land.
        p.steps[i].state = counted[i].state;
        p.steps[i].generation = generation;
        p.steps[i].fire = counted[i].shown;
        p.steps[i].fires = counted[i].fires;
    }

    // Decide, in topological order, what the steps still waiting do: a decision made here (start,
    // skip) counts for the children further down the order, so skips flow down in one pass.
    const std::int64_t run_start = run.started_at.value_or(run.created_at);
    for (const std::size_t i : graph.TopologicalOrder()) {
        auto& step = p.steps[i];
        auto& c = counted[i];
        const auto& parents = graph.Parents(i);
        // Readiness, for every step (also those already started): the last parent's end.
        std::optional<std::int64_t> ready = run_start;
        bool parents_ended = true;
        if (!(rerun_step && *rerun_step == i)) {
            for (const auto& link : parents) {
                if (!Ended(counted[link.step].state)) {
                    parents_ended = false;
                    break;
                }
                const auto parent_end = counted[link.step].ended_at;
                if (parent_end && (!ready || *parent_end > *ready)) ready = parent_end;
            }
        }
        if (parents_ended) step.ready_at = ready;
        if (c.state != StepState::kWaiting) continue;
        if (!parents_ended) continue;
        const bool forced = rerun_step && *rerun_step == i;  // the operator asked for it
        const RunProgress::Skip* skip = nullptr;
        if (!forced) {
            for (const auto& link : parents) {
                const StepState parent = counted[link.step].state;
                if (Holds(link.condition, parent)) continue;
                p.to_skip.push_back({.step = i,
                                     .message = "parent \"" + graph.step(link.step).name + "\" " + Outcome(parent) +
                                                " (edge " + std::string(kEdgeConditionNames.Name(link.condition)) +
                                                ")"});
                skip = &p.to_skip.back();
                break;
            }
        }
        if (skip) {
            c.state = StepState::kSkipped;
            c.ended_at = step.ready_at;
        } else {
            p.to_start.push_back(i);
            c.state = StepState::kRunning;
        }
    }

    bool all_ended = p.to_start.empty();
    for (std::size_t i = 0; i < n && all_ended; ++i) all_ended = Ended(counted[i].state);
    if (all_ended) {
        p.end = WorkflowRunStatus::kSucceeded;
        for (const std::size_t i : graph.TopologicalOrder()) {
            if (counted[i].state == StepState::kFailed) {
                p.end = WorkflowRunStatus::kFailed;
                p.end_reason = "step \"" + graph.step(i).name + "\" failed";
                break;
            }
        }
    }
    return p;
}

}  // namespace sched::model
