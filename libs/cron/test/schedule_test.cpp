#include "sched/cron/schedule.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "test_time.hpp"

namespace sched::cron {
namespace {

using testing::At;

Schedule MakeOk(std::string_view type, std::string_view expr, std::string_view zone = "") {
    auto s = Schedule::Make(type, expr, zone);
    EXPECT_TRUE(s.ok()) << type << " '" << expr << "': " << s.status().ToString();
    return std::move(s).value();
}

struct Rejected {
    const char* type;
    const char* expr;
    const char* zone;
    const char* field;
    std::string message_start;
};

// `c` is refused as an invalid argument naming its field, the message starting as it says.
void ExpectRejected(const Rejected& c) {
    std::string field;
    const auto s = Schedule::Make(c.type, c.expr, c.zone, &field);
    ASSERT_FALSE(s.ok()) << c.type << " " << c.expr;
    EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
    EXPECT_EQ(s.status().message().rfind(c.message_start, 0), 0U)
        << "got: " << s.status().message() << "\nwant prefix: " << c.message_start;
    EXPECT_EQ(field, c.field) << c.type << " " << c.expr;
}

TEST(ScheduleMake, NamesTheColumnThatIsWrong) {
    const std::vector<Rejected> cases = {
        {"weekly", "", "", "schedule_type",
         "schedule_type: unknown schedule type 'weekly' (expected cron, fixed-rate, fixed-delay, once or manual)"},
        {"cron", "0 0 12 * * ?", "Mars/Olympus", "time_zone",
         "time_zone: unknown time zone 'Mars/Olympus' (expected an IANA name such as Europe/Berlin)"},
        {"cron", "0 0 0 32 * ?", "UTC", "schedule_expr",
         "schedule_expr: day-of-month: 32 is out of range 1-31 (at position 6)"},
        {"cron", "0 0 0 30 2 ?", "UTC", "schedule_expr", "schedule_expr: day-of-month: '30' never occurs"},
        {"fixed-rate", "0", "", "schedule_expr", "schedule_expr: interval '0' must be at least 1ms"},
        {"fixed-rate", "1500us", "", "schedule_expr",
         "schedule_expr: interval '1500us' is not a whole number of milliseconds"},
        {"fixed-rate", "soon", "", "schedule_expr", "schedule_expr: interval 'soon' is not a duration"},
        {"fixed-rate", "36501d", "", "schedule_expr", "schedule_expr: interval '36501d' must be at most 36500d"},
        {"fixed-rate", "1h@tomorrow", "", "schedule_expr", "schedule_expr: instant 'tomorrow' is not a date"},
        {"fixed-delay", "", "", "schedule_expr", "schedule_expr: interval '' is not a duration"},
        {"manual", "0 0 * * *", "", "schedule_expr", "schedule_expr: a manual schedule takes no expression"},
    };
    for (const Rejected& c : cases) ExpectRejected(c);
}

// A once schedule's instant that is not one: the message quotes it and says what is wrong.
TEST(ScheduleMake, NamesWhatIsWrongWithAnInstant) {
    const std::pair<const char*, const char*> cases[] = {
        {"2024-02-30T00:00:00Z", "is not a valid date"},
        {"2024-01-01T24:00:00Z", "is not a valid time of day"},
        {"2024-01-01T00:00:00.1234Z", "has more than millisecond precision"},
        {"2024-01-01T00:00:00+19:00", "has a UTC offset out of range"},
        {"2300-01-01T00:00:00Z", "is outside the years 1970-2199"},
        {"2024-01-01T00:00:00Zulu", "has unexpected text after the offset"},
    };
    for (const auto& [instant, problem] : cases) {
        ExpectRejected(
            {"once", instant, "", "schedule_expr", std::string("schedule_expr: instant '") + instant + "' " + problem});
    }
}

TEST(ScheduleMake, EmptyZoneMeansUtcAndTypesRoundTrip) {
    const Schedule s = MakeOk("cron", "  0 0 12 * * ?  ");
    EXPECT_EQ(s.zone_name(), "UTC");
    EXPECT_EQ(s.expression(), "0 0 12 * * ?");
    ASSERT_NE(s.cron(), nullptr);
    for (auto t : {ScheduleType::kCron, ScheduleType::kFixedRate, ScheduleType::kFixedDelay, ScheduleType::kOnce,
                   ScheduleType::kManual}) {
        const auto parsed = ParseScheduleType(ScheduleTypeName(t));
        ASSERT_TRUE(parsed.ok());
        EXPECT_EQ(*parsed, t);
    }
    EXPECT_FALSE(ParseScheduleType("CRON").ok());
}

TEST(ScheduleNext, CronUsesTheJobsZone) {
    const Schedule s = MakeOk("cron", "0 0 8 * * ?", "Asia/Shanghai");
    EXPECT_EQ(s.NextFireTime(At("2024-01-01T12:00:00Z")), At("2024-01-02T00:00:00Z"));
    const Schedule berlin = MakeOk("cron", "0 30 2 * * ?", "Europe/Berlin");
    EXPECT_EQ(berlin.NextFireTime(At("2024-03-30T12:00:00Z")), At("2024-03-31T01:00:00Z"));  // 03:00 CEST
}

TEST(ScheduleNext, FixedRateCountsFromTheAnchor) {
    const Schedule every30s = MakeOk("fixed-rate", "30s");
    EXPECT_EQ(every30s.interval_ms(), 30000);
    EXPECT_EQ(every30s.NextFireTime(At("2024-01-01T00:00:10Z")), At("2024-01-01T00:00:30Z"));
    EXPECT_EQ(every30s.NextFireTime(At("2024-01-01T00:00:30Z")), At("2024-01-01T00:01:00Z"));

    const Schedule anchored = MakeOk("fixed-rate", "1h @ 2024-01-01T00:10:00Z");
    EXPECT_EQ(anchored.NextFireTime(At("2023-06-01T00:00:00Z")), At("2024-01-01T00:10:00Z"));
    EXPECT_EQ(anchored.NextFireTime(At("2024-01-01T00:10:00Z")), At("2024-01-01T01:10:00Z"));
    EXPECT_EQ(anchored.NextFireTime(At("2024-01-01T05:09:59Z")), At("2024-01-01T05:10:00Z"));

    EXPECT_EQ(MakeOk("fixed-rate", "1500").NextFireTime(0), 1500);

    // The interval is real time: a day after 02:30 CET is 03:30 CEST across spring forward.
    const Schedule daily = MakeOk("fixed-rate", "1d@2024-03-30T02:30:00", "Europe/Berlin");
    EXPECT_EQ(daily.instant_ms(), At("2024-03-30T02:30:00+0100"));
    EXPECT_EQ(daily.NextFireTime(At("2024-03-30T02:30:00+0100")), At("2024-03-31T03:30:00+0200"));
    EXPECT_EQ(MakeOk("fixed-rate", "1ms").NextFireTime(std::numeric_limits<std::int64_t>::max()), std::nullopt);
}

TEST(ScheduleNext, FixedDelayWaitsForThePreviousFinish) {
    const Schedule s = MakeOk("fixed-delay", "10s");
    EXPECT_TRUE(s.WaitsForFinish());
    EXPECT_EQ(s.NextFireTime(1000, 5000), 15000);
    EXPECT_EQ(s.NextFireTime(20000, 5000), 20001);  // overdue: as soon as possible
    EXPECT_EQ(s.NextFireTime(1000), 11000);         // no run yet: a delay after `after`

    const Schedule first = MakeOk("fixed-delay", "10s@2024-01-01T00:00:00Z");
    EXPECT_EQ(first.NextFireTime(At("2023-12-31T00:00:00Z")), At("2024-01-01T00:00:00Z"));
    EXPECT_EQ(first.NextFireTime(At("2024-01-01T00:00:00Z")), At("2024-01-01T00:00:10Z"));
    EXPECT_EQ(first.NextFireTime(At("2024-01-01T00:00:00Z"), At("2024-01-01T00:00:03Z")), At("2024-01-01T00:00:13Z"));
    EXPECT_FALSE(MakeOk("fixed-rate", "10s").WaitsForFinish());
}

TEST(ScheduleNext, OnceFiresOnce) {
    const Schedule s = MakeOk("once", "2024-05-01T10:00:00+02:00");
    EXPECT_EQ(s.NextFireTime(At("2024-01-01T00:00:00Z")), At("2024-05-01T08:00:00Z"));
    EXPECT_EQ(s.NextFireTime(At("2024-05-01T08:00:00Z")), std::nullopt);
    EXPECT_EQ(MakeOk("once", "1714550400000").NextFireTime(0), 1714550400000);
    EXPECT_EQ(MakeOk("once", "2024-01-01T00:00:00.250Z").NextFireTime(0), At("2024-01-01T00:00:00Z") + 250);
    EXPECT_EQ(MakeOk("once", "2024-01-01 09:30:00-0500").NextFireTime(0), At("2024-01-01T14:30:00Z"));
    EXPECT_EQ(MakeOk("once", "2024-01-01").NextFireTime(0), At("2024-01-01T00:00:00Z"));
}

TEST(ScheduleNext, OnceLocalTimesFollowTheCronDstRule) {
    // In the spring gap: the first instant after it. Repeated: the first occurrence.
    EXPECT_EQ(MakeOk("once", "2024-03-31T02:30:00", "Europe/Berlin").NextFireTime(0), At("2024-03-31T01:00:00Z"));
    EXPECT_EQ(MakeOk("once", "2024-10-27T02:30:00", "Europe/Berlin").NextFireTime(0), At("2024-10-27T00:30:00Z"));
    EXPECT_EQ(MakeOk("once", "2024-07-01T12:00:00", "Asia/Shanghai").NextFireTime(0), At("2024-07-01T04:00:00Z"));
    EXPECT_EQ(*ParseInstant("2024-07-01T12:00:00", nullptr), At("2024-07-01T12:00:00Z"));
}

TEST(ScheduleNext, ManualNeverFiresOnItsOwn) {
    const Schedule s = MakeOk("manual", "", "Europe/Berlin");
    EXPECT_EQ(s.NextFireTime(0), std::nullopt);
    EXPECT_TRUE(s.Preview(0, 5).empty());
}

TEST(SchedulePreview, ListsUpcomingTimes) {
    EXPECT_EQ(MakeOk("cron", "0 0 12 * * ?").Preview(At("2024-01-01T00:00:00Z"), 3),
              (std::vector<std::int64_t>{At("2024-01-01T12:00:00Z"), At("2024-01-02T12:00:00Z"),
                                         At("2024-01-03T12:00:00Z")}));
    EXPECT_EQ(MakeOk("fixed-delay", "10s").Preview(0, 3), (std::vector<std::int64_t>{10000, 20000, 30000}));
    EXPECT_EQ(MakeOk("fixed-rate", "250ms@1000").Preview(0, 3), (std::vector<std::int64_t>{1000, 1250, 1500}));
    EXPECT_EQ(MakeOk("once", "5000").Preview(0, 3), (std::vector<std::int64_t>{5000}));
}

}  // namespace
}  // namespace sched::cron
