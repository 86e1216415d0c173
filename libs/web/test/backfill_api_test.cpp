// Backfills over real HTTP, on SQLite and MariaDB (the master's part: trigger's master_test).

#include "sched/store/backfill.hpp"
#include "web_test_base.hpp"

namespace sched::web::testing {
namespace {

using http::Method;

constexpr std::int64_t kMinute = 60'000;

class BackfillApiTest : public WebApiTest {
  protected:
    std::string BackfillPath(const nlohmann::json& job) { return "/api/v1/jobs/" + job["id"].dump() + "/backfill"; }
    // A fire of `kind` at `t`, ended as succeeded.
    void InsertKind(std::int64_t job_id, std::int64_t t, model::FireKind kind) {
        model::Fire f;
        f.job_id = job_id;
        f.scheduled_time = t;
        f.kind = kind;
        f.status = model::FireStatus::kSucceeded;
        auto id =
            db().Run([&](soci::session& s) { return store::FireRepository::InsertIfAbsent(s, db().dialect(), f); });
        ASSERT_TRUE(id.ok() && *id);
    }
};

TEST_P(BackfillApiTest, BadBodiesAre400NamingTheField) {
    const auto job = CreateJob("every-minute");
    const auto every_second = CreateJob("every-second", {{"schedule_expr", "* * * * * ?"}});
    const std::int64_t now = DbNowMs();
    const std::int64_t from = now - 10 * kMinute;
    const auto expect_400 = [&](const nlohmann::json& target, const nlohmann::json& body, const std::string& field,
                                const std::string& in_message) {
        auto r = Post(BackfillPath(target), body);
        EXPECT_EQ(r.status, 400) << body.dump() << " -> " << r.body;
        EXPECT_EQ(ErrorField(r), field) << body.dump() << " -> " << r.body;
        EXPECT_NE(r.body.find(in_message), std::string::npos) << body.dump() << " -> " << r.body;
    };
    expect_400(job, {{"to", now}}, "from", "required");
    expect_400(job, {{"from", from}}, "to", "required");
    expect_400(job, {{"from", -5}, {"to", now}}, "from", "negative");
    expect_400(job, {{"from", "yesterday"}, {"to", now}}, "from", "ISO-8601");
    expect_400(job, {{"from", true}, {"to", now}}, "from", "expected epoch milliseconds");
    expect_400(job, {{"from", std::string(100, '1')}, {"to", now}}, "from", "at most 64");
    expect_400(job, {{"from", now}, {"to", from}}, "to", "after from");
    expect_400(job, {{"from", from}, {"to", now + 3'600'000}}, "to", "future");
    expect_400(job, {{"from", from}, {"to", now}, {"overlap", "eager"}}, "overlap", "serial");
    expect_400(job, {{"from", from}, {"to", now}, {"max_parallel", 3}}, "max_parallel", "");
    expect_400(job, {{"from", from}, {"to", now}, {"overlap", "parallel"}, {"max_parallel", 0}}, "max_parallel", "");
    expect_400(job, {{"from", from}, {"to", now}, {"overlap", "parallel"}, {"max_parallel", 101}}, "max_parallel", "");
    expect_400(job, {{"from", from}, {"to", now}, {"dry_run", "yes"}}, "dry_run", "");
    expect_400(job, {{"from", from}, {"to", now}, {"colour", "red"}}, "colour", "unknown field");
    // 3 h of an every-second job: 10,800 times, over the bound of 10,000; the message says so.
    expect_400(every_second, {{"from", now - 3 * 3'600'000}, {"to", now}}, "to", "holds 10800 scheduled times");
    expect_400(job, {{"from", from + 1}, {"to", from + 2}}, "from", "no scheduled time");
    EXPECT_EQ(RefusedField(Call(Method::kPost, BackfillPath(job), "[1]"), 400), "body");
    EXPECT_EQ(Post("/api/v1/jobs/424242/backfill", {{"from", from}, {"to", now}}).status, 404);
    const auto delayed = CreateJob("delayed", {{"schedule_type", "fixed-delay"}, {"schedule_expr", "1m"}});
    auto conflict = Post(BackfillPath(delayed), {{"from", from}, {"to", now}});
    EXPECT_EQ(conflict.status, 409) << conflict.body;
    EXPECT_NE(conflict.body.find("fixed-delay"), std::string::npos);
    // Nothing was stored by any of them.
    EXPECT_EQ(Body(Get("/api/v1/jobs/" + job["id"].dump() + "/backfills"))["items"].size(), 0u);
}

TEST_P(BackfillApiTest, DryRunListsTheTimesAndWhichAlreadyHaveAFire) {
    const auto job = CreateJob("every-minute");
    const std::int64_t id = job["id"].get<std::int64_t>();
    const std::int64_t base = (DbNowMs() / kMinute - 30) * kMinute;
    InsertKind(id, base + 1 * kMinute, model::FireKind::kSchedule);
    InsertKind(id, base + 3 * kMinute, model::FireKind::kBackfill);
    auto r = Post(BackfillPath(job), {{"from", base}, {"to", base + 5 * kMinute}, {"dry_run", true}});
    ASSERT_EQ(r.status, 200) << r.body;
    const auto body = Body(r);
    EXPECT_EQ(body["planned"], 5);
    EXPECT_EQ(body["would_run"], 3);
    EXPECT_EQ(body["existing"], 2);
    ASSERT_EQ(body["items"].size(), 5u);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(body["items"][i]["scheduled_time"], base + i * kMinute);
    EXPECT_EQ(body["items"][0]["existing"], nullptr);
    EXPECT_EQ(body["items"][1]["existing"], "schedule");
    EXPECT_EQ(body["items"][3]["existing"], "backfill");
    EXPECT_EQ(Body(Get("/api/v1/jobs/" + job["id"].dump() + "/backfills"))["items"].size(), 0u)
        << "a dry run stores nothing";
    // ISO-8601 instants name the same range.
    auto iso =
        Post(BackfillPath(job), {{"from", "1970-01-01T00:00:00Z"}, {"to", "1970-01-01T00:05:00Z"}, {"dry_run", true}});
    ASSERT_EQ(iso.status, 200) << iso.body;
    EXPECT_EQ(Body(iso)["planned"], 5);
    EXPECT_EQ(Body(iso)["to"], 5 * kMinute);
}

TEST_P(BackfillApiTest, CreateIs201WithLocationThenReadListAndCancel) {
    const auto job = CreateJob("every-minute");
    const std::int64_t id = job["id"].get<std::int64_t>();
    const std::int64_t base = (DbNowMs() / kMinute - 30) * kMinute;
    InsertKind(id, base, model::FireKind::kBackfill);  // as a master would have created it
    auto created = Post(BackfillPath(job),
                        {{"from", base}, {"to", base + 4 * kMinute}, {"overlap", "parallel"}, {"max_parallel", 2}});
    ASSERT_EQ(created.status, 201) << created.body;
    const auto b = Body(created);
    const std::string location = "/api/v1/backfills/" + b["id"].dump();
    EXPECT_EQ(created.headers.Get("Location").value_or(""), location);
    EXPECT_EQ(b["job_id"], id);
    EXPECT_EQ(b["from"], base);
    EXPECT_EQ(b["to"], base + 4 * kMinute);
    EXPECT_EQ(b["overlap"], "parallel");
    EXPECT_EQ(b["max_parallel"], 2);
    EXPECT_EQ(b["state"], "running");
    EXPECT_EQ(b["counts"]["planned"], 4);
    EXPECT_EQ(b["counts"]["created"], 0);
    EXPECT_EQ(b["counts"]["succeeded"], 1);  // the backfill fire already in the range
    EXPECT_EQ(b["created_by"], "cluster-token");

    auto got = Get(location);
    ASSERT_EQ(got.status, 200) << got.body;
    EXPECT_EQ(Body(got)["id"], b["id"]);
    auto list = Body(Get("/api/v1/jobs/" + job["id"].dump() + "/backfills"));
    ASSERT_EQ(list["items"].size(), 1u);
    EXPECT_EQ(list["items"][0]["id"], b["id"]);
    EXPECT_EQ(list["next_cursor"], nullptr);

    const std::string viewer = CreateToken("watcher", "viewer");
    EXPECT_EQ(Get(location, viewer).status, 200);
    EXPECT_EQ(Post(BackfillPath(job), {{"from", base}, {"to", base + kMinute}}, viewer).status, 403);
    EXPECT_EQ(Call(Method::kPost, location + "/cancel", "", viewer).status, 403);

    auto cancelled = Call(Method::kPost, location + "/cancel");
    ASSERT_EQ(cancelled.status, 200) << cancelled.body;
    EXPECT_EQ(Body(cancelled)["state"], "cancelled");
    EXPECT_NE(Body(cancelled)["finished_at"], nullptr);
    EXPECT_EQ(Call(Method::kPost, location + "/cancel").status, 409);
    EXPECT_EQ(Get("/api/v1/backfills/424242").status, 404);
    EXPECT_EQ(Call(Method::kPost, location + "/cancel", "{\"now\": 1}").status, 400);
}

TEST_P(BackfillApiTest, ARepeatedBackfillFindsEveryTimeAlreadyFired) {
    // The master created the first backfill's fires (kind backfill); a second identical request
    // would run none of them: its dry run says so, and the fires table does not grow.
    const auto job = CreateJob("every-minute");
    const std::int64_t id = job["id"].get<std::int64_t>();
    const std::int64_t base = (DbNowMs() / kMinute - 30) * kMinute;
    for (int i = 0; i < 3; ++i) InsertKind(id, base + i * kMinute, model::FireKind::kBackfill);
    const nlohmann::json range = {{"from", base}, {"to", base + 3 * kMinute}};
    auto dry = range;
    dry["dry_run"] = true;
    auto r = Post(BackfillPath(job), dry);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(Body(r)["would_run"], 0);
    EXPECT_EQ(Body(r)["existing"], 3);
    ASSERT_EQ(Post(BackfillPath(job), range).status, 201);
    EXPECT_EQ(Body(Get("/api/v1/fires?job_id=" + job["id"].dump()))["items"].size(), 3u);
}

TEST_P(BackfillApiTest, AJobHasAtMostTenRunningBackfills) {
    const auto job = CreateJob("every-minute");
    const std::int64_t base = (DbNowMs() / kMinute - 30) * kMinute;
    const nlohmann::json range = {{"from", base}, {"to", base + kMinute}};
    for (int i = 0; i < 10; ++i) ASSERT_EQ(Post(BackfillPath(job), range).status, 201) << i;
    auto over = Post(BackfillPath(job), range);
    EXPECT_EQ(over.status, 409) << over.body;
    EXPECT_NE(over.body.find("at most 10"), std::string::npos) << over.body;
    auto page = Body(Get("/api/v1/jobs/" + job["id"].dump() + "/backfills?limit=4"));
    EXPECT_EQ(page["items"].size(), 4u);
    EXPECT_NE(page["next_cursor"], nullptr);
}

SCHED_DB_TEST_SUITE(BackfillApiTest);

}  // namespace
}  // namespace sched::web::testing
