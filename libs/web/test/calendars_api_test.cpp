// Calendars and job bounds over real HTTP, on SQLite and MariaDB.

#include "web_test_base.hpp"

namespace sched::web::testing {
namespace {

class CalendarsApiTest : public WebApiTest {
  protected:
    nlohmann::json Weekends(const std::string& name = "weekends") {
        auto r = Post("/api/v1/calendars", {{"name", name},
                                            {"time_zone", "Europe/Berlin"},
                                            {"excluded_weekdays", {"Saturday", "sun"}},
                                            {"excluded_dates", {"2026-12-24..2026-12-26"}},
                                            {"excluded_times", {"22:00-06:00"}}});
        EXPECT_EQ(r.status, 201) << r.body;
        return Body(r);
    }
};

TEST_P(CalendarsApiTest, CreateReadListUpdateWithVersion) {
    const auto created = Weekends();
    EXPECT_EQ(created["version"], 1);
    EXPECT_EQ(created["excluded_weekdays"], nlohmann::json({"sat", "sun"}));  // canonical
    const std::string path = "/api/v1/calendars/" + std::to_string(created["id"].get<std::int64_t>());
    auto got = Get(path);
    ASSERT_EQ(got.status, 200) << got.body;
    EXPECT_EQ(Body(got)["excluded_times"], nlohmann::json({"22:00-06:00"}));
    EXPECT_EQ(Body(got)["time_zone"], "Europe/Berlin");
    auto listed = Get("/api/v1/calendars");
    ASSERT_EQ(listed.status, 200);
    EXPECT_EQ(Body(listed)["items"].size(), 1u);

    auto updated = Put(path, {{"version", 1}, {"excluded_times", nlohmann::json::array()}});
    ASSERT_EQ(updated.status, 200) << updated.body;
    EXPECT_EQ(Body(updated)["version"], 2);
    EXPECT_TRUE(Body(updated)["excluded_times"].empty());
    EXPECT_EQ(Body(updated)["excluded_weekdays"], nlohmann::json({"sat", "sun"}));  // left out: kept
    EXPECT_EQ(RefusedField(Put(path, {{"version", 1}, {"description", "x"}}), 409), "version");
    EXPECT_EQ(RefusedField(Put(path, {{"version", 2}, {"name", "other"}}), 400), "name");
    EXPECT_EQ(Post("/api/v1/calendars", {{"name", "weekends"}}).status, 409);
    EXPECT_EQ(Get("/api/v1/calendars/999").status, 404);
}

TEST_P(CalendarsApiTest, InvalidRulesAreRefusedNamingTheField) {
    const std::pair<nlohmann::json, const char*> cases[] = {
        {{{"name", "a"}, {"excluded_dates", {"2026-02-30"}}}, "excluded_dates"},
        {{{"name", "a"}, {"excluded_dates", "2026-01-01"}}, "excluded_dates"},
        {{{"name", "a"}, {"excluded_weekdays", {"caturday"}}}, "excluded_weekdays"},
        {{{"name", "a"}, {"excluded_times", {"25:00-01:00"}}}, "excluded_times"},
        {{{"name", "a"}, {"excluded_times", {std::string(100, '1')}}}, "excluded_times"},
        {{{"name", "a"}, {"time_zone", "Mars/Olympus"}}, "time_zone"},
        {{{"name", ""}}, "name"},
        {{{"name", std::string(200, 'n')}}, "name"},
        {{{"name", "a"}, {"version", 3}}, "version"},
        {{{"name", "a"}, {"holidays", {}}}, "holidays"},
    };
    for (const auto& [body, field] : cases) {
        auto r = Post("/api/v1/calendars", body);
        EXPECT_EQ(r.status, 400) << body.dump() << " " << r.body;
        EXPECT_EQ(ErrorField(r), field) << body.dump() << " " << r.body;
    }
    nlohmann::json many = nlohmann::json::array();
    for (int i = 0; i < 1001; ++i) many.push_back("2026-01-01");
    EXPECT_EQ(RefusedField(Post("/api/v1/calendars", {{"name", "many"}, {"excluded_dates", many}}), 400),
              "excluded_dates");
}

TEST_P(CalendarsApiTest, JobRefersToACalendarByNameAndDeleteIsRefusedWhileItDoes) {
    const auto calendar = Weekends();
    const std::string path = "/api/v1/calendars/" + std::to_string(calendar["id"].get<std::int64_t>());
    auto unknown = Post("/api/v1/jobs", JobBody("a", {{"calendar", "nope"}}));
    EXPECT_EQ(unknown.status, 400) << unknown.body;
    EXPECT_EQ(ErrorField(unknown), "calendar");
    const auto job = CreateJob("report", {{"calendar", "weekends"}});
    EXPECT_EQ(job["calendar"], "weekends");
    auto refused = Delete(path);
    EXPECT_EQ(refused.status, 409) << refused.body;
    EXPECT_EQ(ErrorField(refused), "calendar");
    EXPECT_NE(refused.body.find("report"), std::string::npos) << refused.body;

    const std::string job_path = "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>());
    EXPECT_EQ(RefusedField(Put(job_path, {{"version", 1}, {"calendar", "nope"}}), 400), "calendar");
    auto cleared = Put(job_path, {{"version", 1}, {"calendar", nullptr}});
    ASSERT_EQ(cleared.status, 200) << cleared.body;
    EXPECT_TRUE(Body(cleared)["calendar"].is_null());
    EXPECT_EQ(Delete(path).status, 204);
}

TEST_P(CalendarsApiTest, PreviewsShowExclusions) {
    const auto calendar = Weekends();
    auto preview = Get("/api/v1/calendars/" + std::to_string(calendar["id"].get<std::int64_t>()) + "/preview?days=7");
    ASSERT_EQ(preview.status, 200) << preview.body;
    const auto days = Body(preview)["days"];
    ASSERT_EQ(days.size(), 7u);
    int whole_days = 0;
    for (const auto& d : days) {
        ASSERT_FALSE(d["excluded"].empty()) << d.dump();  // every day has at least the night window
        const auto& first = d["excluded"][0];
        if (d["weekday"] == "Sat" || d["weekday"] == "Sun") {
            ASSERT_EQ(d["excluded"].size(), 1u) << d.dump();
            EXPECT_GE(first["to"].get<std::int64_t>() - first["from"].get<std::int64_t>(), 23 * 3'600'000);
            ++whole_days;
        }
    }
    EXPECT_EQ(whole_days, 2);
    EXPECT_EQ(Get("/api/v1/calendars/1/preview?days=400").status, 400);

    // A daily 12:00 Berlin job bound to the calendar: its preview has no weekend times.
    const auto job = CreateJob(
        "noon", {{"schedule_expr", "0 0 12 * * ?"}, {"time_zone", "Europe/Berlin"}, {"calendar", "weekends"}});
    auto next = Get("/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>()) + "/next?count=10");
    ASSERT_EQ(next.status, 200) << next.body;
    const auto body = Body(next);
    EXPECT_EQ(body["times"].size(), 10u);
    EXPECT_EQ(body["calendar"], "weekends");
    EXPECT_GE(body["excluded"].size(), 2u);  // at least one weekend among 12+ days
    for (const auto& local : body["local"]) {
        const std::string text = local.get<std::string>();
        EXPECT_NE(text.find("T12:00:00"), std::string::npos) << text;
    }
}

TEST_P(CalendarsApiTest, BoundsAreValidatedAndACompletedJobComesBack) {
    const std::int64_t now = DbNowMs();
    const std::pair<nlohmann::json, const char*> cases[] = {
        {{{"start_at", now + 60'000}, {"end_at", now + 1000}}, "end_at"},
        {{{"end_at", now - 1000}}, "end_at"},
        {{{"start_at", "yesterday"}}, "start_at"},
        {{{"start_at", true}}, "start_at"},
        {{{"end_at", -5}}, "end_at"},
        {{{"max_runs", 0}}, "max_runs"},
        {{{"max_runs", "3"}}, "max_runs"},
        {{{"calendar", 5}}, "calendar"},
        {{{"completed_at", 5}}, "completed_at"},
    };
    for (const auto& [overrides, field] : cases) {
        auto r = Post("/api/v1/jobs", JobBody("bad", overrides));
        EXPECT_EQ(r.status, 400) << overrides.dump() << " " << r.body;
        EXPECT_EQ(ErrorField(r), field) << overrides.dump() << " " << r.body;
    }
    // ISO-8601 instants: the first fire is the first minute at or after start_at.
    auto iso = CreateJob("iso", {{"start_at", "2199-01-01T00:00:30Z"}, {"end_at", "2199-01-02T00:00:00+01:00"}});
    EXPECT_EQ(iso["start_at"], 7'226'582'430'000);
    EXPECT_EQ(iso["end_at"], 7'226'665'200'000);
    EXPECT_EQ(iso["next_fire_time"], 7'226'582'460'000);
    EXPECT_TRUE(iso["completed_at"].is_null());

    // An end_at before the next minute: completed at once with why.
    auto job = CreateJob("short", {{"end_at", now + 61'000}, {"schedule_expr", "0 0 0 1 1 ? 2199"}});
    EXPECT_EQ(job["completed_reason"], "end_at");
    EXPECT_TRUE(job["completed_at"].is_number());
    EXPECT_TRUE(job["next_fire_time"].is_null());
    EXPECT_TRUE(job["enabled"].get<bool>());
    // A later end_at brings it back.
    const std::string path = "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>());
    auto back = Put(path, {{"version", 1}, {"end_at", "2199-06-01T00:00:00Z"}});
    ASSERT_EQ(back.status, 200) << back.body;
    EXPECT_TRUE(Body(back)["completed_at"].is_null());
    EXPECT_TRUE(Body(back)["completed_reason"].is_null());
    EXPECT_EQ(Body(back)["next_fire_time"], 7'226'582'400'000);
    // max_runs with a preview that stops after it.
    auto counted = CreateJob("counted", {{"max_runs", 3}});
    auto next = Get("/api/v1/jobs/" + std::to_string(counted["id"].get<std::int64_t>()) + "/next?count=10");
    ASSERT_EQ(next.status, 200);
    EXPECT_EQ(Body(next)["times"].size(), 3u);
    EXPECT_EQ(Body(next)["ends"], "max_runs");
}

// The preview routes' one query parameter: anything but an integer in range is a 400 naming it,
// and a missing or empty one takes its default.
TEST_P(CalendarsApiTest, PreviewQueriesOutOfRangeOrNotIntegersAreRefusedNamingTheParameter) {
    const auto calendar = Weekends();
    const auto job = CreateJob("noon", {{"schedule_expr", "0 0 12 * * ?"}, {"time_zone", "Europe/Berlin"}});
    const std::string preview = "/api/v1/calendars/" + std::to_string(calendar["id"].get<std::int64_t>()) + "/preview";
    const std::string next = "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>()) + "/next";
    for (const char* bad : {"0", "-1", "367", "abc", "1e3", "99999999999999999999999", "%00"}) {
        EXPECT_EQ(RefusedField(Get(preview + "?days=" + bad), 400), "days") << bad;
    }
    for (const char* bad : {"0", "-5", "101", "ten", "9223372036854775808", "1.5"}) {
        EXPECT_EQ(RefusedField(Get(next + "?count=" + bad), 400), "count") << bad;
    }
    EXPECT_EQ(Get(preview + "?days=" + std::string(5000, '9')).status / 100, 4);
    EXPECT_EQ(Body(Get(next)).at("times").size(), 5u) << "count defaults to 5";
    EXPECT_EQ(Body(Get(preview)).at("days").size(), 14u) << "days defaults to 14";
    EXPECT_EQ(Body(Get(preview + "?days=")).at("days").size(), 14u) << "an empty value is no value";
}

SCHED_DB_TEST_SUITE(CalendarsApiTest);

}  // namespace
}  // namespace sched::web::testing
