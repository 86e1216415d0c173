// Jobs and schedules over real HTTP, on SQLite and MariaDB.

#include <atomic>
#include <set>

#include "sched/store/registry.hpp"
#include "web_test_base.hpp"

namespace sched::web::testing {
namespace {

using http::Method;

class JobsApiTest : public WebApiTest {};

TEST_P(JobsApiTest, CreateReadUpdateDeleteRoundTrip) {
    const auto before = DbNowMs();
    auto created = Post("/api/v1/jobs", JobBody("nightly", {{"description", "the nightly run"},
                                                            {"time_zone", "Europe/Berlin"},
                                                            {"params", {{"day", "today"}}},
                                                            {"retry_max", 2}}));
    ASSERT_EQ(created.status, 201) << created.body;
    const auto job = Body(created);
    EXPECT_GT(job["id"].get<std::int64_t>(), 0);
    EXPECT_EQ(created.headers.Get("Location").value_or(""),
              "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>()));
    EXPECT_EQ(job["version"], 1);
    EXPECT_EQ(job["name"], "nightly");
    EXPECT_EQ(job["time_zone"], "Europe/Berlin");
    EXPECT_EQ(job["params"], nlohmann::json({{"day", "today"}}));  // JSON params come back as JSON
    EXPECT_EQ(job["retry_max"], 2);
    EXPECT_EQ(job["routing"], "round-robin");  // defaults
    EXPECT_EQ(job["misfire_policy"], "fire-once-now");
    EXPECT_TRUE(job["enabled"].get<bool>());
    // Every minute on the minute, computed from the DB clock.
    const auto next = job["next_fire_time"].get<std::int64_t>();
    EXPECT_GT(next, before);
    EXPECT_LE(next, before + 61'000);
    EXPECT_EQ(next % 60'000, 0);

    const std::string path = "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>());
    auto got = Get(path);
    ASSERT_EQ(got.status, 200) << got.body;
    EXPECT_EQ(Body(got)["description"], "the nightly run");
    EXPECT_FALSE(Body(got).contains("last_fire"));

    auto updated = Put(path, {{"version", 1}, {"schedule_expr", "0 0 3 * * ?"}, {"description", "at three"}});
    ASSERT_EQ(updated.status, 200) << updated.body;
    const auto after = Body(updated);
    EXPECT_EQ(after["version"], 2);
    EXPECT_EQ(after["schedule_expr"], "0 0 3 * * ?");
    EXPECT_EQ(after["description"], "at three");
    EXPECT_EQ(after["name"], "nightly");  // fields left out keep their values
    EXPECT_EQ(after["retry_max"], 2);
    EXPECT_NE(after["next_fire_time"], job["next_fire_time"]);  // a new schedule, a new next time

    EXPECT_EQ(Delete(path).status, 204);
    EXPECT_EQ(RefusedField(Get(path), 404), "id");
    EXPECT_EQ(Delete(path).status, 404);
}

TEST_P(JobsApiTest, BadBodiesAre400NamingTheField) {
    const auto expect_400 = [&](const std::string& body, const std::string& field, const std::string& in_message) {
        auto r = Call(Method::kPost, "/api/v1/jobs", body);
        EXPECT_EQ(r.status, 400) << body << " -> " << r.body;
        EXPECT_EQ(ErrorField(r), field) << body << " -> " << r.body;
        EXPECT_NE(Body(r)["error"]["message"].get<std::string>().find(in_message), std::string::npos)
            << body << " -> " << r.body;
        EXPECT_EQ(Body(r)["error"]["code"], "invalid_argument") << r.body;
    };
    const auto with = [](const nlohmann::json& overrides) {
        return JobBody("j", overrides).dump();
    };
    expect_400("{\"name\": ", "body", "malformed JSON");
    expect_400("", "body", "empty body");
    expect_400("[1, 2]", "body", "expected a JSON object");
    expect_400(with({{"colour", "red"}}), "colour", "unknown field");
    expect_400(with({{"id", 7}}), "id", "read-only");
    expect_400(with({{"version", 3}}), "version", "leave it out");
    expect_400(with({{"concurrency_limit", "5"}}), "concurrency_limit", "expected an integer");
    expect_400(with({{"concurrency_limit", 0}}), "concurrency_limit", "1..1000");
    expect_400(with({{"enabled", "yes"}}), "enabled", "expected true or false");
    expect_400(with({{"timeout_ms", 1.5}}), "timeout_ms", "fractional");
}

TEST_P(JobsApiTest, ParamsAreJsonInAndOutAndOldStringRowsKeepWorking) {
    const auto id_of = [](const nlohmann::json& job) {
        return job["id"].get<std::int64_t>();
    };
    store::JobRepository jobs(db());
    // A JSON value is stored as its text: what the handler receives, as before.
    const auto object = CreateJob("object", {{"params", {{"ms", 5}, {"tags", {"a", "b"}}}}});
    EXPECT_EQ(object["params"], nlohmann::json({{"ms", 5}, {"tags", {"a", "b"}}}));
    EXPECT_EQ(jobs.Get(id_of(object))->params, R"({"ms":5,"tags":["a","b"]})");
    const auto number = CreateJob("number", {{"params", 12}});
    EXPECT_EQ(number["params"], 12);
    EXPECT_EQ(jobs.Get(id_of(number))->params, "12");
    // A string is stored verbatim (compatibility); JSON text inside it comes back as JSON.
    const auto text = CreateJob("text", {{"params", R"({"day":"today"})"}});
    EXPECT_EQ(text["params"], nlohmann::json({{"day", "today"}}));
    EXPECT_EQ(jobs.Get(id_of(text))->params, R"({"day":"today"})");
    // Text that is not JSON (older rows, free text) comes back as the string.
    const auto plain = CreateJob("plain", {{"params", "--verbose {not json"}});
    EXPECT_EQ(plain["params"], "--verbose {not json");
    const auto none = CreateJob("none");
    EXPECT_EQ(none["params"], "");
    // An update takes JSON too; leaving params out keeps them.
    const std::string path = "/api/v1/jobs/" + std::to_string(id_of(plain));
    auto updated = Put(path, {{"version", 1}, {"params", nlohmann::json::array({1, 2})}});
    ASSERT_EQ(updated.status, 200) << updated.body;
    EXPECT_EQ(Body(updated)["params"], nlohmann::json::array({1, 2}));
    auto kept = Put(path, {{"version", 2}, {"retry_max", 1}});
    ASSERT_EQ(kept.status, 200) << kept.body;
    EXPECT_EQ(Body(kept)["params"], nlohmann::json::array({1, 2}));
    EXPECT_EQ(Body(Get(path))["params"], nlohmann::json::array({1, 2}));
    // Bounded as text: a JSON value whose text exceeds the column is 400 naming params.
    auto big = Post("/api/v1/jobs", JobBody("big", {{"params", {{"p", std::string(65536, 'p')}}}}));
    EXPECT_EQ(big.status, 400) << big.body;
    EXPECT_EQ(ErrorField(big), "params");
}

TEST_P(JobsApiTest, RequiredFieldsLengthsAndEnumsAreChecked) {
    const auto expect_400 = [&](nlohmann::json body, const std::string& field, const std::string& in_message) {
        auto r = Post("/api/v1/jobs", body);
        EXPECT_EQ(r.status, 400) << field << " -> " << r.body;
        EXPECT_EQ(ErrorField(r), field) << field << " -> " << r.body;
        EXPECT_NE(r.body.find(in_message), std::string::npos) << field << " -> " << r.body;
    };
    for (const char* required : {"name", "app", "handler", "schedule_type"}) {
        auto body = JobBody("j");
        body.erase(required);
        expect_400(body, required, "required");
    }
    expect_400(JobBody("j", {{"name", ""}}), "name", "must not be empty");
    expect_400(JobBody(std::string(192, 'n')), "name", "at most 191 characters");
    expect_400(JobBody("j", {{"app", std::string(129, 'a')}}), "app", "at most 128");
    expect_400(JobBody("j", {{"handler", std::string(129, 'h')}}), "handler", "at most 128");
    expect_400(JobBody("j", {{"description", std::string(1025, 'd')}}), "description", "at most 1024");
    expect_400(JobBody("j", {{"params", std::string(65536, 'p')}}), "params", "65535 bytes");
    expect_400(JobBody("j", {{"routing", "nearest"}}), "routing", "round-robin");
    expect_400(JobBody("j", {{"misfire_policy", "panic"}}), "misfire_policy", "fire-once-now");
    expect_400(JobBody("j", {{"block_strategy", "queue"}}), "block_strategy", "discard-later");
    expect_400(JobBody("j", {{"schedule_type", "hourly"}}), "schedule_type", "cron");
    // Lengths count characters, as VARCHAR does: 191 three-byte characters fit.
    std::string wide;
    for (int i = 0; i < 191; ++i) wide += "\xe5\xad\x97";  // 字
    auto r = Post("/api/v1/jobs", JobBody(wide));
    EXPECT_EQ(r.status, 201) << r.body;
    EXPECT_EQ(Body(r)["name"], wide);
}

TEST_P(JobsApiTest, InvalidSchedulesAre400WithTheFieldAndPosition) {
    auto bad_cron = Post("/api/v1/jobs", JobBody("j", {{"schedule_expr", "0 0 12 32 * ?"}}));
    EXPECT_EQ(bad_cron.status, 400);
    EXPECT_EQ(ErrorField(bad_cron), "schedule_expr");
    const std::string message = Body(bad_cron)["error"]["message"];
    EXPECT_NE(message.find("32 is out of range 1-31"), std::string::npos) << message;
    EXPECT_NE(message.find("position"), std::string::npos) << message;

    EXPECT_EQ(RefusedField(Post("/api/v1/jobs", JobBody("j", {{"time_zone", "Mars/Olympus"}})), 400), "time_zone");
    auto bad_rate = Post("/api/v1/jobs", JobBody("j", {{"schedule_type", "fixed-rate"}, {"schedule_expr", "soon"}}));
    EXPECT_EQ(RefusedField(bad_rate, 400), "schedule_expr");
    auto past =
        Post("/api/v1/jobs", JobBody("j", {{"schedule_type", "once"}, {"schedule_expr", "2001-01-01T00:00:00Z"}}));
    EXPECT_EQ(past.status, 400);
    EXPECT_EQ(ErrorField(past), "schedule_expr");
    EXPECT_NE(past.body.find("no fire time after now"), std::string::npos) << past.body;
    // A manual job has no next fire time, and that is fine.
    auto manual = Post("/api/v1/jobs", JobBody("m", {{"schedule_type", "manual"}, {"schedule_expr", ""}}));
    ASSERT_EQ(manual.status, 201) << manual.body;
    EXPECT_TRUE(Body(manual)["next_fire_time"].is_null());
    // Nothing was stored by the refused requests.
    EXPECT_EQ(Body(Get("/api/v1/jobs"))["items"].size(), 1u);
}

TEST_P(JobsApiTest, DuplicateNameInAppIs409) {
    CreateJob("same");
    auto again = Post("/api/v1/jobs", JobBody("same"));
    EXPECT_EQ(again.status, 409) << again.body;
    EXPECT_EQ(ErrorField(again), "name");
    EXPECT_EQ(Post("/api/v1/jobs", JobBody("same", {{"app", "other"}})).status, 201);
}

TEST_P(JobsApiTest, UpdateWithAStaleVersionIs409AndChangesNothing) {
    const auto job = CreateJob("edited");
    const std::string path = "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>());
    auto first = Put(path, {{"version", 1}, {"description", "first"}});
    ASSERT_EQ(first.status, 200) << first.body;
    auto second = Put(path, {{"version", 1}, {"description", "second"}});
    EXPECT_EQ(second.status, 409) << second.body;
    EXPECT_EQ(ErrorField(second), "version");
    EXPECT_EQ(Body(second)["error"]["code"], "aborted");
    EXPECT_EQ(Body(Get(path))["description"], "first");
    EXPECT_EQ(Body(Get(path))["version"], 2);

    EXPECT_EQ(RefusedField(Put(path, {{"description", "third"}}), 400), "version");
    EXPECT_EQ(RefusedField(Put(path, {{"version", 2}, {"nam", "typo"}}), 400), "nam");
    EXPECT_EQ(RefusedField(Put(path, {{"version", 2}, {"schedule_expr", "61 * * * * ?"}}), 400), "schedule_expr");
    EXPECT_EQ(Put("/api/v1/jobs/999999", {{"version", 1}}).status, 404);
    EXPECT_EQ(ErrorField(Put("/api/v1/jobs/abc", {{"version", 1}})), "id");
    EXPECT_EQ(Body(Get(path))["version"], 2);
}

TEST_P(JobsApiTest, AnEditThatKeepsTheScheduleKeepsTheNextFireTime) {
    const auto job = CreateJob("steady", {{"schedule_type", "fixed-delay"}, {"schedule_expr", "1h"}});
    const auto id = job["id"].get<std::int64_t>();
    // The master has planned a run and is waiting for it to finish: next_fire_time is NULL.
    store::JobRepository jobs(db());
    auto stored = jobs.Get(id);
    ASSERT_TRUE(stored.ok());
    ASSERT_TRUE(db().Run([&](soci::session& s) {
                        return store::JobRepository::AdvanceSchedule(s, id, stored->version, stored->next_fire_time,
                                                                     std::nullopt, stored->next_fire_time);
                    })
                    .ok());
    const std::string path = "/api/v1/jobs/" + std::to_string(id);
    auto edited = Put(path, {{"version", 1}, {"description", "only words"}});
    ASSERT_EQ(edited.status, 200) << edited.body;
    EXPECT_TRUE(Body(edited)["next_fire_time"].is_null()) << "an edit must not plan a second run";
    auto rescheduled = Put(path, {{"version", 2}, {"schedule_expr", "2h"}});
    ASSERT_EQ(rescheduled.status, 200) << rescheduled.body;
    EXPECT_FALSE(Body(rescheduled)["next_fire_time"].is_null());
}

TEST_P(JobsApiTest, PauseAndResume) {
    const auto job = CreateJob("pausable");
    const std::string path = "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>());
    auto paused = Post(path + "/pause", nlohmann::json::object());
    ASSERT_EQ(paused.status, 200) << paused.body;
    EXPECT_FALSE(Body(paused)["enabled"].get<bool>());
    EXPECT_TRUE(Body(paused)["next_fire_time"].is_null());
    auto again = Call(Method::kPost, path + "/pause");
    EXPECT_EQ(again.status, 200);
    EXPECT_EQ(Body(again)["version"], Body(paused)["version"]) << "pausing a paused job changes nothing";
    EXPECT_EQ(Body(Get("/api/v1/jobs?enabled=false"))["items"].size(), 1u);

    const auto before = DbNowMs();
    auto resumed = Call(Method::kPost, path + "/resume");
    ASSERT_EQ(resumed.status, 200) << resumed.body;
    EXPECT_TRUE(Body(resumed)["enabled"].get<bool>());
    EXPECT_GT(Body(resumed)["next_fire_time"].get<std::int64_t>(), before);
    EXPECT_EQ(Call(Method::kPost, "/api/v1/jobs/424242/pause").status, 404);
    EXPECT_EQ(Call(Method::kGet, path + "/pause").status, 405);
}

// docs/api.md: pause, resume, trigger and kill take no body (or {}); anything else is a 400
// naming `body` or the field, and the job is left as it was.
TEST_P(JobsApiTest, PauseResumeTriggerAndKillRejectAnyBodyButNothingOrAnEmptyObject) {
    const auto job = CreateJob("strict");
    const std::string path = "/api/v1/jobs/" + job["id"].dump();
    const std::pair<std::string, std::string> bodies[] = {
        {"pause please", "body"},    {"[]", "body"},
        {"\"x\"", "body"},           {"{\"enabled\": false}", "enabled"},
        {"{\"force\": 1}", "force"}, {"{\"a\": 1, \"b\": 2}", "a"},
    };
    for (const char* action : {"/pause", "/resume", "/trigger"}) {
        for (const auto& [body, field] : bodies) {
            auto r = Call(Method::kPost, path + action, body);
            EXPECT_EQ(r.status, 400) << action << " " << body << " -> " << r.body;
            if (r.status == 400) {
                EXPECT_EQ(Body(r)["error"]["field"], field) << action << " " << body << " -> " << r.body;
            }
        }
    }
    EXPECT_TRUE(Body(Get(path))["enabled"].get<bool>()) << "a rejected pause changed the job";
    EXPECT_EQ(Body(Get("/api/v1/fires?job_id=" + job["id"].dump()))["items"].size(), 0u) << "a rejected trigger fired";
    auto kill = Call(Method::kPost, "/api/v1/fires/1/kill", "{\"reason\": \"x\"}");
    EXPECT_EQ(kill.status, 400) << kill.body;
    EXPECT_EQ(Body(kill)["error"]["field"], "reason") << kill.body;
    EXPECT_EQ(Call(Method::kPost, path + "/pause", "{}").status, 200);
    EXPECT_EQ(Call(Method::kPost, path + "/resume", "").status, 200);
}

// The master's sharding rule (model::ShardsPerFire): a sharding-broadcast job fires once per live
// instance of its app, whatever its shard_total, and once when none is live.
TEST_P(JobsApiTest, TriggerOfAShardingBroadcastJobFiresOncePerLiveInstance) {
    const auto job = CreateJob("fan-out", {{"app", "fan"}, {"routing", "sharding-broadcast"}, {"shard_total", 5}});
    EXPECT_EQ(job["routing"], "sharding-broadcast");
    const std::string path = "/api/v1/jobs/" + job["id"].dump() + "/trigger";
    auto alone = Call(Method::kPost, path);
    ASSERT_EQ(alone.status, 202) << alone.body;
    EXPECT_EQ(Body(alone)["items"].size(), 1u);
    store::ExecutorRepository executors(db());
    ASSERT_TRUE(executors.Heartbeat({.app = "fan", .address = "10.0.0.1:9999", .handlers = {"echo"}}).ok());
    ASSERT_TRUE(executors.Heartbeat({.app = "fan", .address = "10.0.0.2:9999", .handlers = {"echo"}}).ok());
    ASSERT_TRUE(executors.Heartbeat({.app = "other", .address = "10.0.0.3:9999", .handlers = {"echo"}}).ok());
    auto two = Call(Method::kPost, path);
    ASSERT_EQ(two.status, 202) << two.body;
    std::set<int> indexes;
    const auto fires = Body(two);
    for (const auto& f : fires["items"]) {
        indexes.insert(f["shard_index"].get<int>());
        EXPECT_EQ(f["shard_total"], 2);
    }
    EXPECT_EQ(indexes, (std::set<int>{0, 1}));
}

TEST_P(JobsApiTest, TriggerCreatesManualFiresForTheClusterToDispatch) {
    const auto job = CreateJob("on-demand", {{"schedule_type", "manual"}, {"schedule_expr", ""}});
    const auto id = job["id"].get<std::int64_t>();
    const auto before = DbNowMs();
    auto first = Call(Method::kPost, "/api/v1/jobs/" + std::to_string(id) + "/trigger");
    ASSERT_EQ(first.status, 202) << first.body;
    const auto fire = Body(first)["items"][0];
    EXPECT_EQ(fire["job_id"], id);
    EXPECT_EQ(fire["kind"], "manual");
    EXPECT_EQ(fire["status"], "pending");
    EXPECT_TRUE(fire["assigned_node"].is_null()) << "the master assigns it";
    EXPECT_GE(fire["scheduled_time"].get<std::int64_t>(), before);
    EXPECT_LE(fire["scheduled_time"].get<std::int64_t>(), DbNowMs() + 1000);
    // Back to back, even within one millisecond: two fires.
    auto second = Post("/api/v1/jobs/" + std::to_string(id) + "/trigger", nlohmann::json::object());
    ASSERT_EQ(second.status, 202) << second.body;
    EXPECT_NE(Body(second)["items"][0]["id"], fire["id"]);
    auto stored = store::FireRepository(db()).List({.job_id = id});
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(stored->size(), 2u);
    // A sharded job fires once per shard.
    const auto sharded = CreateJob("sharded", {{"shard_total", 3}});
    auto shards = Call(Method::kPost, "/api/v1/jobs/" + sharded["id"].dump() + "/trigger");
    ASSERT_EQ(shards.status, 202) << shards.body;
    std::set<int> indexes;
    const auto shard_fires = Body(shards);
    for (const auto& f : shard_fires["items"]) indexes.insert(f["shard_index"].get<int>());
    EXPECT_EQ(indexes, (std::set<int>{0, 1, 2}));
    EXPECT_EQ(Call(Method::kPost, "/api/v1/jobs/424242/trigger").status, 404);
    EXPECT_EQ(RefusedField(Post("/api/v1/jobs/" + std::to_string(id) + "/trigger", {{"when", "now"}}), 400), "when");
}

TEST_P(JobsApiTest, NextFirePreviewInTheJobsTimeZone) {
    const auto job = CreateJob("berlin", {{"schedule_expr", "0 30 9 * * ?"}, {"time_zone", "Europe/Berlin"}});
    const std::string path = "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>()) + "/next";
    auto r = Get(path + "?count=3");
    ASSERT_EQ(r.status, 200) << r.body;
    const auto preview = Body(r);
    ASSERT_EQ(preview["times"].size(), 3u);
    ASSERT_EQ(preview["local"].size(), 3u);
    EXPECT_EQ(preview["time_zone"], "Europe/Berlin");
    EXPECT_EQ(preview["times"][0], job["next_fire_time"]);
    EXPECT_EQ(preview["times"][1].get<std::int64_t>() - preview["times"][0].get<std::int64_t>() > 0, true);
    for (const auto& local : preview["local"]) {
        const std::string s = local;
        EXPECT_NE(s.find("T09:30:00+0"), std::string::npos) << s;  // +01:00 or +02:00
    }
    EXPECT_EQ(Body(Get(path))["times"].size(), 5u);  // the default count
    EXPECT_EQ(ErrorField(Get(path + "?count=0")), "count");
    EXPECT_EQ(ErrorField(Get(path + "?count=abc")), "count");
    EXPECT_EQ(ErrorField(Get(path + "?cnt=3")), "cnt");
    EXPECT_EQ(Get("/api/v1/jobs/424242/next").status, 404);
}

TEST_P(JobsApiTest, ScheduleValidationPreviewsOrNamesTheError) {
    auto ok =
        Post("/api/v1/schedules/validate",
             {{"schedule_type", "cron"}, {"schedule_expr", "0 0 12 * * ?"}, {"time_zone", "Asia/Tokyo"}, {"count", 2}});
    ASSERT_EQ(ok.status, 200) << ok.body;
    EXPECT_EQ(Body(ok)["times"].size(), 2u);
    EXPECT_NE(Body(ok)["local"][0].get<std::string>().find("T12:00:00+09:00"), std::string::npos) << ok.body;
    // After 2037 the local times follow the zone's DST rule (TZif footer), like the fire times.
    auto sydney_2040 = Post("/api/v1/schedules/validate", {{"schedule_type", "cron"},
                                                           {"schedule_expr", "0 0 12 1 7 ? 2040"},
                                                           {"time_zone", "Australia/Sydney"},
                                                           {"count", 1}});
    ASSERT_EQ(sydney_2040.status, 200) << sydney_2040.body;
    EXPECT_EQ(Body(sydney_2040)["times"][0], 2224720800000);  // 2040-07-01T02:00:00Z
    EXPECT_EQ(Body(sydney_2040)["local"][0], "2040-07-01T12:00:00+10:00");

    auto unix_cron = Post("/api/v1/schedules/validate", {{"schedule_type", "cron"}, {"schedule_expr", "*/5 * * * *"}});
    EXPECT_EQ(unix_cron.status, 200) << unix_cron.body;
    auto bad = Post("/api/v1/schedules/validate", {{"schedule_type", "cron"}, {"schedule_expr", "0 0 32 * * ?"}});
    EXPECT_EQ(bad.status, 400);
    EXPECT_EQ(ErrorField(bad), "schedule_expr");
    EXPECT_NE(bad.body.find("hour: 32 is out of range 0-23 (at position 4)"), std::string::npos) << bad.body;
    auto zone = Post("/api/v1/schedules/validate",
                     {{"schedule_type", "cron"}, {"schedule_expr", "0 * * * * ?"}, {"time_zone", "Nowhere/City"}});
    EXPECT_EQ(ErrorField(zone), "time_zone");
    EXPECT_EQ(ErrorField(Post("/api/v1/schedules/validate", {{"schedule_expr", "* * * * *"}})), "schedule_type");
    EXPECT_EQ(ErrorField(Post("/api/v1/schedules/validate", {{"schedule_type", "cron"}, {"expr", "x"}})), "expr");
    EXPECT_EQ(ErrorField(Post("/api/v1/schedules/validate",
                              {{"schedule_type", "cron"}, {"schedule_expr", "* * * * *"}, {"count", 101}})),
              "count");
}

TEST_P(JobsApiTest, ListFiltersSearchAndPagesWithACursor) {
    for (int i = 0; i < 5; ++i) CreateJob("report-" + std::to_string(i));
    CreateJob("50%_off", {{"app", "shop"}});
    CreateJob("50x_off", {{"app", "shop"}, {"enabled", false}});

    auto all = Body(Get("/api/v1/jobs"));
    EXPECT_EQ(all["items"].size(), 7u);
    EXPECT_TRUE(all["next_cursor"].is_null());
    EXPECT_EQ(Body(Get("/api/v1/jobs?app=shop"))["items"].size(), 2u);
    EXPECT_EQ(Body(Get("/api/v1/jobs?app=shop&enabled=true"))["items"].size(), 1u);
    EXPECT_EQ(Body(Get("/api/v1/jobs?q=report"))["items"].size(), 5u);
    // % and _ are the characters, not LIKE wildcards.
    auto percent = Body(Get("/api/v1/jobs?q=50%25_"));
    ASSERT_EQ(percent["items"].size(), 1u);
    EXPECT_EQ(percent["items"][0]["name"], "50%_off");

    std::set<std::string> seen;
    std::string cursor;
    int pages = 0;
    do {
        auto page = Body(Get("/api/v1/jobs?limit=3" + (cursor.empty() ? "" : "&cursor=" + cursor)));
        for (const auto& j : page["items"]) seen.insert(j["name"]);
        cursor = page["next_cursor"].is_null() ? "" : page["next_cursor"].get<std::string>();
        ++pages;
    } while (!cursor.empty() && pages < 10);
    EXPECT_EQ(seen.size(), 7u);
    EXPECT_EQ(pages, 3);

    EXPECT_EQ(ErrorField(Get("/api/v1/jobs?limit=0")), "limit");
    EXPECT_EQ(ErrorField(Get("/api/v1/jobs?limit=201")), "limit");
    EXPECT_EQ(ErrorField(Get("/api/v1/jobs?cursor=x")), "cursor");
    EXPECT_EQ(ErrorField(Get("/api/v1/jobs?enabled=maybe")), "enabled");
    EXPECT_EQ(ErrorField(Get("/api/v1/jobs?colour=red")), "colour");
}

// docs/api.md "Paging": names first, then limit, then cursor, then the route's filters; the
// same on every list route.
TEST_P(JobsApiTest, ListRoutesReportPagingErrorsInOneOrder) {
    const auto job = CreateJob("paged");
    for (const std::string& route : std::vector<std::string>{
             "/api/v1/jobs", "/api/v1/fires", "/api/v1/audit", "/api/v1/calendars",
             "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>()) + "/backfills", "/api/v1/alert-rules"}) {
        EXPECT_EQ(ErrorField(Get(route + "?cursor=-1&limit=0")), "limit") << route;
        EXPECT_EQ(ErrorField(Get(route + "?limit=0&cursor=-1")), "limit") << route;
        EXPECT_EQ(ErrorField(Get(route + "?cursor=-1&limit=0&colour=red")), "colour") << route;
        EXPECT_EQ(ErrorField(Get(route + "?cursor=x")), "cursor") << route;
        const auto r = Get(route + "?limit=201");
        EXPECT_EQ(r.status, 400) << route;
        EXPECT_EQ(Body(r)["error"]["message"], "limit: expected an integer in 1..200, got \"201\"") << route;
    }
    EXPECT_EQ(ErrorField(Get("/api/v1/fires?status=nope&limit=0")), "limit");
    EXPECT_EQ(ErrorField(Get("/api/v1/alert-deliveries?status=nope&limit=0")), "limit");
    EXPECT_EQ(ErrorField(Get("/api/v1/alert-deliveries?cursor=1")), "cursor");
}

TEST_P(JobsApiTest, TheListShowsEachJobsLastFire) {
    const auto job = CreateJob("with-history");
    const auto id = job["id"].get<std::int64_t>();
    InsertFire(id, 1000, model::FireStatus::kFailed);
    const auto newest = InsertFire(id, 2000, model::FireStatus::kSucceeded);
    CreateJob("no-history");
    auto list = Body(Get("/api/v1/jobs"));
    ASSERT_EQ(list["items"].size(), 2u);
    EXPECT_EQ(list["items"][0]["last_fire"]["id"], newest);
    EXPECT_EQ(list["items"][0]["last_fire"]["status"], "succeeded");
    EXPECT_FALSE(list["items"][1].contains("last_fire"));
    EXPECT_EQ(Body(Get("/api/v1/jobs/" + std::to_string(id)))["last_fire"]["id"], newest);

    // Newest by scheduled time: a fire inserted later for an earlier time (a backfill's) is not
    // the job's newest; a later row of the same time (a retry) is.
    InsertFire(id, 500, model::FireStatus::kSucceeded);
    EXPECT_EQ(Body(Get("/api/v1/jobs"))["items"][0]["last_fire"]["id"], newest);
    model::Fire again;
    again.job_id = id;
    again.scheduled_time = 2000;
    again.kind = model::FireKind::kRetry;
    again.attempt = 1;
    again.epoch = 1;
    auto stored =
        db().Run([&](soci::session& s) { return store::FireRepository::InsertIfAbsent(s, db().dialect(), again); });
    ASSERT_TRUE(stored.ok() && stored->has_value());
    const std::int64_t retry = **stored;
    list = Body(Get("/api/v1/jobs"));
    EXPECT_EQ(list["items"][0]["last_fire"]["id"], retry);
    EXPECT_EQ(list["items"][0]["last_fire"]["status"], "pending");
    EXPECT_EQ(Body(Get("/api/v1/jobs/" + std::to_string(id)))["last_fire"]["id"], retry);
}

TEST_P(JobsApiTest, StringsThatLookLikeSqlAreStoredVerbatim) {
    const std::string name = "x'); DROP TABLE job; --";
    const std::string description = "' OR '1'='1'; UPDATE job SET enabled = 0; --";
    const std::string params = R"(\'; DELETE FROM job_fire WHERE 1=1; -- ")";
    const std::string app = "app`; SELECT SLEEP(5); #";
    auto created =
        Post("/api/v1/jobs", JobBody(name, {{"description", description}, {"params", params}, {"app", app}}));
    ASSERT_EQ(created.status, 201) << created.body;
    const auto id = Body(created)["id"].get<std::int64_t>();
    CreateJob("bystander");

    auto stored = store::JobRepository(db()).Get(id);
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    EXPECT_EQ(stored->name, name);
    EXPECT_EQ(stored->description, description);
    EXPECT_EQ(stored->params, params);
    EXPECT_EQ(stored->app, app);
    auto all = Body(Get("/api/v1/jobs"));
    EXPECT_EQ(all["items"].size(), 2u) << "the table and its rows are intact";
    EXPECT_TRUE(all["items"][1]["enabled"].get<bool>());
    // The same strings as search terms and filters match literally.
    EXPECT_EQ(Body(Get("/api/v1/jobs?q=%27%29%3B%20DROP"))["items"].size(), 1u);
    EXPECT_EQ(Body(Get("/api/v1/jobs?q=%27%20OR%20%271%27%3D%271"))["items"].size(), 0u);
    EXPECT_EQ(Body(Get("/api/v1/jobs?app=app%60%3B%20SELECT%20SLEEP(5)%3B%20%23"))["items"].size(), 1u);
}

TEST_P(JobsApiTest, HttpLevelRefusals) {
    // Over the body limit (128 KiB in these tests): 413 before any handler runs.
    auto huge = Call(Method::kPost, "/api/v1/jobs", std::string(200 * 1024, ' '));
    EXPECT_EQ(huge.status, 413);
    EXPECT_EQ(Body(huge)["error"]["code"], "payload_too_large");
    auto unknown = Get("/api/v1/nothing-here");
    EXPECT_EQ(unknown.status, 404);
    EXPECT_EQ(Body(unknown)["error"]["code"], "not_found");
    auto method = Call(Method::kPatch, "/api/v1/jobs");
    EXPECT_EQ(method.status, 405);
    EXPECT_EQ(method.headers.Get("Allow").value_or(""), "GET, HEAD, POST");
    EXPECT_EQ(ErrorField(Get("/api/v1/jobs/0")), "id");
    EXPECT_EQ(ErrorField(Get("/api/v1/jobs/1e3")), "id");
}

SCHED_DB_TEST_SUITE(JobsApiTest);

// The masters are woken after each write that gives them work, once, and only once it is
// stored: not by reads, refused writes, or writes that leave them nothing (a pause, a delete).
class WakingJobsApiTest : public WebApiTest {
  protected:
    WebOptions Options() override {
        WebOptions o = WebApiTest::Options();
        o.wake_masters = [this] {
            ++wakes_;
        };
        return o;
    }
    std::atomic<int> wakes_{0};
};

TEST_P(WakingJobsApiTest, JobWritesThatGiveTheMastersWorkWakeThemOnce) {
    const auto job = CreateJob("woken");
    EXPECT_EQ(wakes_.load(), 1) << "create";
    const std::string path = "/api/v1/jobs/" + job["id"].dump();

    EXPECT_EQ(Get(path).status, 200);
    EXPECT_EQ(Post("/api/v1/jobs", JobBody("bad", {{"schedule_expr", "not cron"}})).status, 400);
    EXPECT_EQ(Post("/api/v1/jobs", JobBody("woken")).status, 409) << "a duplicate name";
    EXPECT_EQ(Put(path, {{"version", 999}, {"name", "woken"}}).status, 409) << "a stale version";
    EXPECT_EQ(Call(Method::kPost, path + "/trigger", "[1]").status, 400);
    EXPECT_EQ(Call(Method::kPost, "/api/v1/jobs/424242/trigger").status, 404);
    EXPECT_EQ(wakes_.load(), 1) << "reads and refused writes";

    auto updated = Put(path, JobBody("woken", {{"version", job["version"]}, {"schedule_expr", "0 */5 * * * ?"}}));
    ASSERT_EQ(updated.status, 200) << updated.body;
    EXPECT_EQ(wakes_.load(), 2) << "update";
    ASSERT_EQ(Call(Method::kPost, path + "/pause").status, 200);
    EXPECT_EQ(wakes_.load(), 2) << "pause";
    ASSERT_EQ(Call(Method::kPost, path + "/resume").status, 200);
    EXPECT_EQ(wakes_.load(), 3) << "resume";
    ASSERT_EQ(Call(Method::kPost, path + "/trigger").status, 202);
    EXPECT_EQ(wakes_.load(), 4) << "manual trigger";
    ASSERT_EQ(Delete(path).status, 204);
    EXPECT_EQ(wakes_.load(), 4) << "delete";
}

TEST_P(WakingJobsApiTest, BackfillsAndWorkflowRunsWakeTheMasters) {
    const auto job = CreateJob("every-minute");
    const std::int64_t now = DbNowMs();
    const std::string backfill = "/api/v1/jobs/" + job["id"].dump() + "/backfill";
    const int before = wakes_.load();
    EXPECT_EQ(Post(backfill, {{"from", now - 600'000}, {"to", now + 3'600'000}}).status, 400);
    ASSERT_EQ(Post(backfill, {{"from", now - 600'000}, {"to", now}, {"dry_run", true}}).status, 200);
    EXPECT_EQ(wakes_.load(), before) << "a refused backfill and a dry run";
    auto created = Post(backfill, {{"from", now - 600'000}, {"to", now}});
    ASSERT_EQ(created.status, 201) << created.body;
    EXPECT_EQ(wakes_.load(), before + 1) << "backfill";

    const auto step = CreateJob("step", {{"schedule_type", "manual"}, {"schedule_expr", ""}});
    const int after_step = wakes_.load();
    auto workflow = Post("/api/v1/workflows", {{"name", "nightly"},
                                               {"schedule_type", "manual"},
                                               {"steps", {{{"name", "a"}, {"job_id", step["id"]}}}},
                                               {"edges", nlohmann::json::array()}});
    ASSERT_EQ(workflow.status, 201) << workflow.body;
    EXPECT_EQ(wakes_.load(), after_step + 1) << "workflow";
    auto run = Post("/api/v1/workflows/" + Body(workflow)["id"].dump() + "/trigger", nlohmann::json::object());
    ASSERT_EQ(run.status, 201) << run.body;
    EXPECT_EQ(wakes_.load(), after_step + 2) << "workflow run";
}

SCHED_DB_TEST_SUITE(WakingJobsApiTest);

}  // namespace
}  // namespace sched::web::testing
