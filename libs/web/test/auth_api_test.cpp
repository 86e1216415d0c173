// Tokens and roles over real HTTP (auth.hpp), and the public UI routes.

#include "sched/store/token.hpp"
#include "sched/web/sha256.hpp"
#include "web_test_base.hpp"

namespace sched::web::testing {
namespace {

using http::Method;

class AuthApiTest : public WebApiTest {};

TEST_P(AuthApiTest, MissingMalformedAndUnknownTokensAre401) {
    auto none = Get("/api/v1/jobs", "");
    EXPECT_EQ(none.status, 401);
    EXPECT_EQ(none.headers.Get("WWW-Authenticate").value_or(""), "Bearer");
    EXPECT_EQ(Body(none)["error"]["code"], "unauthenticated");
    EXPECT_EQ(ErrorField(none), "Authorization");
    EXPECT_EQ(Get("/api/v1/jobs", "not-the-token").status, 401);
    EXPECT_EQ(Get("/api/v1/jobs", std::string(kClusterToken) + "x").status, 401);

    http::ClientRequest basic;
    basic.url = Url("/api/v1/jobs");
    basic.headers.Set("Authorization", "Basic Y2x1c3Rlci1zZWNyZXQ=");
    auto r = client_.Send(basic);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 401);
    // The scheme is case-insensitive (RFC 6750).
    http::ClientRequest lower;
    lower.url = Url("/api/v1/jobs");
    lower.headers.Set("Authorization", std::string("bearer ") + kClusterToken);
    EXPECT_EQ(client_.Send(lower)->status, 200);
    // Every API route is protected, the SDK routes included.
    EXPECT_EQ(Post("/api/v1/registry/heartbeat", nlohmann::json::object(), "").status, 401);
    EXPECT_EQ(Get("/api/v1/cluster", "").status, 401);
    EXPECT_EQ(Call(Method::kPost, "/api/v1/jobs/1/trigger", "", "").status, 401);
}

TEST_P(AuthApiTest, CreatedTokensAreStoredOnlyAsHashesAndShownOnce) {
    auto created = Post("/api/v1/tokens", {{"name", "ci-bot"}, {"role", "operator"}});
    ASSERT_EQ(created.status, 201) << created.body;
    const auto token = Body(created);
    EXPECT_EQ(created.headers.Get("Location").value_or(""),
              "/api/v1/tokens/" + std::to_string(token["id"].get<std::int64_t>()));
    const std::string secret = token["token"];
    EXPECT_EQ(secret.rfind("sched_", 0), 0u);
    EXPECT_EQ(secret.size(), 6u + 64u);
    EXPECT_EQ(token["role"], "operator");
    EXPECT_EQ(token["name"], "ci-bot");

    auto stored = db().Run([&](soci::session& s) {
        std::string hash;
        s << "SELECT token_hash FROM api_token WHERE id = :id", soci::use(token["id"].get<std::int64_t>()),
            soci::into(hash);
        return hash;
    });
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(*stored, Sha256Hex(secret));
    EXPECT_EQ(stored->find(secret.substr(6)), std::string::npos);

    auto list = Body(Get("/api/v1/tokens"));
    ASSERT_EQ(list["items"].size(), 1u);
    EXPECT_FALSE(list["items"][0].contains("token"));
    EXPECT_FALSE(list["items"][0].contains("token_hash"));
    EXPECT_EQ(list.dump().find(secret), std::string::npos);

    // It works, and its use is recorded.
    EXPECT_EQ(Get("/api/v1/jobs", secret).status, 200);
    EXPECT_FALSE(Body(Get("/api/v1/tokens"))["items"][0]["last_used_at"].is_null());

    EXPECT_EQ(ErrorField(Post("/api/v1/tokens", {{"name", "x"}, {"role", "root"}})), "role");
    EXPECT_EQ(ErrorField(Post("/api/v1/tokens", {{"name", "x"}})), "role");
    EXPECT_EQ(ErrorField(Post("/api/v1/tokens", {{"role", "viewer"}})), "name");
    EXPECT_EQ(ErrorField(Post("/api/v1/tokens", {{"name", std::string(129, 'n')}, {"role", "viewer"}})), "name");
    EXPECT_EQ(ErrorField(Post("/api/v1/tokens", {{"name", "x"}, {"role", "viewer"}, {"secret", "mine"}})), "secret");
}

TEST_P(AuthApiTest, RolesDecideWhatATokenReaches) {
    const auto viewer = CreateToken("v", "viewer");
    const auto op = CreateToken("o", "operator");
    const auto admin = CreateToken("a", "admin");
    const auto executor = CreateToken("e", "executor");
    const auto job = CreateJob("guarded");
    const std::string job_path = "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>());
    const nlohmann::json heartbeat = {{"app", "demo"}, {"address", "127.0.0.1:9"}, {"handlers", {"echo"}}};

    // viewer: reads only.
    EXPECT_EQ(Get("/api/v1/jobs", viewer).status, 200);
    EXPECT_EQ(Get(job_path, viewer).status, 200);
    EXPECT_EQ(Get("/api/v1/fires", viewer).status, 200);
    EXPECT_EQ(Get("/api/v1/cluster", viewer).status, 200);
    EXPECT_EQ(Get("/api/v1/executors", viewer).status, 200);
    EXPECT_EQ(
        Post("/api/v1/schedules/validate", {{"schedule_type", "cron"}, {"schedule_expr", "* * * * *"}}, viewer).status,
        200);
    auto denied = Post("/api/v1/jobs", JobBody("v-job"), viewer);
    EXPECT_EQ(denied.status, 403);
    EXPECT_EQ(Body(denied)["error"]["code"], "permission_denied");
    EXPECT_NE(denied.body.find("operator"), std::string::npos) << denied.body;
    EXPECT_EQ(Call(Method::kPost, job_path + "/trigger", "", viewer).status, 403);
    EXPECT_EQ(Call(Method::kPost, job_path + "/pause", "", viewer).status, 403);
    EXPECT_EQ(Delete(job_path, viewer).status, 403);
    EXPECT_EQ(Call(Method::kPost, "/api/v1/fires/1/kill", "", viewer).status, 403);
    EXPECT_EQ(Get("/api/v1/tokens", viewer).status, 403);
    EXPECT_EQ(Post("/api/v1/registry/heartbeat", heartbeat, viewer).status, 403);

    // operator: jobs, trigger, kill; not tokens.
    EXPECT_EQ(Post("/api/v1/jobs", JobBody("o-job"), op).status, 201);
    EXPECT_EQ(Call(Method::kPost, job_path + "/trigger", "", op).status, 202);
    EXPECT_EQ(Call(Method::kPost, "/api/v1/fires/424242/kill", "", op).status, 404);  // allowed, just absent
    EXPECT_EQ(Get("/api/v1/tokens", op).status, 403);
    EXPECT_EQ(Post("/api/v1/tokens", {{"name", "x"}, {"role", "admin"}}, op).status, 403);
    EXPECT_EQ(Post("/api/v1/registry/heartbeat", heartbeat, op).status, 403);

    // admin: everything of people, tokens included; still not the SDK routes.
    EXPECT_EQ(Get("/api/v1/tokens", admin).status, 200);
    EXPECT_EQ(Post("/api/v1/jobs", JobBody("a-job"), admin).status, 201);
    EXPECT_EQ(Post("/api/v1/registry/heartbeat", heartbeat, admin).status, 403);

    // executor: only the SDK routes.
    EXPECT_EQ(Post("/api/v1/registry/heartbeat", heartbeat, executor).status, 200);
    EXPECT_EQ(Post("/api/v1/callback", nlohmann::json::array(), executor).status, 200);
    EXPECT_EQ(Post("/api/v1/registry/deregister", {{"app", "demo"}, {"address", "127.0.0.1:9"}}, executor).status, 200);
    EXPECT_EQ(Get("/api/v1/jobs", executor).status, 403);
    EXPECT_EQ(Get("/api/v1/cluster", executor).status, 403);
    // ...and only for the apps in its scope ({"demo"}).
    auto foreign = Post("/api/v1/registry/heartbeat",
                        {{"app", "other"}, {"address", "127.0.0.1:9"}, {"handlers", {"echo"}}}, executor);
    EXPECT_EQ(RefusedField(foreign, 403), "app");

    // The cluster token: admin, and the SDKs and trigger nodes use it on the SDK routes.
    EXPECT_EQ(Post("/api/v1/registry/heartbeat", heartbeat).status, 200);
    EXPECT_EQ(Get("/api/v1/tokens").status, 200);
}

// Least privilege: executor tokens name the apps they may act for; the listing and whoami show it.
TEST_P(AuthApiTest, ExecutorTokensCarryAValidatedAppScope) {
    const auto field_of = [&](const nlohmann::json& body) {
        auto r = Post("/api/v1/tokens", body);
        EXPECT_EQ(r.status, 400) << body.dump() << " -> " << r.body;
        return ErrorField(r);
    };
    const nlohmann::json base = {{"name", "svc"}, {"role", "executor"}};
    EXPECT_EQ(field_of(base), "apps");
    for (const auto& bad : std::vector<nlohmann::json>{nlohmann::json::array(),
                                                       {"*"},
                                                       {"pay", "pay"},
                                                       {1},
                                                       "pay",
                                                       {std::string(129, 'a')},
                                                       {""},
                                                       {"p\nay"},
                                                       std::vector<std::string>(33, "x")}) {
        auto body = base;
        body["apps"] = bad;
        EXPECT_EQ(field_of(body), "apps") << bad.dump();
    }
    EXPECT_EQ(field_of({{"name", "v"}, {"role", "viewer"}, {"apps", {"pay"}}}), "apps");
    EXPECT_EQ(Get("/api/v1/tokens").body.find("svc"), std::string::npos);

    auto created = Post("/api/v1/tokens", {{"name", "svc"}, {"role", "executor"}, {"apps", {"pay", "shop"}}});
    ASSERT_EQ(created.status, 201) << created.body;
    EXPECT_EQ(Body(created)["apps"], nlohmann::json({"pay", "shop"}));
    const std::string secret = Body(created)["token"];
    const auto viewer = CreateToken("v", "viewer");
    const auto listed = Body(Get("/api/v1/tokens"))["items"];
    ASSERT_EQ(listed.size(), 2u);
    EXPECT_EQ(listed[0]["apps"], nlohmann::json({"pay", "shop"}));
    EXPECT_TRUE(listed[1]["apps"].is_null());

    auto me = Get("/api/v1/whoami", secret);
    ASSERT_EQ(me.status, 200) << me.body;
    EXPECT_EQ(Body(me)["role"], "executor");
    EXPECT_EQ(Body(me)["apps"], nlohmann::json({"pay", "shop"}));
    EXPECT_EQ(Body(Get("/api/v1/whoami", viewer))["role"], "viewer");
    EXPECT_TRUE(Body(Get("/api/v1/whoami", viewer))["apps"].is_null());
    EXPECT_EQ(Body(Get("/api/v1/whoami"))["cluster_token"], true);
    EXPECT_EQ(Body(Get("/api/v1/whoami"))["role"], "admin");
    EXPECT_EQ(Get("/api/v1/whoami", "").status, 401);
    EXPECT_EQ(Get("/api/v1/whoami", "sched_nope").status, 401);
}

TEST_P(AuthApiTest, ARevokedTokenStopsWorkingAtOnce) {
    const auto secret = CreateToken("short-lived", "viewer");
    EXPECT_EQ(Get("/api/v1/jobs", secret).status, 200);  // cached now
    const auto id = Body(Get("/api/v1/tokens"))["items"][0]["id"].get<std::int64_t>();
    EXPECT_EQ(Delete("/api/v1/tokens/" + std::to_string(id)).status, 204);
    EXPECT_EQ(Get("/api/v1/jobs", secret).status, 401);
    EXPECT_FALSE(Body(Get("/api/v1/tokens"))["items"][0]["revoked_at"].is_null());
    EXPECT_EQ(Delete("/api/v1/tokens/" + std::to_string(id)).status, 404);
    EXPECT_EQ(Delete("/api/v1/tokens/424242").status, 404);
    EXPECT_EQ(ErrorField(Delete("/api/v1/tokens/x")), "id");
}

class ShortAuthCacheTest : public WebApiTest {
  protected:
    WebOptions Options() override {
        WebOptions o = WebApiTest::Options();
        o.auth_cache = std::chrono::milliseconds(200);
        return o;
    }
};

TEST_P(ShortAuthCacheTest, ATokenRevokedElsewhereStopsWorkingWithinTheCacheTime) {
    const auto secret = CreateToken("elsewhere", "viewer");
    EXPECT_EQ(Get("/api/v1/jobs", secret).status, 200);
    // Revoked by another web process: this one learns it when its cache entry expires.
    auto token = store::TokenRepository(db()).FindActive(Sha256Hex(secret));
    ASSERT_TRUE(token.ok());
    ASSERT_TRUE(store::TokenRepository(db()).Revoke(token->id).ok());
    EXPECT_TRUE(
        http::testing::WaitFor([&] { return Get("/api/v1/jobs", secret).status == 401; }, std::chrono::seconds(5)));
}

TEST_P(AuthApiTest, TheUiAndTheApiDocumentArePublic) {
    auto index = Get("/", "");
    ASSERT_EQ(index.status, 200);
    EXPECT_EQ(index.headers.Get("Content-Type").value_or(""), "text/html; charset=utf-8");
    EXPECT_NE(index.headers.Get("Content-Security-Policy").value_or("").find("default-src 'self'"), std::string::npos);
    EXPECT_NE(index.body.find("<script type=\"module\" src=\"/ui/app.js\">"), std::string::npos) << index.body;
    auto app = Get("/ui/app.js", "");
    ASSERT_EQ(app.status, 200);
    EXPECT_EQ(app.headers.Get("Content-Type").value_or(""), "text/javascript; charset=utf-8");
    EXPECT_EQ(Get("/ui/style.css", "").headers.Get("Content-Type").value_or(""), "text/css; charset=utf-8");
    EXPECT_EQ(Get("/ui/missing.js", "").status, 404);
    EXPECT_EQ(Get("/ui/../openapi.json", "").status, 404);
    // Revalidation: the same ETag gets 304 and no body.
    http::ClientRequest again;
    again.url = Url("/ui/app.js");
    again.headers.Set("If-None-Match", std::string(app.headers.Get("ETag").value_or("")));
    auto cached = client_.Send(again);
    ASSERT_TRUE(cached.ok());
    EXPECT_EQ(cached->status, 304);
    EXPECT_TRUE(cached->body.empty());
    auto doc = Get("/api/v1/openapi.json", "");
    ASSERT_EQ(doc.status, 200);
    EXPECT_EQ(Body(doc)["info"]["title"], "sched API");
}

SCHED_DB_TEST_SUITE(AuthApiTest);
SCHED_DB_TEST_SUITE(ShortAuthCacheTest);

}  // namespace
}  // namespace sched::web::testing
