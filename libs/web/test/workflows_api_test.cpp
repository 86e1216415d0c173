// Workflows and their runs over real HTTP, on SQLite and MariaDB (docs/workflows.md).

#include "sched/store/fire.hpp"
#include "sched/store/workflow_run.hpp"
#include "web_test_base.hpp"

namespace sched::web::testing {
namespace {

using http::Method;

class WorkflowsApiTest : public WebApiTest {
  protected:
    // Three manual jobs a, b, c and the body of the workflow a -> b, a -> c (on-failure).
    nlohmann::json Body3(const std::string& name = "etl", const nlohmann::json& overrides = nlohmann::json::object()) {
        if (jobs_.empty()) {
            for (const char* job : {"a", "b", "c"}) {
                jobs_.push_back(
                    CreateJob(std::string("job-") + job, {{"schedule_type", "manual"}, {"schedule_expr", ""}})["id"]
                        .get<std::int64_t>());
            }
        }
        nlohmann::json body = {
            {"name", name},
            {"schedule_type", "manual"},
            {"steps",
             {{{"name", "a"}, {"job_id", jobs_[0]}},
              {{"name", "b"}, {"job_id", jobs_[1]}},
              {{"name", "c"}, {"job_id", jobs_[2]}}}},
            {"edges",
             {{{"parent", "a"}, {"child", "b"}}, {{"parent", "a"}, {"child", "c"}, {"condition", "on-failure"}}}}};
        body.update(overrides);
        return body;
    }
    nlohmann::json CreateWorkflow(const nlohmann::json& body) {
        auto r = Post("/api/v1/workflows", body);
        EXPECT_EQ(r.status, 201) << r.body;
        return Body(r);
    }
    static std::string PathOf(const nlohmann::json& w) {
        return "/api/v1/workflows/" + std::to_string(w["id"].get<std::int64_t>());
    }
    static std::string RunPath(const nlohmann::json& run) {
        return "/api/v1/workflow-runs/" + std::to_string(run["id"].get<std::int64_t>());
    }
    // Ends a running run as the master would (running -> status).
    void EndRun(std::int64_t run_id, model::WorkflowRunStatus status) {
        Status ended = pool_db_->InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Status {
            if (!store::WorkflowRunRepository::End(s, run_id, status, "step \"b\" failed", DbNowMs())) {
                return Aborted("not running");
            }
            return Status::Ok();
        });
        ASSERT_TRUE(ended.ok()) << ended.ToString();
    }

