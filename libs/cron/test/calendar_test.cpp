#include "sched/cron/calendar.hpp"

#include <initializer_list>

#include <gtest/gtest.h>

#include "test_time.hpp"

namespace sched::cron {
namespace {

using testing::At;

Calendar MakeOk(CalendarRules rules) {
    auto c = Calendar::Make(rules);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(c).value();
}

// `c` excludes every instant of `excluded` and none of `included`.
void ExpectExclusions(const Calendar& c, std::initializer_list<const char*> excluded,
                      std::initializer_list<const char*> included) {
    for (const char* instant : excluded) EXPECT_TRUE(c.IsExcluded(At(instant))) << instant;
    for (const char* instant : included) EXPECT_FALSE(c.IsExcluded(At(instant))) << instant;
}

TEST(CalendarMake, NamesTheFieldThatIsWrong) {
    struct Case {
        CalendarRules rules;
        const char* field;
        const char* message_start;
    };
    const Case cases[] = {
        {{.time_zone = "Mars/Olympus"}, "time_zone", "time_zone: "},
        {{.excluded_dates = {"2026-02-30"}}, "excluded_dates", "excluded_dates[0]: expected YYYY-MM-DD"},
        {{.excluded_dates = {"2026-01-01", "2026-12-26..2026-12-24"}},
         "excluded_dates",
         "excluded_dates[1]: the range ends before it starts"},
        {{.excluded_dates = {"2020-01-01..2199-01-01"}}, "excluded_dates", "excluded_dates[0]: a range spans at most"},
        {{.excluded_dates = {"1969-12-31"}}, "excluded_dates", "excluded_dates[0]: expected"},
        {{.excluded_weekdays = {"sat", "caturday"}}, "excluded_weekdays", "excluded_weekdays[1]: expected mon"},
        {{.excluded_weekdays = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"}},
         "excluded_weekdays",
         "excluded_weekdays: excluding every weekday"},
        {{.excluded_times = {"22:00"}}, "excluded_times", "excluded_times[0]: expected HH:MM-HH:MM"},
        {{.excluded_times = {"24:00-01:00"}}, "excluded_times", "excluded_times[0]: expected"},
        {{.excluded_times = {"10:60-11:00"}}, "excluded_times", "excluded_times[0]: expected"},
        {{.excluded_times = {"00:00-24:00"}}, "excluded_times", "excluded_times[0]: start and end are the same"},
    };
    for (const auto& c : cases) {
        std::string field;
        auto made = Calendar::Make(c.rules, &field);
        ASSERT_FALSE(made.ok()) << c.message_start;
        EXPECT_EQ(field, c.field);
        EXPECT_EQ(made.status().message().rfind(c.message_start, 0), 0u) << made.status().message();
    }
    CalendarRules too_many;
    too_many.excluded_dates.assign(Calendar::kMaxDates + 1, "2026-01-01");
    std::string field;
    EXPECT_FALSE(Calendar::Make(too_many, &field).ok());
    EXPECT_EQ(field, "excluded_dates");
    CalendarRules windows;
    windows.excluded_times.assign(Calendar::kMaxWindows + 1, "01:00-02:00");
    EXPECT_FALSE(Calendar::Make(windows, &field).ok());
    EXPECT_EQ(field, "excluded_times");
}

TEST(CalendarMake, CanonicalisesTheRules) {
    auto c = MakeOk({.time_zone = "", .excluded_weekdays = {"Sunday", " SAT "}, .excluded_times = {" 22:00-06:00"}});
    EXPECT_EQ(c.rules().time_zone, "UTC");
    EXPECT_EQ(c.rules().excluded_weekdays, (std::vector<std::string>{"sat", "sun"}));
    EXPECT_EQ(c.rules().excluded_times, (std::vector<std::string>{"22:00-06:00"}));
}

TEST(CalendarExcluded, DatesAreLocalDaysOfTheCalendarZone) {
    auto c = MakeOk({.time_zone = "Europe/Berlin", .excluded_dates = {"2026-12-25", "2026-12-31..2027-01-01"}});
    ExpectExclusions(c,
                     {"2026-12-24T23:00:00Z",  // midnight of the 25th in Berlin
                      "2026-12-25T22:59:59Z", "2026-12-31T12:00:00Z", "2027-01-01T12:00:00Z"},
                     {"2026-12-24T22:59:59Z",  // 23:59:59 on the 24th in Berlin
                      "2026-12-25T23:00:00Z", "2027-01-02T12:00:00Z"});
    EXPECT_EQ(c.NextIncluded(At("2026-12-25T10:00:00Z")), At("2026-12-25T23:00:00Z"));
    EXPECT_EQ(c.NextIncluded(At("2026-12-31T00:00:00Z")), At("2027-01-01T23:00:00Z"));
    EXPECT_EQ(c.NextIncluded(At("2026-12-20T10:00:00Z")), At("2026-12-20T10:00:00Z"));
}

TEST(CalendarExcluded, WeekdaysGiveBusinessDaysOnly) {
    auto c = MakeOk({.time_zone = "America/New_York", .excluded_weekdays = {"sat", "sun"}});
    EXPECT_FALSE(c.IsExcluded(At("2026-11-28T04:59:59Z")));                             // Friday 23:59:59 in New York
    EXPECT_TRUE(c.IsExcluded(At("2026-11-28T05:00:00Z")));                              // Saturday 00:00
    EXPECT_TRUE(c.IsExcluded(At("2026-11-30T04:59:59Z")));                              // Sunday 23:59:59
    EXPECT_EQ(c.NextIncluded(At("2026-11-28T17:00:00Z")), At("2026-11-30T05:00:00Z"));  // Monday 00:00
}

TEST(CalendarExcluded, WindowAcrossMidnight) {
    auto c = MakeOk({.excluded_times = {"22:00-06:00", "12:00-12:30"}});
    ExpectExclusions(c,
                     {"2026-06-01T22:00:00Z", "2026-06-02T00:00:00Z", "2026-06-02T05:59:59Z", "2026-06-02T12:15:00Z"},
                     {"2026-06-01T21:59:59Z", "2026-06-02T06:00:00Z", "2026-06-02T12:30:00Z"});
    EXPECT_EQ(c.NextIncluded(At("2026-06-01T23:00:00Z")), At("2026-06-02T06:00:00Z"));
    EXPECT_EQ(c.NextIncluded(At("2026-06-01T22:00:00Z") + 250), At("2026-06-02T06:00:00Z"));
}

TEST(CalendarExcluded, WindowAndExcludedDayChain) {
    // Friday night's window runs into an excluded Saturday and Sunday, then Monday's early window.
    auto c = MakeOk({.excluded_weekdays = {"sat", "sun"}, .excluded_times = {"22:00-06:00"}});
    EXPECT_EQ(c.NextIncluded(At("2026-11-27T23:00:00Z")), At("2026-11-30T06:00:00Z"));
}

TEST(CalendarExcluded, WindowAcrossSpringForwardEndsAfterTheGap) {
    // Berlin 2026-03-29: 02:00 CET jumps to 03:00 CEST. A window 22:00-02:30 ends inside the gap.
    auto c = MakeOk({.time_zone = "Europe/Berlin", .excluded_times = {"22:00-02:30"}});
    EXPECT_TRUE(c.IsExcluded(At("2026-03-28T21:00:00Z")));   // 22:00 CET
    EXPECT_TRUE(c.IsExcluded(At("2026-03-29T00:59:59Z")));   // 01:59:59 CET
    EXPECT_FALSE(c.IsExcluded(At("2026-03-29T01:00:00Z")));  // 03:00 CEST
    EXPECT_EQ(c.NextIncluded(At("2026-03-28T21:30:00Z")), At("2026-03-29T01:00:00Z"));
    // Across midnight in New York on 2026-03-08 (02:00 EST -> 03:00 EDT): 22:00-06:00 ends at 06:00 EDT.
    auto ny = MakeOk({.time_zone = "America/New_York", .excluded_times = {"22:00-06:00"}});
    EXPECT_EQ(ny.NextIncluded(At("2026-03-08T04:00:00Z")), At("2026-03-08T10:00:00Z"));
    EXPECT_FALSE(ny.IsExcluded(At("2026-03-08T10:00:00Z")));
    EXPECT_TRUE(ny.IsExcluded(At("2026-03-08T09:59:59Z")));
}

TEST(CalendarExcluded, RepeatedHourIsExcludedInBothPasses) {
    // Berlin 2026-10-25: 03:00 CEST falls back to 02:00 CET; 02:00-02:30 occurs twice.
    auto c = MakeOk({.time_zone = "Europe/Berlin", .excluded_times = {"02:00-02:30"}});
    EXPECT_TRUE(c.IsExcluded(At("2026-10-25T00:15:00Z")));   // 02:15 CEST
    EXPECT_FALSE(c.IsExcluded(At("2026-10-25T00:30:00Z")));  // 02:30 CEST
    EXPECT_TRUE(c.IsExcluded(At("2026-10-25T01:15:00Z")));   // 02:15 CET
    EXPECT_EQ(c.NextIncluded(At("2026-10-25T00:15:00Z")), At("2026-10-25T00:30:00Z"));
    EXPECT_EQ(c.NextIncluded(At("2026-10-25T01:00:00Z")), At("2026-10-25T01:30:00Z"));
}

TEST(CalendarExcluded, NextExcludedFindsTheStartOfThePeriod) {
    auto c = MakeOk({.time_zone = "Europe/Berlin", .excluded_weekdays = {"sat"}, .excluded_times = {"12:00-13:00"}});
    const auto friday = At("2026-11-27T08:00:00Z");
    EXPECT_EQ(c.NextExcluded(friday, friday + 86'400'000), At("2026-11-27T11:00:00Z"));  // 12:00 CET
    EXPECT_EQ(c.NextExcluded(At("2026-11-27T12:00:00Z"), At("2026-11-29T00:00:00Z")), At("2026-11-27T23:00:00Z"));
    EXPECT_EQ(c.NextExcluded(At("2026-11-27T12:00:00Z"), At("2026-11-27T20:00:00Z")), std::nullopt);
    EXPECT_EQ(c.LocalDayStartMs(c.LocalDay(friday)), At("2026-11-26T23:00:00Z"));
}

TEST(CalendarExcluded, WindowsCoveringTheWholeDayHaveNoIncludedTime) {
    auto c = MakeOk({.excluded_times = {"00:00-12:00", "12:00-24:00"}});
    EXPECT_TRUE(c.IsExcluded(At("2026-06-01T12:00:00Z")));
    EXPECT_EQ(c.NextIncluded(At("2026-06-01T12:00:00Z")), std::nullopt);
}

}  // namespace
}  // namespace sched::cron
