#include "sched/trigger/backfill_planner.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"

namespace sched::trigger {

BackfillStep PlanBackfillStep(const std::vector<std::int64_t>& times, bool more, const std::set<std::int64_t>& existing,
                              int slots, std::int64_t cursor, std::int64_t range_to) {
    BackfillStep step;
    step.cursor = cursor;
    for (const std::int64_t t : times) {
        if (existing.contains(t)) {
            ++step.existing;
            step.cursor = t + 1;
            continue;
        }
        if (slots <= 0) {
            step.cursor = t;  // the next to run
            return step;
        }
        step.create.push_back(t);
        --slots;
        step.cursor = t + 1;
    }
    if (!more) {
        step.cursor = range_to;
        step.exhausted = true;
    }
    return step;
}

BackfillProgress BackfillAdvancer::Advance(soci::session& s, const db::Dialect& dialect, std::int64_t epoch,
                                           std::int64_t now, Assigner& assigner,
                                           const std::function<int(const std::string& app)>& live_executors,
                                           const store::JobShard& shard) {
    BackfillProgress progress;
    auto running = store::BackfillRepository::ListRunning(s, after_id_, per_scan_, shard);
    if (static_cast<int>(running.size()) < per_scan_) {
        after_id_ = 0;  // the end was reached: start over next scan
    } else {
        after_id_ = running.back().id;
    }
    for (auto& backfill : running) {
        const auto job = store::JobRepository::Find(s, backfill.job_id);
        std::optional<cron::Schedule> schedule;
        if (job) {
            auto made = cron::Schedule::Make(job->schedule_type, job->schedule_expr, job->time_zone);
            if (made.ok() && !made->WaitsForFinish()) schedule = *made;
        }
        if (!schedule) {
            // Nothing left to run it for: say so in its state rather than keep it running forever.
            spdlog::warn("backfill {} of job {} cancelled: the job {}", backfill.id, backfill.job_id,
                         job ? "has no scheduled times of its own any more" : "was deleted");
            backfill.state = store::BackfillState::kCancelled;
            backfill.finished_at = now;
            store::BackfillRepository::SaveProgress(s, backfill, now);
            continue;
        }
        // A paused job runs nothing, backfills included; the backfill resumes with the job.
        if (!job->enabled) continue;

        const int unfinished =
            store::BackfillRepository::CountUnfinished(s, backfill.job_id, backfill.range_from, backfill.range_to);
        BackfillStep step;
        step.cursor = backfill.cursor_ms;
        if (backfill.cursor_ms < backfill.range_to) {
            const auto times =
                cron::FireTimesInRange(*schedule, backfill.cursor_ms, backfill.range_to, times_per_step_);
            std::set<std::int64_t> existing;
            if (!times.times.empty()) {
                // Shards make several rows per time: read enough for every time of the window.
                for (const auto& [t, kind] : store::BackfillRepository::ExistingTimes(
                         s, backfill.job_id, times.times.front(), times.times.back() + 1,
                         static_cast<int>(times_per_step_) * 8)) {
                    existing.insert(t);
                }
            }
            step = PlanBackfillStep(times.times, times.more, existing, backfill.max_parallel - unfinished,
                                    backfill.cursor_ms, backfill.range_to);
        } else {
            step.exhausted = true;
        }

        const int shards = model::ShardsPerFire(*job, [&] { return live_executors(job->app); });
        std::vector<model::Fire> fires;
        for (const std::int64_t t : step.create) {
            for (int shard = 0; shard < shards; ++shard) {
                fires.push_back({.job_id = job->id,
                                 .scheduled_time = t,
                                 .kind = model::FireKind::kBackfill,
                                 .shard_index = shard,
                                 .shard_total = shards,
                                 .epoch = epoch,
                                 .assigned_node = assigner.Next(),
                                 .due_at = now});
            }
        }
        const auto stored = store::FireRepository::InsertManyIfAbsent(s, dialect, fires);
        std::set<std::int64_t> created_times;
        for (std::size_t i = 0; i < fires.size(); ++i) {
            if (!stored[i] || !stored[i]->as_written) continue;
            ++progress.fires_created;
            created_times.insert(fires[i].scheduled_time);
            NoteWrittenFire(fires[i], stored[i]->id, job->app, now, progress.assigned, progress.spans);
        }
        const bool unchanged = step.cursor == backfill.cursor_ms && step.create.empty() && step.existing == 0;
        backfill.cursor_ms = step.cursor;
        backfill.created += static_cast<int>(created_times.size());
        // ExistingTimes saw every fire of this job, so each planned time is new; a time that was
        // not (a twin written meanwhile) is counted as existing.
        backfill.existing += step.existing + static_cast<int>(step.create.size() - created_times.size());
        if (step.exhausted && unfinished + static_cast<int>(created_times.size()) == 0) {
            backfill.state = store::BackfillState::kCompleted;
            backfill.finished_at = now;
            ++progress.completed;
            spdlog::info("backfill {} of job {} completed: {} created, {} already had a fire", backfill.id,
                         backfill.job_id, backfill.created, backfill.existing);
        } else if (unchanged) {
            continue;  // waiting for its fires to end: no write per scan
        }
        store::BackfillRepository::SaveProgress(s, backfill, now);
    }
    return progress;
}

}  // namespace sched::trigger
