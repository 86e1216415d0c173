#include "sched/cron/time_zone.hpp"

#include <date/tz.h>
#include <gtest/gtest.h>

#include <string>

#include "sched/cron/cron_expression.hpp"
#include "test_time.hpp"

namespace sched::cron {
namespace {

using testing::At;
using testing::Zone;

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

// Debian's zoneinfo files list transitions only up to 2037; after that the TZif footer's POSIX
// rule decides (ZoneInfoAt). Expected values from Python's zoneinfo, which evaluates the footer.
std::int64_t OffsetAt(const char* zone, const char* utc) {
    return ZoneInfoAt(*Zone(zone), At(utc) / 1000).offset.count();
}

TEST(ZoneInfoAt, FollowsDstPast2037InBothHemispheres) {
    struct Case {
        const char* zone;
        int january;  // offset in seconds on 15 January, 12:00 UTC
        int july;
    };
    for (const Case c : {Case{"Europe/Berlin", 3600, 7200}, Case{"America/New_York", -18000, -14400},
                         Case{"Australia/Sydney", 39600, 36000}, Case{"Australia/Lord_Howe", 39600, 37800},
                         Case{"Pacific/Chatham", 49500, 45900}, Case{"Pacific/Auckland", 46800, 43200},
                         Case{"America/Santiago", -10800, -14400}, Case{"Asia/Shanghai", 28800, 28800}}) {
        for (const char* year : {"2038", "2040", "2045", "2199"}) {
            const std::string y = year;
            EXPECT_EQ(OffsetAt(c.zone, (y + "-01-15T12:00:00Z").c_str()), c.january) << c.zone << " " << y;
            EXPECT_EQ(OffsetAt(c.zone, (y + "-07-15T12:00:00Z").c_str()), c.july) << c.zone << " " << y;
        }
    }
}

TEST(ZoneInfoAt, PutsTransitionsAfter2037WhereTheFooterRuleSays) {
    struct Case {
        const char* zone;
        const char* at;  // first instant of the new offset
        int before;
        int after;
    };
    for (const Case c : {
             Case{"Europe/Berlin", "2038-03-28T01:00:00Z", 3600, 7200},  // first one from the rule
             Case{"Europe/Berlin", "2040-03-25T01:00:00Z", 3600, 7200},
             Case{"Europe/Berlin", "2040-10-28T01:00:00Z", 7200, 3600},
             Case{"Europe/Berlin", "2045-10-29T01:00:00Z", 7200, 3600},
             Case{"America/New_York", "2040-03-11T07:00:00Z", -18000, -14400},
             Case{"America/New_York", "2045-11-05T06:00:00Z", -14400, -18000},
             Case{"Australia/Sydney", "2038-04-03T16:00:00Z", 39600, 36000},  // first one from the rule
             Case{"Australia/Sydney", "2040-03-31T16:00:00Z", 39600, 36000},
             Case{"Australia/Sydney", "2040-10-06T16:00:00Z", 36000, 39600},
             Case{"Australia/Sydney", "2045-09-30T16:00:00Z", 36000, 39600},
             Case{"Australia/Lord_Howe", "2040-03-31T15:00:00Z", 39600, 37800},
             Case{"Australia/Lord_Howe", "2040-10-06T15:30:00Z", 37800, 39600},
             Case{"Pacific/Chatham", "2040-03-31T14:00:00Z", 49500, 45900},
             Case{"Pacific/Chatham", "2045-09-23T14:00:00Z", 45900, 49500},
             Case{"Pacific/Auckland", "2040-09-29T14:00:00Z", 43200, 46800},
             Case{"America/Santiago", "2038-04-04T03:00:00Z", -10800, -14400},  // first one from the rule
             Case{"America/Santiago", "2040-04-08T03:00:00Z", -10800, -14400},
             Case{"America/Santiago", "2040-09-02T04:00:00Z", -14400, -10800},
             Case{"America/Santiago", "2045-04-02T03:00:00Z", -10800, -14400},
         }) {
        const date::time_zone& zone = *Zone(c.zone);
        const std::int64_t at = At(c.at) / 1000;
        const date::sys_info before = ZoneInfoAt(zone, at - 1);
        const date::sys_info after = ZoneInfoAt(zone, at);
        EXPECT_EQ(before.offset.count(), c.before) << c.zone << " " << c.at;
        EXPECT_EQ(after.offset.count(), c.after) << c.zone << " " << c.at;
        EXPECT_EQ(before.end.time_since_epoch().count(), at) << c.zone << " " << c.at;
        EXPECT_EQ(after.begin.time_since_epoch().count(), at) << c.zone << " " << c.at;
    }
}

TEST(ZoneInfoAt, AgreesWithDateTzUpToTheLastListedTransition) {
    for (const char* name : {"Europe/Berlin", "Australia/Sydney", "America/Santiago", "Pacific/Chatham", "UTC"}) {
        const date::time_zone& zone = *Zone(name);
        for (std::int64_t t = At("2020-01-01T00:00:00Z") / 1000; t < At("2037-06-01T00:00:00Z") / 1000;
             t += 7 * 86400 + 3599) {
            const date::sys_info ours = ZoneInfoAt(zone, t);
            const date::sys_info theirs = zone.get_info(date::sys_seconds{std::chrono::seconds{t}});
            ASSERT_EQ(ours.offset, theirs.offset) << name << " " << t;
            ASSERT_EQ(ours.begin, theirs.begin) << name << " " << t;
            ASSERT_EQ(ours.end, theirs.end) << name << " " << t;
        }
    }
}

TEST(LocalZoneInfoAt, FindsGapsAndRepeatsPast2037) {
    const auto local = [](const char* text) {
        return At(text) / 1000;
    };  // a local time written as if UTC
    const date::time_zone& berlin = *Zone("Europe/Berlin");
    const auto gap = LocalZoneInfoAt(berlin, local("2040-03-25T02:30:00Z"));
    EXPECT_EQ(gap.result, date::local_info::nonexistent);
    EXPECT_EQ(gap.second.begin.time_since_epoch().count(), At("2040-03-25T01:00:00Z") / 1000);
    const auto repeated = LocalZoneInfoAt(berlin, local("2040-10-28T02:30:00Z"));
    EXPECT_EQ(repeated.result, date::local_info::ambiguous);
    EXPECT_EQ(repeated.first.offset.count(), 7200);
    EXPECT_EQ(repeated.second.offset.count(), 3600);
    EXPECT_EQ(LocalZoneInfoAt(berlin, local("2040-07-01T12:00:00Z")).result, date::local_info::unique);
    const date::time_zone& lord_howe = *Zone("Australia/Lord_Howe");
    EXPECT_EQ(LocalZoneInfoAt(lord_howe, local("2040-10-07T02:15:00Z")).result, date::local_info::nonexistent);
    EXPECT_EQ(LocalZoneInfoAt(lord_howe, local("2040-10-07T02:30:00Z")).result, date::local_info::unique);
    EXPECT_EQ(LocalZoneInfoAt(lord_howe, local("2040-04-01T01:45:00Z")).result, date::local_info::ambiguous);
    EXPECT_EQ(LocalZoneInfoAt(lord_howe, local("2040-04-01T02:00:00Z")).result, date::local_info::unique);
}

// Next-fire times across transitions after 2037 follow the cron DST rules like today's do.
TEST(LookupZone, CronFiresFollowDstPast2037) {
    const auto next = [](const char* expr, const char* zone, const char* after) {
        const auto parsed = CronExpression::Parse(expr);
        EXPECT_TRUE(parsed.ok()) << expr;
        const auto t = parsed->Next(At(after), Zone(zone));
        return t ? *t : -1;
    };
    // Summer time in July, both hemispheres.
    EXPECT_EQ(next("0 0 12 1 7 ?", "Australia/Sydney", "2040-06-01T00:00:00Z"), At("2040-07-01T12:00:00+1000"));
    EXPECT_EQ(next("0 0 12 1 7 ?", "Pacific/Auckland", "2040-06-01T00:00:00Z"), At("2040-07-01T12:00:00+1200"));
    EXPECT_EQ(next("0 0 12 1 7 ?", "America/Santiago", "2040-06-01T00:00:00Z"), At("2040-07-01T12:00:00-0400"));
    EXPECT_EQ(next("0 0 12 1 7 ?", "Europe/Berlin", "2040-06-01T00:00:00Z"), At("2040-07-01T12:00:00+0200"));
    // Spring forward: a time in the gap fires at the first instant after it.
    EXPECT_EQ(next("0 30 2 * * ?", "Australia/Sydney", "2040-10-06T00:00:00Z"), At("2040-10-07T03:00:00+1100"));
    EXPECT_EQ(next("0 30 0 * * ?", "America/Santiago", "2040-09-01T12:00:00Z"), At("2040-09-02T01:00:00-0300"));
    EXPECT_EQ(next("0 30 2 * * ?", "Europe/Berlin", "2040-03-24T12:00:00Z"), At("2040-03-25T03:00:00+0200"));
    // Fall back: once at the first occurrence, or both passes for a stepped hour field.
    EXPECT_EQ(next("0 45 1 * * ?", "Australia/Lord_Howe", "2040-03-31T14:50:00Z"), At("2040-04-02T01:45:00+1030"));
    EXPECT_EQ(next("0 45 1 * * ?", "Australia/Lord_Howe", "2040-03-31T12:00:00Z"), At("2040-04-01T01:45:00+1100"));
    EXPECT_EQ(next("0 0/15 * * * ?", "Australia/Lord_Howe", "2040-03-31T14:50:00Z"), At("2040-04-01T01:30:00+1030"));
    EXPECT_EQ(next("0 */30 * * * ?", "Europe/Berlin", "2040-10-28T00:45:00Z"), At("2040-10-28T02:00:00+0100"));
    EXPECT_EQ(next("0 30 2 * * ?", "Europe/Berlin", "2040-10-28T00:45:00Z"), At("2040-10-29T02:30:00+0100"));
    EXPECT_EQ(next("0 0 3 * * ?", "Pacific/Chatham", "2040-09-29T12:00:00Z"), At("2040-09-30T03:45:00+1345"));
}

}  // namespace
}  // namespace sched::cron
