// The audit log over real HTTP: every mutating route leaves one entry naming the token, with
// the target before and after, secrets redacted; filters, cursor and bounds of GET /api/v1/audit;
// pause with a note.

#include "impl/audit.hpp"
#include "web_test_base.hpp"

namespace sched::web::testing {
namespace {

using http::Method;

class AuditApiTest : public WebApiTest {
  protected:
    /// The newest entries (all kinds), newest first.
    nlohmann::json Audit(const std::string& query = "", const std::string& token = kClusterToken) {
        auto r = Get("/api/v1/audit" + query, token);
        EXPECT_EQ(r.status, 200) << r.body;
        return Body(r)["items"];
    }
    /// Asserts the newest entry is `action` on `kind` by `actor` and returns it.
    nlohmann::json Newest(const std::string& action, const std::string& kind, const std::string& actor) {
        auto items = Audit("?limit=1");
        EXPECT_EQ(items.size(), 1u);
        if (items.empty()) return {};
        const auto e = items[0];
        EXPECT_EQ(e["action"], action) << e.dump();
        EXPECT_EQ(e["target"]["kind"], kind) << e.dump();
        EXPECT_EQ(e["actor"]["name"], actor) << e.dump();
        return e;
    }
    std::size_t Count() { return Audit("?limit=200").size(); }
};

TEST_P(AuditApiTest, EveryJobRouteLeavesOneEntryNamingTheTokenWithBeforeAndAfter) {
    const std::string ops = CreateToken("ops-alice", "operator");
    const auto before_count = Count();

    auto created = Post("/api/v1/jobs", JobBody("nightly", {{"params", {{"password", "hunter2"}, {"n", 1}}}}), ops);
    ASSERT_EQ(created.status, 201) << created.body;
    const auto job = Body(created);
    const std::string id = std::to_string(job["id"].get<std::int64_t>());
    auto e = Newest("create", "job", "ops-alice");
    EXPECT_EQ(e["actor"]["role"], "operator");
    EXPECT_GT(e["actor"]["token_id"].get<std::int64_t>(), 0);
    EXPECT_EQ(e["target"]["id"], id);
    EXPECT_EQ(e["target"]["name"], "nightly");
    EXPECT_TRUE(e["before"].is_null());
    EXPECT_EQ(e["after"]["schedule_expr"], job["schedule_expr"]);
    // A key named like a secret is redacted even inside params.
    EXPECT_EQ(e["after"]["params"]["password"], "[redacted]");
    EXPECT_EQ(e["after"]["params"]["n"], 1);
    EXPECT_GT(e["at"].get<std::int64_t>(), 1'600'000'000'000);

    auto put = Put("/api/v1/jobs/" + id, {{"description", "now with a description"}, {"version", job["version"]}}, ops);
    ASSERT_EQ(put.status, 200) << put.body;
    e = Newest("update", "job", "ops-alice");
    EXPECT_EQ(e["before"]["description"], "");
    EXPECT_EQ(e["after"]["description"], "now with a description");

    auto paused = Post("/api/v1/jobs/" + id + "/pause", {{"note", "db migration until 14:00"}}, ops);
    ASSERT_EQ(paused.status, 200) << paused.body;
    EXPECT_EQ(Body(paused)["paused"]["by"], "ops-alice");
    EXPECT_EQ(Body(paused)["paused"]["note"], "db migration until 14:00");
    EXPECT_GT(Body(paused)["paused"]["at"].get<std::int64_t>(), 0);
    EXPECT_EQ(Body(Get("/api/v1/jobs/" + id))["paused"]["note"], "db migration until 14:00");
    e = Newest("pause", "job", "ops-alice");
    EXPECT_EQ(e["before"]["enabled"], true);
    EXPECT_EQ(e["after"]["enabled"], false);
    EXPECT_EQ(e["after"]["paused"]["note"], "db migration until 14:00");

    ASSERT_EQ(Post("/api/v1/jobs/" + id + "/resume", nlohmann::json::object(), ops).status, 200);
    e = Newest("resume", "job", "ops-alice");
    EXPECT_EQ(e["after"]["enabled"], true);
    EXPECT_TRUE(e["after"]["paused"].is_null());
    EXPECT_TRUE(Body(Get("/api/v1/jobs/" + id))["paused"].is_null());
    // Resuming a running job changes nothing and records nothing.
    const auto unchanged = Count();
    ASSERT_EQ(Post("/api/v1/jobs/" + id + "/resume", nlohmann::json::object(), ops).status, 200);
    EXPECT_EQ(Count(), unchanged);

    ASSERT_EQ(Post("/api/v1/jobs/" + id + "/trigger", nlohmann::json::object(), ops).status, 202);
    e = Newest("trigger", "job", "ops-alice");
    EXPECT_EQ(e["after"]["fires"].size(), 1u);

    ASSERT_EQ(Delete("/api/v1/jobs/" + id, ops).status, 204);
    e = Newest("delete", "job", "ops-alice");
    EXPECT_EQ(e["before"]["name"], "nightly");
    EXPECT_TRUE(e["after"].is_null());

    EXPECT_EQ(Count(), before_count + 6);  // create, update, pause, resume, trigger, delete
}

TEST_P(AuditApiTest, TokensSigningKeysAlertRulesAndKillsAreRecordedWithoutSecrets) {
    auto created = Post("/api/v1/tokens", {{"name", "ci-bot"}, {"role", "viewer"}});
    ASSERT_EQ(created.status, 201) << created.body;
    const std::string secret = Body(created)["token"];
    auto e = Newest("create", "token", "cluster-token");
    EXPECT_EQ(e["actor"]["role"], "admin");
    EXPECT_EQ(e["after"]["name"], "ci-bot");
    const std::string token_id = std::to_string(Body(created)["id"].get<std::int64_t>());
    ASSERT_EQ(Delete("/api/v1/tokens/" + token_id).status, 204);
    e = Newest("revoke", "token", "cluster-token");
    EXPECT_TRUE(e["before"]["revoked_at"].is_null());
    EXPECT_FALSE(e["after"]["revoked_at"].is_null());

    auto rule = Post("/api/v1/alert-rules", {{"name", "pager"},
                                             {"events", {"failed"}},
                                             {"url", "http://hooks.example:9/hook"},
                                             {"secret", "0123456789abcdef-rule-secret"}});
    ASSERT_EQ(rule.status, 201) << rule.body;
    e = Newest("create", "alert-rule", "cluster-token");
    EXPECT_EQ(e["after"]["name"], "pager");
    ASSERT_EQ(Delete("/api/v1/alert-rules/" + std::to_string(Body(rule)["id"].get<std::int64_t>())).status, 204);
    e = Newest("delete", "alert-rule", "cluster-token");
    EXPECT_EQ(e["before"]["url"], "http://hooks.example:9/hook");

    // An app's first key comes with its first heartbeat; then an admin rotates it.
    const nlohmann::json beat = {
        {"app", "billing"}, {"address", "127.0.0.1:9"}, {"handlers", {"echo"}}, {"capacity", 1}, {"running", 0}};
    ASSERT_EQ(Post("/api/v1/registry/heartbeat", beat).status, 200);
    auto rotated = Post("/api/v1/apps/billing/signing-keys/rotate", nlohmann::json::object());
    ASSERT_EQ(rotated.status, 200) << rotated.body;
    e = Newest("rotate", "signing-key", "cluster-token");
    EXPECT_EQ(e["target"]["id"], "billing");
    EXPECT_EQ(e["before"]["keys"].size(), 1u);
    EXPECT_EQ(e["after"]["keys"].size(), 2u);

    const auto job = CreateJob("killable");
    const auto fire = InsertFire(job["id"], 1000, model::FireStatus::kRunning);
    ASSERT_EQ(Post("/api/v1/fires/" + std::to_string(fire) + "/kill", nlohmann::json::object()).status, 202);
    e = Newest("kill", "fire", "cluster-token");
    EXPECT_EQ(e["before"]["status"], "running");
    EXPECT_EQ(e["after"]["status"], "killed");

    // No secret anywhere in the log: not the token's, not the rule's, not a signing key's.
    const std::string all = Get("/api/v1/audit?limit=200").body;
    EXPECT_EQ(all.find(secret), std::string::npos);
    EXPECT_EQ(all.find("rule-secret"), std::string::npos);
    auto stored = pool_db_->Run([](soci::session& s) {
        std::string text;
        soci::indicator ind = soci::i_null;
        s << "SELECT secret FROM signing_key ORDER BY generation DESC LIMIT 1", soci::into(text, ind);
        return text;
    });
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    ASSERT_FALSE(stored->empty());
    EXPECT_EQ(all.find(*stored), std::string::npos);
}

TEST_P(AuditApiTest, AForbiddenChangeByAValidTokenIsRecordedAsDenied) {
    const std::string viewer = CreateToken("peeker", "viewer");
    const auto job = CreateJob("guarded");
    const std::string path = "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>());
    ASSERT_EQ(Delete(path, viewer).status, 403);
    auto e = Newest("denied", "route", "peeker");
    EXPECT_EQ(e["target"]["id"], "DELETE " + path);
    EXPECT_EQ(e["target"]["name"], "/api/v1/jobs/{id}");
    // A refused read is not recorded; viewers may read the log.
    const auto before = Count();
    ASSERT_EQ(Get("/api/v1/tokens", viewer).status, 403);
    EXPECT_EQ(Count(), before);
    EXPECT_EQ(Get("/api/v1/audit", viewer).status, 200);
}

TEST_P(AuditApiTest, FiltersAndCursor) {
    const std::string alice = CreateToken("alice", "operator");
    const std::string bob = CreateToken("bob", "operator");
    const auto a = CreateJob("a");
    const auto b = CreateJob("b");
    const std::string a_id = std::to_string(a["id"].get<std::int64_t>());
    const std::string b_id = std::to_string(b["id"].get<std::int64_t>());
    ASSERT_EQ(Post("/api/v1/jobs/" + a_id + "/pause", nlohmann::json::object(), alice).status, 200);
    ASSERT_EQ(Post("/api/v1/jobs/" + b_id + "/pause", nlohmann::json::object(), bob).status, 200);
    ASSERT_EQ(Post("/api/v1/jobs/" + a_id + "/resume", nlohmann::json::object(), bob).status, 200);

    auto of_a = Audit("?target_kind=job&target_id=" + a_id);
    ASSERT_EQ(of_a.size(), 3u);  // create, pause, resume: newest first
    EXPECT_EQ(of_a[0]["action"], "resume");
    EXPECT_EQ(of_a[1]["action"], "pause");
    EXPECT_EQ(of_a[2]["action"], "create");
    EXPECT_EQ(Audit("?actor=bob").size(), 2u);
    EXPECT_EQ(Audit("?actor=bob&action=pause").size(), 1u);
    const auto newest_at = of_a[0]["at"].get<std::int64_t>();
    EXPECT_TRUE(Audit("?since=" + std::to_string(newest_at + 3'600'000)).empty());
    EXPECT_TRUE(Audit("?until=" + std::to_string(newest_at - 3'600'000)).empty());

    // Pages of two, following next_cursor to the end, see every entry once.
    std::vector<std::int64_t> seen;
    std::string cursor;
    for (int page = 0; page < 20; ++page) {
        auto r = Get("/api/v1/audit?limit=2" + (cursor.empty() ? "" : "&cursor=" + cursor));
        ASSERT_EQ(r.status, 200) << r.body;
        const auto page_json = Body(r);
        for (const auto& e : page_json["items"]) seen.push_back(e["id"]);
        if (page_json["next_cursor"].is_null()) break;
        cursor = page_json["next_cursor"];
    }
    EXPECT_EQ(seen.size(), Count());
    EXPECT_TRUE(std::is_sorted(seen.rbegin(), seen.rend()));
    EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end());
}

TEST_P(AuditApiTest, BoundsAnswer400NamingTheField) {
    const std::vector<std::pair<std::string, std::string>> bad = {{"?limit=0", "limit"},
                                                                  {"?limit=201", "limit"},
                                                                  {"?cursor=-1", "cursor"},
                                                                  {"?since=yesterday", "since"},
                                                                  {"?until=1e3", "until"},
                                                                  {"?bogus=1", "bogus"},
                                                                  {"?actor=" + std::string(192, 'a'), "actor"},
                                                                  {"?target_id=" + std::string(300, '1'), "target_id"}};
    for (const auto& [query, field] : bad) {
        auto r = Get("/api/v1/audit" + query);
        EXPECT_EQ(r.status, 400) << query << " " << r.body;
        EXPECT_EQ(ErrorField(r), field) << query;
    }
    EXPECT_EQ(Get("/api/v1/audit", "").status, 401);

    const auto job = CreateJob("noted");
    const std::string pause = "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>()) + "/pause";
    for (const auto& [body, field] : std::vector<std::pair<std::string, std::string>>{
             {R"({"note": 5})", "note"},
             {nlohmann::json{{"note", std::string(1025, 'n')}}.dump(), "note"},
             {R"({"reason": "x"})", "reason"},
             {R"([1])", "body"},
             {"not json", "body"}}) {
        auto r = Call(Method::kPost, pause, body);
        EXPECT_EQ(r.status, 400) << body.substr(0, 40) << " " << r.body;
        EXPECT_EQ(ErrorField(r), field) << body.substr(0, 40);
    }
    EXPECT_EQ(Body(Get("/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>())))["enabled"], true);
    // 1024 characters (not bytes) is the limit.
    std::string note;
    for (int i = 0; i < 1024; ++i) note += "\xc3\xa9";  // é
    EXPECT_EQ(Post(pause, {{"note", note}}).status, 200);
}

TEST(AuditJson, RedactsSecretsCutsLongStringsAndBoundsTheWhole) {
    nlohmann::json j = {{"name", "x"},
                        {"token", "sched_abc"},
                        {"Secret", "s"},
                        {"nested", {{"deeper", {{"password", "p"}}}}},
                        {"long", std::string(5000, 'a')}};
    const auto out = nlohmann::json::parse(impl::AuditJson(j));
    EXPECT_EQ(out["token"], "[redacted]");
    EXPECT_EQ(out["Secret"], "[redacted]");
    EXPECT_EQ(out["nested"]["deeper"]["password"], "[redacted]");
    EXPECT_EQ(out["name"], "x");
    EXPECT_LT(out["long"].get<std::string>().size(), 1100u);
    nlohmann::json big = nlohmann::json::array();
    for (int i = 0; i < 100; ++i) big.push_back(std::string(1000, 'b'));
    const auto bounded = nlohmann::json::parse(impl::AuditJson(big));
    EXPECT_EQ(bounded["truncated"], true);
    EXPECT_LE(impl::AuditJson(big).size(), impl::kMaxAuditJsonBytes);
}

TEST_P(AuditApiTest, CalendarsAndBackfillsAreRecordedWithTheTokensName) {
    const std::string ops = CreateToken("ops-carol", "operator");
    auto cal = Post("/api/v1/calendars", {{"name", "holidays"}, {"excluded_dates", {"2026-12-25"}}}, ops);
    ASSERT_EQ(cal.status, 201) << cal.body;
    const std::string cal_id = Body(cal)["id"].dump();
    auto e = Newest("create", "calendar", "ops-carol");
    EXPECT_EQ(e["target"]["id"], cal_id);
    EXPECT_EQ(e["target"]["name"], "holidays");
    EXPECT_EQ(e["after"]["excluded_dates"], nlohmann::json({"2026-12-25"}));

    auto put = Put("/api/v1/calendars/" + cal_id,
                   {{"excluded_dates", {"2026-12-25", "2026-12-26"}}, {"version", Body(cal)["version"]}}, ops);
    ASSERT_EQ(put.status, 200) << put.body;
    e = Newest("update", "calendar", "ops-carol");
    EXPECT_EQ(e["before"]["excluded_dates"].size(), 1u) << e.dump();
    EXPECT_EQ(e["after"]["excluded_dates"].size(), 2u) << e.dump();

    ASSERT_EQ(Delete("/api/v1/calendars/" + cal_id, ops).status, 204);
    e = Newest("delete", "calendar", "ops-carol");
    EXPECT_EQ(e["before"]["name"], "holidays");
    EXPECT_TRUE(e["after"].is_null());

    const auto job = CreateJob("every-minute");
    constexpr std::int64_t kMinute = 60'000;
    const std::int64_t base = (DbNowMs() / kMinute - 30) * kMinute;
    auto backfill =
        Post("/api/v1/jobs/" + job["id"].dump() + "/backfill", {{"from", base}, {"to", base + 3 * kMinute}}, ops);
    ASSERT_EQ(backfill.status, 201) << backfill.body;
    const std::string backfill_id = Body(backfill)["id"].dump();
    e = Newest("create", "backfill", "ops-carol");
    EXPECT_EQ(e["target"]["id"], backfill_id);
    EXPECT_EQ(e["target"]["name"], "every-minute");
    EXPECT_EQ(e["after"]["from"], base);
    // A dry run changes nothing and records nothing.
    const auto before_dry_run = Count();
    ASSERT_EQ(Post("/api/v1/jobs/" + job["id"].dump() + "/backfill",
                   {{"from", base}, {"to", base + 3 * kMinute}, {"dry_run", true}}, ops)
                  .status,
              200);
    EXPECT_EQ(Count(), before_dry_run);
    ASSERT_EQ(Post("/api/v1/backfills/" + backfill_id + "/cancel", nlohmann::json::object(), ops).status, 200);
    e = Newest("cancel", "backfill", "ops-carol");
    EXPECT_EQ(e["after"]["state"], "cancelled");
}

SCHED_DB_TEST_SUITE(AuditApiTest);

}  // namespace
}  // namespace sched::web::testing
