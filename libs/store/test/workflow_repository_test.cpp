#include "created_record.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"
#include "sched/store/workflow.hpp"
#include "store_test_base.hpp"

namespace sched::store {

using model::EdgeCondition;
using model::Fire;
using model::Workflow;
using model::WorkflowErrorField;
namespace {

class WorkflowRepositoryTest : public StoreTest {
  protected:
    // The number a SELECT COUNT(*) statement answers; -1 when it fails.
    long long Count(const std::string& sql) {
        auto n = db().Run([&](soci::session& s) {
            long long n = 0;
            s << sql, soci::into(n);
            return n;
        });
        EXPECT_TRUE(n.ok()) << n.status().ToString();
        return n.ok() ? *n : -1;
    }

    // A manual job named `name` (the usual step job); returns its id.
    std::int64_t MakeJob(const std::string& name) {
        return CreateJob({.name = name, .app = "etl", .handler = name, .schedule_type = ScheduleType::kManual}).id;
    }

    // The diamond a -> {b, c} -> d over four new jobs, on a cron schedule.
    Workflow Diamond(const std::string& name) {
        Workflow w;
        w.name = name;
        w.description = "export, transform twice, load";
        w.schedule_type = ScheduleType::kCron;
        w.schedule_expr = "0 0 2 * * ?";
        w.time_zone = "Europe/Berlin";
        w.misfire_policy = MisfirePolicy::kFireAll;
        w.max_concurrent_runs = 2;
        w.run_timeout_ms = 3'600'000;
        w.next_fire_time = 1'800'000'000'000;
        for (const char* step : {"a", "b", "c", "d"}) w.steps.push_back({step, MakeJob(name + "-" + step)});
        w.edges = {{"a", "b", EdgeCondition::kOnSuccess},
                   {"a", "c", EdgeCondition::kOnFailure},
                   {"b", "d", EdgeCondition::kOnSuccess},
                   {"c", "d", EdgeCondition::kAlways}};
        return w;
    }
};

TEST_P(WorkflowRepositoryTest, CreateGetListRoundTripEveryField) {
    WorkflowRepository workflows(db());
    const Workflow want = Diamond("nightly");
    auto created = workflows.Create(want);
    ASSERT_NO_FATAL_FAILURE(ExpectCreated(created));

    auto got = workflows.Get(created->id);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->name, "nightly");
    EXPECT_EQ(got->description, want.description);
    EXPECT_EQ(got->schedule_type, ScheduleType::kCron);
    EXPECT_EQ(got->schedule_expr, want.schedule_expr);
    EXPECT_EQ(got->time_zone, "Europe/Berlin");
    EXPECT_EQ(got->misfire_policy, MisfirePolicy::kFireAll);
    EXPECT_EQ(got->max_concurrent_runs, 2);
    EXPECT_EQ(got->run_timeout_ms, 3'600'000);
    EXPECT_FALSE(got->paused);
    EXPECT_EQ(got->next_fire_time, want.next_fire_time);
    EXPECT_EQ(got->steps, want.steps);
    EXPECT_EQ(got->edges, want.edges);

    EXPECT_EQ(workflows.GetByName("nightly")->id, created->id);
    EXPECT_EQ(workflows.GetByName("nope").status().code(), Code::kNotFound);
    EXPECT_EQ(workflows.Get(created->id + 100).status().code(), Code::kNotFound);

    auto second = workflows.Create(Diamond("weekly"));
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    auto listed = workflows.List(0, 10);
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    ASSERT_EQ(listed->size(), 2u);
    EXPECT_EQ(listed->at(0).steps, want.steps);
    EXPECT_EQ(listed->at(1).name, "weekly");
    EXPECT_EQ(listed->at(1).edges.size(), 4u);
    auto page = workflows.List(created->id, 1);
    ASSERT_TRUE(page.ok());
    ASSERT_EQ(page->size(), 1u);
    EXPECT_EQ(page->at(0).id, second->id);
    EXPECT_TRUE(workflows.List(second->id, 10)->empty());
}

// As for a job: a stored name this release does not know reads as the safe default (manual,
// fire-once-now), so the workflow and the ones beside it stay readable.
TEST_P(WorkflowRepositoryTest, ReadsUnknownStoredNamesAsTheDefaults) {
    WorkflowRepository workflows(db());
    auto created = workflows.Create(Diamond("odd"));
    ASSERT_NO_FATAL_FAILURE(ExpectCreated(created));
    const std::int64_t id = created->id;
    ASSERT_TRUE(db().Run([&](soci::session& s) {
                        s << "UPDATE workflow SET schedule_type = 'hourly', misfire_policy = 'later' WHERE id = :id",
                            soci::use(id);
                    })
                    .ok());
    auto got = workflows.Get(id);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->schedule_type, ScheduleType::kManual);
    EXPECT_EQ(got->misfire_policy, MisfirePolicy::kFireOnceNow);
}

