// The chaos suite's history checker on synthetic histories: it passes a clean one and catches
// each kind of broken promise.

#include "history_checker.hpp"

#include <fstream>

#include <gtest/gtest.h>

namespace sched::chaos {
namespace {

using model::FireKind;
using model::FireStatus;

constexpr std::int64_t kFirst = 1'700'000'000'000;

// The history `in_` a test builds (its fire rows numbered from 100) and the verdict of `Check`,
// the checker under test, on it.
template <typename Input, auto Check>
class CheckerTest : public ::testing::Test {
  protected:
    // The report must fail with exactly one violation that mentions `what`.
    void ExpectOneViolation(const std::string& what) {
        const auto report = Check(in_);
        ASSERT_EQ(report.violations.size(), 1u) << report.Summary();
        EXPECT_NE(report.violations[0].find(what), std::string::npos) << report.Summary();
    }

    Input in_;
    std::int64_t next_id_ = 100;
};

class HistoryCheckerTest : public CheckerTest<HistoryInput, CheckHistory> {
  protected:
    // A clean history: job 1 every second from kFirst, 10 seconds, each ran once at epoch 3,
    // alternating between two instances.
    void SetUp() override {
        in_.jobs.push_back({.job_id = 1, .first_ms = kFirst, .period_ms = 1000, .misfire_policy = "fire-all"});
        in_.from_ms = kFirst;
        in_.to_ms = kFirst + 10'000;
        for (int i = 0; i < 10; ++i) AddRun(1, kFirst + i * 1000, 0, 3, i % 2 == 0 ? "e1" : "e2");
    }
    model::Fire& AddRow(std::int64_t job, std::int64_t t, int attempt, FireStatus status,
                        FireKind kind = FireKind::kSchedule) {
        model::Fire f;
        f.id = next_id_++;
        f.job_id = job;
        f.scheduled_time = t;
        f.attempt = attempt;
        f.status = status;
        f.kind = kind;
        f.created_at = t - 2000;
        if (status != FireStatus::kSucceeded && model::IsFinal(status)) f.result_message = "why";
        in_.fires.push_back(f);
        return in_.fires.back();
    }
    void AddRun(std::int64_t job, std::int64_t t, int attempt, std::int64_t epoch, const std::string& instance,
                std::int64_t arrival = 0) {
        const auto& row = AddRow(job, t, attempt, FireStatus::kSucceeded);
        in_.runs.push_back({.arrival_ms = arrival ? arrival : t + 5,
                            .job_id = job,
                            .fire_id = row.id,
                            .scheduled_ms = t,
                            .attempt = attempt,
                            .epoch = epoch,
                            .instance = instance});
    }
    void EraseRowsAt(std::int64_t t) {
        std::erase_if(in_.fires, [t](const model::Fire& f) { return f.scheduled_time == t; });
        std::erase_if(in_.runs, [t](const SinkRecord& r) { return r.scheduled_ms == t; });
    }
};

TEST_F(HistoryCheckerTest, ACleanHistoryPasses) {
    const auto report = CheckHistory(in_);
    EXPECT_TRUE(report.ok()) << report.Summary();
    EXPECT_EQ(report.expected, 10);
    EXPECT_EQ(report.ran, 10);
}

TEST_F(HistoryCheckerTest, CatchesADoubleRunOnAnotherInstance) {
    // The same (job, time, attempt) ran on e2 as well, from a second fire row.
    AddRun(1, kFirst + 4000, 0, 3, "e2");
    const auto report = CheckHistory(in_);
    ASSERT_EQ(report.violations.size(), 2u) << report.Summary();  // two runs and two rows
    EXPECT_NE(report.Summary().find("ran 2 times"), std::string::npos) << report.Summary();
    EXPECT_NE(report.Summary().find("has 2 fire rows"), std::string::npos) << report.Summary();
}

TEST_F(HistoryCheckerTest, CatchesADoubleRowOfAnotherKind) {
    // A misfire row for a second that already has its schedule row (never dispatched).
    auto& dup = AddRow(1, kFirst + 2000, 0, FireStatus::kSkipped, FireKind::kMisfire);
    dup.result_message = "skipped";
    ExpectOneViolation("has 2 fire rows");
}

TEST_F(HistoryCheckerTest, CatchesASilentLoss) {
    EraseRowsAt(kFirst + 6000);
    ExpectOneViolation("lost: job 1 at " + std::to_string(kFirst + 6000));
}

TEST_F(HistoryCheckerTest, CatchesAnEpochGoingBackwards) {
    // e1 saw epoch 4 at second 7, then an epoch-3 run a second later.
    EraseRowsAt(kFirst + 7000);
    EraseRowsAt(kFirst + 8000);
    AddRun(1, kFirst + 7000, 0, 4, "e1");
    AddRun(1, kFirst + 8000, 0, 3, "e1");
    ExpectOneViolation("epoch went backwards at e1");
}

TEST_F(HistoryCheckerTest, EpochsInterleavedOnDifferentInstancesOrWithinTheSlackPass) {
    EraseRowsAt(kFirst + 7000);
    EraseRowsAt(kFirst + 8000);
    AddRun(1, kFirst + 7000, 0, 4, "e1", kFirst + 7005);
    AddRun(1, kFirst + 8000, 0, 3, "e2", kFirst + 8005);  // another instance: its own order
    const auto report = CheckHistory(in_);
    EXPECT_TRUE(report.ok()) << report.Summary();
    in_.runs.back().instance = "e1";
    in_.runs.back().arrival_ms = kFirst + 7005 + in_.epoch_slack_ms;  // handlers started together
    EXPECT_TRUE(CheckHistory(in_).ok()) << CheckHistory(in_).Summary();
}

TEST_F(HistoryCheckerTest, CatchesAStuckFire) {
    EraseRowsAt(kFirst + 3000);
    AddRow(1, kFirst + 3000, 0, FireStatus::kRunning);
    ExpectOneViolation("stuck");
}

TEST_F(HistoryCheckerTest, EndedFiresNeedAReasonAndTheRetryThePolicyOwes) {
    in_.jobs[0].retry_max = 1;
    EraseRowsAt(kFirst + 3000);
    AddRow(1, kFirst + 3000, 0, FireStatus::kTimeout);
    ExpectOneViolation("retry missing");
    AddRow(1, kFirst + 3000, 1, FireStatus::kFailed);  // the retry ran and failed: policy done
    auto report = CheckHistory(in_);
    EXPECT_TRUE(report.ok()) << report.Summary();
    EXPECT_EQ(report.ended_without_run["failed (why)"], 1);
    in_.fires.back().result_message.reset();
    ExpectOneViolation("no reason");
}

TEST_F(HistoryCheckerTest, ALostFireIsRetriedOnlyForAtLeastOnceJobs) {
    in_.jobs[0].retry_max = 2;
    EraseRowsAt(kFirst + 5000);
    AddRow(1, kFirst + 5000, 0, FireStatus::kLost);
    EXPECT_TRUE(CheckHistory(in_).ok()) << CheckHistory(in_).Summary();  // at-most-once: recorded, no retry
    AddRow(1, kFirst + 5000, 1, FireStatus::kSucceeded);
    ExpectOneViolation("retried against the policy");
    in_.jobs[0].at_least_once = true;
    EXPECT_TRUE(CheckHistory(in_).ok()) << CheckHistory(in_).Summary();
    // At least once means once more even with retry_max 0.
    in_.jobs[0].retry_max = 0;
    EXPECT_TRUE(CheckHistory(in_).ok()) << CheckHistory(in_).Summary();
    in_.fires.pop_back();
    ExpectOneViolation("retry missing");
}

// Recorded lost, its success came afterwards (reason succeeded_late): the retry the loss
// planned is ended with the same reason, or, claimed already, ran too; either is the policy's.
TEST_F(HistoryCheckerTest, ALateSuccessAccountsForTheRetryItsLossPlanned) {
    in_.jobs[0].at_least_once = true;
    for (const std::int64_t t : {kFirst + 5000, kFirst + 6000}) {
        EraseRowsAt(t);
        AddRun(1, t, 0, 3, "e1");
        in_.fires.back().reason = model::FireReason::kSucceededLate;
    }
    AddRow(1, kFirst + 5000, 1, FireStatus::kSkipped, FireKind::kRetry).reason = model::FireReason::kSucceededLate;
    AddRun(1, kFirst + 6000, 1, 3, "e2");
    EXPECT_TRUE(CheckHistory(in_).ok()) << CheckHistory(in_).Summary();
    // A success that was never lost does not explain a next attempt.
    in_.fires[in_.fires.size() - 4].reason.reset();
    ExpectOneViolation("retried against the policy");
}

TEST_F(HistoryCheckerTest, MisfirePoliciesMayDropTimesOnlyVisibly) {
    // An outage swallowed seconds 3-8; the master came back at second 9.
    for (std::int64_t t = kFirst + 3000; t <= kFirst + 8000; t += 1000) EraseRowsAt(t);
    in_.jobs[0].misfire_policy = "fire-once-now";
    EXPECT_EQ(CheckHistory(in_).violations.size(), 6u) << CheckHistory(in_).Summary();  // silently lost
    // fire-once-now: one misfire fire "now" stands for all of them, but only the ledger row
    // that says so accounts for them.
    auto& misfire = AddRow(1, kFirst + 8500, 0, FireStatus::kSucceeded, FireKind::kMisfire);
    misfire.created_at = kFirst + 8500;
    EXPECT_EQ(CheckHistory(in_).violations.size(), 6u) << CheckHistory(in_).Summary();
    auto& ledger = AddRow(1, kFirst + 3000, 0, FireStatus::kSkipped, FireKind::kMisfire);
    ledger.reason = model::FireReason::kMisfire;
    ledger.skipped_until = kFirst + 7000;  // one second short
    ledger.skipped_count = 5;
    EXPECT_EQ(CheckHistory(in_).violations.size(), 1u) << CheckHistory(in_).Summary();
    in_.fires.back().skipped_until = kFirst + 8000;
    in_.fires.back().skipped_count = 6;
    auto report = CheckHistory(in_);
    EXPECT_TRUE(report.ok()) << report.Summary();
    EXPECT_EQ(report.misfire_dropped, 6);
    // A skipped row without the misfire reason accounts only for its own time, as an ended fire.
    in_.fires.back().reason = model::FireReason::kPaused;
    EXPECT_EQ(CheckHistory(in_).violations.size(), 5u) << CheckHistory(in_).Summary();
}

TEST(SinkLogTest, ReadsLinesAndSkipsATornLastLine) {
    const auto path = std::filesystem::temp_directory_path() / "sched-sink-log-test.jsonl";
    std::ofstream(path)
        << R"({"arrival_ms":5,"job_id":1,"fire_id":2,"scheduled_ms":3,"attempt":0,"epoch":7,"instance":"e1"})"
        << "\n"
        << R"({"arrival_ms":6,"job_id":1,"fire_id":3,"sched)";
    int torn = 0;
    const auto records = ReadSinkLog(path, &torn);
    std::filesystem::remove(path);
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].epoch, 7);
    EXPECT_EQ(records[0].instance, "e1");
    EXPECT_EQ(torn, 1);
}

