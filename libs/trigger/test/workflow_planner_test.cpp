#include "sched/trigger/workflow_planner.hpp"

#include <set>

#include <gtest/gtest.h>

#include "manual_workflow_run.hpp"
#include "sched/db/testing/test_database.hpp"
#include "sched/protocol/testing/collecting_span_sink.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"
#include "sched/store/workflow.hpp"
#include "sched/store/workflow_run.hpp"

namespace sched::trigger {
namespace {

// The planner inside a transaction of its own, at a time the test chooses: the overlap policy
// is about *when* it decides, so the clock is the test's, not the database's.
class WorkflowPlannerTest : public db::testing::MigratedDbTest {
  protected:
    static constexpr std::int64_t kT0 = 1'800'000'000'000;  // a whole second

    // A workflow of one manual step, every second from kT0, at most one run at a time.
    model::Workflow CreateEverySecond() {
        model::Job job;
        job.name = "step-a";
        job.app = "app";
        job.handler = "echo";
        job.schedule_type = ScheduleType::kManual;
        auto created_job = store::JobRepository(db()).Create(job);
        EXPECT_TRUE(created_job.ok()) << created_job.status().ToString();
        model::Workflow w;
        w.name = "every-second";
        w.steps = {{"a", created_job->id}};
        w.schedule_type = ScheduleType::kCron;
        w.schedule_expr = "* * * * * ?";
        w.max_concurrent_runs = 1;
        w.next_fire_time = kT0;
        auto created = store::WorkflowRepository(db()).Create(w);
        EXPECT_TRUE(created.ok()) << created.status().ToString();
        return *created;
    }

    // A running run as the API's trigger makes it.
    std::int64_t ManualRun(const model::Workflow& w, std::int64_t at) { return InsertManualRun(db(), w, at, at); }

    WorkflowProgressReport Advance(std::int64_t now) {
        auto report = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
            Assigner assigner({{"node-a", 1}});
            return planner_.Advance(s, db().dialect(), 1, now, assigner, {}, [](const std::string&) { return 1; });
        });
        EXPECT_TRUE(report.ok()) << report.status().ToString();
        return report.ok() ? *report : WorkflowProgressReport{};
    }

    std::vector<model::WorkflowRun> Runs(const model::Workflow& w) {
        auto runs = store::WorkflowRunRepository(db()).ListForWorkflow(w.id, 0, 100);
        EXPECT_TRUE(runs.ok());
        return runs.ok() ? *runs : std::vector<model::WorkflowRun>{};
    }

    WorkflowPlanner planner_{{.lookahead_ms = 2000, .sweep_ms = 3'600'000}};
};

TEST_P(WorkflowPlannerTest, OverlapIsDecidedAtTheScheduledTimeNotWhenItEntersTheLookahead) {
    const auto w = CreateEverySecond();
    const std::int64_t blocking = ManualRun(w, kT0 - 5000);
    // 1.5 s before kT0 the manual run is still running: kT0 is not judged yet.
    auto early = Advance(kT0 - 1500);
    EXPECT_EQ(early.runs_overlapped, 0);
    EXPECT_EQ(early.runs_created, 0);
    EXPECT_EQ(Runs(w).size(), 1u);
    EXPECT_EQ(store::WorkflowRepository(db()).Get(w.id)->next_fire_time, kT0);
    // It ends before kT0: kT0's run starts.
    ASSERT_TRUE(db().Run([&](soci::session& s) {
                        return store::WorkflowRunRepository::End(s, blocking, model::WorkflowRunStatus::kSucceeded,
                                                                 std::nullopt, kT0 - 700);
                    })
                    .ok());
    auto at = Advance(kT0 - 100);
    EXPECT_EQ(at.runs_overlapped, 0);
    EXPECT_GE(at.runs_created, 1);
    auto runs = Runs(w);
    ASSERT_GE(runs.size(), 2u);
    const auto& scheduled = runs[runs.size() - 2];  // newest first: the one after the manual run
    EXPECT_EQ(scheduled.scheduled_time, kT0);
    EXPECT_EQ(scheduled.status, model::WorkflowRunStatus::kRunning);
    EXPECT_EQ(scheduled.started_at, kT0);
    // kT0 + 1 s finds kT0's run running, but not yet at its time: no run of it yet.
    for (const auto& run : runs) {
        EXPECT_LE(run.scheduled_time, kT0);
    }
    EXPECT_EQ(store::WorkflowRepository(db()).Get(w.id)->next_fire_time, kT0 + 1000);
}

