#include "sched/store/workflow_run.hpp"

#include "sched/store/job.hpp"
#include "store_test_base.hpp"

namespace sched::store {

using model::EdgeCondition;
using model::kMaxRunGeneration;
using model::ParseWorkflowDefinition;
using model::WorkflowDefinition;
using model::WorkflowDefinitionToJson;
using model::WorkflowRun;
using model::WorkflowRunKind;
using model::WorkflowRunStatus;
namespace {

WorkflowDefinition Diamond() {
    return {{{"a", 1}, {"b", 2}, {"c", 3}, {"d", 4}},
            {{"a", "b", EdgeCondition::kOnSuccess},
             {"a", "c", EdgeCondition::kOnFailure},
             {"b", "d", EdgeCondition::kOnSuccess},
             {"c", "d", EdgeCondition::kAlways}}};
}

TEST(WorkflowDefinitionJson, RoundTripsAndRefusesDamage) {
    const auto text = WorkflowDefinitionToJson(Diamond());
    auto back = ParseWorkflowDefinition(text);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, Diamond());
    EXPECT_NE(text.find("\"on-failure\""), std::string::npos) << text;

    EXPECT_EQ(ParseWorkflowDefinition("not json").status().code(), Code::kInvalidArgument);
    EXPECT_EQ(ParseWorkflowDefinition("{\"steps\": 1, \"edges\": []}").status().message(),
              "definition.steps: expected an array");
    EXPECT_EQ(ParseWorkflowDefinition(
                  R"({"steps":[{"name":"a","job_id":1}],"edges":[{"parent":"a","child":"a","condition":"sometimes"}]})")
                  .status()
                  .message(),
              "definition.edges: unknown condition");
    // A stored copy that is not a DAG is refused as the definition check refuses it.
    auto cyclic = Diamond();
    cyclic.edges.push_back({"d", "a", EdgeCondition::kAlways});
    auto refused = ParseWorkflowDefinition(WorkflowDefinitionToJson(cyclic));
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().message(), "definition.edges: cycle a -> b -> d -> a");
}

class WorkflowRunRepositoryTest : public StoreTest {
  protected:
    WorkflowRun Run(std::int64_t scheduled_time) {
        WorkflowRun r;
        r.workflow_id = 7;
        r.scheduled_time = scheduled_time;
        r.workflow_version = 3;
        r.definition = Diamond();
        r.created_by = "scheduler";
        r.started_at = scheduled_time;
        return r;
    }
    std::optional<std::int64_t> Insert(const WorkflowRun& run) {
        auto id =
            db().Run([&](soci::session& s) { return WorkflowRunRepository::InsertIfAbsent(s, db().dialect(), run); });
        EXPECT_TRUE(id.ok()) << id.status().ToString();
        return id.ok() ? *id : std::nullopt;
    }
};

TEST_P(WorkflowRunRepositoryTest, ARunIsCreatedOncePerScheduledTime) {
    auto manual = Run(1000);
    manual.kind = WorkflowRunKind::kManual;
    manual.params = R"({"day":"2026-11-26"})";
    manual.created_by = "ops-alice";
    const auto id = Insert(manual);
    ASSERT_TRUE(id.has_value());
    EXPECT_FALSE(Insert(Run(1000)).has_value());  // the same key: nothing written
    ASSERT_TRUE(Insert(Run(2000)).has_value());

    WorkflowRunRepository runs(db());
    auto got = runs.Get(*id);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->workflow_id, 7);
    EXPECT_EQ(got->scheduled_time, 1000);
    EXPECT_EQ(got->kind, WorkflowRunKind::kManual);
    EXPECT_EQ(got->status, WorkflowRunStatus::kRunning);
    EXPECT_EQ(got->params, manual.params);
    EXPECT_EQ(got->created_by, "ops-alice");
    EXPECT_EQ(got->workflow_version, 3);
    EXPECT_EQ(got->definition, Diamond());
    EXPECT_EQ(got->generation, 0);
    EXPECT_FALSE(got->from_step.has_value());
    EXPECT_FALSE(got->reason.has_value());
    EXPECT_EQ(got->started_at, 1000);
    EXPECT_FALSE(got->ended_at.has_value());
    EXPECT_GT(got->created_at, 1'600'000'000'000);
    EXPECT_EQ(runs.Get(*id + 100).status().code(), Code::kNotFound);

    auto by_key = db().Run([](soci::session& s) { return WorkflowRunRepository::FindByKey(s, 7, 2000); });
    ASSERT_TRUE(by_key.ok() && by_key->has_value());
    EXPECT_FALSE((*by_key)->params.has_value());
    EXPECT_EQ((*by_key)->kind, WorkflowRunKind::kSchedule);

    auto listed = runs.ListForWorkflow(7, 0, 10);
    ASSERT_TRUE(listed.ok());
    ASSERT_EQ(listed->size(), 2u);
    EXPECT_EQ(listed->at(0).scheduled_time, 2000);  // newest first
    EXPECT_EQ(runs.ListForWorkflow(7, listed->at(0).id, 10)->size(), 1u);
    EXPECT_TRUE(runs.ListForWorkflow(8, 0, 10)->empty());

    // The slave's claim reads the params of the runs that have them, and only those.
    const std::int64_t other = listed->at(0).id;
    auto params = db().Run([&](soci::session& s) { return WorkflowRunRepository::ParamsOf(s, {*id, other, 999}); });
    ASSERT_TRUE(params.ok());
    EXPECT_EQ(*params, (std::map<std::int64_t, std::string>{{*id, *manual.params}}));
}

