#include "sched/common/duration.hpp"

#include <gtest/gtest.h>

namespace sched {
namespace {

using namespace std::chrono_literals;

TEST(ParseDuration, AcceptsEveryUnitAndCompounds) {
    EXPECT_EQ(*ParseDuration("1500us"), 1500us);
    EXPECT_EQ(*ParseDuration("250ms"), 250ms);
    EXPECT_EQ(*ParseDuration("3s"), 3s);
    EXPECT_EQ(*ParseDuration("1m"), 60s);
    EXPECT_EQ(*ParseDuration("2h"), 7200s);
    EXPECT_EQ(*ParseDuration("1d"), 86400s);
    EXPECT_EQ(*ParseDuration("1m30s"), 90s);
    EXPECT_EQ(*ParseDuration("1h1m1s1ms"), 3661001ms);
    EXPECT_EQ(*ParseDuration("0"), 0us);
    EXPECT_EQ(*ParseDuration("0s"), 0us);
}

TEST(ParseDuration, RejectsMalformedInputWithReason) {
    for (const char* bad : {"", "3", "s", "3x", "-1s", "1.5s", "3 s", " 3s", "1m30", "99999999999999999999s"}) {
        auto r = ParseDuration(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
        EXPECT_NE(r.status().message().find("expected a duration"), std::string::npos) << r.status().message();
    }
    EXPECT_NE(ParseDuration("3x").status().message().find("unknown unit \"x\""), std::string::npos);
    EXPECT_NE(ParseDuration("3").status().message().find("missing unit"), std::string::npos);
}

TEST(FormatDuration, RoundTripsThroughParse) {
    for (Micros d :
         {Micros{0}, Micros{1}, Micros{1500}, Micros{250000}, Micros{90'000'000}, Micros{86'400'000'000 + 1}}) {
        const std::string text = FormatDuration(d);
        auto back = ParseDuration(text);
        ASSERT_TRUE(back.ok()) << text;
        EXPECT_EQ(*back, d) << text;
    }
    EXPECT_EQ(FormatDuration(90s), "1m30s");
    EXPECT_EQ(FormatDuration(250ms), "250ms");
}

}  // namespace
}  // namespace sched
