#include <gtest/gtest.h>

#include "sched/common/testing/config_error.hpp"
#include "sched/lock/lease_elector.hpp"

namespace sched::lock {
namespace {

using namespace std::chrono_literals;

std::string ErrorOf(const std::string& yaml) {
    return sched::testing::ConfigErrorOf(
        [&] { (void)ElectionConfig::FromYaml(ConfigNode::LoadString(yaml).Child("election")); });
}

TEST(ElectionConfig, DefaultsAreOneSecondTickThreeSecondTtlOneSecondMargin) {
    const auto c = ElectionConfig::FromYaml(ConfigNode::LoadString("{}").Child("election"));
    EXPECT_EQ(c.tick, 1s);
    EXPECT_EQ(c.ttl, 3s);
    EXPECT_EQ(c.margin, 1s);
    EXPECT_EQ(c.name, "master");
}

TEST(ElectionConfig, ReadsDurationStrings) {
    const auto c = ElectionConfig::FromYaml(
        ConfigNode::LoadString("election: {tick: 200ms, ttl: 1s, margin: 300ms}").Child("election"));
    EXPECT_EQ(c.tick, 200ms);
    EXPECT_EQ(c.ttl, 1s);
    EXPECT_EQ(c.margin, 300ms);
}

TEST(ElectionConfig, TickOfHalfTheTtlOrMoreIsRejectedNamingTheKey) {
    const std::string e = ErrorOf("election: {tick: 1500ms, ttl: 3s}");
    EXPECT_NE(e.find("election.tick: must be less than ttl / 2"), std::string::npos) << e;
    EXPECT_EQ(ErrorOf("election: {tick: 1499ms, ttl: 3s, margin: 1s}"), "");
}

TEST(ElectionConfig, MarginThatLeavesNoTimeToRenewIsRejected) {
    const std::string e = ErrorOf("election: {tick: 1s, ttl: 3s, margin: 2s}");
    EXPECT_NE(e.find("election.margin: must be less than ttl - tick"), std::string::npos) << e;
}

TEST(ElectionConfig, ZeroValuesAreRejected) {
    EXPECT_NE(ErrorOf("election: {margin: 0s}").find("election.margin: must be positive"), std::string::npos);
    EXPECT_NE(ErrorOf("election: {tick: 0s}").find("election.tick: must be positive"), std::string::npos);
}

TEST(ElectionConfig, BadDurationNamesTheKey) {
    EXPECT_NE(ErrorOf("election: {ttl: soon}").find("election.ttl"), std::string::npos);
}

TEST(ElectionDbUrl, KeepsEveryWaitThatCanBlockARenewBelowTheMargin) {
    ElectionConfig c;  // margin 1s
    db::DbUrl base;
    base.statement_timeout = 0s;
    const db::DbUrl u = ElectionDbUrl(base, c);
    EXPECT_LT(u.statement_timeout, c.margin);
    EXPECT_GT(u.statement_timeout, 0s);
    EXPECT_LT(u.acquire_timeout, c.margin);
    EXPECT_LT(u.busy_timeout, c.margin);
    EXPECT_EQ(u.pool, 2);
}

}  // namespace
}  // namespace sched::lock
