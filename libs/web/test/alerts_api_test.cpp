// Alert rules and deliveries over real HTTP: admin only, every bad field named, no secret out.

#include <limits>

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
        {RuleBody({{"url", "https://"}}), "url"},
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

TEST_P(AlertsApiTest, PutEditsTheRuleWithItsVersionKeepsTheSecretAndIsAudited) {
    const auto job = CreateJob("nightly");
    auto created = Post("/api/v1/alert-rules", RuleBody());
    ASSERT_EQ(created.status, 201) << created.body;
    const auto rule = Body(created);
    EXPECT_EQ(rule["version"], 1);
    const std::string path = "/api/v1/alert-rules/" + std::to_string(rule["id"].get<std::int64_t>());

    // No secret in the body: the stored one stays (the API never hands it out to send back).
    nlohmann::json edit = RuleBody(
        {{"name", "pager-2"}, {"job_id", job["id"]}, {"events", {"timeout"}}, {"enabled", false}, {"version", 1}});
    edit.erase("secret");
    auto updated = Put(path, edit);
    ASSERT_EQ(updated.status, 200) << updated.body;
    EXPECT_EQ(Body(updated)["version"], 2);
    EXPECT_EQ(Body(updated)["name"], "pager-2");
    EXPECT_EQ(Body(updated)["job_id"], job["id"]);
    EXPECT_EQ(Body(updated)["events"], nlohmann::json({"timeout"}));
    EXPECT_EQ(Body(updated)["enabled"], false);
    EXPECT_EQ(Body(updated)["has_secret"], true);
    EXPECT_EQ(Body(Get(path))["version"], 2);
    auto kept = store::AlertRepository(*pool_db_).GetRule(rule["id"].get<std::int64_t>());
    ASSERT_TRUE(kept.ok()) << kept.status().ToString();
    EXPECT_EQ(kept->secret, "0123456789abcdef");

    // A stale version: 409 naming `version`, saying the rule changed since it was read.
    auto stale = Put(path, RuleBody({{"version", 1}}));
    EXPECT_EQ(stale.status, 409) << stale.body;
    EXPECT_EQ(ErrorField(stale), "version");
    EXPECT_NE(stale.body.find("changed since it was read"), std::string::npos) << stale.body;
    EXPECT_EQ(Body(Get(path))["name"], "pager-2");

    // A new secret replaces the old one.
    ASSERT_EQ(Put(path, RuleBody({{"secret", "fedcba9876543210"}, {"version", 2}})).status, 200);
    EXPECT_EQ(store::AlertRepository(*pool_db_).GetRule(rule["id"].get<std::int64_t>())->secret, "fedcba9876543210");

    auto audit = Body(Get("/api/v1/audit?target_kind=alert-rule&action=update"))["items"];
    ASSERT_EQ(audit.size(), 2u) << audit.dump();
    EXPECT_EQ(audit[1]["before"]["version"], 1);
    EXPECT_EQ(audit[1]["after"]["version"], 2);
    EXPECT_EQ(audit.dump().find("0123456789abcdef"), std::string::npos);

    EXPECT_EQ(Put("/api/v1/alert-rules/999999", RuleBody({{"version", 1}})).status, 404);
}

TEST_P(AlertsApiTest, ManagedByIsSetOnCreateKeptByAPutWithoutItAndClearedByNull) {
    auto by_hand = Post("/api/v1/alert-rules", RuleBody());
    ASSERT_EQ(by_hand.status, 201) << by_hand.body;
    EXPECT_TRUE(Body(by_hand)["managed_by"].is_null()) << by_hand.body;
    auto created = Post("/api/v1/alert-rules", RuleBody({{"name", "filed"}, {"managed_by", "ops.yaml"}}));
    ASSERT_EQ(created.status, 201) << created.body;
    EXPECT_EQ(Body(created)["managed_by"], "ops.yaml");
    const std::string path = "/api/v1/alert-rules/" + std::to_string(Body(created)["id"].get<std::int64_t>());
    EXPECT_EQ(Body(Get(path))["managed_by"], "ops.yaml");

    auto kept = Put(path, RuleBody({{"name", "filed"}, {"events", {"lost"}}, {"version", 1}}));
    ASSERT_EQ(kept.status, 200) << kept.body;
    EXPECT_EQ(Body(kept)["managed_by"], "ops.yaml");
    auto cleared = Put(path, RuleBody({{"name", "filed"}, {"managed_by", nullptr}, {"version", 2}}));
    ASSERT_EQ(cleared.status, 200) << cleared.body;
    EXPECT_TRUE(Body(cleared)["managed_by"].is_null()) << cleared.body;

    for (const nlohmann::json& bad : {nlohmann::json(""), nlohmann::json(7), nlohmann::json(std::string(192, 'x'))}) {
        auto refused = Post("/api/v1/alert-rules", RuleBody({{"managed_by", bad}}));
        EXPECT_EQ(refused.status, 400) << refused.body;
        EXPECT_EQ(ErrorField(refused), "managed_by") << refused.body;
    }
}