// ---- workflow runs ----

using model::WorkflowRunStatus;

class WorkflowHistoryCheckerTest : public CheckerTest<WorkflowHistoryInput, CheckWorkflowHistory> {
  protected:
    // A clean history: the diamond a -> b, a -> c, b -> d, c -> d (jobs 11..14), three runs a
    // second apart, each step ran once for 300 ms after its parents ended.
    void SetUp() override {
        in_.from_ms = kFirst;
        in_.to_ms = kFirst + 3000;
        for (int i = 0; i < 3; ++i) {
            const std::int64_t t = kFirst + i * 1000;
            AddRunRow(i + 1, t, WorkflowRunStatus::kSucceeded);
            Step(i + 1, "a", t, t + 10);
            Step(i + 1, "b", t, t + 320);
            Step(i + 1, "c", t, t + 330);
            Step(i + 1, "d", t, t + 640);
        }
    }
    static model::WorkflowDefinition Diamond() {
        model::WorkflowDefinition d;
        d.steps = {{"a", 11}, {"b", 12}, {"c", 13}, {"d", 14}};
        d.edges = {{"a", "b"}, {"a", "c"}, {"b", "d"}, {"c", "d"}};
        return d;
    }
    static std::int64_t JobOf(const std::string& step) { return 11 + (step[0] - 'a'); }
    model::WorkflowRun& AddRunRow(std::int64_t id, std::int64_t t, WorkflowRunStatus status) {
        model::WorkflowRun run;
        run.id = id;
        run.workflow_id = 7;
        run.scheduled_time = t;
        run.status = status;
        run.definition = Diamond();
        run.started_at = t;
        in_.runs.push_back(run);
        return in_.runs.back();
    }
    // A step fire of run `run` that started at `start`; succeeded: ran (a sink line) and ended
    // 300 ms later; other statuses end at `start` without a sink line.
    model::Fire& Step(std::int64_t run, const std::string& step, std::int64_t t, std::int64_t start,
                      FireStatus status = FireStatus::kSucceeded, int attempt = 0) {
        model::Fire f;
        f.id = next_id_++;
        f.job_id = JobOf(step);
        f.scheduled_time = t;
        f.attempt = attempt;
        f.kind = FireKind::kWorkflow;
        f.status = status;
        f.workflow_run_id = run;
        f.workflow_step = step;
        f.created_at = start - 5;
        f.finished_at = status == FireStatus::kSucceeded ? start + 300 : start;
        if (status != FireStatus::kSucceeded) f.result_message = "why";
        if (status == FireStatus::kSucceeded) Sink(f, start);
        in_.fires.push_back(f);
        return in_.fires.back();
    }
    void Sink(const model::Fire& f, std::int64_t arrival, const std::string& instance = "e1") {
        in_.sink.push_back({.arrival_ms = arrival,
                            .job_id = f.job_id,
                            .fire_id = f.id,
                            .scheduled_ms = f.scheduled_time,
                            .attempt = f.attempt,
                            .epoch = 3,
                            .instance = instance});
    }
    model::Fire* Find(std::int64_t run, const std::string& step) {
        for (auto& f : in_.fires) {
            if (f.workflow_run_id == run && f.workflow_step == step) return &f;
        }
        return nullptr;
    }
    void Erase(std::int64_t run, const std::string& step) {
        const model::Fire* f = Find(run, step);
        ASSERT_NE(f, nullptr);
        const std::int64_t id = f->id;
        std::erase_if(in_.sink, [id](const SinkRecord& r) { return r.fire_id == id; });
        std::erase_if(in_.fires, [id](const model::Fire& x) { return x.id == id; });
    }
};

