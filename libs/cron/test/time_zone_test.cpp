#include "sched/cron/time_zone.hpp"

#include <date/tz.h>
#include <gtest/gtest.h>

#include "sched/cron/cron_expression.hpp"
#include "test_time.hpp"

namespace sched::cron {
namespace {

using testing::At;
using testing::Show;

TEST(LookupZone, FindsIanaNamesAndLinks) {
    for (const char* name : {"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Shanghai", "UTC"}) {
        const auto zone = LookupZone(name);
        ASSERT_TRUE(zone.ok()) << name << ": " << zone.status().ToString();
        EXPECT_EQ((*zone)->name(), name);
    }
    const auto link = LookupZone("US/Eastern");
    ASSERT_TRUE(link.ok());
    EXPECT_EQ((*link)->get_info(date::sys_seconds{std::chrono::seconds{At("2024-07-01T00:00:00Z") / 1000}}).offset,
              std::chrono::hours{-4});
    EXPECT_EQ(UtcZone()->name(), "UTC");
}

TEST(LookupZone, RejectsUnknownEmptyAndHostDependentNames) {
    const auto unknown = LookupZone("Mars/Olympus");
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.status().code(), Code::kInvalidArgument);
    EXPECT_NE(unknown.status().message().find("'Mars/Olympus'"), std::string::npos) << unknown.status().message();
    for (const char* name :
         {"", "localtime", "posix/Europe/Berlin", "right/UTC", "../../etc/passwd", "zone.tab", "europe/berlin"}) {
        const auto zone = LookupZone(name);
        EXPECT_FALSE(zone.ok()) << name;
        EXPECT_EQ(zone.status().code(), Code::kInvalidArgument) << name;
    }
}

// A known limitation of Debian's date/tz (USE_OS_TZDB): transitions are read from the zoneinfo
// files, which list them only up to 2037, and the POSIX rule after them is ignored. docs/cron.md
// states it; if this starts failing, the limitation is gone and the docs should say so.
TEST(LookupZone, DstRulesEndWithTheListedTransitionsIn2037) {
    const auto expr = CronExpression::Parse("0 0 12 1 7 ?");
    ASSERT_TRUE(expr.ok());
    const date::time_zone* berlin = *LookupZone("Europe/Berlin");
    EXPECT_EQ(Show(*expr->Next(At("2037-06-01T00:00:00Z"), berlin), berlin), "2037-07-01T12:00:00+0200");
    EXPECT_EQ(Show(*expr->Next(At("2038-06-01T00:00:00Z"), berlin), berlin), "2038-07-01T12:00:00+0100");
}

// The same limitation seen from the south: the last listed transition (spring 2037 there) starts
// summer time, so these zones keep it for good. Update docs/cron.md if this starts failing.
TEST(LookupZone, SouthernZonesStayOnSummerTimeAfter2037) {
    const auto expr = CronExpression::Parse("0 0 12 1 7 ?");
    ASSERT_TRUE(expr.ok());
    const auto july = [&](const char* name, const char* year_start) {
        const date::time_zone* zone = *LookupZone(name);
        return Show(*expr->Next(At(year_start), zone), zone);
    };
    EXPECT_EQ(july("Australia/Sydney", "2037-06-01T00:00:00Z"), "2037-07-01T12:00:00+1000");
    EXPECT_EQ(july("Australia/Sydney", "2038-06-01T00:00:00Z"), "2038-07-01T12:00:00+1100");
    EXPECT_EQ(july("Pacific/Auckland", "2037-06-01T00:00:00Z"), "2037-07-01T12:00:00+1200");
    EXPECT_EQ(july("Pacific/Auckland", "2038-06-01T00:00:00Z"), "2038-07-01T12:00:00+1300");
    EXPECT_EQ(july("America/Santiago", "2038-06-01T00:00:00Z"), "2038-07-01T12:00:00-0300");
    EXPECT_EQ(july("America/New_York", "2038-06-01T00:00:00Z"), "2038-07-01T12:00:00-0500");
}

}  // namespace
}  // namespace sched::cron
