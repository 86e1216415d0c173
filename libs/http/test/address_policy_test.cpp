#include "sched/http/address_policy.hpp"

#include <gtest/gtest.h>

#include "sched/http/testing/test_server.hpp"

namespace sched::http {
namespace {

std::optional<std::string> KindOf(const std::string& text) {
    auto kind = RestrictedAddressKind(net::ip::make_address(text));
    if (!kind) return std::nullopt;
    return std::string(*kind);
}

struct KindCase {
    const char* address;
    const char* kind;
};

const KindCase kRestricted[] = {
    // IPv4
    {"127.0.0.1", "loopback"},
    {"127.255.1.2", "loopback"},
    {"169.254.169.254", "link-local"},
    {"0.0.0.0", "unspecified"},
    {"0.1.2.3", "unspecified"},
    {"224.0.0.1", "multicast"},
    {"239.255.255.250", "multicast"},
    // IPv6 and IPv4-mapped
    {"::1", "loopback"},
    {"::", "unspecified"},
    {"fe80::1", "link-local"},
    {"ff02::1", "multicast"},
    {"::ffff:127.0.0.1", "loopback"},
    {"::ffff:7f00:1", "loopback"},
    {"::ffff:169.254.169.254", "link-local"},
    {"::ffff:0.0.0.0", "unspecified"},
    {"::ffff:224.0.0.1", "multicast"},
    // Every other IPv6 form that carries an IPv4 address reaches (or may reach, through a
    // translator) that host: each is judged as it.
    {"::127.0.0.1", "loopback"},      // IPv4-compatible
    {"::ffff:0:7f00:1", "loopback"},  // IPv4-translated
    {"64:ff9b::7f00:1", "loopback"},  // NAT64 well-known prefix
    {"64:ff9b::169.254.169.254", "link-local"},
    {"2002:7f00:1::", "loopback"},  // 6to4
    {"2002:a9fe:a9fe::1", "link-local"},
    {"::224.0.0.1", "multicast"},
};

const char* const kUnrestricted[] = {
    "10.0.0.1",           "192.168.1.1", "93.184.216.34",        "169.255.0.1",
    "128.0.0.1",          "2001:db8::1", "::ffff:93.184.216.34",
    "64:ff9b::5db8:d822",  // 93.184.216.34: a public host
    "2002:5db8:d822::1",
    "64:ff9b:1::7f00:1",  // not the well-known /96
};

TEST(RestrictedAddressKind, ClassifiesIpv4Ipv6AndTheIpv6FormsThatCarryIpv4) {
    for (const KindCase& c : kRestricted) EXPECT_EQ(KindOf(c.address), c.kind) << c.address;
    for (const char* address : kUnrestricted) EXPECT_EQ(KindOf(address), std::nullopt) << address;
}

// Allow/deny entries match through the IPv4 address an IPv6 form carries.
TEST(AddressPolicy, DenyEntriesMatchThroughTheIpv4AnIpv6FormCarries) {
    AddressPolicy deny_private({}, {"10.0.0.0/8"});
    EXPECT_FALSE(deny_private.CheckAddress("hooks.example.com", net::ip::make_address("64:ff9b::a00:5")).ok());
    EXPECT_FALSE(deny_private.CheckAddress("hooks.example.com", net::ip::make_address("2002:a00:5::")).ok());
    EXPECT_TRUE(deny_private.CheckAddress("hooks.example.com", net::ip::make_address("64:ff9b::5db8:d822")).ok());
}

TEST(NumericHost, ReadsTheFormsTheResolverReads) {
    const auto loopback = net::ip::make_address("127.0.0.1");
    EXPECT_EQ(NumericHost("127.0.0.1"), loopback);
    EXPECT_EQ(NumericHost("127.1"), loopback);
    EXPECT_EQ(NumericHost("2130706433"), loopback);
    EXPECT_EQ(NumericHost("0x7f000001"), loopback);
    EXPECT_EQ(NumericHost("0x7f.1"), loopback);
    EXPECT_EQ(NumericHost("0177.0.0.1"), loopback);
    EXPECT_EQ(NumericHost("0"), net::ip::make_address("0.0.0.0"));
    EXPECT_EQ(NumericHost("::1"), net::ip::make_address("::1"));
    ASSERT_TRUE(NumericHost("::ffff:127.0.0.1").has_value());
    EXPECT_TRUE(NumericHost("fe80::1%1").has_value());
    EXPECT_EQ(NumericHost("hooks.example.com"), std::nullopt);
    EXPECT_EQ(NumericHost("localhost"), std::nullopt);
}

TEST(AddressPolicy, RefusesRestrictedHostsByDefault) {
    const AddressPolicy policy;
    for (const char* host : {"127.0.0.1", "127.1", "2130706433", "0x7f.1", "0177.0.0.1", "169.254.169.254", "0.0.0.0",
                             "0", "224.0.0.1", "::1", "::", "fe80::1", "ff02::1", "::ffff:127.0.0.1",
                             "::ffff:169.254.169.254", "localhost", "LocalHost.", "api.localhost"}) {
        const Status s = policy.CheckHost(host);
        EXPECT_EQ(s.code(), Code::kPermissionDenied) << host;
    }
    for (const char* host : {"hooks.example.com", "10.0.0.1", "93.184.216.34", "2001:db8::1"}) {
        EXPECT_TRUE(policy.CheckHost(host).ok()) << host;
    }
    EXPECT_NE(policy.CheckHost("169.254.169.254").message().find("link-local"), std::string::npos);
}

TEST(AddressPolicy, AllowListPermitsAndDenyListRefuses) {
    const AddressPolicy policy({"127.0.0.1/32", "hooks.internal", "fd00::/8"}, {"10.0.0.0/8", "metadata.internal"});
    EXPECT_TRUE(policy.CheckHost("127.0.0.1").ok());
    EXPECT_TRUE(policy.CheckHost("127.1").ok());
    EXPECT_TRUE(policy.CheckHost("::ffff:127.0.0.1").ok());
    EXPECT_EQ(policy.CheckHost("127.0.0.2").code(), Code::kPermissionDenied);
    EXPECT_EQ(policy.CheckHost("10.1.2.3").code(), Code::kPermissionDenied);
    EXPECT_EQ(policy.CheckHost("::ffff:10.1.2.3").code(), Code::kPermissionDenied);
    EXPECT_EQ(policy.CheckHost("Metadata.Internal").code(), Code::kPermissionDenied);
    // A name on the allow list may resolve to a restricted address; one on the deny list is
    // refused whatever it resolves to.
    EXPECT_TRUE(policy.CheckAddress("hooks.internal", net::ip::make_address("127.0.0.5")).ok());
    EXPECT_EQ(policy.CheckAddress("metadata.internal", net::ip::make_address("93.184.216.34")).code(),
              Code::kPermissionDenied);
    EXPECT_EQ(policy.CheckAddress("other.example", net::ip::make_address("169.254.169.254")).code(),
              Code::kPermissionDenied);
    EXPECT_EQ(policy.CheckAddress("other.example", net::ip::make_address("10.9.9.9")).code(), Code::kPermissionDenied);
    EXPECT_TRUE(policy.CheckAddress("other.example", net::ip::make_address("fd12::1")).ok());
    EXPECT_TRUE(policy.CheckAddress("other.example", net::ip::make_address("93.184.216.34")).ok());
}

TEST(AddressPolicy, DenyWinsOverAllow) {
    const AddressPolicy policy({"127.0.0.0/8"}, {"127.0.0.1"});
    EXPECT_TRUE(policy.CheckHost("127.0.0.2").ok());
    EXPECT_EQ(policy.CheckHost("127.0.0.1").code(), Code::kPermissionDenied);
}

TEST(AddressPolicy, FromYamlReadsListsAndNamesTheBadKey) {
    const auto root =
        ConfigNode::LoadString("webhooks:\n  allow: [\"127.0.0.1\", \"::1\"]\n  deny: [\"10.0.0.0/8\"]\n");
    const auto policy = AddressPolicy::FromYaml(root.Child("webhooks"));
    EXPECT_TRUE(policy.CheckHost("127.0.0.1").ok());
    EXPECT_TRUE(policy.CheckHost("::1").ok());
    EXPECT_FALSE(policy.CheckHost("10.0.0.1").ok());
    try {
        (void)AddressPolicy::FromYaml(ConfigNode::LoadString("w:\n  deny: [\"10.0.0.0/99\"]\n").Child("w"));
        FAIL() << "expected a ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_EQ(e.path(), "w.deny");
    }
    std::string many = "allow: [";
    for (std::size_t i = 0; i <= AddressPolicy::kMaxEntries; ++i)
        many += (i ? ",\"h" : "\"h") + std::to_string(i) + "\"";
    many += "]\n";
    EXPECT_THROW((void)AddressPolicy::FromYaml(ConfigNode::LoadString(many)), ConfigError);
}

TEST(HttpClientAddressCheck, RefusesAResolvedAddressBeforeConnecting) {
    Router router;
    router.Add(Method::kGet, "/hook", [](Request&) -> net::awaitable<Response> { co_return Response::Text("ok"); });
    testing::TestServer server(std::move(router));
    const AddressPolicy policy;
    ClientOptions options;
    options.address_check = [&policy](std::string_view host, const net::ip::address& a) {
        return policy.CheckAddress(host, a);
    };
    testing::BlockingClient refusing(options);
    // "localhost" is a name: it passes the stored-URL check only because it is resolved here.
    const auto by_name = refusing.Get("http://localhost:" + std::to_string(server.port()) + "/hook");
    ASSERT_FALSE(by_name.ok());
    EXPECT_EQ(by_name.status().code(), Code::kPermissionDenied);
    EXPECT_NE(by_name.status().message().find("loopback"), std::string::npos) << by_name.status().ToString();
    EXPECT_EQ(server.Stats().connections_accepted, 0u);

    const AddressPolicy allowing({"127.0.0.1"}, {});
    options.address_check = [&allowing](std::string_view host, const net::ip::address& a) {
        return allowing.CheckAddress(host, a);
    };
    testing::BlockingClient allowed(options);
    const auto ok = allowed.Get(server.Url("/hook"));
    ASSERT_TRUE(ok.ok()) << ok.status().ToString();
    EXPECT_EQ(ok->status, 200);
}

}  // namespace
}  // namespace sched::http