TEST_F(WorkflowHistoryCheckerTest, ACleanDiamondPasses) {
    const auto report = CheckWorkflowHistory(in_);
    EXPECT_TRUE(report.ok()) << report.Summary();
    EXPECT_EQ(report.Runs("succeeded"), 3);
    EXPECT_EQ(report.step_fires, 12);
    EXPECT_EQ(report.step_runs, 12);
}

TEST_F(WorkflowHistoryCheckerTest, AFailedStepSkippingTheJoinIsARecordedOutcome) {
    // Run 2's b was lost (its slave died while dispatching, no retry): d skipped, run failed.
    const std::int64_t t = kFirst + 1000;
    Erase(2, "b");
    Erase(2, "d");
    Step(2, "b", t, t + 320, FireStatus::kLost);
    auto& skip = Step(2, "d", t, t + 640, FireStatus::kSkipped);
    skip.reason = model::FireReason::kUpstream;
    in_.runs[1].status = WorkflowRunStatus::kFailed;
    in_.runs[1].reason = "step b lost";
    const auto report = CheckWorkflowHistory(in_);
    EXPECT_TRUE(report.ok()) << report.Summary();
    EXPECT_EQ(report.Runs("failed"), 1);
    EXPECT_EQ(report.failed_steps.at("lost (why)"), 1);
    // A run outside the window is not checked, whatever its state.
    AddRunRow(9, in_.to_ms, WorkflowRunStatus::kRunning);
    EXPECT_TRUE(CheckWorkflowHistory(in_).ok());
}

