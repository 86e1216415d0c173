// The registry answers: what the web module writes, the SDK reads back unchanged, in the
// documented shapes (docs/protocol.md "Key delivery"); a malformed key delivery is refused whole,
// naming the field, so that the SDK keeps the keys it holds.

#include "sched/protocol/registry_answer.hpp"

#include <string>

#include <gtest/gtest.h>

namespace sched::protocol {
namespace {

using nlohmann::json;

HeartbeatAnswer TwoKeys() {
    return {.signing = KeyDelivery{.keys = {{.id = "k1", .secret = "s1", .active_from_ms = 100},
                                            {.id = "k2", .secret = "s2", .active_from_ms = 200}},
                                   .server_time_ms = 1764100000123}};
}

TEST(RegistryAnswerTest, TheHeartbeatAnswerIsTheDocumentedBody) {
    EXPECT_EQ(ToJson(TwoKeys()), json::parse(R"({"registered": true,
        "signing": {"keys": [{"id": "k1", "secret": "s1", "active_from_ms": 100},
                             {"id": "k2", "secret": "s2", "active_from_ms": 200}],
                    "server_time_ms": 1764100000123}})"));
    EXPECT_EQ(ToJson(HeartbeatAnswer{}), (json{{"registered", true}}));
    EXPECT_EQ(ToJson(DeregisterAnswer{}), (json{{"deregistered", true}}));
}

TEST(RegistryAnswerTest, WhatTheWebWritesTheSdkReadsBack) {
    for (const HeartbeatAnswer& answer : {TwoKeys(), HeartbeatAnswer{}}) {
        const auto read = ReadHeartbeatAnswer(ToJson(answer));
        ASSERT_TRUE(read.ok()) << read.error->message;
        EXPECT_EQ(read.value, answer);
    }
}

TEST(RegistryAnswerTest, AnOlderOrNewerServerIsRead) {
    // No signing object (an older server), or fields this version does not know (a newer one).
    auto older = ReadHeartbeatAnswer(json{{"registered", true}});
    ASSERT_TRUE(older.ok());
    EXPECT_FALSE(older.value.signing.has_value());
    json newer = ToJson(TwoKeys());
    newer["region"] = "eu";
    newer["signing"]["keys"][0]["algorithm"] = "hmac-sha256";
    newer["signing"]["keys"][1].erase("active_from_ms");
    const auto read = ReadHeartbeatAnswer(newer);
    ASSERT_TRUE(read.ok()) << read.error->message;
    ASSERT_EQ(read.value.signing->keys.size(), 2u);
    EXPECT_EQ(read.value.signing->keys[1].active_from_ms, 0);
}

// Capabilities: what this build advertises reads back; an older server names none; a newer
// server's unknown or malformed names never make the answer unreadable.
TEST(RegistryAnswerTest, CapabilitiesReadBackAndAreReadLeniently) {
    HeartbeatAnswer answer = TwoKeys();
    answer.capabilities = OwnCapabilities();
    const json wire = ToJson(answer);
    EXPECT_EQ(wire["capabilities"], json::array({"result-traceparent"}));
    const auto read = ReadHeartbeatAnswer(wire);
    ASSERT_TRUE(read.ok()) << read.error->message;
    EXPECT_EQ(read.value, answer);
    EXPECT_TRUE(read.value.Has(kCapabilityResultTraceparent));
    EXPECT_FALSE(ReadHeartbeatAnswer(ToJson(TwoKeys())).value.Has(kCapabilityResultTraceparent)) << "an older server";
    json odd = ToJson(TwoKeys());
    odd["capabilities"] = json::array({7, std::string(kMaxCapabilityChars + 1, 'c'), "result-traceparent", "later"});
    const auto lenient = ReadHeartbeatAnswer(odd);
    ASSERT_TRUE(lenient.ok());
    EXPECT_EQ(lenient.value.capabilities, (std::vector<std::string>{"result-traceparent", "later"}));
    odd["capabilities"] = "result-traceparent";  // not a list: none
    EXPECT_TRUE(ReadHeartbeatAnswer(odd).value.capabilities.empty());
    odd["capabilities"] = json::array();
    for (int i = 0; i < 100; ++i) odd["capabilities"].push_back("c" + std::to_string(i));
    EXPECT_EQ(ReadHeartbeatAnswer(odd).value.capabilities.size(), kMaxCapabilities);
}

TEST(RegistryAnswerTest, AMalformedDeliveryIsRefusedNamingTheField) {
    const auto field_of = [](const json& body) {
        const auto read = ReadHeartbeatAnswer(body);
        return read.ok() ? std::string("<accepted>") : read.error->field;
    };
    const json good = ToJson(TwoKeys());
    EXPECT_EQ(field_of(json::array()), "body");
    EXPECT_EQ(field_of(json{{"signing", "keys"}}), "signing");
    json no_time = good;
    no_time["signing"].erase("server_time_ms");
    EXPECT_EQ(field_of(no_time), "signing.server_time_ms");
    json time_text = good;
    time_text["signing"]["server_time_ms"] = "now";
    EXPECT_EQ(field_of(time_text), "signing.server_time_ms");
    json keys_object = good;
    keys_object["signing"]["keys"] = json::object();
    EXPECT_EQ(field_of(keys_object), "signing.keys");
    json too_many = good;
    for (int i = 0; i < 8; ++i) too_many["signing"]["keys"].push_back(good["signing"]["keys"][0]);
    EXPECT_EQ(field_of(too_many), "signing.keys");
    json empty_id = good;
    empty_id["signing"]["keys"][1]["id"] = "";
    EXPECT_EQ(field_of(empty_id), "signing.keys[1].id");
    json secret_number = good;
    secret_number["signing"]["keys"][0]["secret"] = 7;
    EXPECT_EQ(field_of(secret_number), "signing.keys[0].secret");
    json long_secret = good;
    long_secret["signing"]["keys"][0]["secret"] = std::string(kMaxKeyFieldBytes + 1, 'x');
    EXPECT_EQ(field_of(long_secret), "signing.keys[0].secret");
    json key_text = good;
    key_text["signing"]["keys"][1] = "k2";
    EXPECT_EQ(field_of(key_text), "signing.keys[1]");
}

}  // namespace
}  // namespace sched::protocol