TEST_P(WorkflowRepositoryTest, ManagedByRoundTripsAndClears) {
    WorkflowRepository workflows(db());
    auto plain = workflows.Create(Diamond("by-hand"));
    ASSERT_TRUE(plain.ok()) << plain.status().ToString();
    EXPECT_FALSE(plain->managed_by);
    Workflow in = Diamond("from-file");
    in.managed_by = "flows.yaml";
    auto created = workflows.Create(in);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    EXPECT_EQ(created->managed_by, std::optional<std::string>("flows.yaml"));
    Workflow edited = *created;
    edited.managed_by.reset();
    auto updated = workflows.Update(edited, created->version);
    ASSERT_TRUE(updated.ok()) << updated.status().ToString();
    EXPECT_FALSE(updated->managed_by);
}

TEST_P(WorkflowRepositoryTest, CreateRefusesWhatIsNotAValidWorkflow) {
    WorkflowRepository workflows(db());
    auto missing_job = Diamond("w");
    missing_job.steps[2].job_id = 999'999;
    auto refused = workflows.Create(missing_job);
    ASSERT_EQ(refused.status().code(), Code::kInvalidArgument) << refused.status().ToString();
    EXPECT_EQ(WorkflowErrorField(refused.status()), "steps[2].job_id");
    EXPECT_NE(refused.status().message().find("999999"), std::string::npos);

    auto cyclic = Diamond("w2");
    cyclic.edges.push_back({"d", "a", EdgeCondition::kAlways});
    refused = workflows.Create(cyclic);
    ASSERT_EQ(refused.status().code(), Code::kInvalidArgument);
    EXPECT_EQ(refused.status().message(), "edges: cycle a -> b -> d -> a");

    // Nothing of the refused workflows was stored.
    EXPECT_TRUE(workflows.List(0, 10)->empty());
    EXPECT_EQ(Count("SELECT COUNT(*) FROM workflow_step"), 0);
}