TEST_F(WorkflowHistoryCheckerTest, CatchesAStuckRun) {
    in_.runs[2].status = WorkflowRunStatus::kRunning;
    ExpectOneViolation("stuck: run 3");
}

TEST_F(WorkflowHistoryCheckerTest, CatchesALostStep) {
    // Run 1 says succeeded, but d never got a fire.
    Erase(1, "d");
    ExpectOneViolation("lost step: step d of run 1");
}

TEST_F(WorkflowHistoryCheckerTest, CatchesAStepStillRunningInAnEndedRun) {
    Find(2, "c")->followup = true;  // its retry is still undecided
    ExpectOneViolation("lost step: step c of run 2");
}

TEST_F(WorkflowHistoryCheckerTest, CatchesAStepFireRunTwice) {
    Sink(*Find(3, "b"), kFirst + 2000 + 330, "e2");
    ExpectOneViolation("double: step b of run 3");
}

TEST_F(WorkflowHistoryCheckerTest, CatchesTwoFireRowsOfOneStep) {
    // A second try-0 row of c in run 1 (another kind), which ran as well.
    Step(1, "c", kFirst, kFirst + 315).kind = FireKind::kManual;
    ExpectOneViolation("double: run 1");
}

TEST_F(WorkflowHistoryCheckerTest, CatchesAClaimedSuccessThatNeverRan) {
    const std::int64_t id = Find(1, "a")->id;
    std::erase_if(in_.sink, [id](const SinkRecord& r) { return r.fire_id == id; });
    ExpectOneViolation("never ran: step a of run 1");
}

