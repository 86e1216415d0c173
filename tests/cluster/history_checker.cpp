#include "history_checker.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "sched/model/workflow_progress.hpp"

namespace sched::chaos {

namespace {

using model::FireStatus;

std::string Describe(const model::Fire& f) {
    std::ostringstream out;
    out << "fire " << f.id << " (" << model::FireKindName(f.kind) << ", attempt " << f.attempt << ", "
        << model::FireStatusName(f.status) << ", node " << f.assigned_node.value_or("-") << ", executor "
        << f.executor_address.value_or("-") << ", created " << f.created_at << ", dispatched "
        << (f.dispatched_at ? std::to_string(*f.dispatched_at) : "-") << ": " << f.result_message.value_or("") << ")";
    return out.str();
}

std::string Describe(const SinkRecord& r) {
    std::ostringstream out;
    out << r.instance << " at " << r.arrival_ms << " (fire " << r.fire_id << ", epoch " << r.epoch << ")";
    return out.str();
}

// The policy's verdict on an ended attempt: does it owe a next attempt?
// A lost attempt of an at-least-once job is owed one retry even with retry_max 0.
bool OwesRetry(const model::Fire& f, const JobPolicy& job) {
    if (f.status == FireStatus::kFailed || f.status == FireStatus::kTimeout) return f.attempt < job.retry_max;
    return f.status == FireStatus::kLost && job.at_least_once && f.attempt < std::max(job.retry_max, 1);
}

// A ledger row of the misfire policy that stands for scheduled time t (a summary row covers a
// range; a planned fire skipped late by its slave covers its own time).
bool LedgerCovers(const std::vector<const model::Fire*>& rows, std::int64_t t) {
    return std::any_of(rows.begin(), rows.end(), [t](const model::Fire* f) {
        return f->status == FireStatus::kSkipped && f->reason == model::FireReason::kMisfire &&
               f->scheduled_time <= t && t <= f->skipped_until.value_or(f->scheduled_time);
    });
}

// Counts by status, a line each (" none" when there is none).
void WriteCounts(std::ostream& out, const std::map<std::string, int>& counts) {
    if (counts.empty()) out << " none";
    for (const auto& [status, n] : counts) out << "\n    " << n << " x " << status;
}

// A violation for each (job, scheduled time, attempt, ...) that more than one record holds:
// "double: job J at T attempt A<verb>N<noun>" and the records.
template <typename Key, typename Record>
void ReportDoubles(const std::map<Key, std::vector<const Record*>>& by_key, const char* verb, const char* noun,
                   std::vector<std::string>& violations) {
    for (const auto& [key, list] : by_key) {
        if (list.size() < 2) continue;
        std::ostringstream out;
        out << "double: job " << std::get<0>(key) << " at " << std::get<1>(key) << " attempt " << std::get<2>(key)
            << verb << list.size() << noun;
        for (const auto* record : list) out << ' ' << Describe(*record) << ';';
        violations.push_back(out.str());
    }
}

// How many violations, then the first `max_violations` of them, a line each.
void WriteViolations(std::ostream& out, const std::vector<std::string>& violations, std::size_t max_violations) {
    out << "; " << violations.size() << " violation(s)";
    for (std::size_t i = 0; i < violations.size() && i < max_violations; ++i) out << "\n  " << violations[i];
    if (violations.size() > max_violations) out << "\n  ... " << violations.size() - max_violations << " more";
}

}  // namespace

std::vector<SinkRecord> ReadSinkLog(const std::filesystem::path& path, int* torn) {
    std::vector<SinkRecord> out;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object() || !j.contains("epoch") || !j.contains("instance")) {
            if (torn) ++*torn;
            continue;
        }
        SinkRecord r;
        r.arrival_ms = j.value("arrival_ms", std::int64_t{0});
        r.job_id = j.value("job_id", std::int64_t{0});
        r.fire_id = j.value("fire_id", std::int64_t{0});
        r.scheduled_ms = j.value("scheduled_ms", std::int64_t{0});
        r.attempt = j.value("attempt", std::int64_t{0});
        r.epoch = j.value("epoch", std::int64_t{0});
        r.instance = j.value("instance", std::string());
        out.push_back(std::move(r));
    }
    return out;
}

std::string HistoryReport::Summary(std::size_t max_violations) const {
    std::ostringstream out;
    out << "expected " << expected << ", ran " << ran << ", misfire-dropped " << misfire_dropped << ", retries "
        << retries << ", sink runs " << runs << ", ended without a run:";
    WriteCounts(out, ended_without_run);
    WriteViolations(out, violations, max_violations);
    return out.str();
}

