#include "web_test_base.hpp"

namespace sched::web::testing {

void WebApiTest::SetUpDatabase() {
    pool_db_ = test_db().OpenAnother();
    http::Router router;
    auto db = pool_db_;
    routes_ = AddWebRoutes(
        router, Options(), [db] { return db; }, db_pool_);
    auto options = http::testing::LoopbackOptions();
    options.body_limit = 128 * 1024;
    // No hook: the web module authenticates inside its handlers (auth.hpp).
    server_ = std::make_unique<http::testing::TestServer>(std::move(router), options);
}

void WebApiTest::TearDown() {
    server_.reset();
    db_pool_.join();
    DbTest::TearDown();
}

WebOptions WebApiTest::Options() {
    WebOptions o;
    o.token = kClusterToken;
    o.executor_timeout = std::chrono::seconds(2);
    return o;
}

http::ClientResponse WebApiTest::Call(http::Method method, const std::string& path, const std::string& body,
                                      const std::string& token) {
    http::ClientRequest req;
    req.method = method;
    req.url = server_->Url(path);
    req.body = body;
    if (!body.empty()) req.headers.Set("Content-Type", "application/json");
    http::CallOptions call;
    call.bearer_token = token;
    auto r = client_.Send(req, call);
    EXPECT_TRUE(r.ok()) << http::MethodName(method) << " " << path << ": " << r.status().ToString();
    if (!r.ok()) return http::ClientResponse{};
    return *r;
}

nlohmann::json WebApiTest::Body(const http::ClientResponse& r) {
    auto j = r.Json();
    EXPECT_TRUE(j.ok()) << "not JSON: " << r.body;
    return j.ok() ? *j : nlohmann::json();
}

std::string WebApiTest::ErrorField(const http::ClientResponse& r) {
    auto j = r.Json();
    if (!j.ok() || !j->contains("error")) return "";
    const auto& field = (*j)["error"]["field"];
    return field.is_string() ? field.get<std::string>() : "";
}

std::string WebApiTest::RefusedField(const http::ClientResponse& r, int status) {
    EXPECT_EQ(r.status, status) << r.body;
    return ErrorField(r);
}

nlohmann::json WebApiTest::JobBody(const std::string& name, const nlohmann::json& overrides) {
    nlohmann::json body = {{"name", name},
                           {"app", "demo"},
                           {"handler", "echo"},
                           {"schedule_type", "cron"},
                           {"schedule_expr", "0 * * * * ?"}};
    for (const auto& [k, v] : overrides.items()) body[k] = v;
    return body;
}

nlohmann::json WebApiTest::CreateJob(const std::string& name, const nlohmann::json& overrides) {
    auto r = Post("/api/v1/jobs", JobBody(name, overrides));
    EXPECT_EQ(r.status, 201) << r.body;
    return Body(r);
}

std::string WebApiTest::CreateToken(const std::string& name, const std::string& role,
                                    const std::vector<std::string>& apps) {
    nlohmann::json body = {{"name", name}, {"role", role}};
    if (role == "executor") body["apps"] = apps.empty() ? std::vector<std::string>{"demo"} : apps;
    auto r = Post("/api/v1/tokens", body);
    EXPECT_EQ(r.status, 201) << r.body;
    return Body(r).value("token", "");
}

std::int64_t WebApiTest::InsertFire(std::int64_t job_id, std::int64_t scheduled_time, model::FireStatus status,
                                    const std::optional<std::string>& executor_address) {
    model::Fire f;
    f.job_id = job_id;
    f.scheduled_time = scheduled_time;
    f.epoch = 1;
    auto id = db().Run([&](soci::session& s) { return store::FireRepository::InsertIfAbsent(s, db().dialect(), f); });
    EXPECT_TRUE(id.ok() && *id);
    const std::int64_t fire_id = **id;
    store::FireRepository fires(db());
    using S = model::FireStatus;
    const auto move = [&](S from, S to, const store::FireUpdate& u) {
        EXPECT_TRUE(fires.Transition(fire_id, {from}, to, u).ok());
    };
    if (status == S::kPending) return fire_id;
    if (status == S::kLost || status == S::kSkipped) {
        move(S::kPending, status, {.finished_at = scheduled_time + 1});
        return fire_id;
    }
    move(S::kPending, S::kDispatching, {.assigned_node = "node-a", .dispatched_at = scheduled_time + 7});
    if (status == S::kDispatching) return fire_id;
    move(S::kDispatching, S::kRunning,
         {.executor_address = executor_address.value_or("127.0.0.1:1"), .started_at = scheduled_time + 10});
    if (status == S::kRunning) return fire_id;
    move(S::kRunning, status, {.finished_at = scheduled_time + 110, .result_code = 0, .result_message = "done"});
    return fire_id;
}

std::int64_t WebApiTest::DbNowMs() {
    auto now = db().NowUs();
    EXPECT_TRUE(now.ok());
    return now.ok() ? *now / 1000 : 0;
}

}  // namespace sched::web::testing
