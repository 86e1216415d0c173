// Signing keys over real HTTP: delivered with heartbeat answers, listed and rotated by admins.

#include "sched/store/signing_key.hpp"
#include "web_test_base.hpp"

namespace sched::web::testing {
namespace {

using http::Method;

class SigningKeysApiTest : public WebApiTest {
  protected:
    nlohmann::json Heartbeat(const std::string& app) {
        const nlohmann::json beat = {
            {"app", app}, {"address", "127.0.0.1:9"}, {"handlers", {"echo"}}, {"capacity", 1}, {"running", 0}};
        auto r = Post("/api/v1/registry/heartbeat", beat);
        EXPECT_EQ(r.status, 200) << r.body;
        return Body(r);
    }
};

TEST_P(SigningKeysApiTest, TheFirstHeartbeatOfAnAppCreatesItsKeyAndEveryAnswerCarriesIt) {
    EXPECT_TRUE(Body(Get("/api/v1/apps/billing/signing-keys"))["keys"].empty());
    const auto first = Heartbeat("billing");
    ASSERT_EQ(first["signing"]["keys"].size(), 1u) << first.dump();
    const auto key = first["signing"]["keys"][0];
    EXPECT_EQ(key["secret"].get<std::string>().size(), 64u);
    // The DB clock, for the SDK's offset (same host: within a few seconds of ours).
    const auto local =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    EXPECT_LT(std::abs(first["signing"]["server_time_ms"].get<std::int64_t>() - local), 5000);
    EXPECT_EQ(Heartbeat("billing")["signing"]["keys"], first["signing"]["keys"]);
    EXPECT_NE(Heartbeat("shipping")["signing"]["keys"][0]["id"], key["id"]);

    // The admin view names the keys and their states, never a secret.
    auto listed = Get("/api/v1/apps/billing/signing-keys");
    ASSERT_EQ(listed.status, 200) << listed.body;
    EXPECT_EQ(listed.body.find(key["secret"].get<std::string>()), std::string::npos);
    EXPECT_EQ(Body(listed)["keys"][0]["state"], "signing");
}

TEST_P(SigningKeysApiTest, RotationDistributesTheNextKeyBeforeNodesSignWithIt) {
    const auto old_id = Heartbeat("billing")["signing"]["keys"][0]["id"];
    auto rotated = Post("/api/v1/apps/billing/signing-keys/rotate", {{"grace_ms", 60'000}});
    ASSERT_EQ(rotated.status, 200) << rotated.body;
    const auto keys = Body(rotated)["keys"];
    ASSERT_EQ(keys.size(), 2u);
    EXPECT_EQ(keys[0]["state"], "next");
    EXPECT_EQ(keys[1]["id"], old_id);
    EXPECT_EQ(keys[1]["state"], "signing");
    // Executors learn both at their next heartbeat.
    EXPECT_EQ(Heartbeat("billing")["signing"]["keys"].size(), 2u);
    // One rotation at a time.
    auto again = Post("/api/v1/apps/billing/signing-keys/rotate", nlohmann::json::object());
    EXPECT_EQ(again.status, 409) << again.body;

    EXPECT_EQ(Post("/api/v1/apps/nobody/signing-keys/rotate", nlohmann::json::object()).status, 404);
    EXPECT_EQ(ErrorField(Post("/api/v1/apps/billing/signing-keys/rotate", {{"grace_ms", -1}})), "grace_ms");
    EXPECT_EQ(ErrorField(Post("/api/v1/apps/billing/signing-keys/rotate", {{"grace_ms", "soon"}})), "grace_ms");
}

TEST_P(SigningKeysApiTest, OnlyAdminsSeeOrRotateKeys) {
    Heartbeat("billing");
    for (const char* role : {"operator", "viewer", "executor"}) {
        nlohmann::json request = {{"name", std::string("t-") + role}, {"role", role}};
        // An executor token of the very app: still not an admin's business.
        if (std::string(role) == "executor") request["apps"] = {"billing"};
        auto created = Post("/api/v1/tokens", request);
        ASSERT_EQ(created.status, 201) << created.body;
        const std::string token = Body(created)["token"];
        EXPECT_EQ(Call(Method::kGet, "/api/v1/apps/billing/signing-keys", "", token).status, 403) << role;
        EXPECT_EQ(Call(Method::kPost, "/api/v1/apps/billing/signing-keys/rotate", "{}", token).status, 403) << role;
    }
    EXPECT_EQ(Call(Method::kPost, "/api/v1/apps/billing/signing-keys/rotate", "{}", "").status, 401);
}

SCHED_DB_TEST_SUITE(SigningKeysApiTest);

}  // namespace
}  // namespace sched::web::testing