HistoryReport CheckHistory(const HistoryInput& input) {
    HistoryReport report;
    report.runs = static_cast<int>(input.runs.size());
    auto& v = report.violations;

    // ---- 1. doubles ----
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, std::vector<const SinkRecord*>> runs_by_key;
    std::map<std::pair<std::int64_t, std::int64_t>, int> runs_by_time;  // (job, scheduled) -> runs
    for (const auto& r : input.runs) {
        runs_by_key[{r.job_id, r.scheduled_ms, r.attempt}].push_back(&r);
        ++runs_by_time[{r.job_id, r.scheduled_ms}];
    }
    ReportDoubles(runs_by_key, " ran ", " times:", v);
    std::map<std::tuple<std::int64_t, std::int64_t, int, int>, std::vector<const model::Fire*>> rows_by_key;
    std::map<std::int64_t, std::vector<const model::Fire*>> rows_by_job;
    for (const auto& f : input.fires) {
        rows_by_key[{f.job_id, f.scheduled_time, f.attempt, f.shard_index}].push_back(&f);
        rows_by_job[f.job_id].push_back(&f);
        if (f.attempt > 0) ++report.retries;
    }
    ReportDoubles(rows_by_key, " has ", " fire rows:", v);
    for (auto& [job, list] : rows_by_job) {
        std::sort(list.begin(), list.end(), [](const model::Fire* a, const model::Fire* b) {
            return std::tie(a->scheduled_time, a->attempt, a->id) < std::tie(b->scheduled_time, b->attempt, b->id);
        });
    }

    // ---- 3. epochs per instance ----
    std::map<std::string, std::vector<const SinkRecord*>> by_instance;
    for (const auto& r : input.runs) by_instance[r.instance].push_back(&r);
    for (auto& [instance, list] : by_instance) {
        std::stable_sort(list.begin(), list.end(),
                         [](const SinkRecord* a, const SinkRecord* b) { return a->arrival_ms < b->arrival_ms; });
        const SinkRecord* newest = nullptr;  // the run with the highest epoch so far
        for (const auto* r : list) {
            if (newest && r->epoch < newest->epoch && r->arrival_ms > newest->arrival_ms + input.epoch_slack_ms) {
                v.push_back("epoch went backwards at " + instance + ": " + Describe(*r) + " for job " +
                            std::to_string(r->job_id) + " at " + std::to_string(r->scheduled_ms) + " after " +
                            Describe(*newest));
            }
            if (!newest || r->epoch > newest->epoch) newest = r;
        }
    }

    // ---- 2. none lost ----
    for (const auto& job : input.jobs) {
        const auto& rows = rows_by_job[job.job_id];
        // Every row in the window must have ended, and every ended attempt must be followed
        // exactly as the policy says.
        std::map<std::pair<std::int64_t, int>, const model::Fire*> by_attempt;
        for (const auto* f : rows) by_attempt[{f->scheduled_time, f->attempt}] = f;
        for (const auto* f : rows) {
            if (f->scheduled_time < input.from_ms || f->scheduled_time >= input.to_ms) continue;
            if (!model::IsFinal(f->status)) {
                v.push_back("stuck: job " + std::to_string(job.job_id) + " at " + std::to_string(f->scheduled_time) +
                            ": " + Describe(*f));
                continue;
            }
            const bool has_next = by_attempt.count({f->scheduled_time, f->attempt + 1}) > 0;
            if (f->status != FireStatus::kSucceeded && !f->result_message) {
                v.push_back("no reason: job " + std::to_string(job.job_id) + " at " +
                            std::to_string(f->scheduled_time) + ": " + Describe(*f));
            }
            if (OwesRetry(*f, job) && !has_next) {
                v.push_back("retry missing: job " + std::to_string(job.job_id) + " at " +
                            std::to_string(f->scheduled_time) + ": " + Describe(*f) + " (retry_max " +
                            std::to_string(job.retry_max) + (job.at_least_once ? ", at-least-once)" : ")"));
            }
            // A success that came after the fire was recorded lost: the loss planned the next
            // attempt, which was then ended (skipped) or, already claimed, ran as well.
            const bool late_success =
                f->status == FireStatus::kSucceeded && f->reason == model::FireReason::kSucceededLate;
            if (!OwesRetry(*f, job) && has_next && !late_success) {
                v.push_back("retried against the policy: job " + std::to_string(job.job_id) + " at " +
                            std::to_string(f->scheduled_time) + ": " + Describe(*f) + " (retry_max " +
                            std::to_string(job.retry_max) + (job.at_least_once ? ", at-least-once)" : ")"));
            }
        }
        if (job.period_ms <= 0) continue;
        std::int64_t t = job.first_ms;
        if (t < input.from_ms) t += (input.from_ms - t + job.period_ms - 1) / job.period_ms * job.period_ms;
        for (; t < input.to_ms; t += job.period_ms) {
            ++report.expected;
            const model::Fire* last = nullptr;
            bool succeeded = false;
            for (const auto* f : rows) {
                if (f->scheduled_time != t) continue;
                if (!last || f->attempt > last->attempt) last = f;
                succeeded = succeeded || f->status == FireStatus::kSucceeded;
            }
            if (succeeded || runs_by_time.count({job.job_id, t}) > 0) {
                ++report.ran;
                continue;
            }
            // The ledger: a time the misfire policy gave no run is recorded, with its reason.
            if (LedgerCovers(rows, t)) {
                ++report.misfire_dropped;
                continue;
            }
            if (last) {
                // Stuck rows and missing reasons are reported above.
                if (model::IsFinal(last->status)) {
                    const std::string reason = last->result_message.value_or("").substr(0, 60);
                    ++report.ended_without_run[std::string(FireStatusName(last->status)) + " (" + reason + ")"];
                }
                continue;
            }
            // No row at all, and no ledger row stands for it: lost silently.
            const auto next =
                std::find_if(rows.begin(), rows.end(), [t](const model::Fire* f) { return f->scheduled_time > t; });
            std::ostringstream out;
            out << "lost: job " << job.job_id << " at " << t << " has no fire row and no run (misfire policy "
                << job.misfire_policy << "; next row: " << (next == rows.end() ? std::string("none") : Describe(**next))
                << ")";
            v.push_back(out.str());
        }
    }
    return report;
}

