#include <gtest/gtest.h>

#include "sched/model/workflow_progress.hpp"

namespace sched::model {

namespace {

constexpr std::int64_t kRun = 7;

// The diamond a -> b, a -> c, b -> d, c -> d (all on-success unless `c_to_d` says otherwise).
WorkflowGraph Diamond(EdgeCondition c_to_d = EdgeCondition::kOnSuccess) {
    auto g = WorkflowGraph::Make({{"a", 1}, {"b", 2}, {"c", 3}, {"d", 4}}, {{"a", "b", EdgeCondition::kOnSuccess},
                                                                            {"a", "c", EdgeCondition::kOnSuccess},
                                                                            {"b", "d", EdgeCondition::kOnSuccess},
                                                                            {"c", "d", c_to_d}});
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    return *g;
}

WorkflowRun ARun(int generation = 0, std::optional<std::string> from = std::nullopt) {
    WorkflowRun r;
    r.id = kRun;
    r.created_at = 1000;
    r.started_at = 1000;
    r.generation = generation;
    r.from_step = std::move(from);
    return r;
}

Fire StepFire(const std::string& step, FireStatus status, int attempt = 0, std::int64_t finished = 2000) {
    static std::int64_t next_id = 1;
    Fire f;
    f.id = next_id++;
    f.kind = FireKind::kWorkflow;
    f.attempt = attempt;
    f.status = status;
    f.workflow_run_id = kRun;
    f.workflow_step = step;
    if (IsFinal(status)) f.finished_at = finished;
    return f;
}

Fire Skipped(const std::string& step, int generation = 0) {
    auto f = StepFire(step, FireStatus::kSkipped, StepAttempt(generation, 0));
    f.reason = FireReason::kUpstream;
    return f;
}

std::vector<std::string> Names(const WorkflowGraph& g, const std::vector<std::size_t>& steps) {
    std::vector<std::string> out;
    for (const auto i : steps) out.push_back(g.step(i).name);
    return out;
}

std::vector<std::string> SkipNames(const WorkflowGraph& g, const RunProgress& p) {
    std::vector<std::string> out;
    for (const auto& s : p.to_skip) out.push_back(g.step(s.step).name);
    return out;
}

TEST(EvaluateRun, ANewRunStartsItsRootsOnly) {
    const auto g = Diamond();
    const auto p = EvaluateRun(g, ARun(), {});
    EXPECT_EQ(Names(g, p.to_start), std::vector<std::string>{"a"});
    EXPECT_TRUE(p.to_skip.empty());
    EXPECT_FALSE(p.end);
    for (const auto& step : p.steps) EXPECT_EQ(step.state, StepState::kWaiting);
    EXPECT_EQ(p.steps[0].ready_at, 1000);
    EXPECT_FALSE(p.steps[1].ready_at);
}

TEST(EvaluateRun, FanOutThenFanInWaitsForEveryParent) {
    const auto g = Diamond();
    auto p = EvaluateRun(g, ARun(), {StepFire("a", FireStatus::kSucceeded, 0, 1500)});
    EXPECT_EQ(Names(g, p.to_start), (std::vector<std::string>{"b", "c"}));
    EXPECT_EQ(p.steps[1].ready_at, 1500);

    // b done, c still running: d waits.
    p = EvaluateRun(g, ARun(),
                    {StepFire("a", FireStatus::kSucceeded), StepFire("b", FireStatus::kSucceeded),
                     StepFire("c", FireStatus::kRunning)});
    EXPECT_TRUE(p.to_start.empty());
    EXPECT_EQ(p.steps[2].state, StepState::kRunning);
    EXPECT_EQ(p.steps[3].state, StepState::kWaiting);

    p = EvaluateRun(g, ARun(),
                    {StepFire("a", FireStatus::kSucceeded), StepFire("b", FireStatus::kSucceeded, 0, 3000),
                     StepFire("c", FireStatus::kSucceeded, 0, 4000)});
    EXPECT_EQ(Names(g, p.to_start), std::vector<std::string>{"d"});
    EXPECT_EQ(p.steps[3].ready_at, 4000);  // the last parent's end
    EXPECT_FALSE(p.end);

    p = EvaluateRun(g, ARun(),
                    {StepFire("a", FireStatus::kSucceeded), StepFire("b", FireStatus::kSucceeded),
                     StepFire("c", FireStatus::kSucceeded), StepFire("d", FireStatus::kSucceeded)});
    EXPECT_TRUE(p.to_start.empty());
    EXPECT_EQ(p.end, WorkflowRunStatus::kSucceeded);
}

TEST(EvaluateRun, AFailedStepSkipsWhatDependsOnItAndTheRunFails) {
    const auto g = Diamond();
    const auto p = EvaluateRun(g, ARun(),
                               {StepFire("a", FireStatus::kSucceeded), StepFire("b", FireStatus::kFailed),
                                StepFire("c", FireStatus::kSucceeded)});
    EXPECT_TRUE(p.to_start.empty());
    ASSERT_EQ(SkipNames(g, p), std::vector<std::string>{"d"});
    EXPECT_EQ(p.to_skip[0].message, "parent \"b\" failed (edge on-success)");
    EXPECT_EQ(p.end, WorkflowRunStatus::kFailed);
    EXPECT_EQ(p.end_reason, "step \"b\" failed");
    EXPECT_EQ(p.steps[1].state, StepState::kFailed);
    EXPECT_EQ(p.steps[3].state, StepState::kWaiting);  // stored state until the skip is written
}

TEST(EvaluateRun, AFailureWhoseRetryIsUndecidedIsStillRunning) {
    const auto g = Diamond();
    auto failed = StepFire("b", FireStatus::kFailed);
    failed.followup = true;  // the master has not yet decided on a retry
    auto p =
        EvaluateRun(g, ARun(), {StepFire("a", FireStatus::kSucceeded), failed, StepFire("c", FireStatus::kSucceeded)});
    EXPECT_EQ(p.steps[1].state, StepState::kRunning);
    EXPECT_TRUE(p.to_skip.empty());
    EXPECT_FALSE(p.end);

    // The retry (try 1) succeeded: the step did.
    failed.followup = false;
    p = EvaluateRun(g, ARun(),
                    {StepFire("a", FireStatus::kSucceeded), failed, StepFire("b", FireStatus::kSucceeded, 1),
                     StepFire("c", FireStatus::kSucceeded)});
    EXPECT_EQ(p.steps[1].state, StepState::kSucceeded);
    EXPECT_EQ(p.steps[1].fires, 2);
    EXPECT_EQ(Names(g, p.to_start), std::vector<std::string>{"d"});
}

TEST(EvaluateRun, SkipsFlowDownUnlessTheEdgeIsAlways) {
    auto g =
        WorkflowGraph::Make({{"a", 1}, {"b", 2}, {"c", 3}, {"notify", 4}}, {{"a", "b", EdgeCondition::kOnSuccess},
                                                                            {"b", "c", EdgeCondition::kOnSuccess},
                                                                            {"c", "notify", EdgeCondition::kAlways}});
    ASSERT_TRUE(g.ok());
    const auto p = EvaluateRun(*g, ARun(), {StepFire("a", FireStatus::kTimeout)});
    EXPECT_EQ(SkipNames(*g, p), (std::vector<std::string>{"b", "c"}));
    EXPECT_EQ(p.to_skip[1].message, "parent \"b\" was skipped (edge on-success)");
    EXPECT_EQ(Names(*g, p.to_start), std::vector<std::string>{"notify"});
    EXPECT_FALSE(p.end);
}

TEST(EvaluateRun, AnOnFailureBranchNotTakenIsSkippedAndTheRunSucceeds) {
    auto g = WorkflowGraph::Make({{"a", 1}, {"cleanup", 2}}, {{"a", "cleanup", EdgeCondition::kOnFailure}});
    ASSERT_TRUE(g.ok());
    auto p = EvaluateRun(*g, ARun(), {StepFire("a", FireStatus::kSucceeded)});
    ASSERT_EQ(p.to_skip.size(), 1u);
    EXPECT_EQ(p.to_skip[0].message, "parent \"a\" succeeded (edge on-failure)");
    EXPECT_EQ(p.end, WorkflowRunStatus::kSucceeded);

    p = EvaluateRun(*g, ARun(), {StepFire("a", FireStatus::kFailed)});
    EXPECT_EQ(Names(*g, p.to_start), std::vector<std::string>{"cleanup"});
    EXPECT_FALSE(p.end);
}

TEST(EvaluateRun, ASkipRowEndsTheStepAndASlaveSkipIsAFailure) {
    const auto g = Diamond();
    auto paused = StepFire("c", FireStatus::kSkipped);
    paused.reason = FireReason::kPaused;  // skipped by a slave: the step did not do its work
    const auto p = EvaluateRun(
        g, ARun(), {StepFire("a", FireStatus::kSucceeded), StepFire("b", FireStatus::kFailed), paused, Skipped("d")});
    EXPECT_EQ(p.steps[2].state, StepState::kFailed);
    EXPECT_EQ(p.steps[3].state, StepState::kSkipped);
    EXPECT_TRUE(p.to_skip.empty());
    EXPECT_EQ(p.end, WorkflowRunStatus::kFailed);
    EXPECT_EQ(p.end_reason, "step \"b\" failed");  // the first in topological order
}

TEST(EvaluateRun, ShardsSucceedOnlyTogether) {
    auto g = WorkflowGraph::Make({{"a", 1}, {"b", 2}}, {{"a", "b", EdgeCondition::kOnSuccess}});
    ASSERT_TRUE(g.ok());
    auto s0 = StepFire("a", FireStatus::kSucceeded);
    auto s1 = StepFire("a", FireStatus::kRunning);
    s1.shard_index = 1;
    auto p = EvaluateRun(*g, ARun(), {s0, s1});
    EXPECT_EQ(p.steps[0].state, StepState::kRunning);
    EXPECT_TRUE(p.to_start.empty());
    s1.status = FireStatus::kFailed;
    s1.finished_at = 2000;
    p = EvaluateRun(*g, ARun(), {s0, s1});
    EXPECT_EQ(p.steps[0].state, StepState::kFailed);
    ASSERT_TRUE(p.steps[0].fire);
    EXPECT_EQ(p.steps[0].fire->shard_index, 1);  // the shard that did not succeed is shown
}

TEST(EvaluateRun, ARerunFromAStepCountsOnlyItsGenerationBelowIt) {
    const auto g = Diamond();
    // Generation 0: b failed, d skipped, the run failed; re-run from b (generation 1).
    std::vector<Fire> fires = {StepFire("a", FireStatus::kSucceeded), StepFire("b", FireStatus::kFailed),
                               StepFire("c", FireStatus::kSucceeded), Skipped("d")};
    auto p = EvaluateRun(g, ARun(1, "b"), fires);
    EXPECT_EQ(Names(g, p.to_start), std::vector<std::string>{"b"});  // at once, parents not re-evaluated
    EXPECT_EQ(p.steps[0].state, StepState::kSucceeded);              // a and c keep their outcome
    EXPECT_EQ(p.steps[1].state, StepState::kWaiting);
    EXPECT_EQ(p.steps[3].state, StepState::kWaiting);  // its generation-0 skip no longer counts
    EXPECT_FALSE(p.end);

    fires.push_back(StepFire("b", FireStatus::kSucceeded, StepAttempt(1, 0)));
    p = EvaluateRun(g, ARun(1, "b"), fires);
    EXPECT_EQ(Names(g, p.to_start), std::vector<std::string>{"d"});
    fires.push_back(StepFire("d", FireStatus::kSucceeded, StepAttempt(1, 0)));
    p = EvaluateRun(g, ARun(1, "b"), fires);
    EXPECT_EQ(p.end, WorkflowRunStatus::kSucceeded);
    EXPECT_EQ(p.steps[1].generation, 1);
    EXPECT_EQ(p.steps[0].generation, 0);
}

TEST(EvaluateRun, FiresOfOtherRunsAndUnknownStepsAreIgnored) {
    const auto g = Diamond();
    auto other = StepFire("a", FireStatus::kFailed);
    other.workflow_run_id = kRun + 1;
    auto unknown = StepFire("zz", FireStatus::kFailed);
    const auto p = EvaluateRun(g, ARun(), {other, unknown});
    EXPECT_EQ(Names(g, p.to_start), std::vector<std::string>{"a"});
}

}  // namespace
}  // namespace sched::model
