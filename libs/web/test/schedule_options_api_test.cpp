// Schedule options of a job (H, jitter_ms, dst_gap, dst_overlap) over real HTTP, on SQLite and MariaDB.

#include "sched/cron/calendar.hpp"
#include "sched/cron/cron_expression.hpp"
#include "sched/cron/schedule.hpp"
#include "sched/trigger/calendar_planner.hpp"
#include "web_test_base.hpp"

namespace sched::web::testing {
namespace {

class ScheduleOptionsApiTest : public WebApiTest {};

std::string PathOf(const nlohmann::json& job, const std::string& tail = "") {
    return "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>()) + tail;
}

// The preview of a job with jitter, `H`, a calendar and a repeated local hour shows the times the
// master's planner fires at: the planner's rows, planned from the same job, are the preview's times.
TEST_P(ScheduleOptionsApiTest, PreviewOfACalendarJobIsWhatThePlannerFires) {
    constexpr std::int64_t kMon20271025 = 1'824'415'200'000;  // 2027-10-25T00:00+02:00; fall back on Sunday 31st
    auto calendar = Post("/api/v1/calendars",
                         {{"name", "no-saturdays"}, {"time_zone", "Europe/Berlin"}, {"excluded_weekdays", {"sat"}}});
    ASSERT_EQ(calendar.status, 201) << calendar.body;
    const auto job = CreateJob("planned", {{"schedule_expr", "0 H 2 * * ?"},
                                           {"time_zone", "Europe/Berlin"},
                                           {"jitter_ms", 600'000},
                                           {"dst_overlap", "both"},
                                           {"calendar", "no-saturdays"},
                                           {"start_at", kMon20271025}});
    const std::int64_t id = job["id"].get<std::int64_t>();
    auto got = Get(PathOf(job, "/next?count=8"));
    ASSERT_EQ(got.status, 200) << got.body;
    const auto preview = Body(got);

    auto options = cron::ParseScheduleOptions(id, 600'000, "auto", "both");
    ASSERT_TRUE(options.ok());
    auto schedule = cron::Schedule::Make("cron", "0 H 2 * * ?", "Europe/Berlin", nullptr, *options);
    ASSERT_TRUE(schedule.ok());
    auto rules = cron::Calendar::Make({.time_zone = "Europe/Berlin", .excluded_weekdays = {"sat"}});
    ASSERT_TRUE(rules.ok());
    // Planned when its first time (the first after start_at) is due, with ten days of lookahead.
    const trigger::JobBounds bounds{.start_ms = kMon20271025};
    const std::int64_t due = job["next_fire_time"].get<std::int64_t>();
    const auto first = trigger::FirstBoundedFireTime(*schedule, bounds, due - 1);
    ASSERT_TRUE(first);
    trigger::PlanOptions plan_options;
    plan_options.lookahead_ms = 10LL * 86'400'000;
    const auto planned = trigger::PlanBoundedJobFires(*schedule, &*rules, bounds, due, *first, plan_options);
    std::vector<std::int64_t> fired;
    for (const auto& f : planned.plan.fires) fired.push_back(f.scheduled_ms);
    ASSERT_GE(fired.size(), 8u);
    fired.resize(8);
    EXPECT_EQ(preview["times"].get<std::vector<std::int64_t>>(), fired) << preview.dump();
    ASSERT_FALSE(planned.excluded.empty());
    ASSERT_FALSE(preview["excluded"].empty()) << preview.dump();
    EXPECT_EQ(preview["excluded"][0], planned.excluded[0].first_ms);  // Saturday 30th

    // Sunday 31st fires in both passes of 02:xx, and the preview says which is which.
    ASSERT_TRUE(preview.contains("fires")) << preview.dump();
    std::vector<std::string> dst;
    for (const auto& f : preview["fires"]) {
        if (!f["dst"].is_null()) dst.push_back(f["dst"].get<std::string>());
        EXPECT_EQ(f["excluded"].get<bool>(), f["nominal"] == planned.excluded[0].first_ms) << f.dump();
    }
    EXPECT_EQ(dst, (std::vector<std::string>{"overlap-first", "overlap-second"})) << preview.dump();
    EXPECT_EQ(preview["uses_hash"], true);
    EXPECT_EQ(preview["hash_seed"], id);
    EXPECT_EQ(preview["jitter_ms"], 600'000);
}

TEST_P(ScheduleOptionsApiTest, FieldsDefaultRoundTripAndUpdate) {
    const auto plain = CreateJob("plain");
    EXPECT_EQ(plain["jitter_ms"], 0);
    EXPECT_EQ(plain["dst_gap"], "auto");
    EXPECT_EQ(plain["dst_overlap"], "auto");
    const auto job = CreateJob("spread", {{"jitter_ms", 60'000}, {"dst_gap", "skip"}, {"dst_overlap", "both"}});
    EXPECT_EQ(job["jitter_ms"], 60'000);
    EXPECT_EQ(job["dst_gap"], "skip");
    EXPECT_EQ(job["dst_overlap"], "both");
    auto updated = Put(
        PathOf(job),
        {{"version", job["version"]}, {"jitter_ms", 3'600'000}, {"dst_gap", "shift-forward"}, {"dst_overlap", "last"}});
    ASSERT_EQ(updated.status, 200) << updated.body;
    const auto got = Body(Get(PathOf(job)));
    EXPECT_EQ(got["jitter_ms"], 3'600'000);
    EXPECT_EQ(got["dst_gap"], "shift-forward");
    EXPECT_EQ(got["dst_overlap"], "last");
}

TEST_P(ScheduleOptionsApiTest, EveryBadValueIsA400NamingItsField) {
    struct Case {
        nlohmann::json overrides;
        const char* field;
    };
    for (const auto& c : std::vector<Case>{{{{"jitter_ms", -1}}, "jitter_ms"},
                                           {{{"jitter_ms", 3'600'001}}, "jitter_ms"},
                                           {{{"jitter_ms", "1s"}}, "jitter_ms"},
                                           {{{"dst_gap", "later"}}, "dst_gap"},
                                           {{{"dst_gap", std::string(5000, 'x')}}, "dst_gap"},
                                           {{{"dst_overlap", 2}}, "dst_overlap"},
                                           {{{"dst_overlap", "twice"}}, "dst_overlap"},
                                           {{{"schedule_expr", "0 0 0 * * ? H"}}, "schedule_expr"},
                                           {{{"schedule_expr", "H(30-10) * * * *"}}, "schedule_expr"}}) {
        auto r = Post("/api/v1/jobs", JobBody("bad", c.overrides));
        EXPECT_EQ(r.status, 400) << c.overrides.dump() << " " << r.body;
        EXPECT_EQ(ErrorField(r), c.field) << c.overrides.dump() << " " << r.body;
    }
    for (const auto& c : std::vector<Case>{{{{"jitter_ms", -5}}, "jitter_ms"},
                                           {{{"dst_gap", "Skip"}}, "dst_gap"},
                                           {{{"dst_overlap", ""}}, "dst_overlap"}}) {
        nlohmann::json body = {{"schedule_type", "cron"}, {"schedule_expr", "0 * * * * ?"}};
        for (const auto& [k, v] : c.overrides.items()) body[k] = v;
        auto r = Post("/api/v1/schedules/validate", body);
        EXPECT_EQ(r.status, 400) << r.body;
        EXPECT_EQ(ErrorField(r), c.field) << r.body;
    }
}

TEST_P(ScheduleOptionsApiTest, PreviewOfAJobShowsItsResolvedHAndJitteredTimes) {
    // A new job validates `H` without an id; its own preview resolves it with the id.
    const auto job = CreateJob("hashed", {{"schedule_expr", "0 H * * * ?"}});
    const std::int64_t id = job["id"].get<std::int64_t>();
    const auto preview = Body(Get(PathOf(job, "/next?count=3")));
    EXPECT_EQ(preview["uses_hash"], true);
    EXPECT_EQ(preview["hash_seed"], id);
    const std::int64_t minute = static_cast<std::int64_t>(cron::StableHash(std::to_string(id) + ":minute") % 60);
    for (const auto& t : preview["times"]) EXPECT_EQ(t.get<std::int64_t>() / 60'000 % 60, minute) << preview.dump();
    // The stored next time is the one the master will plan: resolved with the id too.
    EXPECT_EQ(Body(Get(PathOf(job)))["next_fire_time"].get<std::int64_t>() / 60'000 % 60, minute);

    const auto jittered = CreateJob("jittered", {{"schedule_expr", "0 0 * * * ?"}, {"jitter_ms", 600'000}});
    EXPECT_EQ(jittered["next_fire_time"].get<std::int64_t>() % 3'600'000, 0);  // nominal
    const auto times = Body(Get(PathOf(jittered, "/next?count=5")));
    EXPECT_EQ(times["jitter_ms"], 600'000);
    ASSERT_EQ(times["times"].size(), 5u);
    for (const auto& t : times["times"]) {
        const std::int64_t fire = t.get<std::int64_t>();
        const std::int64_t nominal = fire / 3'600'000 * 3'600'000;
        EXPECT_EQ(fire, nominal + cron::JitterOffsetMs(jittered["id"].get<std::int64_t>(), nominal, 600'000,
                                                       nominal + 3'600'000));
    }

    auto validate = Post("/api/v1/schedules/validate",
                         {{"schedule_type", "cron"}, {"schedule_expr", "H H * * *"}, {"jitter_ms", 1000}});
    ASSERT_EQ(validate.status, 200) << validate.body;
    EXPECT_EQ(Body(validate)["uses_hash"], true);
    EXPECT_TRUE(Body(validate)["hash_seed"].is_null());
}

TEST_P(ScheduleOptionsApiTest, PreviewShowsTheNextDstTransitionWithTheJobsChoice) {
    const auto job = CreateJob("berlin", {{"schedule_expr", "0 30 2 * * ?"},
                                          {"time_zone", "Europe/Berlin"},
                                          {"dst_gap", "shift-forward"},
                                          {"dst_overlap", "both"}});
    const auto preview = Body(Get(PathOf(job, "/next")));
    const auto& dst = preview["dst"];
    ASSERT_TRUE(dst.is_object()) << preview.dump();
    EXPECT_GT(dst["transition"].get<std::int64_t>(), preview["now"].get<std::int64_t>());
    EXPECT_EQ(dst["dst_gap"], "shift-forward");
    EXPECT_EQ(dst["dst_overlap"], "both");
    std::vector<std::string> local;
    for (const auto& l : dst["local"]) local.push_back(l);
    if (dst["kind"] == "gap") {
        // Spring forward: 02:30 does not exist and runs an hour later.
        EXPECT_EQ(dst["offset_after_s"].get<int>() - dst["offset_before_s"].get<int>(), 3600);
        ASSERT_EQ(local.size(), 1u) << dst.dump();
        EXPECT_NE(local[0].find("T03:30:00+02:00"), std::string::npos) << dst.dump();
    } else {
        // Fall back: 02:30 happens twice and, with `both`, runs twice.
        EXPECT_EQ(dst["kind"], "overlap");
        ASSERT_EQ(local.size(), 2u) << dst.dump();
        EXPECT_NE(local[0].find("T02:30:00+02:00"), std::string::npos) << dst.dump();
        EXPECT_NE(local[1].find("T02:30:00+01:00"), std::string::npos) << dst.dump();
    }
    // UTC has no transition; fixed-rate times are not local times.
    EXPECT_TRUE(Body(Get(PathOf(CreateJob("utc"), "/next")))["dst"].is_null());
    EXPECT_TRUE(Body(Get(PathOf(
        CreateJob("rate", {{"schedule_type", "fixed-rate"}, {"schedule_expr", "1h"}, {"time_zone", "Europe/Berlin"}}),
        "/next")))["dst"]
                    .is_null());
}

SCHED_DB_TEST_SUITE(ScheduleOptionsApiTest);

}  // namespace
}  // namespace sched::web::testing
