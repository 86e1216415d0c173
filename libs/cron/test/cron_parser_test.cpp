#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sched/cron/cron_expression.hpp"
#include "test_time.hpp"

namespace sched::cron {
namespace {

using testing::At;

std::vector<std::int64_t> Upcoming(std::string_view text, std::size_t n = 12) {
    const auto expr = CronExpression::Parse(text);
    EXPECT_TRUE(expr.ok()) << text << ": " << expr.status().ToString();
    if (!expr.ok()) return {};
    return expr->NextN(At("2024-01-01T00:00:00Z"), nullptr, n);
}

TEST(CronParse, FormIsDecidedByTheFieldCount) {
    struct Case {
        const char* text;
        CronForm form;
    };
    for (const Case& c : std::vector<Case>{{"0 0 12 * * ?", CronForm::kQuartz},
                                           {"0 0 12 * * ? 2030", CronForm::kQuartz},
                                           {"0 12 * * *", CronForm::kUnix},
                                           {"@daily", CronForm::kMacro},
                                           {"  @Hourly\t", CronForm::kMacro},
                                           {"0\t0  12 * *   ?", CronForm::kQuartz}}) {
        const auto expr = CronExpression::Parse(c.text);
        ASSERT_TRUE(expr.ok()) << c.text << ": " << expr.status().ToString();
        EXPECT_EQ(expr->form(), c.form) << c.text;
        EXPECT_EQ(expr->text(), c.text);
    }
}

TEST(CronParse, EquivalentSpellingsFireAtTheSameTimes) {
    const std::vector<std::pair<const char*, const char*>> same = {
        {"@yearly", "0 0 0 1 1 ?"},
        {"@annually", "0 0 1 1 *"},
        {"@monthly", "0 0 0 1 * ?"},
        {"@weekly", "0 0 * * 0"},
        {"@daily", "0 0 0 * * ?"},
        {"@midnight", "0 0 * * *"},
        {"@hourly", "0 * * * *"},
        {"0 0 0 ? * L", "0 0 0 ? * SAT"},  // Quartz: a bare L in day-of-week is Saturday
        {"0 0 0 ? * 7", "0 0 0 ? * sat"},
        {"0 0 * * SUN", "0 0 * * 7"},  // Unix names use Unix numbers
        {"0 0 * * MON-FRI", "0 0 * * 1-5"},
        {"0 0 0 ? * MON-FRI", "0 0 0 ? * 2-6"},
        {"0 0 0 * * *", "0 0 0 * * ?"},  // both '*' means every day
        {"0 0 0 ? * *", "0 0 0 * * ?"},
        {"0 */15 * * * ?", "0 0,15,30,45 * * * ?"},
        {"0 /15 * * * ?", "0 */15 * * * ?"},  // Quartz: a bare step starts at the minimum
        {"0 0 0 LW * ?", "0 0 0 L-0W * ?"},
        {"0 0/15 * * * ?", "0 0-59/15 * * * ?"},
        {"0 5/20 * * * ?", "0 5,25,45 * * * ?"},
        {"0 0 22-2/2 * * ?", "0 0 22,0,2 * * ?"},  // stepping through a wrap-around range
        {"0 0 0 ? * FRI-MON", "0 0 0 ? * 6,7,1,2"},
        {"0 0 * * 5-1", "0 0 * * 5,6,0,1"},  // Unix wrap-around over 7/0
        {"0 0 0 1 1 ? *", "0 0 0 1 1 ?"},
        {"0 0 0 ? * 2#1,2#3", "0 0 0 ? * MON#1,MON#3"},
    };
    for (const auto& [a, b] : same) {
        const auto left = Upcoming(a);
        EXPECT_EQ(left.size(), 12U) << a;
        EXPECT_EQ(left, Upcoming(b)) << a << " vs " << b;
    }
    EXPECT_NE(Upcoming("0 0 0 ? * 1"), Upcoming("0 0 * * 1")) << "Quartz 1 is Sunday, Unix 1 is Monday";
}

struct ErrorCase {
    const char* text;
    const char* message;
};

TEST(CronParse, ErrorsNameFieldPositionAndReason) {
    const std::vector<ErrorCase> cases = {
        {"0 0 0 32 * ?", "day-of-month: 32 is out of range 1-31 (at position 6)"},
        {"0 0 0 1-32 * ?", "day-of-month: 32 is out of range 1-31 (at position 8)"},
        {"0 0 25 * * ?", "hour: 25 is out of range 0-23 (at position 4)"},
        {"60 * * * * ?", "second: 60 is out of range 0-59 (at position 0)"},
        {"0 0 0 1 13 ?", "month: 13 is out of range 1-12 (at position 8)"},
        {"0 0 0 ? * 0",
         "day-of-week: 0 is out of range 1-7 (Quartz numbering: 1 = SUN; 0 is only valid in the 5-field Unix "
         "form) (at position 10)"},
        {"0 0 * * 8", "day-of-week: 8 is out of range 0-7 (at position 8)"},
        {"0 0 0 ? FOO *", "month: 'FOO' is not a month name (JAN-DEC) (at position 8)"},
        {"0 0 0 ? * MONDAY", "day-of-week: 'MONDAY' is not a day name (SUN-SAT) (at position 10)"},
        {"0 0 0 ? * MON#6", "day-of-week: occurrence 6 is out of range 1-5 (at position 14)"},
        {"0 0 0 ? * 2#", "day-of-week: expected a number after '2#' (at position 10)"},
        {"0 0 0 ? * 2-", "day-of-week: range '2-' has no end (at position 10)"},
        {"0 */0 * * * ?", "minute: step 0 is out of range 1-60 (at position 4)"},
        {"0 0/61 * * * ?", "minute: step 61 is out of range 1-60 (at position 4)"},
        {"0 0 0 L-31 * ?", "day-of-month: offset 31 is out of range 0-30 (at position 8)"},
        {"0 0 0 15X * ?", "day-of-month: unexpected 'X' (at position 8)"},
        {"0 0 0 1,,2 * ?", "day-of-month: empty list item (at position 8)"},
        {"0 0 ? 1 * ?", "hour: '?' is only allowed in day-of-month or day-of-week (at position 4)"},
        {"0 0 0 1,? * ?", "day-of-month: '?' must be the whole field (at position 8)"},
        {"0 0 0 1 * MON",
         "day-of-week: day-of-month and day-of-week are both restricted; set one of them to '?' (at position 10)"},
        {"0 0 0 ? * ?", "day-of-week: '?' may be used in only one of day-of-month and day-of-week (at position 10)"},
        {"0 0 L * *",
         "day-of-month: 'L' is Quartz syntax; use the 6- or 7-field Quartz form (seconds first) (at position 4)"},
        {"0 0 ? * *",
         "day-of-month: '?' is Quartz syntax; use the 6- or 7-field Quartz form (seconds first) (at position 4)"},
        {"0 0 * * 5#2",
         "day-of-week: '#' is Quartz syntax; use the 6- or 7-field Quartz form (seconds first) (at position 9)"},
        {"0 0 0 1 1 ? 1969", "year: 1969 is out of range 1970-2199 (at position 12)"},
        {"0 0 0 1 1 ? 2030-2020", "year: range 2030-2020 runs backwards (at position 12)"},
        {"* * * *",
         "expression: expected 5 fields (Unix) or 6-7 fields (Quartz, seconds first), got 4 (at position 0)"},
        {"", "expression: expected 5 fields (Unix) or 6-7 fields (Quartz, seconds first), got 0 (at position 0)"},
        {"0 0 0 1 1 ? 2030 x",
         "expression: expected 5 fields (Unix) or 6-7 fields (Quartz, seconds first), got 8 (at position 0)"},
        {"@reboot",
         "expression: unknown macro '@reboot' (expected @yearly, @annually, @monthly, @weekly, @daily, @midnight or "
         "@hourly) (at position 0)"},
        {"@daily 5", "expression: a macro must be the whole expression (at position 7)"},
        {"0 0 0 30 2 ?", "day-of-month: '30' never occurs in month '2'; it can never fire (at position 6)"},
        {"0 0 0 31 4,6,9,11 ?",
         "day-of-month: '31' never occurs in month '4,6,9,11'; it can never fire (at position 6)"},
        {"0 0 0 29 2 ? 2023", "year: no date in year '2023' matches the day and month fields (at position 13)"},
        {"0 0 0 ? 2 6#5 2030-2035",
         "year: no date in year '2030-2035' matches the day and month fields (at position 14)"},
        // Unix: day-of-week '*' makes day-of-month decide alone.
        {"0 0 30-31 2 *", "day-of-month: '30-31' never occurs in month '2'; it can never fire (at position 4)"},
        // ... and so does a day-of-week step: the 31st never occurs in April, whatever the weekday.
        {"0 0 31 4 */2", "day-of-month: '31' never occurs in month '4'; it can never fire (at position 4)"},
        {"0 0 30 2 *", "day-of-month: '30' never occurs in month '2'; it can never fire (at position 4)"},
        {"0 0 30 2 */3", "day-of-month: '30' never occurs in month '2'; it can never fire (at position 4)"},
        {"0 0 31 4,6,9,11 */2",
         "day-of-month: '31' never occurs in month '4,6,9,11'; it can never fire (at position 4)"},
        {"0 0 31 APR */7", "day-of-month: '31' never occurs in month 'APR'; it can never fire (at position 4)"},
    };
    for (const ErrorCase& c : cases) {
        CronError error;
        const auto expr = CronExpression::Parse(c.text, &error);
        ASSERT_FALSE(expr.ok()) << c.text;
        EXPECT_EQ(expr.status().code(), Code::kInvalidArgument) << c.text;
        EXPECT_EQ(expr.status().message(), c.message) << c.text;
        EXPECT_EQ(error.Message(), c.message) << c.text;
    }
}

// Unix form with both day fields restricted: a day matching either fires, so an impossible
// day-of-month is no error as long as the weekdays can match.
TEST(CronParse, UnixImpossibleDayOfMonthWithRestrictedWeekdaysStillFires) {
    const auto expr = CronExpression::Parse("0 0 31 4 1-5");
    ASSERT_TRUE(expr.ok()) << expr.status().ToString();
    // Tuesday 1 April 2025, then Wednesday 2 April.
    EXPECT_EQ(expr->NextN(At("2025-03-31T12:00:00Z"), nullptr, 2),
              (std::vector<std::int64_t>{At("2025-04-01T00:00:00Z"), At("2025-04-02T00:00:00Z")}));
}

TEST(CronParse, ErrorCarriesTheStructuredParts) {
    CronError error;
    ASSERT_FALSE(CronExpression::Parse("0 0 0 32 * ?", &error).ok());
    EXPECT_EQ(error.field, "day-of-month");
    EXPECT_EQ(error.token, "32");
    EXPECT_EQ(error.position, 6U);
    EXPECT_EQ(error.reason, "32 is out of range 1-31");

    ASSERT_FALSE(CronExpression::Parse("0 0 0 ? * FRI#9", &error).ok());
    EXPECT_EQ(error.field, "day-of-week");
    EXPECT_EQ(error.token, "9");
    EXPECT_EQ(error.position, 14U);
}

TEST(CronParse, RejectsOverlongAndBinaryInputWithoutEchoingControlBytes) {
    CronError error;
    const std::string longest(2000, '*');
    ASSERT_FALSE(CronExpression::Parse(longest, &error).ok());
    EXPECT_EQ(error.field, "expression");
    EXPECT_NE(error.reason.find("the limit is 1024"), std::string::npos) << error.reason;

    ASSERT_FALSE(CronExpression::Parse(std::string_view("0 0 0 ? \x01\xff *", 12), &error).ok());
    EXPECT_EQ(error.field, "month");
    EXPECT_EQ(error.token, "\\x01");
    EXPECT_EQ(error.Message().find('\x01'), std::string::npos);
}

TEST(CronParse, RepeatedHourRuleFollowsTheHourField) {
    const std::vector<std::pair<const char*, bool>> cases = {
        {"* * * * * ?", true},
        {"0 */10 * * * ?", true},
        {"0 0 */2 * * ?", true},
        {"0 0 1-23/2 * * ?", true},
        {"0 0 0-23 * * ?", true},
        {"*/5 * * * *", true},
        {"@hourly", true},
        {"0 30 1 * * ?", false},
        {"0 * 1 * * ?", false},
        {"0 0 1-3 * * ?", false},
        {"0 0 1,2 * * ?", false},
        {"30 2 * * *", false},
        {"@daily", false},
        // A list names its hours one by one, even with a step inside, unless it covers all 24.
        {"0 0 2-12,1-14/8 * * ?", false},
        {"0 0 */2,1 * * ?", false},
        {"0 0 0-11,12-23 * * ?", true},
        {"0 0 */2,1-23/2 * * ?", true},
        {"0 0 * * * ?", true},
        {"0 0 1/3 * * ?", true},
        {"0 0 /3 * * ?", true},
        {"0 0 22-2/2 * * ?", true},
        {"0 0 */1 * * ?", true},
        {"0 0 2 * * ?", false},
        {"0 0 2/24 * * ?", true},  // one item with a step, even if it names one hour
        {"0 0 1-3,*/2 * * ?", false},
        {"0 0 0-5,6-23/1 * * ?", true},  // all 24
        {"0 0 1-23 * * ?", false},
    };
    for (const auto& [text, both] : cases) {
        const auto expr = CronExpression::Parse(text);
        ASSERT_TRUE(expr.ok()) << text;
        EXPECT_EQ(expr->FiresInBothPasses(), both) << text;
    }
}

TEST(CronParse, CopiesShareTablesAndBehaveAlike) {
    auto parsed = CronExpression::Parse("0 15 10 ? * 6L");
    ASSERT_TRUE(parsed.ok());
    const CronExpression copy = *parsed;
    const CronExpression moved = std::move(parsed).value();
    EXPECT_EQ(copy.NextN(0, nullptr, 5), moved.NextN(0, nullptr, 5));
    EXPECT_EQ(copy.text(), "0 15 10 ? * 6L");
}

}  // namespace
}  // namespace sched::cron