TEST_P(WorkflowRunRepositoryTest, EndAndRerunAreCompareAndSet) {
    const auto id = Insert(Run(1000));
    ASSERT_TRUE(id.has_value());
    auto skipped = Run(2000);
    skipped.status = WorkflowRunStatus::kSkipped;
    skipped.reason = "overlap";
    skipped.ended_at = 2000;
    ASSERT_TRUE(Insert(skipped).has_value());

    auto in_tx = [&](auto fn) {
        auto r = db().InTransaction(db::TxMode::kWrite, fn);
        EXPECT_TRUE(r.ok()) << r.status().ToString();
        return r.ok() && *r;
    };
    EXPECT_EQ(*db().Run([](soci::session& s) { return WorkflowRunRepository::CountRunning(s, 7); }), 1);
    auto running = db().Run([](soci::session& s) { return WorkflowRunRepository::ListRunning(s, 0, 10); });
    ASSERT_EQ(running->size(), 1u);
    EXPECT_EQ(running->at(0).id, *id);

    // A re-run of a running run is refused; ending it once wins, the second end changes nothing.
    EXPECT_FALSE(in_tx([&](soci::session& s) { return WorkflowRunRepository::Rerun(s, *id, 0, "b", 5000); }));
    EXPECT_TRUE(in_tx([&](soci::session& s) {
        return WorkflowRunRepository::End(s, *id, WorkflowRunStatus::kFailed, std::string("step \"b\" failed"), 4000);
    }));
    EXPECT_FALSE(in_tx([&](soci::session& s) {
        return WorkflowRunRepository::End(s, *id, WorkflowRunStatus::kSucceeded, std::nullopt, 4100);
    }));
    WorkflowRunRepository runs(db());
    auto failed = runs.Get(*id);
    EXPECT_EQ(failed->status, WorkflowRunStatus::kFailed);
    EXPECT_EQ(failed->reason, "step \"b\" failed");
    EXPECT_EQ(failed->ended_at, 4000);
    EXPECT_EQ(*db().Run([](soci::session& s) { return WorkflowRunRepository::CountRunning(s, 7); }), 0);

    // Re-run from b: once per generation read.
    EXPECT_TRUE(in_tx([&](soci::session& s) { return WorkflowRunRepository::Rerun(s, *id, 0, "b", 5000); }));
    auto rerun = runs.Get(*id);
    EXPECT_EQ(rerun->status, WorkflowRunStatus::kRunning);
    EXPECT_EQ(rerun->generation, 1);
    EXPECT_EQ(rerun->from_step, "b");
    EXPECT_EQ(rerun->started_at, 5000);
    EXPECT_FALSE(rerun->ended_at.has_value());
    EXPECT_FALSE(rerun->reason.has_value());
    EXPECT_TRUE(in_tx([&](soci::session& s) {
        return WorkflowRunRepository::End(s, *id, WorkflowRunStatus::kTimedOut, std::string("run_timeout"), 6000);
    }));
    EXPECT_FALSE(in_tx([&](soci::session& s) { return WorkflowRunRepository::Rerun(s, *id, 0, "b", 7000); }));
    EXPECT_TRUE(in_tx([&](soci::session& s) { return WorkflowRunRepository::Rerun(s, *id, 1, "a", 7000); }));
    EXPECT_EQ(runs.Get(*id)->generation, 2);

    // A skipped run is never re-run; the generation bound holds.
    const auto skipped_id = runs.ListForWorkflow(7, 0, 1)->at(0).id;
    EXPECT_FALSE(in_tx([&](soci::session& s) { return WorkflowRunRepository::Rerun(s, skipped_id, 0, "a", 7000); }));

    // The last re-run allowed takes the run to kMaxRunGeneration; none after it.
    const int last = kMaxRunGeneration - 1;
    ASSERT_TRUE(db().Run([&](soci::session& s) {
                        s << "UPDATE workflow_run SET generation = :g, status = 'failed' WHERE id = :id",
                            soci::use(last, "g"), soci::use(*id, "id");
                    })
                    .ok());
    EXPECT_TRUE(in_tx([&](soci::session& s) { return WorkflowRunRepository::Rerun(s, *id, last, "a", 8000); }));
    EXPECT_EQ(runs.Get(*id)->generation, kMaxRunGeneration);
    EXPECT_TRUE(in_tx([&](soci::session& s) {
        return WorkflowRunRepository::End(s, *id, WorkflowRunStatus::kFailed, std::nullopt, 9000);
    }));
    EXPECT_FALSE(
        in_tx([&](soci::session& s) { return WorkflowRunRepository::Rerun(s, *id, kMaxRunGeneration, "a", 9500); }));
    EXPECT_EQ(runs.Get(*id)->status, WorkflowRunStatus::kFailed);
}

SCHED_DB_TEST_SUITE(WorkflowRunRepositoryTest);

}  // namespace
}  // namespace sched::store