TEST_F(WorkflowHistoryCheckerTest, CatchesAStepThatRanBeforeItsParentEnded) {
    // d of run 2 started 1 ms before c ended.
    const std::int64_t id = Find(2, "d")->id;
    for (auto& r : in_.sink) {
        if (r.fire_id == id) r.arrival_ms = *Find(2, "c")->finished_at - 1;
    }
    ExpectOneViolation("early: step d of run 2");
    for (auto& r : in_.sink) {
        if (r.fire_id == id) r.arrival_ms = *Find(2, "c")->finished_at;  // the same ms: in order
    }
    EXPECT_TRUE(CheckWorkflowHistory(in_).ok()) << CheckWorkflowHistory(in_).Summary();
}

TEST_F(WorkflowHistoryCheckerTest, CatchesARunStatusThatDisagreesWithItsSteps) {
    in_.runs[0].status = WorkflowRunStatus::kFailed;
    ExpectOneViolation("status: run 1");
    in_.runs[0].status = WorkflowRunStatus::kSucceeded;
    const std::int64_t t = kFirst + 2000;
    Erase(3, "c");
    Step(3, "c", t, t + 330, FireStatus::kFailed);  // d would be skipped, the run should fail
    Erase(3, "d");
    Step(3, "d", t, t + 640, FireStatus::kSkipped).reason = model::FireReason::kUpstream;
    ExpectOneViolation("status: run 3");
}

TEST_F(WorkflowHistoryCheckerTest, CatchesStepFiresOfARunSkippedByOverlap) {
    in_.runs[1].status = WorkflowRunStatus::kSkipped;
    const auto report = CheckWorkflowHistory(in_);
    EXPECT_FALSE(report.ok());
    EXPECT_NE(report.Summary().find("status: run 2"), std::string::npos) << report.Summary();
}

}  // namespace
}  // namespace sched::chaos