TEST_P(WorkflowRepositoryTest, NamesAndJobsAreNotShared) {
    WorkflowRepository workflows(db());
    auto first = workflows.Create(Diamond("nightly"));
    ASSERT_TRUE(first.ok()) << first.status().ToString();

    auto same_name = Diamond("nightly2");
    same_name.name = "nightly";
    EXPECT_EQ(workflows.Create(same_name).status().code(), Code::kAlreadyExists);

    auto shares_job = Diamond("other");
    shares_job.steps[1].job_id = first->steps[3].job_id;  // nightly's step d
    auto refused = workflows.Create(shares_job);
    ASSERT_EQ(refused.status().code(), Code::kFailedPrecondition) << refused.status().ToString();
    EXPECT_EQ(WorkflowErrorField(refused.status()), "steps[1].job_id");
    EXPECT_NE(refused.status().message().find("step \"d\" of workflow \"nightly\""), std::string::npos)
        << refused.status().message();

    auto used = db().Run([&](soci::session& s) { return WorkflowRepository::StepUsingJob(s, first->steps[3].job_id); });
    ASSERT_TRUE(used.ok());
    EXPECT_EQ(*used, std::optional<std::string>("nightly/d"));
    auto unused = db().Run([&](soci::session& s) { return WorkflowRepository::StepUsingJob(s, 999'999); });
    EXPECT_FALSE(unused->has_value());
}

TEST_P(WorkflowRepositoryTest, UpdateNeedsTheVersionItReadAndReplacesTheDefinition) {
    WorkflowRepository workflows(db());
    auto created = workflows.Create(Diamond("nightly"));
    ASSERT_TRUE(created.ok()) << created.status().ToString();

    // a -> d only, b and c gone, a new step e after d; renamed; manual schedule.
    Workflow edited = *created;
    edited.name = "nightly-v2";
    edited.schedule_type = ScheduleType::kManual;
    edited.schedule_expr = "";
    edited.next_fire_time.reset();
    edited.max_concurrent_runs = 1;
    edited.steps = {created->steps[0], created->steps[3], {"e", MakeJob("e")}};
    edited.edges = {{"a", "d", EdgeCondition::kAlways}, {"d", "e", EdgeCondition::kOnFailure}};
    auto updated = workflows.Update(edited, 1);
    ASSERT_TRUE(updated.ok()) << updated.status().ToString();
    EXPECT_EQ(updated->version, 2);
    EXPECT_EQ(updated->name, "nightly-v2");
    EXPECT_EQ(updated->schedule_type, ScheduleType::kManual);
    EXPECT_FALSE(updated->next_fire_time.has_value());
    EXPECT_EQ(updated->steps, edited.steps);
    EXPECT_EQ(updated->edges, edited.edges);
    EXPECT_EQ(updated->created_at, created->created_at);

    // The jobs of the dropped steps b and c are free for another workflow now.
    Workflow other;
    other.name = "other";
    other.steps = {created->steps[1], created->steps[2]};
    EXPECT_TRUE(workflows.Create(other).ok());

    auto stale = workflows.Update(edited, 1);
    EXPECT_EQ(stale.status().code(), Code::kAborted);
    EXPECT_NE(stale.status().message().find("version 2"), std::string::npos) << stale.status().message();

    // A refused update changes nothing (one transaction).
    Workflow bad = *updated;
    bad.description = "changed";
    bad.steps.push_back({"x", 999'999});
    auto refused = workflows.Update(bad, 2);
    EXPECT_EQ(WorkflowErrorField(refused.status()), "steps[3].job_id");
    bad = *updated;
    bad.name = "other";
    EXPECT_EQ(workflows.Update(bad, 2).status().code(), Code::kAlreadyExists);
    auto after = workflows.Get(created->id);
    EXPECT_EQ(after->version, 2);
    EXPECT_EQ(after->description, created->description);
    EXPECT_EQ(after->steps, edited.steps);

    edited.id = 999'999;
    EXPECT_EQ(workflows.Update(edited, 2).status().code(), Code::kNotFound);
}

TEST_P(WorkflowRepositoryTest, PauseClearsTheNextTimeAndResumeSetsIt) {
    WorkflowRepository workflows(db());
    auto created = workflows.Create(Diamond("nightly"));
    ASSERT_TRUE(created.ok());
    auto paused = workflows.SetPaused(created->id, true, 1'900'000'000'000);
    ASSERT_TRUE(paused.ok()) << paused.status().ToString();
    EXPECT_TRUE(paused->paused);
    EXPECT_FALSE(paused->next_fire_time.has_value());
    EXPECT_EQ(paused->version, 2);
    auto resumed = workflows.SetPaused(created->id, false, 1'900'000'000'000);
    ASSERT_TRUE(resumed.ok());
    EXPECT_FALSE(resumed->paused);
    EXPECT_EQ(resumed->next_fire_time, 1'900'000'000'000);
    EXPECT_EQ(resumed->version, 3);
    EXPECT_EQ(workflows.SetPaused(999'999, true, std::nullopt).status().code(), Code::kNotFound);
}

TEST_P(WorkflowRepositoryTest, DeleteWaitsForRunningRunsAndKeepsTheRuns) {
    WorkflowRepository workflows(db());
    auto created = workflows.Create(Diamond("nightly"));
    ASSERT_TRUE(created.ok());
    const std::int64_t id = created->id;
    auto insert_run = [&](const std::string& status) {
        return db().Run([&](soci::session& s) {
            s << "INSERT INTO workflow_run (workflow_id, scheduled_time, kind, status, workflow_version, definition, "
                 "created_at, updated_at) VALUES (:id, 1000, 'schedule', :status, 1, '{}', 1, 1)",
                soci::use(id, "id"), soci::use(status, "status");
        });
    };
    ASSERT_TRUE(insert_run("running").ok());
    auto refused = workflows.Delete(id);
    ASSERT_EQ(refused.code(), Code::kFailedPrecondition) << refused.ToString();
    EXPECT_EQ(WorkflowErrorField(refused), "id");
    EXPECT_TRUE(workflows.Get(id).ok());

    ASSERT_TRUE(db().Run([&](soci::session& s) {
                        s << "UPDATE workflow_run SET status = 'failed' WHERE workflow_id = :id", soci::use(id, "id");
                    })
                    .ok());
    ASSERT_TRUE(workflows.Delete(id).ok());
    EXPECT_EQ(workflows.Get(id).status().code(), Code::kNotFound);
    EXPECT_EQ(workflows.Delete(id).code(), Code::kNotFound);
    auto counts = db().Run([&](soci::session& s) {
        long long steps = 0;
        long long edges = 0;
        long long runs = 0;
        s << "SELECT COUNT(*) FROM workflow_step", soci::into(steps);
        s << "SELECT COUNT(*) FROM workflow_edge", soci::into(edges);
        s << "SELECT COUNT(*) FROM workflow_run", soci::into(runs);
        return std::vector<long long>{steps, edges, runs};
    });
    EXPECT_EQ(*counts, (std::vector<long long>{0, 0, 1}));
    // With the workflow gone its jobs can be deleted.
    EXPECT_TRUE(JobRepository(db()).Delete(created->steps[3].job_id).ok());
    // Its jobs can be steps again.
    EXPECT_TRUE(workflows.Create(Workflow{.name = "again", .steps = {{"a", created->steps[0].job_id}}}).ok());
}

TEST_P(WorkflowRepositoryTest, RunKeyIsUniquePerScheduledTime) {
    WorkflowRepository workflows(db());
    auto created = workflows.Create(Diamond("nightly"));
    ASSERT_TRUE(created.ok());
    const std::int64_t id = created->id;
    auto insert_run = [&](std::int64_t time) {
        return db().Run([&](soci::session& s) {
            s << "INSERT INTO workflow_run (workflow_id, scheduled_time, kind, status, workflow_version, definition, "
                 "created_at, updated_at) VALUES (:id, :t, 'schedule', 'running', 1, '{}', 1, 1)",
                soci::use(id, "id"), soci::use(time, "t");
        });
    };
    ASSERT_TRUE(insert_run(1000).ok());
    EXPECT_TRUE(insert_run(2000).ok());
    EXPECT_EQ(insert_run(1000).code(), Code::kAlreadyExists);
}

TEST_P(WorkflowRepositoryTest, FiresCarryTheirRunAndStepAndOrdinaryFiresLeaveThemNull) {
    const std::int64_t job = MakeJob("plain");
    // The ordinary fire path (insert-if-absent, many rows at once) names its columns: the new
    // nullable ones stay NULL.
    std::vector<Fire> fires(3);
    for (int i = 0; i < 3; ++i) {
        fires[i].job_id = job;
        fires[i].scheduled_time = 1000 + i;
        fires[i].epoch = 1;
    }
    auto inserted =
        db().Run([&](soci::session& s) { return FireRepository::InsertManyIfAbsent(s, db().dialect(), fires); });
    ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
    EXPECT_EQ(Count("SELECT COUNT(*) FROM job_fire WHERE workflow_run_id IS NULL AND workflow_step IS NULL"), 3);
    auto tagged = db().Run([&](soci::session& s) {
        s << "UPDATE job_fire SET workflow_run_id = 42, workflow_step = 'b' WHERE scheduled_time = 1001";
        long long n = 0;
        s << "SELECT COUNT(*) FROM job_fire WHERE workflow_run_id = 42 AND workflow_step = 'b'", soci::into(n);
        return n;
    });
    EXPECT_EQ(*tagged, 1);
}

TEST_P(WorkflowRepositoryTest, AJobThatIsAStepCannotBeDeleted) {
    WorkflowRepository workflows(db());
    auto created = workflows.Create(Diamond("nightly"));
    ASSERT_TRUE(created.ok());
    JobRepository jobs(db());
    const Status refused = jobs.Delete(created->steps[1].job_id);
    ASSERT_EQ(refused.code(), Code::kFailedPrecondition) << refused.ToString();
    EXPECT_NE(refused.message().find("nightly/b"), std::string::npos) << refused.message();
    EXPECT_TRUE(jobs.Get(created->steps[1].job_id).ok());
    // A job no workflow uses is deleted as before.
    const std::int64_t free = MakeJob("free");
    EXPECT_TRUE(jobs.Delete(free).ok());
    EXPECT_EQ(jobs.Delete(free).code(), Code::kNotFound);
}

SCHED_DB_TEST_SUITE(WorkflowRepositoryTest);

}  // namespace
}  // namespace sched::store
