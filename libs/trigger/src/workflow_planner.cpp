#include "sched/trigger/workflow_planner.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "sched/model/workflow_progress.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"
#include "sched/store/workflow.hpp"
#include "sched/store/workflow_run.hpp"

namespace sched::trigger {

namespace {

// A step's skip row: a ledger fire of the step's job at try 0 of the run's generation, so the
// step is either run or skipped in a generation, never both (the fire key decides).
model::Fire SkipRow(const model::WorkflowRun& run, const model::WorkflowStep& step, std::int64_t epoch,
                    std::int64_t now, model::FireReason reason, std::string message) {
    model::Fire row;
    row.job_id = step.job_id;
    row.scheduled_time = run.scheduled_time;
    row.kind = model::FireKind::kWorkflow;
    row.attempt = model::StepAttempt(run.generation, 0);
    row.epoch = epoch;
    row.status = model::FireStatus::kSkipped;
    row.due_at = now;
    row.finished_at = now;
    row.reason = reason;
    row.result_message = std::move(message);
    row.workflow_run_id = run.id;
    row.workflow_step = step.name;
    return row;
}

}  // namespace

std::vector<std::int64_t> WorkflowPlanner::CreateDueRuns(soci::session& s, const db::Dialect& dialect, std::int64_t now,
                                                         WorkflowProgressReport& r) {
    std::vector<std::int64_t> created;
    for (const auto& wf : store::WorkflowRepository::SelectDue(s, now + options_.lookahead_ms, options_.batch)) {
        const std::string key =
            std::string(ScheduleTypeName(wf.schedule_type)) + '\n' + wf.schedule_expr + '\n' + wf.time_zone;
        auto& cached = schedules_[wf.id];
        if (cached.key != key) {
            cached.key = key;
            cached.schedule.reset();
            auto made = cron::Schedule::Make(wf.schedule_type, wf.schedule_expr, wf.time_zone);
            if (made.ok()) {
                cached.schedule = *made;
                cached.error.clear();
            } else {
                cached.error = made.status().message();
            }
        }
        if (!cached.schedule) {
            // The API checks schedules; a zone that vanished from tzdata can still break one.
            spdlog::error("workflow {} ({}) has an invalid schedule and is parked: {}", wf.id, wf.name, cached.error);
            (void)store::WorkflowRepository::AdvanceSchedule(s, wf.id, wf.version, *wf.next_fire_time, std::nullopt);
            continue;
        }
        PlanOptions plan_options;
        plan_options.lookahead_ms = options_.lookahead_ms;
        plan_options.misfire = options_.misfire;
        plan_options.misfire.policy = wf.misfire_policy;
        plan_options.max_fires_per_job = options_.max_runs_per_workflow;
        const auto plan = PlanJobFires(*cached.schedule, *wf.next_fire_time, now, plan_options);
        // The overlap policy is judged at each run's scheduled time. A time within the lookahead
        // that finds a free slot gets its run now (it holds the slot from then, so its roots can
        // be sent at their exact time); one that finds every slot taken is not judged yet: the
        // running runs may end before it, so the workflow's next_fire_time stays at it and a
        // scan at (or after) that time decides.
        std::vector<model::WorkflowRun> runs;
        std::optional<std::int64_t> next = plan.next_fire_time;
        int running = store::WorkflowRunRepository::CountRunning(s, wf.id);
        for (const auto& planned : plan.fires) {
            model::WorkflowRun run;
            run.workflow_id = wf.id;
            run.scheduled_time = planned.scheduled_ms;
            run.kind = model::WorkflowRunKind::kSchedule;
            run.workflow_version = wf.version;
            run.definition = {wf.steps, wf.edges};
            run.created_by = "scheduler";
            if (running >= wf.max_concurrent_runs) {
                if (planned.scheduled_ms > now) {
                    next = planned.nominal_ms;
                    break;
                }
                // Decided at (or after) its time: it never starts, so it starts and ends now.
                run.status = model::WorkflowRunStatus::kSkipped;
                run.reason = "overlap: " + std::to_string(running) + " run(s) running, max_concurrent_runs " +
                             std::to_string(wf.max_concurrent_runs);
                run.started_at = now;
                run.ended_at = now;
            } else {
                // A run created ahead (lookahead) starts at its time: its roots' lag counts from there.
                run.started_at = std::max(now, planned.scheduled_ms);
                ++running;
            }
            runs.push_back(std::move(run));
        }
        // Nothing to write while the first time waits for its decision (a scan every few ms).
        if (runs.empty() && next == wf.next_fire_time) continue;
        // The CAS fails when the workflow was edited or paused after it was read: the next scan
        // plans it afresh.
        if (!store::WorkflowRepository::AdvanceSchedule(s, wf.id, wf.version, *wf.next_fire_time, next)) continue;
        if (plan.skipped) {
            spdlog::warn("workflow {} ({}): {} scheduled time(s) from {} to {} got no run (misfire policy {})", wf.id,
                         wf.name, plan.skipped->count, plan.skipped->first_ms, plan.skipped->last_ms,
                         cron::MisfirePolicyName(wf.misfire_policy));
        }
        for (const auto& run : runs) {
            const auto id = store::WorkflowRunRepository::InsertIfAbsent(s, dialect, run);
            if (!id) continue;
            if (run.status == model::WorkflowRunStatus::kSkipped) {
                ++r.runs_overlapped;
            } else {
                ++r.runs_created;
                created.push_back(*id);
            }
        }
    }
    return created;
}

WorkflowProgressReport WorkflowPlanner::Advance(soci::session& s, const db::Dialect& dialect, std::int64_t epoch,
                                                std::int64_t now, Assigner& assigner,
                                                const std::set<std::int64_t>& ended_runs,
                                                const std::function<int(const std::string& app)>& live_executors) {
    WorkflowProgressReport r;
    std::set<std::int64_t> ids(ended_runs.begin(), ended_runs.end());
    for (const std::int64_t id : CreateDueRuns(s, dialect, now, r)) ids.insert(id);

    std::map<std::int64_t, model::WorkflowRun> runs;
    for (auto& run : store::WorkflowRunRepository::FindRunning(s, {ids.begin(), ids.end()})) {
        runs.emplace(run.id, std::move(run));
    }
    for (auto& run : store::WorkflowRunRepository::ListUnstarted(s, options_.batch)) {
        runs.emplace(run.id, std::move(run));
    }
    // The sweep: every running run comes round (a lost notification of nothing, the timeout).
    std::set<std::int64_t> swept;
    if (now >= next_sweep_ms_) {
        next_sweep_ms_ = now + options_.sweep_ms;
        auto batch = store::WorkflowRunRepository::ListRunning(s, sweep_after_id_, options_.batch);
        sweep_after_id_ = static_cast<int>(batch.size()) < options_.batch ? 0 : batch.back().id;
        for (auto& run : batch) {
            swept.insert(run.id);
            runs.emplace(run.id, std::move(run));
        }
    }
    if (runs.empty()) {
        r.earliest_due_ms = store::WorkflowRepository::EarliestDue(s);
        return r;
    }

    std::vector<std::int64_t> run_ids;
    run_ids.reserve(runs.size());
    for (const auto& [id, run] : runs) run_ids.push_back(id);
    std::map<std::int64_t, std::vector<model::Fire>> fires_by_run;
    for (auto& fire : store::FireRepository::ListForWorkflowRuns(s, run_ids)) {
        fires_by_run[*fire.workflow_run_id].push_back(std::move(fire));
    }
    std::map<std::int64_t, std::optional<model::Job>> jobs;
    const auto job_of = [&](std::int64_t id) -> const std::optional<model::Job>& {
        auto it = jobs.find(id);
        if (it == jobs.end()) it = jobs.emplace(id, store::JobRepository::Find(s, id)).first;
        return it->second;
    };
    std::map<std::int64_t, std::optional<model::Workflow>> workflows;

    std::vector<model::Fire> new_fires;
    std::vector<std::string> new_fire_apps;  // for the `planned` spans
    std::vector<model::Fire> skips;
    for (const auto& [id, run] : runs) {
        auto graph = model::WorkflowGraph::Make(run.definition.steps, run.definition.edges);
        if (!graph.ok()) {
            // ParseWorkflowDefinition checked the copy when it was read; this is a broken invariant
            // of a damaged row, and the run cannot go on.
            spdlog::error("workflow run {}: its definition is invalid ({}); ended failed", id,
                          graph.status().message());
            (void)store::WorkflowRunRepository::End(s, id, model::WorkflowRunStatus::kFailed,
                                                    "definition: " + graph.status().message(), now);
            continue;
        }
        const auto& fires = fires_by_run[id];
        if (swept.contains(id)) {
            auto wf = workflows.find(run.workflow_id);
            if (wf == workflows.end()) {
                wf = workflows.emplace(run.workflow_id, store::WorkflowRepository::Find(s, run.workflow_id)).first;
            }
            const std::int64_t started = run.started_at.value_or(run.created_at);
            if (wf->second && wf->second->run_timeout_ms > 0 && now >= started + wf->second->run_timeout_ms) {
                const std::string why =
                    "run_timeout: still running " + std::to_string(wf->second->run_timeout_ms) + " ms after its start";
                const auto progress = model::EvaluateRun(*graph, run, fires);
                for (std::size_t i = 0; i < graph->size(); ++i) {
                    const auto& step = progress.steps[i];
                    if (step.state == model::StepState::kWaiting) {
                        skips.push_back(SkipRow(run, graph->step(i), epoch, now, model::FireReason::kRunTimeout, why));
                    }
                }
                for (const auto& fire : fires) {
                    if (fire.attempt / model::kStepAttemptStride != run.generation) continue;
                    if (fire.status == model::FireStatus::kPending) {
                        (void)store::FireRepository::Transition(
                            s, fire.id, {model::FireStatus::kPending}, model::FireStatus::kSkipped,
                            {.finished_at = now, .result_message = why, .reason = model::FireReason::kRunTimeout});
                    } else if (fire.status == model::FireStatus::kRunning) {
                        // As the fires API's kill decides: the CAS is the outcome. The executor is
                        // not called from the master (docs/workflows.md "Run timeout").
                        (void)store::FireRepository::Transition(
                            s, fire.id, {model::FireStatus::kRunning}, model::FireStatus::kKilled,
                            {.finished_at = now, .result_message = why, .followup = true});
                    }
                }
                if (store::WorkflowRunRepository::End(s, id, model::WorkflowRunStatus::kTimedOut, why, now)) {
                    ++r.runs_timed_out;
                    spdlog::warn("workflow run {} of workflow {}: {}", id, run.workflow_id, why);
                }
                continue;
            }
        }
        const auto progress = model::EvaluateRun(*graph, run, fires);
        for (const auto& skip : progress.to_skip) {
            skips.push_back(
                SkipRow(run, graph->step(skip.step), epoch, now, model::FireReason::kUpstream, skip.message));
        }
        for (const std::size_t i : progress.to_start) {
            const auto& step = graph->step(i);
            const auto& job = job_of(step.job_id);
            if (!job) {
                // The run's copy names a job deleted since (an edit removed the step first): the
                // step fails visibly instead of the run waiting forever.
                auto row = SkipRow(run, step, epoch, now, model::FireReason::kJobDeleted,
                                   "job " + std::to_string(step.job_id) + " no longer exists");
                skips.push_back(std::move(row));
                continue;
            }
            const int shards = model::ShardsPerFire(*job, [&] { return live_executors(job->app); });
            for (int shard = 0; shard < shards; ++shard) {
                model::Fire fire;
                fire.job_id = job->id;
                fire.scheduled_time = run.scheduled_time;
                fire.kind = model::FireKind::kWorkflow;
                fire.attempt = model::StepAttempt(run.generation, 0);
                fire.shard_index = shard;
                fire.shard_total = shards;
                fire.epoch = epoch;
                fire.due_at = std::max(now, run.scheduled_time);
                fire.assigned_node = assigner.Next();
                fire.workflow_run_id = run.id;
                fire.workflow_step = step.name;
                new_fires.push_back(std::move(fire));
                new_fire_apps.push_back(job->app);
            }
        }
        if (progress.end && progress.to_start.empty()) {
            if (store::WorkflowRunRepository::End(s, id, *progress.end, progress.end_reason, now)) ++r.runs_ended;
        }
    }
    r.steps_skipped = store::FireRepository::InsertLedgerRows(s, dialect, skips);
    const auto stored = store::FireRepository::InsertManyIfAbsent(s, dialect, new_fires);
    for (std::size_t i = 0; i < new_fires.size(); ++i) {
        if (!stored[i] || !stored[i]->as_written) continue;
        ++r.steps_started;
        NoteWrittenFire(new_fires[i], stored[i]->id, new_fire_apps[i], now, r.assigned, r.spans);
    }
    r.earliest_due_ms = store::WorkflowRepository::EarliestDue(s);
    return r;
}

}  // namespace sched::trigger
