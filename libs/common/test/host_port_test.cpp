#include "sched/common/host_port.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace sched {
namespace {

TEST(Authority, SplitsAHostAndAnOptionalPort) {
    auto named = Authority::Parse("redis-3");
    ASSERT_TRUE(named.ok());
    EXPECT_EQ(named->host, "redis-3");
    EXPECT_FALSE(named->port);
    auto v6 = Authority::Parse("[fe80::1%eth0]:8080");
    ASSERT_TRUE(v6.ok());
    EXPECT_EQ(v6->host, "fe80::1%eth0");
    EXPECT_EQ(v6->port, std::optional<std::uint16_t>(8080));
    EXPECT_EQ(Authority::Parse("[::1]")->host, "::1");
    // Brackets hold an IPv6 address, and only they hold colons; a name holds no space, '/', '%'
    // or ';' and has at most 253 characters.
    for (const std::string& bad :
         std::vector<std::string>{"", "[h]:1", "[::1:7000", "[::1]80", "[::1%]:1", "::1:80", "h:1;h:2", "a b:1",
                                  "h/x:1", "h%eth0:1", std::string(254, 'a')}) {
        EXPECT_EQ(Authority::Parse(bad).status().code(), Code::kInvalidArgument) << bad;
    }
}

TEST(HostPort, ParsesHostsAndRejectsWhatIsNotHostColonPort) {
    auto a = HostPort::Parse("0.0.0.0:9999");
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(*a, (HostPort{"0.0.0.0", 9999}));
    auto b = HostPort::Parse("[::1]:0");
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->host, "::1");
    EXPECT_EQ(b->ToString(), "[::1]:0");
    EXPECT_EQ(HostPort::Parse(std::string(253, 'a') + ":1")->port, 1);
    for (const auto* bad : {"", "host", "localhost", ":80", "host:", "host:65536", "host:8o", "host:-1", "host:+1",
                            "::1:80", "[::1]80", "[h]:1", "a b:1"}) {
        const auto refused = HostPort::Parse(bad);
        EXPECT_EQ(refused.status().code(), Code::kInvalidArgument) << bad;
        EXPECT_NE(refused.status().message().find("expected host:port"), std::string::npos)
            << refused.status().message();
    }
    // The message says what is wrong, not only what was expected.
    for (const auto& [text, why] :
         std::vector<std::pair<std::string, std::string>>{{"h", "no port"},
                                                          {":80", "no host"},
                                                          {"h:99999", "port out of range 0..65535"},
                                                          {"h:8o", "the port is not a number"},
                                                          {"[h]:1", "\"[h]\" is not an IPv6 address"},
                                                          {"h:1;h:2", "the port is not a number"},
                                                          {"a b:1", "the host is not a name"}}) {
        const auto refused = HostPort::Parse(text);
        EXPECT_NE(refused.status().message().find(why), std::string::npos) << refused.status().message();
    }
}

TEST(HostPort, ReachableReplacesOnlyAWildcardHost) {
    EXPECT_EQ(HostPort::Parse("0.0.0.0:7071")->Reachable("trigger-1").ToString(), "trigger-1:7071");
    EXPECT_EQ(HostPort::Parse("[::]:8080")->Reachable("web-0").ToString(), "web-0:8080");
    EXPECT_EQ(HostPort::Parse("127.0.0.1:7071")->Reachable("trigger-1").ToString(), "127.0.0.1:7071");
    EXPECT_EQ(HostPort::Parse("10.0.0.5:7071")->Reachable("trigger-1").ToString(), "10.0.0.5:7071");
    EXPECT_EQ(HostPort::Parse("[::1]:8080")->Reachable("web-0").ToString(), "[::1]:8080");
}

}  // namespace
}  // namespace sched