TEST_P(WorkflowPlannerTest, ATimeThatFindsNoSlotAtItsTimeIsSkippedThenWithConsistentTimes) {
    const auto w = CreateEverySecond();
    ManualRun(w, kT0 - 5000);
    Advance(kT0 - 1500);
    auto at = Advance(kT0 + 20);
    EXPECT_EQ(at.runs_overlapped, 1);
    auto runs = Runs(w);
    ASSERT_EQ(runs.size(), 2u);
    const auto& skipped = runs.front();
    EXPECT_EQ(skipped.scheduled_time, kT0);
    EXPECT_EQ(skipped.status, model::WorkflowRunStatus::kSkipped);
    EXPECT_EQ(skipped.reason.value_or("").rfind("overlap", 0), 0u);
    ASSERT_TRUE(skipped.started_at && skipped.ended_at);
    EXPECT_LE(*skipped.started_at, *skipped.ended_at);
    EXPECT_EQ(*skipped.ended_at, kT0 + 20);
}

TEST_P(WorkflowPlannerTest, ARunCreatedAheadThatEndsBeforeItsTimeEndsAtItsStart) {
    const auto w = CreateEverySecond();
    // The step's job is deleted after the run was planned ahead: the run fails before its time.
    Advance(kT0 - 1500);
    auto runs = Runs(w);
    ASSERT_FALSE(runs.empty());
    const auto run = runs.back();
    ASSERT_EQ(run.started_at, kT0);
    ASSERT_TRUE(db().Run([&](soci::session& s) {
                        return store::WorkflowRunRepository::End(s, run.id, model::WorkflowRunStatus::kFailed,
                                                                 std::string("a failed"), kT0 - 1400);
                    })
                    .ok());
    const auto ended = store::WorkflowRunRepository(db()).Get(run.id);
    ASSERT_TRUE(ended.ok() && ended->ended_at && ended->started_at);
    EXPECT_LE(*ended->started_at, *ended->ended_at);
}

TEST_P(WorkflowPlannerTest, EachStepFireItPlansHasItsPlannedSpanForTheScanToPushAfterItsCommit) {
    protocol::testing::ScopedSpanSink spans;
    const auto w = CreateEverySecond();
    const auto report = Advance(kT0 - 1500);
    ASSERT_GE(report.steps_started, 1);
    EXPECT_TRUE(spans->Spans().empty()) << "collected, not pushed: the transaction may still roll back";
    ASSERT_EQ(report.spans.size(), static_cast<std::size_t>(report.steps_started));
    auto fires = store::FireRepository(db()).List({.job_id = w.steps[0].job_id, .limit = 100});
    ASSERT_TRUE(fires.ok());
    std::set<std::int64_t> fire_ids;
    for (const auto& f : *fires) {
        EXPECT_EQ(f.kind, model::FireKind::kWorkflow);
        fire_ids.insert(f.id);
    }
    std::set<std::int64_t> span_ids;
    for (const auto& span : report.spans) {
        EXPECT_EQ(span.step, protocol::FireStep::kPlanned);
        EXPECT_EQ(span.app, "app");
        EXPECT_EQ(span.end_ms, kT0 - 1500);
        span_ids.insert(span.fire_id);
    }
    EXPECT_EQ(span_ids, fire_ids);
}

SCHED_DB_TEST_SUITE(WorkflowPlannerTest);

}  // namespace
}  // namespace sched::trigger