std::string WorkflowHistoryReport::Summary(std::size_t max_violations) const {
    std::ostringstream out;
    out << "runs:";
    if (runs.empty()) out << " none";
    for (const auto& [status, n] : runs) out << ' ' << n << ' ' << status << ';';
    out << " step fires " << step_fires << ", sink runs " << step_runs << ", failed steps:";
    WriteCounts(out, failed_steps);
    WriteViolations(out, violations, max_violations);
    return out.str();
}

WorkflowHistoryReport CheckWorkflowHistory(const WorkflowHistoryInput& input) {
    using model::StepState;
    using model::WorkflowRunStatus;
    WorkflowHistoryReport report;
    auto& v = report.violations;

    std::map<std::int64_t, std::vector<model::Fire>> fires_by_run;
    for (const auto& f : input.fires) {
        if (f.workflow_run_id) fires_by_run[*f.workflow_run_id].push_back(f);
    }
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, std::vector<const SinkRecord*>> sink_by_key;
    for (const auto& r : input.sink) sink_by_key[{r.job_id, r.scheduled_ms, r.attempt}].push_back(&r);

    for (const auto& run : input.runs) {
        if (run.scheduled_time < input.from_ms || run.scheduled_time >= input.to_ms) continue;
        const std::string status(model::kWorkflowRunStatusNames.Name(run.status));
        ++report.runs[status];
        const std::string who = "run " + std::to_string(run.id) + " (workflow " + std::to_string(run.workflow_id) +
                                " at " + std::to_string(run.scheduled_time) + ", " + status + ")";
        const auto& fires = fires_by_run[run.id];
        report.step_fires += static_cast<int>(fires.size());
        if (run.status == WorkflowRunStatus::kRunning) {
            v.push_back("stuck: " + who + " has not ended");
            continue;
        }
        if (run.status == WorkflowRunStatus::kSkipped) {
            if (!fires.empty())
                v.push_back("status: " + who + " has " + std::to_string(fires.size()) + " step fire(s)");
            continue;
        }
        auto graph = model::WorkflowGraph::Make(run.definition.steps, run.definition.edges);
        if (!graph.ok()) {
            v.push_back("definition: " + who + ": " + graph.status().ToString());
            continue;
        }
        std::map<std::string, std::size_t> index;
        for (std::size_t i = 0; i < run.definition.steps.size(); ++i) index[run.definition.steps[i].name] = i;

        // ---- doubles: two rows of one step key, or one key run twice ----
        std::map<std::tuple<std::string, int, int>, std::vector<const model::Fire*>> rows;
        for (const auto& f : fires) rows[{f.workflow_step.value_or(""), f.attempt, f.shard_index}].push_back(&f);
        for (const auto& [key, list] : rows) {
            if (list.size() < 2) continue;
            std::ostringstream out;
            out << "double: " << who << " step " << std::get<0>(key) << " attempt " << std::get<1>(key) << " shard "
                << std::get<2>(key) << " has " << list.size() << " fire rows:";
            for (const auto* f : list) out << ' ' << Describe(*f) << ';';
            v.push_back(out.str());
        }
        // A sink line names no shard: a key runs once per shard row.
        std::map<std::pair<std::int64_t, int>, std::size_t> shards;  // (job, attempt) -> rows
        for (const auto& f : fires) ++shards[{f.job_id, f.attempt}];
        for (const auto& f : fires) {
            const auto it = sink_by_key.find({f.job_id, f.scheduled_time, f.attempt});
            const std::size_t ran = it == sink_by_key.end() ? 0 : it->second.size();
            if (f.shard_index == 0) report.step_runs += static_cast<int>(ran);
            const std::string step = "step " + f.workflow_step.value_or("?") + " of " + who;
            if (f.shard_index == 0 && ran > shards[{f.job_id, f.attempt}]) {
                std::ostringstream out;
                out << "double: " << step << ": " << Describe(f) << " ran " << ran << " times:";
                for (const auto* r : it->second) out << ' ' << Describe(*r) << ';';
                v.push_back(out.str());
            }
            if (f.status == FireStatus::kSucceeded && ran == 0) {
                v.push_back("never ran: " + step + ": " + Describe(f) + " succeeded with no sink line");
            }
            // ---- order: the step started after every fire of each parent ended ----
            if (ran == 0) continue;
            const auto self = index.find(f.workflow_step.value_or(""));
            if (self == index.end()) continue;
            const int generation = f.attempt / model::kStepAttemptStride;
            std::int64_t started = it->second.front()->arrival_ms;
            for (const auto* r : it->second) started = std::min(started, r->arrival_ms);
            for (const auto& link : graph->Parents(self->second)) {
                const std::string& parent = run.definition.steps[link.step].name;
                // The parent's fires the child's generation counts: its highest generation <= ours.
                int counted = -1;
                for (const auto& p : fires) {
                    const int g = p.attempt / model::kStepAttemptStride;
                    if (p.workflow_step == parent && g <= generation) counted = std::max(counted, g);
                }
                if (counted < 0) {
                    v.push_back("early: " + step + ": " + Describe(f) + " ran with no fire of its parent " + parent);
                    continue;
                }
                for (const auto& p : fires) {
                    if (p.workflow_step != parent || p.attempt / model::kStepAttemptStride != counted) continue;
                    if (!model::IsFinal(p.status) || !p.finished_at || *p.finished_at > started) {
                        v.push_back("early: " + step + ": " + Describe(f) + " started at " + std::to_string(started) +
                                    " before its parent " + parent + "'s " + Describe(p) + " ended at " +
                                    (p.finished_at ? std::to_string(*p.finished_at) : "-"));
                    }
                }
            }
        }

        // ---- every step ended, and the run's status agrees ----
        const auto progress = model::EvaluateRun(*graph, run, fires);
        int failed = 0;
        for (std::size_t i = 0; i < progress.steps.size(); ++i) {
            const auto& step = progress.steps[i];
            if (step.state == StepState::kFailed) {
                ++failed;
                if (step.fire) {
                    const std::string reason = step.fire->result_message.value_or("").substr(0, 60);
                    ++report.failed_steps[std::string(model::FireStatusName(step.fire->status)) + " (" + reason + ")"];
                }
            }
            if (run.status == WorkflowRunStatus::kTimedOut) continue;
            if (step.state != StepState::kSucceeded && step.state != StepState::kFailed &&
                step.state != StepState::kSkipped) {
                v.push_back("lost step: step " + run.definition.steps[i].name + " of " + who + " is " +
                            std::string(model::kStepStateNames.Name(step.state)) +
                            (step.fire ? ": " + Describe(*step.fire) : std::string(" with no fire")));
            }
        }
        if (run.status == WorkflowRunStatus::kSucceeded && failed > 0) {
            v.push_back("status: " + who + " with " + std::to_string(failed) + " failed step(s)");
        }
        if (run.status == WorkflowRunStatus::kFailed && failed == 0) {
            v.push_back("status: " + who + " with no failed step (" + run.reason.value_or("") + ")");
        }
    }
    return report;
}

}  // namespace sched::chaos
