#include <stdlib.h>

#include <gtest/gtest.h>

#include "sched/common/config.hpp"
#include "sched/trigger/node.hpp"
#include "sched/trigger/slave.hpp"

namespace sched::trigger {
namespace {

NodeConfig Parse(const std::string& yaml) {
    return NodeConfig::FromYaml(ConfigNode::LoadString(yaml), NodeConfig::Defaults{});
}

class NodeConfigEnv : public ::testing::Test {
  protected:
    void SetUp() override {
        unsetenv("SCHED_ADVERTISED_ADDRESS");
        setenv("SCHED_TOKEN", "node-config-test-token", 1);
    }
    void TearDown() override {
        unsetenv("SCHED_ADVERTISED_ADDRESS");
        unsetenv("SCHED_TOKEN");
    }
};

TEST_F(NodeConfigEnv, AdvertisedAddressComesFromTheEnvironmentWhenSet) {
    EXPECT_EQ(Parse("advertised-address: \"trigger-1:7071\"\n").advertised_address, "trigger-1:7071");
    setenv("SCHED_ADVERTISED_ADDRESS", "10.1.2.3:7071", 1);
    EXPECT_EQ(Parse("advertised-address: \"trigger-1:7071\"\n").advertised_address, "10.1.2.3:7071");
    EXPECT_EQ(Parse("{}\n").advertised_address, "10.1.2.3:7071");
}

TEST_F(NodeConfigEnv, AdvertisedAddressFromTheEnvironmentIsValidated) {
    setenv("SCHED_ADVERTISED_ADDRESS", "10.1.2.3", 1);  // no port: other nodes could not dial it
    try {
        (void)Parse("{}\n");
        FAIL() << "accepted an address without a port";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("advertised-address"), std::string::npos) << e.what();
    }
    setenv("SCHED_ADVERTISED_ADDRESS", "10.1.2.3:0", 1);
    EXPECT_THROW((void)Parse("{}\n"), ConfigError);
}

// A burst's lead plus claim-ahead must keep a run's start_in_ms within the protocol's 10 s.
TEST(SlaveConfigBursts, DefaultsAndBoundsOfTheBurstKeys) {
    const SlaveConfig defaults = SlaveConfig::FromYaml(ConfigNode::LoadString("{}"));
    EXPECT_EQ(defaults.burst_claim_ahead, std::chrono::seconds(8));
    EXPECT_EQ(defaults.burst_claim_rate, 2000);
    const SlaveConfig set =
        SlaveConfig::FromYaml(ConfigNode::LoadString("burst-claim-ahead: 0s\nburst-claim-rate: 500\n"));
    EXPECT_EQ(set.burst_claim_ahead, Micros{0});
    EXPECT_EQ(set.burst_claim_rate, 500);
    EXPECT_THROW(SlaveConfig::FromYaml(ConfigNode::LoadString("burst-claim-ahead: 10s\n")), ConfigError);
    EXPECT_THROW(SlaveConfig::FromYaml(ConfigNode::LoadString("burst-claim-rate: 0\n")), ConfigError);
}

TEST(SlaveConfigGroupFill, DefaultsAndBoundsOfTheFillKeys) {
    const SlaveConfig defaults = SlaveConfig::FromYaml(ConfigNode::LoadString("{}"));
    EXPECT_EQ(defaults.group_fill, 64);
    EXPECT_EQ(defaults.group_span, std::chrono::milliseconds(400));
    const SlaveConfig off = SlaveConfig::FromYaml(ConfigNode::LoadString("group-fill: 0\ngroup-span: 0s\n"));
    EXPECT_EQ(off.group_fill, 0);
    EXPECT_EQ(off.group_span, Micros{0});
    EXPECT_THROW(SlaveConfig::FromYaml(ConfigNode::LoadString("group-span: 2s\n")), ConfigError);
    EXPECT_THROW(SlaveConfig::FromYaml(ConfigNode::LoadString("group-fill: -1\n")), ConfigError);
}

}  // namespace
}  // namespace sched::trigger
