#include "sched/common/name_table.hpp"

#include <gtest/gtest.h>

#include "sched/common/job_vocabulary.hpp"

namespace sched {
namespace {

enum class Color { kRed, kDarkBlue, kGreen };
constexpr auto kColorNames = MakeNameTable<Color>({"red", "dark-blue", "green"});

TEST(NameTable, NamesAndParsesEveryEnumeratorBothWays) {
    static_assert(kColorNames.Name(Color::kDarkBlue) == "dark-blue");
    static_assert(kColorNames.Parse("green") == Color::kGreen);
    for (auto c : {Color::kRed, Color::kDarkBlue, Color::kGreen}) {
        EXPECT_EQ(kColorNames.Parse(kColorNames.Name(c)), c);
    }
}

TEST(NameTable, RejectsAnyOtherSpelling) {
    for (std::string_view bad : std::initializer_list<std::string_view>{"", "Red", "red ", " red", "dark_blue", "blue",
                                                                        std::string_view("red\0", 4)}) {
        EXPECT_FALSE(kColorNames.Parse(bad).has_value()) << bad;
    }
    EXPECT_EQ(kColorNames.Name(static_cast<Color>(7)), "unknown");
}

TEST(NameTable, ExpectedListsTheNamesForMessages) {
    EXPECT_EQ(kColorNames.Expected(), "red, dark-blue or green");
    EXPECT_EQ(kColorNames.Expected(" and "), "red, dark-blue and green");
    EXPECT_EQ(MakeNameTable<Color>({"red"}).Expected(), "red");
}

TEST(JobVocabulary, KeepsTheStoredSpellingsAndTheirMessages) {
    EXPECT_EQ(ScheduleTypeName(ScheduleType::kFixedDelay), "fixed-delay");
    EXPECT_EQ(*ParseScheduleType("manual"), ScheduleType::kManual);
    EXPECT_EQ(ParseScheduleType("hourly").status().message(),
              "unknown schedule type 'hourly' (expected cron, fixed-rate, fixed-delay, once or manual)");
    EXPECT_EQ(MisfirePolicyName(MisfirePolicy::kFireOnceNow), "fire-once-now");
    EXPECT_EQ(*ParseMisfirePolicy("fire-all"), MisfirePolicy::kFireAll);
    EXPECT_EQ(ParseMisfirePolicy("late\n").status().message(),
              "unknown misfire policy 'late?' (expected skip, fire-once-now or fire-all)");
    EXPECT_EQ(ParseScheduleType(std::string(100, 'x')).status().message(),
              "unknown schedule type '" + std::string(64, 'x') +
                  "...' (expected cron, fixed-rate, fixed-delay, once or manual)");
}

TEST(JobVocabulary, RoutingAndBlockStrategyKeepTheJobsApisSpellingsAndMessages) {
    EXPECT_EQ(RoutingName(Routing::kShardingBroadcast), "sharding-broadcast");
    EXPECT_EQ(RoutingName(Routing::kRoundRobin), "round-robin");
    EXPECT_EQ(kRoutingNames.names().size(), 10u);
    for (auto name : kRoutingNames.names()) EXPECT_EQ(RoutingName(*ParseRouting(name)), name);
    EXPECT_EQ(ParseRouting("nearest").status().message(),
              "expected one of first, last, round-robin, random, consistent-hash, least-frequently-used, "
              "least-recently-used, failover, busy-over, sharding-broadcast, got \"nearest\"");
    EXPECT_FALSE(ParseRouting("Round-Robin").ok());
    EXPECT_EQ(BlockStrategyName(BlockStrategy::kDiscardLater), "discard-later");
    EXPECT_EQ(*ParseBlockStrategy("cover-early"), BlockStrategy::kCoverEarly);
    EXPECT_EQ(ParseBlockStrategy("queue").status().message(),
              "expected one of serial, discard-later, cover-early, skip, buffer-one, buffer-all, cancel-other, "
              "terminate-other, allow-all, got \"queue\"");
}

}  // namespace
}  // namespace sched
