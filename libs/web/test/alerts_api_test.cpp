// Alert rules and deliveries over real HTTP: admin only, every bad field named, no secret out.

#include "sched/store/alert.hpp"
#include "web_test_base.hpp"

namespace sched::web::testing {
namespace {

class AlertsApiTest : public WebApiTest {
  protected:
    // The rules here name a loopback receiver, which the default policy refuses.
    WebOptions Options() override {
        WebOptions o = WebApiTest::Options();
        o.alert_addresses = http::AddressPolicy({"127.0.0.1"}, {"hooks.denied.example", "198.51.100.0/24"});
        return o;
    }

    static nlohmann::json RuleBody(const nlohmann::json& overrides = nlohmann::json::object()) {
        nlohmann::json body = {{"name", "pager"},
                               {"events", {"failed", "misfire"}},
                               {"url", "http://127.0.0.1:9/hook"},
                               {"secret", "0123456789abcdef"}};
        body.update(overrides);
        return body;
    }
};

TEST_P(AlertsApiTest, CreateListGetDeleteNeverReturnsTheSecret) {
    const auto job = CreateJob("nightly");
    auto created = Post("/api/v1/alert-rules", RuleBody({{"job_id", job["id"]}, {"consecutive_failures", 3}}));
    ASSERT_EQ(created.status, 201) << created.body;
    const auto rule = Body(created);
    EXPECT_EQ(created.headers.Get("Location").value_or(""),
              "/api/v1/alert-rules/" + std::to_string(rule["id"].get<std::int64_t>()));
    EXPECT_EQ(rule["job_id"], job["id"]);
    EXPECT_EQ(rule["events"], nlohmann::json({"failed", "misfire"}));
    EXPECT_EQ(rule["consecutive_failures"], 3);
    EXPECT_EQ(rule["has_secret"], true);
    EXPECT_EQ(created.body.find("0123456789abcdef"), std::string::npos);

    const std::string path = "/api/v1/alert-rules/" + std::to_string(rule["id"].get<std::int64_t>());
    auto got = Get(path);
    ASSERT_EQ(got.status, 200);
    EXPECT_EQ(Body(got)["name"], "pager");
    EXPECT_EQ(got.body.find("0123456789abcdef"), std::string::npos);
    auto list = Get("/api/v1/alert-rules");
    ASSERT_EQ(list.status, 200);
    EXPECT_EQ(Body(list)["items"].size(), 1u);
    EXPECT_EQ(list.body.find("0123456789abcdef"), std::string::npos);

    // A delivery of the rule shows up, filtered by rule and status.
    store::AlertDelivery d{.rule_id = rule["id"], .job_id = job["id"], .fire_id = 5, .payload = R"({"a":1})"};
    ASSERT_TRUE(pool_db_
                    ->Run([&](soci::session& s) {
                        return store::AlertRepository::InsertDeliveryIfAbsent(s, pool_db_->dialect(), d);
                    })
                    .ok());
    auto deliveries = Get("/api/v1/alert-deliveries?rule_id=" + std::to_string(d.rule_id) + "&status=pending");
    ASSERT_EQ(deliveries.status, 200) << deliveries.body;
    ASSERT_EQ(Body(deliveries)["items"].size(), 1u);
    EXPECT_EQ(Body(deliveries)["items"][0]["payload"]["a"], 1);
    EXPECT_EQ(Body(Get("/api/v1/alert-deliveries?status=delivered"))["items"].size(), 0u);

    EXPECT_EQ(Delete(path).status, 204);
    EXPECT_EQ(Get(path).status, 404);
    EXPECT_EQ(Delete(path).status, 404);
}

TEST_P(AlertsApiTest, EveryBadFieldIsA400NamingIt) {
    const std::pair<nlohmann::json, std::string> cases[] = {
        {RuleBody({{"name", ""}}), "name"},
        {RuleBody({{"name", std::string(192, 'n')}}), "name"},
        {RuleBody({{"events", nlohmann::json::array()}}), "events"},
        {RuleBody({{"events", {"failed", "failed"}}}), "events"},
        {RuleBody({{"events", {"exploded"}}}), "events"},
        {RuleBody({{"events", {1}}}), "events"},
        {RuleBody({{"events", {"failed", "timeout", "lost", "misfire", "paused", "failed"}}}), "events"},
        {RuleBody({{"events", {"failed", "timeout", "lost", "misfire", "paused", "no_success", "failed"}}}), "events"},
        {RuleBody({{"url", "https://example.com/hook"}}), "url"},
        {RuleBody({{"url", "ftp://example.com/hook"}}), "url"},
        {RuleBody({{"url", "http://"}}), "url"},
        {RuleBody({{"url", "http://example.com/" + std::string(3000, 'a')}}), "url"},
        {RuleBody({{"secret", "short"}}), "secret"},
        {RuleBody({{"secret", 12}}), "secret"},
        {RuleBody({{"consecutive_failures", 0}}), "consecutive_failures"},
        {RuleBody({{"consecutive_failures", 1001}}), "consecutive_failures"},
        {RuleBody({{"job_id", 0}}), "job_id"},
        {RuleBody({{"job_id", 999999}}), "job_id"},
        {RuleBody({{"enabled", "yes"}}), "enabled"},
        {RuleBody({{"colour", "red"}}), "colour"},
    };
    for (const auto& [body, field] : cases) {
        auto r = Post("/api/v1/alert-rules", body);
        EXPECT_EQ(r.status, 400) << body.dump().substr(0, 200) << " -> " << r.body;
        EXPECT_EQ(ErrorField(r), field) << body.dump().substr(0, 200) << " -> " << r.body;
    }
    auto missing = RuleBody();
    missing.erase("url");
    EXPECT_EQ(ErrorField(Post("/api/v1/alert-rules", missing)), "url");
    EXPECT_EQ(ErrorField(Get("/api/v1/alert-deliveries?status=lost")), "status");
    EXPECT_EQ(ErrorField(Get("/api/v1/alert-deliveries?limit=1000")), "limit");
    EXPECT_EQ(ErrorField(Get("/api/v1/alert-deliveries?job=1")), "job");
    EXPECT_EQ(ErrorField(Get("/api/v1/alert-rules/abc")), "id");
    EXPECT_TRUE(Body(Get("/api/v1/alert-rules"))["items"].empty());
}

TEST_P(AlertsApiTest, AWebhookUrlOnTheDenyListOrNotAllowedIsA400NamingUrl) {
    for (const char* url : {"http://hooks.denied.example/hook", "http://198.51.100.7/hook", "http://127.0.0.2:9/hook",
                            "http://localhost:9/hook"}) {
        const auto r = Post("/api/v1/alert-rules", RuleBody({{"url", url}}));
        EXPECT_EQ(r.status, 400) << url;
        EXPECT_EQ(ErrorField(r), "url") << url << ": " << r.body;
    }
    EXPECT_EQ(Post("/api/v1/alert-rules", RuleBody({{"url", "http://127.0.0.1:9/hook"}})).status, 201);
}

class DefaultAddressesAlertsApiTest : public WebApiTest {};

TEST_P(DefaultAddressesAlertsApiTest, LoopbackLinkLocalUnspecifiedAndMulticastHostsAreA400NamingUrl) {
    for (const char* host :
         {"127.0.0.1", "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "[::1]", "[::ffff:127.0.0.1]",
          "169.254.169.254", "[fe80::1]", "0.0.0.0", "[::]", "224.0.0.1", "[ff02::1]", "localhost", "LOCALHOST."}) {
        const nlohmann::json body = {{"name", "pager"},
                                     {"events", {"failed"}},
                                     {"url", std::string("http://") + host + ":9/hook"},
                                     {"secret", "0123456789abcdef"}};
        const auto r = Post("/api/v1/alert-rules", body);
        EXPECT_EQ(r.status, 400) << host;
        EXPECT_EQ(ErrorField(r), "url") << host << ": " << r.body;
    }
    const nlohmann::json ok = {{"name", "pager"},
                               {"events", {"failed"}},
                               {"url", "http://hooks.example:9/hook"},
                               {"secret", "0123456789abcdef"}};
    EXPECT_EQ(Post("/api/v1/alert-rules", ok).status, 201);
}

TEST_P(AlertsApiTest, OnlyAdminsSeeOrChangeAlertRules) {
    const std::string operator_token = CreateToken("ops", "operator");
    EXPECT_EQ(Post("/api/v1/alert-rules", RuleBody(), operator_token).status, 403);
    EXPECT_EQ(Get("/api/v1/alert-rules", operator_token).status, 403);
    EXPECT_EQ(Get("/api/v1/alert-deliveries", operator_token).status, 403);
    EXPECT_EQ(Get("/api/v1/alert-rules", "").status, 401);
    EXPECT_EQ(Post("/api/v1/alert-rules", RuleBody()).status, 201);
}

TEST_P(AlertsApiTest, PauseAfterFailuresIsAJobFieldFrom0To1000) {
    EXPECT_EQ(CreateJob("plain")["pause_after_failures"], 0);
    auto job = CreateJob("fragile", {{"pause_after_failures", 3}});
    EXPECT_EQ(job["pause_after_failures"], 3);
    for (const nlohmann::json& bad :
         {nlohmann::json(-1), nlohmann::json(1001), nlohmann::json("3"), nlohmann::json(1.5)}) {
        auto r = Post("/api/v1/jobs", JobBody("bad", {{"pause_after_failures", bad}}));
        EXPECT_EQ(r.status, 400) << bad.dump() << " -> " << r.body;
        EXPECT_EQ(ErrorField(r), "pause_after_failures") << r.body;
    }
    const std::string path = "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>());
    auto updated = Put(path, {{"version", job["version"]}, {"pause_after_failures", 1000}});
    ASSERT_EQ(updated.status, 200) << updated.body;
    EXPECT_EQ(Body(updated)["pause_after_failures"], 1000);
    EXPECT_EQ(Body(Get(path))["pause_after_failures"], 1000);
}

TEST_P(AlertsApiTest, NoSuccessWithinMsIsBoundedAndGoesWithTheNoSuccessEvent) {
    const nlohmann::json slo_events = {"failed", "no_success"};
    const nlohmann::json cases[] = {
        RuleBody({{"events", slo_events}}),                                              // missing
        RuleBody({{"events", slo_events}, {"no_success_within_ms", 59'999}}),            // too short
        RuleBody({{"events", slo_events}, {"no_success_within_ms", 31'622'400'001LL}}),  // > 366 days
        RuleBody({{"events", slo_events}, {"no_success_within_ms", "1h"}}),              // a string
        RuleBody({{"events", slo_events}, {"no_success_within_ms", 90'000.5}}),          // not an integer
        RuleBody({{"no_success_within_ms", 3'600'000}}),                                 // without the event
    };
    for (const auto& body : cases) {
        auto r = Post("/api/v1/alert-rules", body);
        EXPECT_EQ(r.status, 400) << body.dump() << " -> " << r.body;
        EXPECT_EQ(ErrorField(r), "no_success_within_ms") << body.dump() << " -> " << r.body;
    }
    auto created =
        Post("/api/v1/alert-rules", RuleBody({{"events", {"no_success"}}, {"no_success_within_ms", 60'000}}));
    ASSERT_EQ(created.status, 201) << created.body;
    EXPECT_EQ(Body(created)["events"], nlohmann::json({"no_success"}));
    EXPECT_EQ(Body(created)["no_success_within_ms"], 60'000);
    const std::string path = "/api/v1/alert-rules/" + std::to_string(Body(created)["id"].get<std::int64_t>());
    EXPECT_EQ(Body(Get(path))["no_success_within_ms"], 60'000);
    auto max =
        Post("/api/v1/alert-rules", RuleBody({{"events", slo_events}, {"no_success_within_ms", 31'622'400'000LL}}));
    EXPECT_EQ(max.status, 201) << max.body;
    auto plain = Post("/api/v1/alert-rules", RuleBody());
    ASSERT_EQ(plain.status, 201) << plain.body;
    EXPECT_TRUE(Body(plain)["no_success_within_ms"].is_null());
}

SCHED_DB_TEST_SUITE(AlertsApiTest);
SCHED_DB_TEST_SUITE(DefaultAddressesAlertsApiTest);

}  // namespace
}  // namespace sched::web::testing
