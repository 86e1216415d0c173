// Each step of the master's scan alone (src/scan/*_step.hpp), on SQLite and MariaDB, run in a
// fenced transaction as Master::Scan runs it. master_test covers the steps together.
#include <map>
#include <set>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "scan/due_jobs_step.hpp"
#include "scan/followups_step.hpp"
#include "scan/orphans_step.hpp"
#include "scan/planner_steps.hpp"
#include "scan/running_sweep_step.hpp"
#include "scan/schedule_cache.hpp"
#include "scan_step_fixture.hpp"
#include "sched/protocol/testing/collecting_span_sink.hpp"
#include "sched/store/backfill.hpp"

namespace sched::trigger::impl {
namespace {

using protocol::testing::IntAttribute;
using protocol::testing::ScopedSpanSink;

using model::FireStatus;

std::size_t Notified(const ScanReport& r) {
    std::size_t n = 0;
    for (const auto& [node, fires] : r.assigned) n += fires.size();
    return n;
}

TEST_P(ScanStepTest, DueJobsGetTheirFiresAssignedAndAdvanceOnce) {
    ScheduleCache schedules;
    DueJobsStep step(config_, schedules);
    const std::int64_t start = (Now() / 1000) * 1000;
    auto job = CreateJob("tick", "cron", "* * * * * ?", start);
    auto later = CreateJob("later", "cron", "* * * * * ?", start + 60'000);
    auto first = Run({&step});
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    const auto fires = FiresOf(job.id);
    ASSERT_GE(fires.size(), 3u) << "the due second and the lookahead";
    EXPECT_EQ(first->due_jobs, 1) << "a job due after the lookahead is not selected";
    EXPECT_TRUE(FiresOf(later.id).empty());
    EXPECT_EQ(first->fires_created, static_cast<int>(fires.size()));
    EXPECT_EQ(Notified(*first), fires.size());
    std::set<std::string> nodes;
    for (const auto& f : fires) {
        EXPECT_EQ(f.epoch, epoch_);
        nodes.insert(f.assigned_node.value_or("none"));
    }
    EXPECT_EQ(nodes, (std::set<std::string>{"node-a", "node-b"})) << "spread over the live slaves";
    auto stored = store::JobRepository(db()).Get(job.id);
    EXPECT_EQ(stored->next_fire_time, fires.back().scheduled_time + 1000);
    auto second = Run({&step});
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(FiresOf(job.id).size(), fires.size() + static_cast<std::size_t>(second->fires_created));
    EXPECT_LE(second->fires_created, 1) << "only a time that entered the lookahead since";
}

// A notice marks the fires a slave may claim early to fill a small group: those of jobs whose
// claim judges nothing by its time (model::MayClaimEarly), not a skip or terminate-other job's.
TEST_P(ScanStepTest, TheNoticeMarksTheFiresThatMayFillASmallGroupByTheirJobsPolicy) {
    ScheduleCache schedules;
    DueJobsStep step(config_, schedules);
    const std::int64_t start = (Now() / 1000) * 1000;
    auto serial = CreateJob("serial", "cron", "* * * * * ?", start);
    auto skip =
        CreateJob("skip", "cron", "* * * * * ?", start, [](model::Job& j) { j.block_strategy = BlockStrategy::kSkip; });
    auto cover = CreateJob("cover", "cron", "* * * * * ?", start,
                           [](model::Job& j) { j.block_strategy = BlockStrategy::kTerminateOther; });
    auto r = Run({&step});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::map<std::int64_t, bool> fill;  // fire id -> marked
    for (const auto& [node, fires] : r->assigned) {
        for (const auto& f : fires) fill[f.id] = f.fill;
    }
    ASSERT_EQ(fill.size(), FiresOf(serial.id).size() + FiresOf(skip.id).size() + FiresOf(cover.id).size());
    for (const auto& f : FiresOf(serial.id)) EXPECT_TRUE(fill.at(f.id)) << "serial fire " << f.id;
    for (const auto& f : FiresOf(skip.id)) EXPECT_FALSE(fill.at(f.id)) << "skip fire " << f.id;
    for (const auto& f : FiresOf(cover.id)) EXPECT_FALSE(fill.at(f.id)) << "terminate-other fire " << f.id;
}

TEST_P(ScanStepTest, PlannedSpansWaitForTheCommitAndARolledBackScanExportsNone) {
    ScopedSpanSink spans;
    ScheduleCache schedules;
    DueJobsStep step(config_, schedules);
    auto job = CreateJob("tick", "cron", "* * * * * ?", (Now() / 1000) * 1000);
    // The scan's steps ran, then its transaction rolled back (as when the lease was lost).
    std::vector<PendingFireSpan> collected;
    auto rolled_back = fence_->RunFenced(epoch_, [&](soci::session& s) -> Result<ScanReport> {
        ScanReport r;
        Assigner assigner({{"node-a", 10}});
        ScanContext ctx(s, pool_->dialect(), epoch_, Now(), assigner, {"node-a"}, 30000, r);
        step.Run(ctx);
        collected = r.spans;
        return Status(Code::kAborted, "rolled back on purpose");
    });
    ASSERT_FALSE(rolled_back.ok());
    ASSERT_FALSE(collected.empty()) << "the step planned fires and collected their spans";
    ASSERT_TRUE(FiresOf(job.id).empty()) << "rolled back";
    EXPECT_TRUE(spans->Spans().empty()) << "no span names a fire that was never committed";

    auto committed = Run({&step});
    ASSERT_TRUE(committed.ok()) << committed.status().ToString();
    EXPECT_TRUE(spans->Spans().empty()) << "pushed by the master after the commit, not by the step";
    const auto fires = FiresOf(job.id);
    ASSERT_EQ(committed->spans.size(), fires.size());
    PushFireSpans(committed->spans);
    const auto planned = spans->Named("planned");
    ASSERT_EQ(planned.size(), fires.size());
    for (std::size_t i = 0; i < fires.size(); ++i) {
        EXPECT_EQ(IntAttribute(planned[i], "sched.fire_id"), fires[i].id);
        EXPECT_EQ(planned[i].trace_id, protocol::RunTrace(FireRefOf(fires[i], "app")).trace_id);
    }
}

// A burst (more jobs due at one time than a scan plans) is planned ahead of the lookahead, a
// batch per scan, once planning it at burst-plan-rate would not end in time; what one scan can
// plan (batch jobs or fewer) waits for the lookahead as usual.
TEST_P(ScanStepTest, DueJobsOfABurstArePlannedAheadInBatchesUntilOneBatchIsLeft) {
    config_.batch = 10;
    config_.lookahead = std::chrono::seconds(3);
    config_.burst_lookahead = std::chrono::seconds(60);
    config_.burst_plan_rate = 1;  // 25 jobs: planned from 28 s before their time
    ScheduleCache schedules;
    DueJobsStep step(config_, schedules);
    const std::int64_t now = (Now() / 1000) * 1000;
    const std::int64_t burst_at = now + 20'000;
    // Each job's first time is set; its next one must lie beyond every scan of the test, which
    // runs on the wall clock: an hourly job's next time fell within the lookahead when the test
    // ran in the minute before a full hour. Yearly, at midnight on January 1st.
    const std::string yearly = "0 0 0 1 1 ?";
    std::vector<std::int64_t> burst;
    for (int i = 0; i < 25; ++i) {
        burst.push_back(CreateJob("burst-" + std::to_string(i), "cron", yearly, burst_at).id);
    }
    // 5 jobs due at another time, 10 s later: fewer than a batch, not a burst.
    for (int i = 0; i < 5; ++i) CreateJob("small-" + std::to_string(i), "cron", yearly, burst_at + 10'000);
    const auto planned = [&] {
        int n = 0;
        for (const auto id : burst) n += static_cast<int>(FiresOf(id).size());
        return n;
    };
    auto first = Run({&step}, {"node-a", "node-b"}, now);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_EQ(first->due_jobs, 10) << "a full batch: the master scans again at once";
    EXPECT_EQ(first->fires_created, 10);
    EXPECT_EQ(planned(), 10);
    for (const auto id : burst) {
        for (const auto& f : FiresOf(id)) EXPECT_EQ(f.scheduled_time, burst_at) << "only the burst's time";
    }
    auto second = Run({&step}, {"node-a", "node-b"}, now + 50);
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(second->fires_created, 10);
    // 5 left: one scan plans them within the lookahead, as any job.
    auto third = Run({&step}, {"node-a", "node-b"}, now + 100);
    ASSERT_TRUE(third.ok());
    EXPECT_EQ(third->fires_created, 0);
    EXPECT_EQ(planned(), 20);
    auto in_lookahead = Run({&step}, {"node-a", "node-b"}, burst_at - 2'000);
    ASSERT_TRUE(in_lookahead.ok());
    EXPECT_EQ(in_lookahead->fires_created, 5);
    EXPECT_EQ(planned(), 25);

    // Off: nothing is planned before the lookahead.
    config_.burst_lookahead = Micros{0};
    DueJobsStep off(config_, schedules);
    std::vector<std::int64_t> later;
    for (int i = 0; i < 25; ++i) {
        later.push_back(CreateJob("later-" + std::to_string(i), "cron", yearly, burst_at + 20'000).id);
    }
    auto none = Run({&off}, {"node-a", "node-b"}, now + 200);
    ASSERT_TRUE(none.ok());
    for (const auto id : later) EXPECT_TRUE(FiresOf(id).empty());
}

TEST_P(ScanStepTest, DueJobsLateBeyondTheThresholdLeaveOneLedgerRowAndAnUnparsableOneIsParked) {
    ScheduleCache schedules;
    DueJobsStep step(config_, schedules);
    const std::int64_t hour_ago = (Now() / 1000) * 1000 - 3'600'000;
    auto late = CreateJob("late", "cron", "* * * * * ?", hour_ago,
                          [](model::Job& j) { j.misfire_policy = cron::MisfirePolicy::kSkip; });
    auto broken = CreateJob("broken", "cron", "* * * * * ?", Now());
    ASSERT_TRUE(db().Run([&](soci::session& s) {
                        s << "UPDATE job SET schedule_expr = 'not a cron' WHERE id = :id", soci::use(broken.id);
                    })
                    .ok());
    auto r = Run({&step});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const auto fires = FiresOf(late.id);
    int ledger = 0;
    for (const auto& f : fires) {
        if (f.reason != model::FireReason::kMisfire) continue;
        ++ledger;
        EXPECT_EQ(f.status, FireStatus::kSkipped);
        EXPECT_EQ(f.scheduled_time, hour_ago);
        EXPECT_GE(f.skipped_count.value_or(0), 3590);
    }
    EXPECT_EQ(ledger, 1) << "one row for the whole run of late times";
    EXPECT_GE(r->misfire_skipped.at("skip"), 3590);
    EXPECT_FALSE(store::JobRepository(db()).Get(broken.id)->next_fire_time) << "parked";
    EXPECT_TRUE(FiresOf(broken.id).empty());
}

TEST_P(ScanStepTest, AClockThatStepsBackIsLoggedOnceWithTheJobsItSilencesAndUntilWhen) {
    ScheduleCache schedules;
    DueJobsStep step(config_, schedules);
    const std::int64_t now = (Now() / 1000) * 1000;
    const std::int64_t ahead = now + 3'600'000;  // the clock an hour ahead, then set right
    auto job = CreateJob("tick", "cron", "* * * * * ?", ahead);
    CreateJob("later", "cron", "* * * * * ?", ahead + 60'000);  // not planned yet: not silenced
    auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
    sink->set_pattern("%l %v");
    spdlog::default_logger()->sinks().push_back(sink);
    const std::vector<std::string> live{"node-a", "node-b"};
    const bool planned = Run({&step}, live, ahead).ok();
    const auto silent_until = store::JobRepository(db()).Get(job.id)->next_fire_time;
    const bool stepped = Run({&step}, live, now).ok();
    const bool next = Run({&step}, live, now + 1000).ok();  // the scan after: not logged again
    spdlog::default_logger()->sinks().pop_back();
    ASSERT_TRUE(planned && stepped && next);
    ASSERT_TRUE(silent_until.has_value());
    std::vector<std::string> warnings;
    for (const auto& line : sink->last_formatted()) {
        if (line.find("clock stepped back") != std::string::npos) warnings.push_back(line);
    }
    ASSERT_EQ(warnings.size(), 1u) << "logged once per step";
    EXPECT_EQ(warnings[0].rfind("warning ", 0), 0u) << warnings[0];
    EXPECT_NE(warnings[0].find("stepped back 3600000 ms"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find(": 1 job(s)"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("until " + std::to_string(*silent_until)), std::string::npos) << warnings[0];
}

TEST_P(ScanStepTest, OrphansGoToLiveSlavesAndDispatchesOfDeadOnesBecomeLost) {
    OrphansStep step(config_);
    ScopedSpanSink spans;
    auto job = CreateJob("manual", "manual", "", std::nullopt);
    const std::int64_t unassigned = InsertFire(job, 1000, [](model::Fire& f) { f.assigned_node.reset(); });
    const std::int64_t dead_pending = InsertFire(job, 2000, [](model::Fire& f) { f.assigned_node = "node-x"; });
    const std::int64_t dead_dispatching = InsertFire(job, 3000, [](model::Fire& f) { f.assigned_node = "node-x"; });
    const std::int64_t live_dispatching = InsertFire(job, 4000);
    for (auto id : {dead_dispatching, live_dispatching}) {
        ASSERT_TRUE(store::FireRepository(db()).Transition(id, {FireStatus::kPending}, FireStatus::kDispatching).ok());
    }
    auto r = Run({&step});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->orphans_assigned, 2);
    EXPECT_EQ(Notified(*r), 2u);
    for (auto id : {unassigned, dead_pending}) {
        const auto f = Fire(id);
        EXPECT_EQ(f.status, FireStatus::kPending);
        EXPECT_TRUE(f.assigned_node == "node-a" || f.assigned_node == "node-b") << f.assigned_node.value_or("none");
    }
    EXPECT_EQ(r->lost, 1);
    EXPECT_EQ(Fire(dead_dispatching).status, FireStatus::kLost);
    EXPECT_EQ(Fire(dead_dispatching).reason, model::FireReason::kSlaveDied);
    EXPECT_EQ(Fire(live_dispatching).status, FireStatus::kDispatching) << "its slave is alive";
    ASSERT_EQ(r->spans.size(), 1u) << "the lost fire's end, pushed after the commit";
    EXPECT_EQ(r->spans[0].fire_id, dead_dispatching);
    EXPECT_EQ(r->spans[0].step, protocol::FireStep::kEnded);
    EXPECT_EQ(r->spans[0].status, "lost");
    EXPECT_EQ(r->spans[0].app, "app");
    auto none = Run({&step}, {});
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(none->orphans_assigned + none->lost, 0) << "with no live slave nothing moves";
}

// A silent slave's planned fires due after its sent_through were never sent: they move at once,
// like its pending fires, even in a term's first node-ttl; those at or before it wait for the
// judgement of a dead slave (lost).
TEST_P(ScanStepTest, PlannedFiresOfASilentSlaveDueAfterItsSentThroughMoveAtOnce) {
    OrphansStep step(config_);
    auto job = CreateJob("manual", "manual", "", std::nullopt);
    ASSERT_TRUE(store::TriggerNodeRepository(db()).Heartbeat({.node_id = "node-x", .address = "x:1"}).ok());
    // What node-x committed before it went silent: it may have sent its fires due up to 2500.
    auto raised = db().Run([](soci::session& s) { s << "UPDATE trigger_node SET sent_through = 2500"; });
    ASSERT_TRUE(raised.ok()) << raised.ToString();
    const auto planned = [](std::int64_t due) {
        return [due](model::Fire& f) {
            f.assigned_node = "node-x";
            f.due_at = due;
            f.status = FireStatus::kDispatching;
        };
    };
    const std::int64_t sent = InsertFire(job, 2000, planned(2000));
    const std::int64_t unsent = InsertFire(job, 3000, planned(3000));
    auto first = Run({&step}, {"node-a", "node-b"}, std::nullopt, false);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_EQ(first->orphans_assigned, 1);
    const auto moved = Fire(unsent);
    EXPECT_EQ(moved.status, FireStatus::kPending);
    EXPECT_TRUE(moved.assigned_node == "node-a" || moved.assigned_node == "node-b");
    EXPECT_EQ(Fire(sent).status, FireStatus::kDispatching) << "maybe sent: not judged in a term's first node-ttl";
    auto judged = Run({&step});
    ASSERT_TRUE(judged.ok()) << judged.status().ToString();
    EXPECT_EQ(judged->lost, 1);
    EXPECT_EQ(Fire(sent).status, FireStatus::kLost);
}

TEST_P(ScanStepTest, TheRunningSweepEndsFiresPastTheirTimeoutAndThoseOfGoneExecutors) {
    config_.running_sweep = std::chrono::hours(1);
    RunningSweepStep step(config_);
    ScopedSpanSink spans;
    auto job = CreateJob("slow", "manual", "", std::nullopt, [](model::Job& j) { j.timeout_ms = 1000; });
    auto untimed = CreateJob("untimed", "manual", "", std::nullopt);
    store::ExecutorRepository executors(db());
    store::ExecutorInstance instance;
    instance.app = "app";
    instance.address = "10.0.0.1:9";
    instance.handlers = {"echo"};
    ASSERT_TRUE(executors.Heartbeat(instance).ok());
    const std::int64_t long_ago = Now() - 60'000;
    const auto running = [&](const model::Job& j, std::int64_t at, const std::string& address) {
        const std::int64_t id = InsertFire(j, at);
        EXPECT_TRUE(store::FireRepository(db())
                        .Transition(id, {FireStatus::kPending}, FireStatus::kRunning,
                                    {.executor_address = address, .dispatched_at = long_ago, .started_at = long_ago})
                        .ok());
        return id;
    };
    const std::int64_t timed_out = running(job, 1, "10.0.0.1:9");
    const std::int64_t gone = running(untimed, 2, "10.0.0.9:9");
    const std::int64_t fine = running(untimed, 3, "10.0.0.1:9");
    auto r = Run({&step});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(Fire(timed_out).status, FireStatus::kTimeout);
    EXPECT_EQ(Fire(timed_out).reason, model::FireReason::kNoResult);
    EXPECT_EQ(Fire(gone).status, FireStatus::kLost);
    EXPECT_EQ(Fire(gone).reason, model::FireReason::kExecutorGone);
    EXPECT_EQ(Fire(fine).status, FireStatus::kRunning);
    EXPECT_EQ(r->running_timed_out + r->running_lost, 2);
    std::map<std::int64_t, std::string> ended;  // the `ended` spans the scan collected, by fire
    for (const auto& span : r->spans) {
        EXPECT_EQ(span.step, protocol::FireStep::kEnded);
        ended[span.fire_id] = span.status;
    }
    EXPECT_EQ(ended, (std::map<std::int64_t, std::string>{{timed_out, "timeout"}, {gone, "lost"}}));
    PushFireSpans(r->spans);
    EXPECT_EQ(spans->Named("ended").size(), 2u);
    EXPECT_EQ(spans->Named("fire").size(), 2u) << "each end brings its attempt's root";
    const std::int64_t another = running(job, 4, "10.0.0.1:9");
    ASSERT_TRUE(Run({&step}).ok());
    EXPECT_EQ(Fire(another).status, FireStatus::kRunning) << "the next sweep is running-sweep later";
}

TEST_P(ScanStepTest, FollowupsRetryWhatMayBeRetriedAndTellTheWorkflowsWhichRunsMoved) {
    ScheduleCache schedules;
    FollowupsStep step(config_, schedules);
    auto job = CreateJob("flaky", "manual", "", std::nullopt, [](model::Job& j) {
        j.retry_max = 1;
        j.retry_backoff_ms = 1;
    });
    const std::int64_t failed = InsertFire(job, 1000);
    FailWithFollowup(failed);
    auto r = Run({&step});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->retries, 1);
    EXPECT_EQ(Notified(*r), 1u);
    auto fires = FiresOf(job.id);
    ASSERT_EQ(fires.size(), 2u);
    EXPECT_EQ(fires[1].kind, model::FireKind::kRetry);
    EXPECT_EQ(fires[1].attempt, fires[0].attempt + 1);
    EXPECT_EQ(fires[1].scheduled_time, 1000);
    FailWithFollowup(fires[1].id);
    auto again = Run({&step});
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->retries, 0) << "retry_max reached";
    EXPECT_EQ(FiresOf(job.id).size(), 2u);
}

TEST_P(ScanStepTest, ARetryKeepsTheCallersTraceAndItsPlannedSpanIsCollectedForTheCommit) {
    ScopedSpanSink spans;
    ScheduleCache schedules;
    FollowupsStep step(config_, schedules);
    auto job = CreateJob("traced", "manual", "", std::nullopt, [](model::Job& j) {
        j.retry_max = 1;
        j.retry_backoff_ms = 1;
    });
    const std::string caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const std::int64_t failed = InsertFire(job, 1000, [&](model::Fire& f) {
        f.kind = model::FireKind::kManual;
        f.trace_parent = caller;
        f.trace_state = "vendor=a";
    });
    FailWithFollowup(failed);
    auto r = Run({&step});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->retries, 1);
    const auto fires = FiresOf(job.id);
    ASSERT_EQ(fires.size(), 2u);
    EXPECT_EQ(fires[1].trace_parent, caller) << "the retry runs under the caller's trace";
    EXPECT_EQ(fires[1].trace_state, "vendor=a");
    EXPECT_TRUE(spans->Spans().empty()) << "pushed after the commit, not by the step";
    ASSERT_EQ(r->spans.size(), 1u);
    PushFireSpans(r->spans);
    const auto planned = spans->Named("planned");
    ASSERT_EQ(planned.size(), 1u);
    EXPECT_EQ(IntAttribute(planned[0], "sched.fire_id"), fires[1].id);
    EXPECT_EQ(IntAttribute(planned[0], "sched.attempt"), fires[1].attempt);
    EXPECT_EQ(planned[0].trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
}

TEST(ScanStepRules, ALostFireIsRetriedOnlyForAtLeastOnceJobsAndAStepFireByItsTry) {
    model::Job job;
    job.retry_max = 0;
    model::Fire fire;
    fire.status = model::FireStatus::kLost;
    fire.attempt = 0;  // the first try
    EXPECT_FALSE(ShouldRetry(fire, job));
    job.at_least_once = true;
    EXPECT_TRUE(ShouldRetry(fire, job)) << "at least once, even with retry_max 0";
    fire.status = model::FireStatus::kFailed;
    EXPECT_FALSE(ShouldRetry(fire, job));
    job.retry_max = 2;
    fire.attempt = 3001;  // generation 3, second try
    EXPECT_EQ(TryOf(fire), 1);
    EXPECT_TRUE(ShouldRetry(fire, job));
    fire.status = model::FireStatus::kSucceeded;
    EXPECT_FALSE(ShouldRetry(fire, job));
}

TEST_P(ScanStepTest, TheBackfillsStepCreatesItsFiresAndNotifiesTheirSlaves) {
    ScopedSpanSink spans;
    BackfillsStep step;
    const std::int64_t base = (Now() / 60'000) * 60'000 - 600'000;
    auto job = CreateJob("hourly", "cron", "0 * * * * ?", std::nullopt);
    store::Backfill b;
    b.job_id = job.id;
    b.range_from = base;
    b.range_to = base + 180'000;
    b.overlap = store::BackfillOverlap::kParallel;
    b.max_parallel = 10;
    b.cursor_ms = base;
    b.planned = 3;
    b.created_by = "test";
    ASSERT_TRUE(db().Run([&](soci::session& s) { return store::BackfillRepository::Insert(s, b); }).ok());
    auto r = Run({&step});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->backfill_fires, 3);
    EXPECT_EQ(Notified(*r), 3u);
    const auto fires = FiresOf(job.id);
    for (const auto& f : fires) EXPECT_EQ(f.kind, model::FireKind::kBackfill);
    // Their `planned` spans wait in the report for the commit, like the due jobs'.
    ASSERT_EQ(r->spans.size(), fires.size());
    std::set<std::int64_t> span_ids;
    for (const auto& span : r->spans) {
        EXPECT_EQ(span.step, protocol::FireStep::kPlanned);
        EXPECT_EQ(span.app, job.app);
        span_ids.insert(span.fire_id);
    }
    std::set<std::int64_t> fire_ids;
    for (const auto& f : fires) fire_ids.insert(f.id);
    EXPECT_EQ(span_ids, fire_ids);
}

TEST(ScheduleCache, AJobsScheduleIsMadeOnceAndAgainWhenItsDefinitionChanges) {
    ScheduleCache cache;
    model::Job job;
    job.id = 3;
    job.schedule_type = ScheduleType::kCron;
    job.schedule_expr = "0 0 * * * ?";
    job.time_zone = "UTC";
    const auto* first = &cache.For(job);
    ASSERT_TRUE(first->schedule);
    EXPECT_EQ(first->schedule->NextFireTime(0, 0), 3'600'000);
    job.schedule_expr = "0 30 * * * ?";
    const auto& changed = cache.For(job);
    ASSERT_TRUE(changed.schedule);
    EXPECT_EQ(changed.schedule->NextFireTime(0, 0), 1'800'000);
    job.schedule_expr = "nonsense";
    const auto& broken = cache.For(job);
    EXPECT_FALSE(broken.schedule);
    EXPECT_FALSE(broken.error.empty());
}

SCHED_DB_TEST_SUITE(ScanStepTest);

}  // namespace
}  // namespace sched::trigger::impl
