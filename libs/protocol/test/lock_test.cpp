// The lock API's messages (sched/protocol/lock.hpp): the documented bodies read as documented,
// what one side writes the other reads back unchanged, and every bad field is refused by name
// (the web module answers these errors as its 400s).

#include <gtest/gtest.h>

#include "parsed_error.hpp"
#include "sched/protocol/lock.hpp"

namespace sched::protocol {
namespace {

using nlohmann::json;
using testing::Field;
using testing::Message;
using testing::WithField;

TEST(LockAcquireTest, DocumentedBodyAndRoundTrip) {
    const auto doc = ParseLockAcquireRequest(json::parse(R"({"app": "billing", "lease_ms": 30000, "wait_ms": 5000})"));
    ASSERT_TRUE(doc.ok()) << Message(doc);
    EXPECT_EQ(doc.value, (LockAcquireRequest{.app = "billing", .lease_ms = 30000, .wait_ms = 5000}));

    const LockAcquireRequest global{.app = std::nullopt, .lease_ms = 10, .wait_ms = 0};
    EXPECT_FALSE(ToJson(global).contains("app"));
    const auto back = ParseLockAcquireRequest(ToJson(global));
    ASSERT_TRUE(back.ok()) << Message(back);
    EXPECT_EQ(back.value, global);
    // wait_ms is optional; app null is the global namespace.
    const auto bare = ParseLockAcquireRequest(json{{"lease_ms", 5}, {"app", nullptr}});
    ASSERT_TRUE(bare.ok()) << Message(bare);
    EXPECT_EQ(bare.value, (LockAcquireRequest{.app = std::nullopt, .lease_ms = 5, .wait_ms = 0}));
}

TEST(LockAcquireTest, EachBadFieldIsNamed) {
    const LockLimits limits{.max_lease_ms = 60000, .max_wait_ms = 10000};
    const auto field = [&](const json& body) {
        return Field(ParseLockAcquireRequest(body, limits));
    };
    EXPECT_EQ(field({{"lease_ms", 60000}, {"wait_ms", 10000}}), "");
    EXPECT_EQ(field({{"lease_ms", 0}}), "lease_ms");
    EXPECT_EQ(field({{"lease_ms", -5}}), "lease_ms");
    EXPECT_EQ(field({{"lease_ms", 60001}}), "lease_ms");
    EXPECT_EQ(field({{"lease_ms", "1s"}}), "lease_ms");
    EXPECT_EQ(field({{"wait_ms", 10}}), "lease_ms");
    EXPECT_EQ(field({{"lease_ms", 10}, {"wait_ms", 10001}}), "wait_ms");
    EXPECT_EQ(field({{"lease_ms", 10}, {"wait_ms", -1}}), "wait_ms");
    EXPECT_EQ(field({{"lease_ms", 10}, {"app", 3}}), "app");
    EXPECT_EQ(field({{"lease_ms", 10}, {"ttl", 5}}), "ttl");
    EXPECT_EQ(field(json::array()), "body");  // not an object
    // The messages the web answers (unchanged from its own checks before these types).
    EXPECT_EQ(Message(ParseLockAcquireRequest({{"lease_ms", 10}, {"ttl", 5}})), "ttl: unknown field");
    EXPECT_EQ(Message(ParseLockAcquireRequest({{"lease_ms", 10}, {"app", 3}})), "app: expected a string");
}

TEST(LockExtendTest, DocumentedBodyRoundTripAndBadFields) {
    const auto doc =
        ParseLockExtendRequest(json::parse(R"({"app": "billing", "owner": "3f2a", "epoch": 7, "lease_ms": 30000})"));
    ASSERT_TRUE(doc.ok()) << Message(doc);
    const LockExtendRequest want{.app = "billing", .owner = "3f2a", .epoch = 7, .lease_ms = 30000};
    EXPECT_EQ(doc.value, want);
    const auto back = ParseLockExtendRequest(ToJson(want));
    ASSERT_TRUE(back.ok()) << Message(back);
    EXPECT_EQ(back.value, want);

    const LockLimits limits{.max_lease_ms = 60000};
    const auto bad = [&](const char* key, json value) {
        return Field(ParseLockExtendRequest(WithField(ToJson(want), key, std::move(value)), limits));
    };
    const json absent(json::value_t::discarded);
    EXPECT_EQ(bad("owner", absent), "owner");
    EXPECT_EQ(bad("owner", ""), "owner");
    EXPECT_EQ(bad("owner", 5), "owner");
    EXPECT_EQ(bad("epoch", absent), "epoch");
    EXPECT_EQ(bad("epoch", 0), "epoch");
    EXPECT_EQ(bad("epoch", 1.5), "epoch");
    EXPECT_EQ(bad("lease_ms", absent), "lease_ms");
    EXPECT_EQ(bad("lease_ms", 0), "lease_ms");
    EXPECT_EQ(bad("lease_ms", 60001), "lease_ms");
    EXPECT_EQ(bad("app", json::array()), "app");
    EXPECT_EQ(bad("wait_ms", 5), "wait_ms");  // not an extend's field
    EXPECT_EQ(bad("app", absent), "");
}

TEST(LockReleaseTest, DocumentedBodyRoundTripAndBadFields) {
    const auto doc = ParseLockReleaseRequest(json::parse(R"({"app": "billing", "owner": "3f2a", "epoch": 7})"));
    ASSERT_TRUE(doc.ok()) << Message(doc);
    const LockReleaseRequest want{.app = "billing", .owner = "3f2a", .epoch = 7};
    EXPECT_EQ(doc.value, want);
    const auto back = ParseLockReleaseRequest(ToJson(want));
    ASSERT_TRUE(back.ok()) << Message(back);
    EXPECT_EQ(back.value, want);

    EXPECT_EQ(Field(ParseLockReleaseRequest({{"epoch", 1}})), "owner");
    EXPECT_EQ(Field(ParseLockReleaseRequest({{"owner", "o"}})), "epoch");
    EXPECT_EQ(Field(ParseLockReleaseRequest({{"owner", "o"}, {"epoch", 0}})), "epoch");
    EXPECT_EQ(Field(ParseLockReleaseRequest({{"owner", "o"}, {"epoch", 1}, {"lease_ms", 5}})), "lease_ms");
    EXPECT_EQ(Field(ParseLockReleaseRequest({{"owner", "o"}, {"epoch", 1}, {"app", false}})), "app");
}

TEST(LockHoldingTest, DocumentedBodiesAndRoundTrip) {
    const auto acquired = ReadLockHolding(json::parse(
        R"({"key": "k", "app": "billing", "owner": "3f2a", "epoch": 7, "lease_ms": 30000,
            "waited_ms": 12, "lease_until_ms": 1764000030012})"));
    ASSERT_TRUE(acquired.ok()) << Message(acquired);
    const LockHolding want{.key = "k",
                           .app = "billing",
                           .owner = "3f2a",
                           .epoch = 7,
                           .lease_ms = 30000,
                           .waited_ms = 12,
                           .lease_until_ms = 1764000030012};
    EXPECT_EQ(acquired.value, want);
    EXPECT_EQ(ReadLockHolding(ToJson(want)).value, want);

    // Extend's answer: no waited_ms; the global namespace's app is null; an unknown lease end too.
    const LockHolding extended{.key = "k",
                               .app = std::nullopt,
                               .owner = "o",
                               .epoch = 2,
                               .lease_ms = 5,
                               .waited_ms = {},
                               .lease_until_ms = {}};
    const json wire = ToJson(extended);
    EXPECT_FALSE(wire.contains("waited_ms"));
    EXPECT_TRUE(wire.at("app").is_null());
    EXPECT_TRUE(wire.at("lease_until_ms").is_null());
    const auto back = ReadLockHolding(wire);
    ASSERT_TRUE(back.ok()) << Message(back);
    EXPECT_EQ(back.value, extended);

    // Lenient about what a newer server adds.
    json more = ToJson(want);
    more["region"] = "eu";
    EXPECT_EQ(ReadLockHolding(more).value, want);
}

TEST(LockHoldingTest, OwnerAndEpochAreRequired) {
    EXPECT_EQ(Field(ReadLockHolding({{"epoch", 7}})), "owner");
    EXPECT_EQ(Field(ReadLockHolding({{"owner", 7}, {"epoch", 7}})), "owner");
    EXPECT_EQ(Field(ReadLockHolding({{"owner", "o"}})), "epoch");
    EXPECT_EQ(Field(ReadLockHolding({{"owner", "o"}, {"epoch", "7"}})), "epoch");
    EXPECT_EQ(Field(ReadLockHolding({{"owner", "o"}, {"epoch", 0}})), "epoch");
    EXPECT_FALSE(ReadLockHolding(json("holding")).ok());
}

TEST(LockReleasedTest, DocumentedBody) {
    EXPECT_EQ(ToJson(LockReleased{.key = "k", .app = "billing", .epoch = 8}),
              json::parse(R"({"key": "k", "app": "billing", "released": true, "epoch": 8})"));
    EXPECT_EQ(ToJson(LockReleased{.key = "k", .app = std::nullopt, .epoch = std::nullopt}),
              json::parse(R"({"key": "k", "app": null, "released": true, "epoch": null})"));
}

TEST(LockStateTest, DocumentedBody) {
    const LockState held{.key = "k",
                         .app = "billing",
                         .held = true,
                         .owner = "3f2a",
                         .epoch = 7,
                         .lease_until_ms = 1764000030012,
                         .remaining_ms = 29000,
                         .now_ms = 1764000001012};
    EXPECT_EQ(ToJson(held), json::parse(R"({"key": "k", "app": "billing", "held": true, "owner": "3f2a", "epoch": 7,
        "lease_until_ms": 1764000030012, "remaining_ms": 29000, "now_ms": 1764000001012})"));
    const LockState released{.key = "k",
                             .app = std::nullopt,
                             .held = false,
                             .owner = std::nullopt,
                             .epoch = 8,
                             .lease_until_ms = 5,
                             .remaining_ms = 0,
                             .now_ms = 9};
    EXPECT_TRUE(ToJson(released).at("owner").is_null());
    EXPECT_TRUE(ToJson(released).at("app").is_null());
}

}  // namespace
}  // namespace sched::protocol