    std::vector<std::int64_t> jobs_;
};

TEST_P(WorkflowsApiTest, CreateListGetUpdateWithVersionPauseResumeDelete) {
    const auto created = CreateWorkflow(Body3("etl", {{"description", "nightly"}}));
    EXPECT_EQ(created["version"], 1);
    EXPECT_EQ(created["paused"], false);
    EXPECT_TRUE(created["next_fire_time"].is_null());  // manual
    EXPECT_EQ(created["max_concurrent_runs"], 1);
    ASSERT_EQ(created["steps"].size(), 3u);
    EXPECT_EQ(created["steps"][1], nlohmann::json({{"name", "b"}, {"job_id", jobs_[1]}}));
    EXPECT_EQ(created["edges"][0]["condition"], "on-success");  // the default
    EXPECT_EQ(created["edges"][1]["condition"], "on-failure");
    const std::string path = PathOf(created);

    auto got = Get(path);
    ASSERT_EQ(got.status, 200) << got.body;
    EXPECT_EQ(Body(got), created);
    const auto second = CreateWorkflow(Body3(
        "other", {{"steps", {{{"name", "x"}, {"job_id", CreateJob("x")["id"]}}}}, {"edges", nlohmann::json::array()}}));
    auto page = Get("/api/v1/workflows?limit=1");
    ASSERT_EQ(page.status, 200) << page.body;
    ASSERT_EQ(Body(page)["items"].size(), 1u);
    EXPECT_EQ(Body(page)["items"][0]["name"], "etl");
    ASSERT_TRUE(Body(page)["next_cursor"].is_string());
    auto rest = Get("/api/v1/workflows?limit=1&cursor=" + Body(page)["next_cursor"].get<std::string>());
    ASSERT_EQ(Body(rest)["items"].size(), 1u);
    EXPECT_EQ(Body(rest)["items"][0]["name"], "other");
    EXPECT_TRUE(Body(rest)["next_cursor"].is_null());

    // A cron schedule gets its next time from the DB clock; the edit bumps the version.
    const std::int64_t before = DbNowMs();
    auto updated = Put(path, {{"version", 1}, {"schedule_type", "cron"}, {"schedule_expr", "0 * * * * ?"}});
    ASSERT_EQ(updated.status, 200) << updated.body;
    EXPECT_EQ(Body(updated)["version"], 2);
    ASSERT_TRUE(Body(updated)["next_fire_time"].is_number_integer()) << updated.body;
    EXPECT_GT(Body(updated)["next_fire_time"].get<std::int64_t>(), before);
    EXPECT_LE(Body(updated)["next_fire_time"].get<std::int64_t>(), before + 61'000);
    EXPECT_EQ(Body(updated)["steps"], created["steps"]);  // left out: kept
    auto stale = Put(path, {{"version", 1}, {"description", "x"}});
    EXPECT_EQ(stale.status, 409) << stale.body;
    EXPECT_EQ(ErrorField(stale), "version");
    EXPECT_EQ(Put(path, {{"description", "x"}}).status, 400);  // the version is required

    auto paused = Call(Method::kPost, path + "/pause");
    ASSERT_EQ(paused.status, 200) << paused.body;
    EXPECT_EQ(Body(paused)["paused"], true);
    EXPECT_TRUE(Body(paused)["next_fire_time"].is_null());
    EXPECT_EQ(Body(paused)["version"], 3);
    auto resumed = Call(Method::kPost, path + "/resume");
    ASSERT_EQ(resumed.status, 200) << resumed.body;
    EXPECT_EQ(Body(resumed)["paused"], false);
    EXPECT_TRUE(Body(resumed)["next_fire_time"].is_number_integer());

    EXPECT_EQ(Post("/api/v1/workflows", Body3("etl")).status, 409);  // the name is taken
    EXPECT_EQ(Delete(path).status, 204);
    EXPECT_EQ(Get(path).status, 404);
    EXPECT_EQ(Delete(PathOf(second)).status, 204);
    EXPECT_EQ(Get("/api/v1/workflows/999").status, 404);
}

TEST_P(WorkflowsApiTest, ACycleIsRefusedWithItsPath) {
    auto r = Post("/api/v1/workflows",
                  Body3("loop", {{"edges", {{{"parent", "a"}, {"child", "b"}}, {{"parent", "b"}, {"child", "a"}}}}}));
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(ErrorField(r), "edges");
    EXPECT_NE(r.body.find("edges: cycle a -> b -> a"), std::string::npos) << r.body;
    EXPECT_EQ(Get("/api/v1/workflows").body.find("loop"), std::string::npos);
}

TEST_P(WorkflowsApiTest, InvalidBodiesAreRefusedNamingTheField) {
    (void)Body3();  // creates the jobs
    const std::pair<nlohmann::json, const char*> cases[] = {
        {{{"name", "w"}}, "steps"},
        {Body3("w", {{"steps", nlohmann::json::array()}}), "steps"},
        {Body3("w", {{"steps", "a"}}), "steps"},
        {Body3("w", {{"steps", {{{"name", "a"}, {"job_id", jobs_[0]}}, {{"name", "a"}, {"job_id", jobs_[1]}}}},
                     {"edges", nlohmann::json::array()}}),
         "steps[1].name"},
        {Body3("w", {{"steps", {{{"name", "a b"}, {"job_id", jobs_[0]}}}}, {"edges", nlohmann::json::array()}}),
         "steps[0].name"},
        {Body3("w", {{"steps", {{{"name", "a"}, {"job_id", 999}}}}, {"edges", nlohmann::json::array()}}),
         "steps[0].job_id"},
        {Body3("w", {{"steps", {{{"name", "a"}, {"job_id", "1"}}}}, {"edges", nlohmann::json::array()}}),
         "steps[0].job_id"},
        {Body3("w", {{"steps", {{{"name", "a"}, {"job_id", jobs_[0]}, {"jobs", 1}}}}}), "steps[0].jobs"},
        {Body3("w", {{"edges", {{{"parent", "a"}, {"child", "z"}}}}}), "edges[0].child"},
        {Body3("w", {{"edges", {{{"parent", "a"}, {"child", "b"}, {"condition", "sometimes"}}}}}),
         "edges[0].condition"},
        {Body3("w", {{"edges", {{{"parent", "a"}, {"child", "a"}}}}}), "edges[0].child"},
        {Body3("w", {{"schedule_type", "cron"}, {"schedule_expr", "61 * * * * ?"}}), "schedule_expr"},
        {Body3("w", {{"schedule_type", "weekly"}}), "schedule_type"},
        {Body3("w", {{"misfire_policy", "never"}}), "misfire_policy"},
        {Body3("w", {{"max_concurrent_runs", 0}}), "max_concurrent_runs"},
        {Body3("w", {{"run_timeout_ms", -1}}), "run_timeout_ms"},
        {Body3("w", {{"name", "no spaces"}}), "name"},
        {Body3("w", {{"version", 1}}), "version"},
        {Body3("w", {{"owner", "me"}}), "owner"},
    };
    for (const auto& [body, field] : cases) {
        auto r = Post("/api/v1/workflows", body);
        EXPECT_EQ(r.status, 400) << body.dump() << " " << r.body;
        EXPECT_EQ(ErrorField(r), field) << body.dump() << " " << r.body;
    }
    nlohmann::json many = nlohmann::json::array();
    for (int i = 0; i < 65; ++i) many.push_back({{"name", "s" + std::to_string(i)}, {"job_id", jobs_[0]}});
    EXPECT_EQ(RefusedField(Post("/api/v1/workflows", Body3("w", {{"steps", many}})), 400), "steps");
    // A job is a step of one workflow only.
    CreateWorkflow(Body3("first"));
    auto taken = Post("/api/v1/workflows", Body3("second"));
    EXPECT_EQ(taken.status, 409) << taken.body;
    EXPECT_EQ(ErrorField(taken), "steps[0].job_id");
    EXPECT_EQ(Body(Get("/api/v1/workflows"))["items"].size(), 1u);
}

TEST_P(WorkflowsApiTest, OneJobInTwoStepsIsA409NamingTheSecondStepWithoutSql) {
    Body3();
    const nlohmann::json twice = {
        {"steps", {{{"name", "a"}, {"job_id", jobs_[0]}}, {{"name", "b"}, {"job_id", jobs_[0]}}}},
        {"edges", {{{"parent", "a"}, {"child", "b"}}}}};
    auto r = Post("/api/v1/workflows", Body3("twice", twice));
    EXPECT_EQ(r.status, 409) << r.body;
    EXPECT_EQ(ErrorField(r), "steps[1].job_id") << r.body;
    const std::string message = Body(r)["error"]["message"].get<std::string>();
    for (const char* sql : {"INSERT", "workflow_step (", "while executing", ":job", ":wf"}) {
        EXPECT_EQ(message.find(sql), std::string::npos) << sql << " in " << message;
    }
    EXPECT_NE(message.find("\"a\""), std::string::npos) << message;  // names the step that has the job
    EXPECT_TRUE(Body(Get("/api/v1/workflows"))["items"].empty());
    // The same on an update.
    const auto w = CreateWorkflow(Body3("once"));
    nlohmann::json body = Body3("once", twice);
    body["version"] = w["version"];
    auto update = Put(PathOf(w), body);
    EXPECT_EQ(update.status, 409) << update.body;
    EXPECT_EQ(ErrorField(update), "steps[1].job_id") << update.body;
}

TEST_P(WorkflowsApiTest, TriggerCreatesARunAndOverlapIsRefused) {
    const auto w = CreateWorkflow(Body3());
    const std::int64_t before = DbNowMs();
    auto triggered = Post(PathOf(w) + "/trigger", {{"params", {{"day", "2026-11-27"}}}});
    ASSERT_EQ(triggered.status, 201) << triggered.body;
    const auto run = Body(triggered);
    EXPECT_EQ(run["workflow_id"], w["id"]);
    EXPECT_EQ(run["kind"], "manual");
    EXPECT_EQ(run["status"], "running");
    EXPECT_EQ(run["generation"], 0);
    EXPECT_EQ(run["workflow_version"], 1);
    EXPECT_EQ(run["params"], nlohmann::json({{"day", "2026-11-27"}}));
    EXPECT_EQ(run["created_by"], "cluster-token");
    EXPECT_GE(run["scheduled_time"].get<std::int64_t>(), before);
    EXPECT_TRUE(run["ended_at"].is_null());
    EXPECT_TRUE(run["from_step"].is_null());

    // max_concurrent_runs 1: a second trigger writes nothing.
    auto overlap = Call(Method::kPost, PathOf(w) + "/trigger");
    EXPECT_EQ(overlap.status, 409) << overlap.body;
    EXPECT_EQ(ErrorField(overlap), "max_concurrent_runs");
    auto runs = Get(PathOf(w) + "/runs");
    ASSERT_EQ(runs.status, 200) << runs.body;
    ASSERT_EQ(Body(runs)["items"].size(), 1u);
    EXPECT_EQ(Body(runs)["items"][0]["id"], run["id"]);
    EXPECT_FALSE(Body(runs)["items"][0].contains("steps"));

    // Deleting is refused while a run is running.
    auto refused = Delete(PathOf(w));
    EXPECT_EQ(refused.status, 409) << refused.body;
    EXPECT_EQ(ErrorField(refused), "id");

    // Bounds of the body.
    EXPECT_EQ(RefusedField(Post(PathOf(w) + "/trigger", {{"params", std::string(65536, 'x')}}), 400), "params");
    EXPECT_EQ(ErrorField(Post(PathOf(w) + "/trigger", {{"param", 1}})), "param");
    EXPECT_EQ(Call(Method::kPost, "/api/v1/workflows/999/trigger").status, 404);

    // With room for two, the second run is newest first in the list.
    EndRun(run["id"], model::WorkflowRunStatus::kSucceeded);
    auto again = Call(Method::kPost, PathOf(w) + "/trigger", R"({"params":"plain text"})");
    ASSERT_EQ(again.status, 201) << again.body;
    EXPECT_EQ(Body(again)["params"], "plain text");
    auto page = Get(PathOf(w) + "/runs?limit=1");
    ASSERT_EQ(Body(page)["items"].size(), 1u);
    EXPECT_EQ(Body(page)["items"][0]["id"], Body(again)["id"]);
    auto rest = Get(PathOf(w) + "/runs?limit=1&cursor=" + Body(page)["next_cursor"].get<std::string>());
    ASSERT_EQ(Body(rest)["items"].size(), 1u);
    EXPECT_EQ(Body(rest)["items"][0]["id"], run["id"]);
    EXPECT_TRUE(Body(rest)["next_cursor"].is_null());
}

TEST_P(WorkflowsApiTest, ARunShowsItsStepsWaitingBeforeAnyFire) {
    const auto w = CreateWorkflow(Body3());
    auto triggered = Call(Method::kPost, PathOf(w) + "/trigger");
    ASSERT_EQ(triggered.status, 201) << triggered.body;
    // An edit after the run does not change the run's copy.
    ASSERT_EQ(Put(PathOf(w), {{"version", 1}, {"edges", nlohmann::json::array()}}).status, 200);
    auto got = Get(RunPath(Body(triggered)));
    ASSERT_EQ(got.status, 200) << got.body;
    const auto run = Body(got);
    EXPECT_EQ(run["status"], "running");
    ASSERT_EQ(run["steps"].size(), 3u);
    for (const auto& step : run["steps"]) {
        EXPECT_EQ(step["state"], "waiting") << step.dump();
        EXPECT_TRUE(step["fire_id"].is_null()) << step.dump();
        EXPECT_TRUE(step["lag_ms"].is_null()) << step.dump();
        EXPECT_EQ(step["attempts"], 0) << step.dump();
    }
    EXPECT_EQ(run["steps"][2]["name"], "c");
    EXPECT_EQ(run["steps"][2]["job_id"], jobs_[2]);
    ASSERT_EQ(run["edges"].size(), 2u);
    EXPECT_EQ(run["edges"][1], nlohmann::json({{"parent", "a"}, {"child", "c"}, {"condition", "on-failure"}}));
    EXPECT_EQ(Get("/api/v1/workflow-runs/999").status, 404);
}

TEST_P(WorkflowsApiTest, ARunStepShowsItsFireAndLag) {
    const auto w = CreateWorkflow(Body3());
    const auto run = Body(Call(Method::kPost, PathOf(w) + "/trigger"));
    // Step a's first fire, dispatched 7 ms after its scheduled time, as the master and a slave make it.
    model::Fire f;
    f.job_id = jobs_[0];
    f.scheduled_time = run["scheduled_time"];
    f.kind = model::FireKind::kWorkflow;
    f.epoch = 1;
    f.workflow_run_id = run["id"].get<std::int64_t>();
    f.workflow_step = "a";
    auto id = db().Run([&](soci::session& s) { return store::FireRepository::InsertIfAbsent(s, db().dialect(), f); });
    ASSERT_TRUE(id.ok() && *id);
    ASSERT_TRUE(store::FireRepository(db())
                    .Transition(**id, {model::FireStatus::kPending}, model::FireStatus::kDispatching,
                                {.assigned_node = "node-a", .dispatched_at = f.scheduled_time + 7})
                    .ok());
    auto got = Get(RunPath(run));
    ASSERT_EQ(got.status, 200) << got.body;
    const auto a = Body(got)["steps"][0];
    EXPECT_EQ(a["state"], "running") << a.dump();
    EXPECT_EQ(a["fire_id"], **id);
    EXPECT_EQ(a["fire_status"], "dispatching");
    EXPECT_EQ(a["generation"], 0);
    EXPECT_EQ(a["attempts"], 1);
    EXPECT_EQ(a["ready_at"], run["started_at"]);  // a root is ready when the run starts
    EXPECT_EQ(a["dispatched_at"], f.scheduled_time + 7);
    EXPECT_EQ(a["lag_ms"], f.scheduled_time + 7 - run["started_at"].get<std::int64_t>());
    EXPECT_EQ(Body(got)["steps"][1]["state"], "waiting");
}

TEST_P(WorkflowsApiTest, RerunIsRefusedUnlessTheRunFailedAndThereIsRoom) {
    const auto w = CreateWorkflow(Body3());
    const auto run = Body(Call(Method::kPost, PathOf(w) + "/trigger"));
    const std::string rerun = RunPath(run) + "/rerun";
    auto unknown = Post(rerun, {{"from_step", "z"}});
    EXPECT_EQ(unknown.status, 400) << unknown.body;
    EXPECT_EQ(ErrorField(unknown), "from_step");
    EXPECT_EQ(ErrorField(Post(rerun, nlohmann::json::object())), "from_step");
    auto running = Post(rerun, {{"from_step", "b"}});
    EXPECT_EQ(running.status, 409) << running.body;
    EXPECT_EQ(ErrorField(running), "status");

    EndRun(run["id"], model::WorkflowRunStatus::kFailed);
    // Another run running uses the only slot.
    auto other = Call(Method::kPost, PathOf(w) + "/trigger");
    ASSERT_EQ(other.status, 201) << other.body;
    auto full = Post(rerun, {{"from_step", "b"}});
    EXPECT_EQ(full.status, 409) << full.body;
    EXPECT_EQ(ErrorField(full), "max_concurrent_runs");
    EndRun(Body(other)["id"], model::WorkflowRunStatus::kSucceeded);

    auto again = Post(rerun, {{"from_step", "b"}});
    ASSERT_EQ(again.status, 200) << again.body;
    EXPECT_EQ(Body(again)["status"], "running");
    EXPECT_EQ(Body(again)["generation"], 1);
    EXPECT_EQ(Body(again)["from_step"], "b");
    EXPECT_TRUE(Body(again)["reason"].is_null());
    EXPECT_EQ(Post(rerun, {{"from_step", "b"}}).status, 409);  // running again
    EXPECT_EQ(Post("/api/v1/workflow-runs/999/rerun", {{"from_step", "b"}}).status, 404);
}

TEST_P(WorkflowsApiTest, RolesGateEachRoute) {
    const auto w = CreateWorkflow(Body3());
    const auto run = Body(Call(Method::kPost, PathOf(w) + "/trigger"));
    const std::string viewer = CreateToken("watcher", "viewer");
    EXPECT_EQ(Get("/api/v1/workflows", viewer).status, 200);
    EXPECT_EQ(Get(PathOf(w), viewer).status, 200);
    EXPECT_EQ(Get(PathOf(w) + "/runs", viewer).status, 200);
    EXPECT_EQ(Get(RunPath(run), viewer).status, 200);
    EXPECT_EQ(Post("/api/v1/workflows", Body3("w2"), viewer).status, 403);
    EXPECT_EQ(Put(PathOf(w), {{"version", 1}}, viewer).status, 403);
    EXPECT_EQ(Call(Method::kPost, PathOf(w) + "/pause", "", viewer).status, 403);
    EXPECT_EQ(Call(Method::kPost, PathOf(w) + "/trigger", "", viewer).status, 403);
    EXPECT_EQ(Post(RunPath(run) + "/rerun", {{"from_step", "a"}}, viewer).status, 403);
    EXPECT_EQ(Delete(PathOf(w), viewer).status, 403);
    const std::string executor = CreateToken("runner", "executor");
    EXPECT_EQ(Get("/api/v1/workflows", executor).status, 403);
    EXPECT_EQ(Get("/api/v1/workflows", "").status, 401);
    // An operator token may trigger; the run names it.
    const std::string op = CreateToken("ops-bot", "operator");
    EndRun(run["id"], model::WorkflowRunStatus::kSucceeded);
    auto triggered = Call(Method::kPost, PathOf(w) + "/trigger", "", op);
    ASSERT_EQ(triggered.status, 201) << triggered.body;
    EXPECT_EQ(Body(triggered)["created_by"], "ops-bot");
}

SCHED_DB_TEST_SUITE(WorkflowsApiTest);

}  // namespace
}  // namespace sched::web::testing