TEST_P(AlertsApiTest, PutNamesEveryBadFieldAndCreateRefusesAVersion) {
    auto created = Post("/api/v1/alert-rules", RuleBody());
    ASSERT_EQ(created.status, 201) << created.body;
    const std::string path = "/api/v1/alert-rules/" + std::to_string(Body(created)["id"].get<std::int64_t>());
    const std::pair<nlohmann::json, std::string> cases[] = {
        {RuleBody(), "version"},
        {RuleBody({{"version", 0}}), "version"},
        {RuleBody({{"version", "1"}}), "version"},
        {RuleBody({{"version", 1}, {"name", std::string(192, 'n')}}), "name"},
        {RuleBody({{"version", 1}, {"events", {"exploded"}}}), "events"},
        {RuleBody({{"version", 1}, {"url", "http://localhost:9/hook"}}), "url"},
        {RuleBody({{"version", 1}, {"secret", "short"}}), "secret"},
        {RuleBody({{"version", 1}, {"job_id", 999999}}), "job_id"},
        {RuleBody({{"version", 1}, {"consecutive_failures", 1001}}), "consecutive_failures"},
        {RuleBody({{"version", 1}, {"colour", "red"}}), "colour"},
    };
    for (const auto& [body, field] : cases) {
        auto r = Put(path, body);
        EXPECT_EQ(r.status, 400) << body.dump().substr(0, 200) << " -> " << r.body;
        EXPECT_EQ(ErrorField(r), field) << body.dump().substr(0, 200) << " -> " << r.body;
    }
    EXPECT_EQ(ErrorField(Put("/api/v1/alert-rules/abc", RuleBody({{"version", 1}}))), "id");
    EXPECT_EQ(Body(Get(path))["version"], 1);
    EXPECT_EQ(RefusedField(Post("/api/v1/alert-rules", RuleBody({{"version", 3}})), 400), "version");
}

TEST_P(AlertsApiTest, TestQueuesOneMarkedDeliveryForTheMasterToSend) {
    const auto job = CreateJob("nightly");
    auto created = Post("/api/v1/alert-rules", RuleBody({{"job_id", job["id"]}, {"events", {"timeout", "failed"}}}));
    ASSERT_EQ(created.status, 201) << created.body;
    const std::int64_t id = Body(created)["id"];
    const std::string path = "/api/v1/alert-rules/" + std::to_string(id) + "/test";

    auto first = Post(path, nlohmann::json::object());
    ASSERT_EQ(first.status, 202) << first.body;
    EXPECT_EQ(Body(first)["test"], true);
    EXPECT_EQ(Body(first)["status"], "pending");
    EXPECT_EQ(Body(first)["event"], "timeout");
    EXPECT_EQ(Body(first)["rule_id"], id);
    EXPECT_EQ(Body(first)["payload"]["test"], true);
    EXPECT_EQ(Body(first)["payload"]["rule_name"], "pager");
    auto second = Post(path, nlohmann::json::object());
    ASSERT_EQ(second.status, 202) << second.body;
    EXPECT_NE(Body(second)["id"], Body(first)["id"]);

    // Pending and due now: the master's alerter picks them up like any delivery.
    auto due = pool_db_->Run([&](soci::session& s) {
        return store::AlertRepository::ListDue(s, std::numeric_limits<std::int64_t>::max() / 2, 10);
    });
    ASSERT_TRUE(due.ok());
    ASSERT_EQ(due->size(), 2u);
    EXPECT_LT((*due)[0].fire_id, 0);

    auto listed = Body(Get("/api/v1/alert-deliveries?rule_id=" + std::to_string(id)))["items"];
    ASSERT_EQ(listed.size(), 2u);
    EXPECT_EQ(listed[0]["test"], true);
    EXPECT_EQ(listed[1]["test"], true);
    // A fire's delivery is not a test.
    store::AlertDelivery real{.rule_id = id, .job_id = job["id"], .fire_id = 5, .payload = "{}"};
    ASSERT_TRUE(pool_db_
                    ->Run([&](soci::session& s) {
                        return store::AlertRepository::InsertDeliveryIfAbsent(s, pool_db_->dialect(), real);
                    })
                    .ok());
    EXPECT_EQ(Body(Get("/api/v1/alert-deliveries?rule_id=" + std::to_string(id)))["items"][0]["test"], false);
    EXPECT_EQ(Body(Get("/api/v1/audit?target_kind=alert-rule&action=test"))["items"].size(), 2u);
    // Tests wait for the master: a few at a time per rule, then 429 until they are sent.
    for (int i = 2; i < store::AlertRepository::kMaxPendingTests; ++i) {
        ASSERT_EQ(Post(path, nlohmann::json::object()).status, 202);
    }
    auto crowded = Post(path, nlohmann::json::object());
    EXPECT_EQ(crowded.status, 429) << crowded.body;
    EXPECT_NE(crowded.body.find("pending"), std::string::npos) << crowded.body;

    EXPECT_EQ(ErrorField(Post(path, {{"force", true}})), "force");
    EXPECT_EQ(Post("/api/v1/alert-rules/999999/test", nlohmann::json::object()).status, 404);
    EXPECT_EQ(ErrorField(Post("/api/v1/alert-rules/abc/test", nlohmann::json::object())), "id");
    const std::string operator_token = CreateToken("ops", "operator");
    EXPECT_EQ(Post(path, nlohmann::json::object(), operator_token).status, 403);
    EXPECT_EQ(Put("/api/v1/alert-rules/" + std::to_string(id), RuleBody({{"version", 1}}), operator_token).status, 403);

    // A disabled rule's deliveries wait: a test of it is refused rather than queued unseen.
    ASSERT_EQ(Put("/api/v1/alert-rules/" + std::to_string(id), RuleBody({{"version", 1}, {"enabled", false}})).status,
              200);
    auto disabled = Post(path, nlohmann::json::object());
    EXPECT_EQ(disabled.status, 409) << disabled.body;
    EXPECT_EQ(ErrorField(disabled), "enabled");
}

SCHED_DB_TEST_SUITE(AlertsApiTest);
SCHED_DB_TEST_SUITE(DefaultAddressesAlertsApiTest);

}  // namespace
}  // namespace sched::web::testing
