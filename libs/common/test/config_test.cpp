#include "sched/common/config.hpp"

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "sched/common/testing/config_error.hpp"

namespace sched {
namespace {

using namespace std::chrono_literals;

using testing::ConfigErrorOf;

TEST(ConfigNode, ReadsTypedValuesWithDefaults) {
    auto root = ConfigNode::LoadString(R"(
http:
  listen: "127.0.0.1:9000"
  max-connections: 64
  tls: false
election:
  ttl: 3s
tags: [a, b]
)");
    auto http = root.Child("http");
    EXPECT_EQ(http.String("listen", "x"), "127.0.0.1:9000");
    EXPECT_EQ(http.Int("max-connections", 1, 1, 1000), 64);
    EXPECT_FALSE(http.Bool("tls", true));
    EXPECT_EQ(http.Duration("idle-timeout", 30s), 30s);  // absent -> default
    EXPECT_EQ(root.Child("election").Duration("ttl", 1s), 3s);
    EXPECT_EQ(root.StringList("tags", {}), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(root.Child("absent").String("k", "dflt"), "dflt");
    EXPECT_NO_THROW(root.RejectUnknownKeys());
}

TEST(ConfigNode, UnknownKeyIsRejectedWithFullPath) {
    auto root = ConfigNode::LoadString("http:\n  listen: a\n  listen-adress: b\n");
    (void)root.Child("http").String("listen", "");
    EXPECT_EQ(ConfigErrorOf([&] { root.RejectUnknownKeys(); }), "http.listen-adress: unknown key");
}

TEST(ConfigNode, UnknownTopLevelSectionIsRejected) {
    auto root = ConfigNode::LoadString("databse:\n  url: x\n");
    EXPECT_EQ(ConfigErrorOf([&] { root.RejectUnknownKeys(); }), "databse: unknown key");
}

TEST(ConfigNode, WrongTypesNameTheKeyAndTheValue) {
    auto root = ConfigNode::LoadString(R"(
db:
  pool: lots
  big: 1000
  on: maybe
  ttl: 3
  list: {a: 1}
  mode: fast
)");
    auto db = root.Child("db");
    EXPECT_EQ(ConfigErrorOf([&] { db.Int("pool", 1, 1, 256); }),
              "db.pool: expected an integer in 1..256, got \"lots\"");
    EXPECT_EQ(ConfigErrorOf([&] { db.Int("big", 1, 1, 256); }), "db.big: expected an integer in 1..256, got 1000");
    EXPECT_EQ(ConfigErrorOf([&] { db.Bool("on", false); }), "db.on: expected true or false, got \"maybe\"");
    EXPECT_NE(ConfigErrorOf([&] { db.Duration("ttl", 1s); }).find("db.ttl: expected a duration"), std::string::npos);
    EXPECT_EQ(ConfigErrorOf([&] { db.StringList("list", {}); }), "db.list: expected a list of strings");
    EXPECT_EQ(ConfigErrorOf([&] {
                  db.Enum("mode", "slow", {"slow", "safe"});
              }),
              "db.mode: expected one of slow, safe, got \"fast\"");
    EXPECT_EQ(ConfigErrorOf([&] { root.Child("db").Child("pool"); }), "db.pool: expected a map of keys");
}

TEST(ConfigNode, DurationRangeIsChecked) {
    auto root = ConfigNode::LoadString("tick: 10m\n");
    EXPECT_EQ(ConfigErrorOf([&] { root.Duration("tick", 1s, 100ms, 1min); }),
              "tick: expected a duration between 100ms and 1m, got \"10m\"");
}

TEST(ConfigNode, SyntaxErrorNamesFileAndLine) {
    const std::string err = ConfigErrorOf([] { ConfigNode::LoadString("a: [1, 2\nb: 3\n", "x.yaml"); });
    EXPECT_EQ(err.rfind("config: x.yaml:", 0), 0u) << err;
    EXPECT_NE(err.find("invalid YAML"), std::string::npos) << err;
}

TEST(ConfigNode, MissingFileIsAClearError) {
    const std::string err = ConfigErrorOf([] { ConfigNode::LoadFile("/nonexistent/sched.yaml"); });
    EXPECT_NE(err.find("cannot read config file /nonexistent/sched.yaml"), std::string::npos) << err;
}

TEST(ConfigNode, EmptyDocumentMeansAllDefaults) {
    auto root = ConfigNode::LoadString("");
    EXPECT_EQ(root.Child("http").String("listen", "d"), "d");
    EXPECT_NO_THROW(root.RejectUnknownKeys());
}

TEST(ConfigNode, TopLevelListIsRejected) {
    EXPECT_NE(ConfigErrorOf([] { ConfigNode::LoadString("- a\n- b\n", "f.yaml"); }).find("top level must be a map"),
              std::string::npos);
}

TEST(EnvOverride, ReturnsSetNonEmptyValues) {
    ::setenv("SCHED_TEST_SECRET", "s3cret", 1);
    EXPECT_EQ(EnvOverride("SCHED_TEST_SECRET"), "s3cret");
    ::setenv("SCHED_TEST_SECRET", "", 1);
    EXPECT_EQ(EnvOverride("SCHED_TEST_SECRET"), std::nullopt);
    ::unsetenv("SCHED_TEST_SECRET");
    EXPECT_EQ(EnvOverride("SCHED_TEST_SECRET"), std::nullopt);
}

}  // namespace
}  // namespace sched
