#include "sched/protocol/request_signature.hpp"

#include <gtest/gtest.h>

namespace sched::protocol {
namespace {

using std::chrono::seconds;

// The worked example of docs/protocol.md ("Security: a worked example"), byte for byte; the
// expected values were computed independently (Python's hmac/hashlib), so neither the doc nor
// this code can drift alone.
const SigningKey kExampleKey{"k-7f3a9c21", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"};
constexpr std::int64_t kExampleTimestamp = 1767225600000;  // 2026-01-01T00:00:00Z
constexpr std::string_view kExampleBody = R"({"attempt":0,"epoch":3,"fire_id":42,"handler":"echo","job_id":7})";

TEST(RequestSignature, MatchesTheWorkedExampleOfTheProtocolDoc) {
    EXPECT_EQ(CanonicalString("POST", "/v1/run", kExampleTimestamp, kExampleKey.id, kExampleBody),
              "v1\nPOST\n/v1/run\n1767225600000\nk-7f3a9c21\n"
              "f26dfcf795708b306144ceedbdcdded20a8c77a825cd60b514de1ee4cfbcb6c5");
    EXPECT_EQ(Signature(kExampleKey, "POST", "/v1/run", kExampleTimestamp, kExampleBody),
              "v1=42e2e7af3cff2692d20b1515afba0c9ab3c5bf485a79ecef5bceeb65725b0c3d");
    EXPECT_EQ(Signature(kExampleKey, "GET", "/v1/log?fire_id=42&from_line=0", kExampleTimestamp, ""),
              "v1=e990729a3423d7a205b92ccc41208f0f2647ccfb341eda5196b480169df82e10");
    // The same run addressed to the instance 10.0.0.7:9999, as nodes send it.
    EXPECT_EQ(AddressedTarget("/v1/run", "10.0.0.7:9999"), "/v1/run?instance=10.0.0.7:9999");
    EXPECT_EQ(Signature(kExampleKey, "POST", "/v1/run?instance=10.0.0.7:9999", kExampleTimestamp, kExampleBody),
              "v1=4eb4071b33fff37b8b4cc5f51cedf23933c74d5f87adb22920ebe5c391f6f87b");
    const auto headers = SignatureHeaders(kExampleKey, "post", "/v1/run", kExampleTimestamp, kExampleBody);
    ASSERT_EQ(headers.size(), 3u);
    EXPECT_EQ(headers[0].first, "X-Sched-Key-Id");
    EXPECT_EQ(headers[0].second, "k-7f3a9c21");
    EXPECT_EQ(headers[1].first, "X-Sched-Timestamp");
    EXPECT_EQ(headers[1].second, "1767225600000");
    EXPECT_EQ(headers[2].first, "X-Sched-Signature");
    EXPECT_EQ(headers[2].second, "v1=42e2e7af3cff2692d20b1515afba0c9ab3c5bf485a79ecef5bceeb65725b0c3d");
}

class VerifySignatureTest : public ::testing::Test {
  protected:
    std::string ts = std::to_string(kExampleTimestamp);
    std::string sig = Signature(kExampleKey, "POST", "/v1/run", kExampleTimestamp, kExampleBody);
    std::vector<SigningKey> keys{{"k-other", "another-secret"}, kExampleKey};

    SignedRequest Request() const {
        return {.method = "POST",
                .target = "/v1/run",
                .body = kExampleBody,
                .key_id = kExampleKey.id,
                .timestamp = ts,
                .signature = sig};
    }
    Status Verify(const SignedRequest& r, std::int64_t now = kExampleTimestamp) const {
        return VerifySignature(r, keys, now, seconds(30));
    }
};

TEST_F(VerifySignatureTest, AcceptsTheSignedRequestWithinTheWindow) {
    EXPECT_TRUE(Verify(Request()).ok());
    EXPECT_TRUE(Verify(Request(), kExampleTimestamp + 30'000).ok());
    EXPECT_TRUE(Verify(Request(), kExampleTimestamp - 30'000).ok());
}

TEST_F(VerifySignatureTest, ReadsAnHttpRequestAsItWasReceived) {
    http::Request req;
    req.method_text = "POST";
    req.target = "/v1/run";
    req.body = std::string(kExampleBody);
    for (const auto& [name, value] :
         SignatureHeaders(kExampleKey, "POST", "/v1/run", kExampleTimestamp, kExampleBody)) {
        req.headers.Set(name, value);
    }
    const SignedRequest read = SignedRequestOf(req);
    EXPECT_EQ(read.key_id, kExampleKey.id);
    EXPECT_EQ(read.timestamp, ts);
    EXPECT_EQ(read.signature, sig);
    EXPECT_TRUE(Verify(read).ok());
    req.target = "/v1/run?x=1";
    EXPECT_EQ(Verify(SignedRequestOf(req)).code(), Code::kUnauthenticated);
    req.target = "/v1/run";
    req.headers = {};
    EXPECT_EQ(Verify(SignedRequestOf(req)).code(), Code::kUnauthenticated);
}

TEST_F(VerifySignatureTest, RefusesATimestampOutsideTheWindow) {
    const Status late = Verify(Request(), kExampleTimestamp + 30'001);
    EXPECT_EQ(late.code(), Code::kUnauthenticated);
    EXPECT_NE(late.message().find("X-Sched-Timestamp"), std::string::npos);
    EXPECT_EQ(Verify(Request(), kExampleTimestamp - 30'001).code(), Code::kUnauthenticated);
}

TEST_F(VerifySignatureTest, RefusesAnyChangedPart) {
    auto r = Request();
    r.body = R"({"attempt":0,"epoch":3,"fire_id":43,"handler":"echo","job_id":7})";
    EXPECT_EQ(Verify(r).code(), Code::kUnauthenticated);
    r = Request();
    r.target = "/v1/kill";
    EXPECT_EQ(Verify(r).code(), Code::kUnauthenticated);
    r = Request();
    r.method = "PUT";
    EXPECT_EQ(Verify(r).code(), Code::kUnauthenticated);
    // Re-timed: a fresh timestamp with the old signature.
    r = Request();
    const std::string later = std::to_string(kExampleTimestamp + 1);
    r.timestamp = later;
    EXPECT_EQ(Verify(r).code(), Code::kUnauthenticated);
}

TEST_F(VerifySignatureTest, RefusesAnotherAppsKey) {
    const SigningKey foreign{"k-foreign", "foreign-secret"};
    auto r = Request();
    const std::string foreign_sig = Signature(foreign, "POST", "/v1/run", kExampleTimestamp, kExampleBody);
    r.key_id = foreign.id;
    r.signature = foreign_sig;
    EXPECT_NE(Verify(r).message().find("unknown signing key"), std::string::npos);
    // The right key id with a signature made by another secret.
    r.key_id = kExampleKey.id;
    EXPECT_NE(Verify(r).message().find("does not match"), std::string::npos);
}

TEST_F(VerifySignatureTest, RefusesMissingOrMalformedHeaders) {
    auto r = Request();
    r.signature.reset();
    EXPECT_NE(Verify(r).message().find("missing X-Sched-Signature"), std::string::npos);
    r = Request();
    r.key_id.reset();
    EXPECT_EQ(Verify(r).code(), Code::kUnauthenticated);
    r = Request();
    r.timestamp.reset();
    EXPECT_EQ(Verify(r).code(), Code::kUnauthenticated);
    for (std::string_view bad : {"", "12a", "-", "99999999999999999999999", " 1767225600000"}) {
        r = Request();
        r.timestamp = bad;
        EXPECT_EQ(Verify(r).code(), Code::kUnauthenticated) << bad;
    }
    r = Request();
    const std::string v2 = "v2=" + sig.substr(3);
    r.signature = v2;
    EXPECT_NE(Verify(r).message().find("unsupported scheme"), std::string::npos);
    EXPECT_EQ(VerifySignature(Request(), {}, kExampleTimestamp, seconds(30)).code(), Code::kUnauthenticated);
}

TEST(AddressedTarget, AppendsTheInstanceAsTheLastQueryParameterPercentEncoded) {
    EXPECT_EQ(AddressedTarget("/v1/log?fire_id=42&from_line=0", "billing-1:9999"),
              "/v1/log?fire_id=42&from_line=0&instance=billing-1:9999");
    EXPECT_EQ(AddressedTarget("/v1/beat", "[::1]:9999"), "/v1/beat?instance=%5B::1%5D:9999");
    EXPECT_EQ(AddressedTarget("/v1/run", "a b&instance=x:1"), "/v1/run?instance=a%20b%26instance%3Dx:1");
}

TEST(VerifyAddressee, AcceptsItsOwnAddressAndAnUnaddressedCall) {
    EXPECT_TRUE(VerifyAddressee("/v1/run?instance=10.0.0.7:9999", "10.0.0.7:9999").ok());
    EXPECT_TRUE(VerifyAddressee(AddressedTarget("/v1/beat", "[::1]:9999"), "[::1]:9999").ok());
    EXPECT_TRUE(VerifyAddressee("/v1/log?fire_id=3&instance=h:1&from_line=2", "h:1").ok());
    // A node older than the parameter addresses nobody: its calls stay valid.
    EXPECT_TRUE(VerifyAddressee("/v1/run", "10.0.0.7:9999").ok());
    EXPECT_TRUE(VerifyAddressee("/v1/log?fire_id=3&from_line=0", "10.0.0.7:9999").ok());
    EXPECT_TRUE(VerifyAddressee("/v1/log?instances=x&xinstance=y", "10.0.0.7:9999").ok());
}

TEST(VerifyAddressee, RefusesACallAddressedToAnotherInstance) {
    const Status other = VerifyAddressee("/v1/run?instance=10.0.0.8:9999", "10.0.0.7:9999");
    EXPECT_EQ(other.code(), Code::kUnauthenticated);
    EXPECT_NE(other.message().find("10.0.0.8:9999"), std::string::npos) << other.message();
    // Byte for byte: no normalising of case, ports or encodings.
    EXPECT_FALSE(VerifyAddressee("/v1/run?instance=Billing-1:9999", "billing-1:9999").ok());
    EXPECT_FALSE(VerifyAddressee("/v1/run?instance=10.0.0.7:09999", "10.0.0.7:9999").ok());
    EXPECT_FALSE(VerifyAddressee("/v1/run?instance=", "10.0.0.7:9999").ok());
    EXPECT_FALSE(VerifyAddressee("/v1/run?instance", "10.0.0.7:9999").ok());
}

TEST(VerifyAddressee, RefusesHostileAddressing) {
    // Twice (even once right): which one would a proxy or another parser read?
    EXPECT_FALSE(VerifyAddressee("/v1/run?instance=h:1&instance=h:1", "h:1").ok());
    EXPECT_FALSE(VerifyAddressee("/v1/run?instance=h:2&instance=h:1", "h:1").ok());
    // Bad percent-encoding, an encoded NUL, an overlong value.
    EXPECT_FALSE(VerifyAddressee("/v1/run?instance=h%3:1", "h:1").ok());
    EXPECT_FALSE(VerifyAddressee("/v1/run?instance=h%00:1", "h:1").ok());
    EXPECT_FALSE(VerifyAddressee("/v1/run?instance=" + std::string(kMaxInstanceLength + 1, 'a'),
                                 std::string(kMaxInstanceLength + 1, 'a'))
                     .ok());
    EXPECT_FALSE(VerifyAddressee("/v1/run?instance=" + std::string(100'000, '%'), "h:1").ok());
}

}  // namespace
}  // namespace sched::protocol
