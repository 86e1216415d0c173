#include "impl/posix_tz.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_time.hpp"

namespace sched::cron::impl {
namespace {

using sched::cron::testing::At;

std::int64_t Utc(const char* text) {
    return At(text) / 1000;
}

TEST(ParsePosixTz, ReadsTheFootersOfRealZones) {
    const auto sydney = ParsePosixTz("AEST-10AEDT,M10.1.0,M4.1.0/3");
    ASSERT_TRUE(sydney.ok()) << sydney.status().ToString();
    EXPECT_EQ(sydney->std_abbrev, "AEST");
    EXPECT_EQ(sydney->std_offset_s, 36000);
    EXPECT_EQ(sydney->dst_offset_s, 39600);  // one hour more when not written
    EXPECT_EQ(sydney->start.month, 10);
    EXPECT_EQ(sydney->start.time_s, 7200);  // 02:00 when not written
    EXPECT_EQ(sydney->end.time_s, 3 * 3600);

    const auto chatham = ParsePosixTz("<+1245>-12:45<+1345>,M9.5.0/2:45,M4.1.0/3:45");
    ASSERT_TRUE(chatham.ok()) << chatham.status().ToString();
    EXPECT_EQ(chatham->std_abbrev, "+1245");
    EXPECT_EQ(chatham->std_offset_s, 12 * 3600 + 45 * 60);
    EXPECT_EQ(chatham->dst_offset_s, 13 * 3600 + 45 * 60);

    const auto lord_howe = ParsePosixTz("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0");
    ASSERT_TRUE(lord_howe.ok());
    EXPECT_EQ(lord_howe->dst_offset_s - lord_howe->std_offset_s, 1800);

    const auto santiago = ParsePosixTz("<-04>4<-03>,M9.1.6/24,M4.1.6/24");
    ASSERT_TRUE(santiago.ok());
    EXPECT_EQ(santiago->std_offset_s, -4 * 3600);
    EXPECT_EQ(santiago->start.time_s, 24 * 3600);

    const auto shanghai = ParsePosixTz("CST-8");
    ASSERT_TRUE(shanghai.ok());
    EXPECT_FALSE(shanghai->has_dst);
    EXPECT_TRUE(PosixTzTransitions(*shanghai, 2040, 2041).empty());

    const auto julian = ParsePosixTz("XXX3YYY,J60/-1:30,300/167");
    ASSERT_TRUE(julian.ok()) << julian.status().ToString();
    EXPECT_EQ(julian->start.kind, PosixTzDate::Kind::kJulian1);
    EXPECT_EQ(julian->start.time_s, -5400);
    EXPECT_EQ(julian->end.kind, PosixTzDate::Kind::kJulian0);
    EXPECT_EQ(julian->end.time_s, 167 * 3600);
}

TEST(ParsePosixTz, RejectsMalformedAndOversizedRules) {
    for (const std::string& bad : std::vector<std::string>{
             "",                                        // no name
             "AE-10",                                   // name too short
             "<+10",                                    // unterminated
             "<+1 0>-10",                               // space in a quoted name
             "AEST",                                    // no offset
             "AEST-25",                                 // hours out of range
             "AEST-10:60",                              // minutes out of range
             "AEST-0010",                               // too many digits
             "AEST-10AEDT",                             // DST without a rule
             "AEST-10AEDT,M10.1.0",                     // no end
             "AEST-10AEDT,M13.1.0,M4.1.0",              // month 13
             "AEST-10AEDT,M10.6.0,M4.1.0",              // week 6
             "AEST-10AEDT,M10.1.7,M4.1.0",              // weekday 7
             "AEST-10AEDT,J0,J365",                     // J is 1-365
             "AEST-10AEDT,366,300",                     // n is 0-365
             "AEST-10AEDT,M10.1.0/168,M4.1.0",          // time beyond 167 h
             "AEST-10AEDT,M10.1.0,M4.1.0/3x",           // trailing text
             "AEST-10AEDT,M10.1.0,M4.1.0/99999999999",  // long number
             std::string(200, 'A') + "-10",             // too long
         }) {
        const auto parsed = ParsePosixTz(bad);
        ASSERT_FALSE(parsed.ok()) << bad;
        EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument) << bad;
    }
}

// The transitions of the rule `spec` in `year`; none when it does not parse (a failure).
std::vector<PosixTzTransition> TransitionsIn(const std::string& spec, int year) {
    const auto rule = ParsePosixTz(spec);
    EXPECT_TRUE(rule.ok()) << spec;
    return rule.ok() ? PosixTzTransitions(*rule, year, year) : std::vector<PosixTzTransition>{};
}

TEST(PosixTzTransitions, PlacesBothTransitionsOfAYear) {
    const auto t = TransitionsIn("AEST-10AEDT,M10.1.0,M4.1.0/3", 2040);
    ASSERT_EQ(t.size(), 2U);
    EXPECT_EQ(t[0].at, Utc("2040-03-31T16:00:00Z"));  // first Sunday of April, 03:00 AEDT
    EXPECT_FALSE(t[0].dst);
    EXPECT_EQ(t[1].at, Utc("2040-10-06T16:00:00Z"));  // first Sunday of October, 02:00 AEST
    EXPECT_TRUE(t[1].dst);

    // Week 5 means the last such weekday: Berlin's last Sundays of March and October.
    const auto b = TransitionsIn("CET-1CEST,M3.5.0,M10.5.0/3", 2045);
    ASSERT_EQ(b.size(), 2U);
    EXPECT_EQ(b[0].at, Utc("2045-03-26T01:00:00Z"));
    EXPECT_EQ(b[1].at, Utc("2045-10-29T01:00:00Z"));

    // /24 on a Saturday is midnight starting Sunday (Santiago).
    const auto s = TransitionsIn("<-04>4<-03>,M9.1.6/24,M4.1.6/24", 2040);
    ASSERT_EQ(s.size(), 2U);
    EXPECT_EQ(s[0].at, Utc("2040-04-08T03:00:00Z"));
    EXPECT_EQ(s[1].at, Utc("2040-09-02T04:00:00Z"));

    // Julian days: J60 is 1 March even in a leap year; 59 (zero-based) is 29 February in one.
    const auto j = TransitionsIn("AAA0BBB,J60/0,59/0", 2040);
    ASSERT_EQ(j.size(), 2U);
    EXPECT_EQ(j[0].at, Utc("2040-02-28T23:00:00Z"));  // 29 Feb 00:00 in BBB (+01)
    EXPECT_EQ(j[1].at, Utc("2040-03-01T00:00:00Z"));
}

TEST(PosixTzTransitions, DstAllYearHasNoChangeInside) {
    // RFC 8536 section 3.3.1: DST from January 1 00:00 to December 31 24:00 + 1 h is all year.
    const auto always = ParsePosixTz("EST5EDT,0/0,J365/25");
    ASSERT_TRUE(always.ok());
    const auto t = PosixTzTransitions(*always, 2040, 2042);
    ASSERT_EQ(t.size(), 2U);
    EXPECT_TRUE(t[0].dst);
    EXPECT_EQ(t[0].at, Utc("2040-01-01T05:00:00Z"));
    EXPECT_FALSE(t[1].dst);
    EXPECT_EQ(t[1].at, Utc("2043-01-01T05:00:00Z"));
}

}  // namespace
}  // namespace sched::cron::impl
