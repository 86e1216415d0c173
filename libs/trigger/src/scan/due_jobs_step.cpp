#include "scan/due_jobs_step.hpp"

#include <algorithm>
#include <set>
#include <string>

#include <spdlog/spdlog.h>

#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"
#include "sched/store/job_clock.hpp"
#include "sched/trigger/fire_trace.hpp"

namespace sched::trigger::impl {

namespace {

std::string TimesText(std::int64_t first_ms, std::int64_t last_ms) {
    return first_ms == last_ms ? "at " + std::to_string(first_ms)
                               : "from " + std::to_string(first_ms) + " to " + std::to_string(last_ms);
}

std::string SkippedMessage(const SkippedTimes& skipped, cron::MisfirePolicy policy, std::int64_t threshold_ms,
                           std::int64_t now_ms) {
    const std::string count = (skipped.count_is_lower_bound ? "at least " : "") + std::to_string(skipped.count);
    const std::string range = TimesText(skipped.first_ms, skipped.last_ms);
    if (policy == cron::MisfirePolicy::kFireOnceNow) {
        return "misfire: " + count + " scheduled time(s) " + range + " folded into one fire at " +
               std::to_string(now_ms) + " (policy fire-once-now)";
    }
    return "misfire: " + count + " scheduled time(s) " + range + " more than " + std::to_string(threshold_ms) +
           " ms late got no fire (policy " + std::string(cron::MisfirePolicyName(policy)) + ")";
}

// A ledger row: a run of scheduled times of `job_id` that got no fire of their own.
model::Fire LedgerRow(std::int64_t job_id, model::FireKind kind, std::int64_t epoch, std::int64_t now,
                      model::FireReason reason, std::int64_t first_ms, std::int64_t last_ms, std::int64_t count,
                      std::string message) {
    return {.job_id = job_id,
            .scheduled_time = first_ms,
            .kind = kind,
            .epoch = epoch,
            .status = model::FireStatus::kSkipped,
            .finished_at = now,
            .result_message = std::move(message),
            .reason = reason,
            .skipped_until = last_ms,
            .skipped_count = count};
}

}  // namespace

void DueJobsStep::WarnIfTheClockSteppedBack(ScanContext& ctx) {
    const auto previous = last_now_;
    last_now_ = ctx.now;
    if (!previous || ctx.now + kClockStepMs >= *previous) return;
    // A job planned ahead up to the lookahead is normal; one planned past that was planned
    // under the old clock.
    const auto past = store::CountJobsPlannedPast(ctx.s, ctx.now + Ms(config_.lookahead));
    if (past.jobs == 0 || !past.silent_until_ms) {
        spdlog::warn("database clock stepped back {} ms (from {} to {}); no job was planned past it",
                     *previous - ctx.now, *previous, ctx.now);
        return;
    }
    spdlog::warn(
        "database clock stepped back {} ms (from {} to {}): {} job(s) planned under the old clock fire nothing "
        "until their next_fire_time, the last of them until {} ({} ms from now)",
        *previous - ctx.now, *previous, ctx.now, past.jobs, *past.silent_until_ms, *past.silent_until_ms - ctx.now);
}

std::vector<model::Job> DueJobsStep::BurstJobs(ScanContext& ctx, int room) {
    if (config_.burst_lookahead <= config_.lookahead || room <= 0) return {};
    const auto at = store::JobRepository::EarliestDueAfter(ctx.s, ctx.now + Ms(config_.lookahead), ctx.shard);
    if (!at || *at > ctx.now + Ms(config_.burst_lookahead)) return {};
    if (!burst_ || burst_->at != *at) {
        // Counted once per due time, up to what the longest burst lookahead could plan: a count
        // per scan of a 100,000-job burst would read its index entries again every scan.
        const auto cap = static_cast<std::int64_t>(config_.burst_plan_rate) * Ms(config_.burst_lookahead) / 1000;
        const int jobs = store::JobRepository::CountDueAt(
            ctx.s, *at, static_cast<int>(std::min<std::int64_t>(cap + 1, 10'000'000)), ctx.shard);
        burst_ = Burst{.at = *at, .jobs = jobs, .left = jobs};
    }
    // Only a burst one scan cannot plan, from when planning it all at burst-plan-rate would just
    // end as the lookahead reaches it (then a batch per scan, scan after scan, as fast as the
    // scans go): so a steady load (a few jobs per due time) and a modest burst plan as before,
    // and the lookahead grows with the burst.
    const std::int64_t lead_ms =
        Ms(config_.lookahead) + static_cast<std::int64_t>(burst_->jobs) * 1000 / config_.burst_plan_rate;
    if (burst_->left <= config_.batch || *at > ctx.now + lead_ms) return {};
    auto jobs = store::JobRepository::SelectDueAt(ctx.s, *at, room, ctx.shard);
    burst_->left -= static_cast<int>(jobs.size());
    return jobs;
}

void DueJobsStep::Run(ScanContext& ctx) {
    WarnIfTheClockSteppedBack(ctx);
    ScanReport& r = ctx.report;
    auto due = store::JobRepository::SelectDue(ctx.s, ctx.now + Ms(config_.lookahead), config_.batch, ctx.shard);
    if (static_cast<int>(due.size()) < config_.batch) {
        for (auto& job : BurstJobs(ctx, config_.batch - static_cast<int>(due.size()))) due.push_back(std::move(job));
    }
    r.due_jobs = static_cast<int>(due.size());
    std::vector<store::ScheduleAdvance> advances;
    std::vector<JobPlan> plans;  // aligned with advances; empty for a parked job
    std::vector<BoundedExtras> extras(due.size());
    advances.reserve(due.size());
    plans.reserve(due.size());
    std::set<std::string> calendar_names;
    for (const auto& job : due) {
        if (!job.calendar.empty()) calendar_names.insert(job.calendar);
    }
    calendars_.Refresh(ctx.s, calendar_names);
    for (const auto& job : due) {
        const auto& cached = schedules_.For(job);
        if (!cached.schedule) {
            // Stored before a validation rule existed, or its zone vanished from tzdata: it can
            // never fire, so park it (next_fire_time NULL) instead of rescanning it.
            spdlog::error("job {} ({}) has an invalid schedule and is parked: {}", job.id, job.name, cached.error);
            advances.push_back({.id = job.id, .expected_version = job.version, .expected_next = job.next_fire_time});
            plans.emplace_back();
            continue;
        }
        PlanOptions options;
        // A burst's job (due past the lookahead) gets its burst time only.
        options.lookahead_ms = std::max(Ms(config_.lookahead), *job.next_fire_time - ctx.now);
        options.max_fires_per_job = static_cast<std::size_t>(config_.max_fires_per_job);
        options.misfire.threshold_ms = Ms(config_.misfire_threshold);
        options.misfire.fire_all_cap = static_cast<std::size_t>(config_.fire_all_cap);
        options.misfire.policy = job.misfire_policy;
        auto plan = !job.calendar.empty() || job.start_at || job.end_at || job.max_runs
                        ? PlanBounded(job, *cached.schedule, ctx.now, options, extras[plans.size()])
                        : PlanJobFires(*cached.schedule, *job.next_fire_time, ctx.now, options);
        advances.push_back({.id = job.id,
                            .expected_version = job.version,
                            .expected_next = job.next_fire_time,
                            .next_fire_time = plan.next_fire_time,
                            .last_fire_time = plan.fires.empty()
                                                  ? std::nullopt
                                                  : std::optional<std::int64_t>(plan.fires.back().scheduled_ms)});
        plans.push_back(std::move(plan));
    }
    // A CAS fails when the job was edited after it was read: its new schedule wins and the next
    // scan plans it afresh.
    const auto advanced = store::JobRepository::AdvanceMany(ctx.s, advances);
    RecordMisfires(ctx, due, advanced, plans);
    RecordBounded(ctx, due, advanced, plans, extras);

    std::vector<model::Fire> new_fires;
    std::vector<std::string_view> new_fire_apps;  // for the `planned` spans
    std::vector<bool> new_fire_fill;              // model::MayClaimEarly of its job
    for (std::size_t i = 0; i < due.size(); ++i) {
        if (!advanced[i] || plans[i].fires.empty()) continue;
        const auto& job = due[i];
        const int shards = model::ShardsPerFire(job, [&] { return ctx.LiveExecutors(job.app); });
        for (const auto& planned : plans[i].fires) {
            for (int shard = 0; shard < shards; ++shard) {
                model::Fire fire;
                fire.job_id = job.id;
                fire.scheduled_time = planned.scheduled_ms;
                fire.kind = planned.kind;
                fire.shard_index = shard;
                fire.shard_total = shards;
                fire.epoch = ctx.epoch;
                fire.assigned_node = ctx.assigner.Next();
                if (fire.assigned_node && ctx.PlansClaimed(*fire.assigned_node, model::StoredDueAt(fire))) {
                    fire.status = model::FireStatus::kDispatching;
                    fire.dispatch_epoch = ctx.DispatchEpoch();
                    fire.dispatched_at = ctx.now;
                }
                new_fires.push_back(std::move(fire));
                new_fire_apps.push_back(job.app);
                new_fire_fill.push_back(model::MayClaimEarly(job));
            }
        }
    }
    const auto stored = store::FireRepository::InsertManyIfAbsent(ctx.s, ctx.dialect, new_fires);
    for (std::size_t i = 0; i < new_fires.size(); ++i) {
        // Counted and notified: the rows as this scan wrote them (see StoredFire::as_written).
        if (!stored[i] || !stored[i]->as_written) continue;
        ++r.fires_created;
        NoteWrittenFire(new_fires[i], stored[i]->id, new_fire_apps[i], ctx.now, r.assigned, r.spans, new_fire_fill[i]);
    }
}

// The ledger: a run of scheduled times the policy gave no fire of its own is one row (status
// skipped, reason misfire, the range and count), written with the advance that skipped them,
// so it exists exactly once.
void DueJobsStep::RecordMisfires(ScanContext& ctx, const std::vector<model::Job>& due,
                                 const std::vector<bool>& advanced, const std::vector<JobPlan>& plans) {
    std::vector<model::Fire> ledger;
    for (std::size_t i = 0; i < due.size(); ++i) {
        if (!advanced[i] || !plans[i].skipped) continue;
        const auto& skipped = *plans[i].skipped;
        const auto policy = due[i].misfire_policy;
        auto row = LedgerRow(due[i].id, model::FireKind::kMisfire, ctx.epoch, ctx.now, model::FireReason::kMisfire,
                             skipped.first_ms, skipped.last_ms, skipped.count,
                             SkippedMessage(skipped, policy, Ms(config_.misfire_threshold), ctx.now));
        ctx.report.misfire_skipped[std::string(cron::MisfirePolicyName(policy))] += skipped.count;
        spdlog::warn("job {} ({}): {}", due[i].id, due[i].name, *row.result_message);
        ledger.push_back(std::move(row));
    }
    store::FireRepository::InsertLedgerRows(ctx.s, ctx.dialect, ledger);
}

JobPlan DueJobsStep::PlanBounded(const model::Job& job, const cron::Schedule& schedule, std::int64_t now,
                                 const PlanOptions& options, BoundedExtras& extras) {
    const cron::Calendar* calendar = nullptr;
    if (!job.calendar.empty()) {
        std::string error;
        calendar = calendars_.Find(job.calendar, &error);
        // The API refuses unknown calendars and deleting one in use, so this is a race or a
        // damaged row; the job fires without exclusions rather than silently not at all.
        if (!calendar) spdlog::error("job {} ({}): {}; planned without exclusions", job.id, job.name, error);
    }
    auto bounded = PlanBoundedJobFires(
        schedule, calendar,
        {.start_ms = job.start_at, .end_ms = job.end_at, .max_runs = job.max_runs, .planned_runs = job.planned_runs},
        *job.next_fire_time, now, options);
    extras.excluded = std::move(bounded.excluded);
    extras.end = bounded.end;
    extras.bounded = true;
    return std::move(bounded.plan);
}

// Like the misfire rows: one row per run of excluded times, written with the advance that moved
// the job past them, so it exists exactly once.
void DueJobsStep::RecordBounded(ScanContext& ctx, const std::vector<model::Job>& due, const std::vector<bool>& advanced,
                                const std::vector<JobPlan>& plans, const std::vector<BoundedExtras>& extras) {
    std::vector<model::Fire> ledger;
    std::vector<store::JobRunsUpdate> runs;
    for (std::size_t i = 0; i < due.size(); ++i) {
        if (!advanced[i] || !extras[i].bounded) continue;
        const auto& job = due[i];
        for (const auto& run : extras[i].excluded) {
            ledger.push_back(LedgerRow(job.id, model::FireKind::kSchedule, ctx.epoch, ctx.now,
                                       model::FireReason::kCalendar, run.first_ms, run.last_ms, run.count,
                                       "calendar: " + std::to_string(run.count) + " scheduled time(s) " +
                                           TimesText(run.first_ms, run.last_ms) +
                                           " in an excluded period of calendar \"" + job.calendar + "\" got no fire"));
            ctx.report.calendar_skipped += run.count;
        }
        const auto planned = static_cast<std::int64_t>(plans[i].fires.size());
        if (extras[i].end || (job.max_runs && planned > 0)) {
            store::JobRunsUpdate u{.id = job.id, .runs = job.max_runs ? planned : 0};
            if (extras[i].end) {
                u.completed_at = ctx.now;
                u.completed_reason = std::string(JobEndName(*extras[i].end));
                ++ctx.report.jobs_completed;
                spdlog::info("job {} ({}) completed: {}", job.id, job.name, u.completed_reason);
            }
            runs.push_back(std::move(u));
        }
    }
    store::FireRepository::InsertLedgerRows(ctx.s, ctx.dialect, ledger);
    store::JobRepository::RecordRuns(ctx.s, runs);
}

}  // namespace sched::trigger::impl
