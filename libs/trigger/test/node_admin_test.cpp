// The trigger node's HTTP surface without a database, an elector or a server: the peer
// notification wakes the slave only from a term no older than the one this node has seen (a
// deposed master's notice is a 409 naming epoch), malformed bodies are 400s naming the field,
// and the admin routes give the documented shapes (docs/architecture/trigger-node.md).

#include "impl/node_admin.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/http/router.hpp"
#include "sched/protocol/fires_notice.hpp"
#include "sched/protocol/master_wake.hpp"
#include "sched/protocol/testing/malformed_fires_notices.hpp"

namespace sched::trigger::impl {
namespace {

using nlohmann::json;

class NodeAdminTest : public ::testing::Test {
  protected:
    NodeAdminTest() : admin_(MakeHooks()) {}

    NodeAdmin::Hooks MakeHooks() {
        NodeAdmin::Hooks h;
        h.observed_epoch = [this](int shard) -> std::optional<std::int64_t> {
            if (shard == 0) return observed_;
            const auto it = observed_by_shard_.find(shard);
            return it == observed_by_shard_.end() ? std::nullopt : std::optional(it->second);
        };
        h.wake_slave = [this](protocol::FiresNotice notice) {
            woken_.push_back(notice.fire_ids);
            notices_.push_back(std::move(notice));
        };
        h.nudge = [this] {
            ++nudges_;
        };
        h.wake_masters = [this] {
            ++wakes_;
            return leading_;
        };
        h.runs_ended = [this](const std::vector<std::int64_t>& ids) {
            ended_.push_back(ids);
            return ids.size() - 1;  // one of them had no record waiting
        };
        h.status_json = [] {
            return json{{"node_id", "n1"}, {"role", "slave"}}.dump();
        };
        h.not_ready_reason = [this] {
            return not_ready_;
        };
        h.metrics = [] {
            return std::string("# TYPE sched_leader gauge\nsched_leader 0\n");
        };
        return h;
    }

    static http::Request Post(std::string body) {
        http::Request req;
        req.method = http::Method::kPost;
        req.body = std::move(body);
        return req;
    }
    static http::Request Notice(std::int64_t epoch, std::vector<std::int64_t> ids) {
        return Post(protocol::ToJson(protocol::FiresNotice{.epoch = epoch, .fire_ids = std::move(ids)}).dump());
    }
    static std::string FieldOf(const http::Response& res) {
        auto body = json::parse(res.body, nullptr, false);
        if (!body.is_object() || !body.contains("error")) return "<no error body: " + res.body + ">";
        return body["error"].value("field", "<no field>");
    }
    // `res` is a 400 naming `field`.
    static void ExpectBadRequestNaming(const http::Response& res, const std::string& field) {
        EXPECT_EQ(res.status, 400) << res.body;
        EXPECT_EQ(FieldOf(res), field) << res.body;
    }
    // The node's routes serve a POST to `path`, behind the router's token check.
    void ExpectAuthenticatedPost(std::string_view path) {
        http::Router router;
        admin_.AddRoutes(router);
        const auto match = router.Find(http::Method::kPost, path);
        ASSERT_NE(match.handler, nullptr) << path;
        EXPECT_EQ(match.access, http::Access::kAuthenticated) << path;
    }

    std::optional<std::int64_t> observed_;           // shard 0
    std::map<int, std::int64_t> observed_by_shard_;  // the others
    std::vector<std::vector<std::int64_t>> woken_;
    std::vector<protocol::FiresNotice> notices_;
    std::vector<std::vector<std::int64_t>> ended_;
    int nudges_ = 0;
    int wakes_ = 0;
    int leading_ = 0;
    std::string not_ready_;
    NodeAdmin admin_;
};

TEST_F(NodeAdminTest, NoticeFromTheCurrentOrANewerTermWakesTheSlaveWithItsFires) {
    observed_ = 5;
    auto res = admin_.Fires(Notice(5, {7, 8}));
    EXPECT_EQ(res.status, 202) << res.body;
    EXPECT_EQ(json::parse(res.body), (json{{"accepted", true}}));
    res = admin_.Fires(Notice(6, {9}));
    EXPECT_EQ(res.status, 202) << res.body;
    EXPECT_EQ(woken_, (std::vector<std::vector<std::int64_t>>{{7, 8}, {9}}));
    EXPECT_EQ(admin_.stale_notices(), 0u);
}

TEST_F(NodeAdminTest, NoticeHandsTheSlaveEachFiresDueTime) {
    const auto notice = protocol::MakeFiresNotice(5, {{.id = 7, .due_at = 1200}, {.id = 8, .due_at = 1100}});
    auto res = admin_.Fires(Post(protocol::ToJson(notice).dump()));
    EXPECT_EQ(res.status, 202) << res.body;
    ASSERT_EQ(notices_.size(), 1u);
    EXPECT_EQ(notices_[0], notice);
}

TEST_F(NodeAdminTest, NoticeBeforeAnyLeaseSightingIsAccepted) {
    auto res = admin_.Fires(Notice(1, {3}));
    EXPECT_EQ(res.status, 202) << res.body;
    EXPECT_EQ(woken_, (std::vector<std::vector<std::int64_t>>{{3}}));
}

TEST_F(NodeAdminTest, NoticeFromADeposedMasterIs409NamingEpochAndWakesNothing) {
    observed_ = 5;
    for (int i = 0; i < 3; ++i) {
        auto res = admin_.Fires(Notice(4, {7}));
        EXPECT_EQ(res.status, 409) << res.body;
        EXPECT_EQ(FieldOf(res), "epoch") << res.body;
        EXPECT_EQ(json::parse(res.body)["error"]["code"], "aborted") << res.body;
    }
    EXPECT_TRUE(woken_.empty());
    EXPECT_EQ(admin_.stale_notices(), 3u);
}

TEST_F(NodeAdminTest, ANoticeIsJudgedByTheEpochOfItsOwnShard) {
    observed_ = 10;
    observed_by_shard_[2] = 5;
    const auto notice = [](std::int64_t epoch, int shard, std::int64_t id) {
        return Post(protocol::ToJson(protocol::FiresNotice{.epoch = epoch, .shard = shard, .fire_ids = {id}}).dump());
    };
    // Shard 2's epochs are its own: 5 is current there, though shard 0 is at 10.
    EXPECT_EQ(admin_.Fires(notice(5, 2, 1)).status, 202);
    auto stale = admin_.Fires(notice(4, 2, 2));
    EXPECT_EQ(stale.status, 409) << stale.body;
    EXPECT_EQ(FieldOf(stale), "epoch");
    // Shard 0's notice at 5 is from a deposed master of shard 0.
    EXPECT_EQ(admin_.Fires(notice(5, 0, 3)).status, 409);
    // A shard this node has seen no holder of yet: accepted.
    EXPECT_EQ(admin_.Fires(notice(1, 7, 4)).status, 202);
    EXPECT_EQ(woken_, (std::vector<std::vector<std::int64_t>>{{1}, {4}}));
    ASSERT_EQ(notices_.size(), 2u);
    EXPECT_EQ(notices_[0].shard, 2);
    EXPECT_EQ(notices_[1].shard, 7);
}

TEST_F(NodeAdminTest, MalformedOrOversizedNoticesAre400NamingTheField) {
    json too_many = {{"epoch", 1}, {"fire_ids", json::array()}};
    for (std::size_t i = 0; i <= protocol::kMaxNoticeFires; ++i) too_many["fire_ids"].push_back(i + 1);
    // The bodies a real node is sent too, and these.
    std::vector<std::pair<std::string, std::string>> cases = {
        {"", "body"},
        {too_many.dump(), "fire_ids"},
        {R"({"epoch": 1, "fire_ids": [1], "shard": 64})", "shard"},
        {R"({"epoch": 1, "fire_ids": [1], "shard": -1})", "shard"},
        {R"({"epoch": 1, "fire_ids": [1], "shard": "1"})", "shard"},
    };
    cases.insert(cases.end(), std::begin(protocol::testing::kMalformedFiresNotices),
                 std::end(protocol::testing::kMalformedFiresNotices));
    observed_ = 1;
    for (const auto& [body, field] : cases) {
        auto res = admin_.Fires(Post(body));
        EXPECT_EQ(res.status, 400) << body.substr(0, 80) << " -> " << res.body;
        EXPECT_EQ(FieldOf(res), field) << body.substr(0, 80) << " -> " << res.body;
    }
    EXPECT_TRUE(woken_.empty());
}

TEST_F(NodeAdminTest, NudgeTakesNoBodyOrAnEmptyObject) {
    EXPECT_EQ(admin_.Nudge(Post("")).status, 200);
    auto res = admin_.Nudge(Post("{}"));
    EXPECT_EQ(res.status, 200);
    EXPECT_EQ(json::parse(res.body), (json{{"nudged", true}}));
    EXPECT_EQ(nudges_, 2);
    ExpectBadRequestNaming(admin_.Nudge(Post(R"({"now": true})")), "now");
    ExpectBadRequestNaming(admin_.Nudge(Post("[1]")), "body");
    EXPECT_EQ(nudges_, 2);
}

// The masters' wake: answered 202 with how many of this node's masters it woke (0 when it
// leads no shard: the sender's view of the leaders was old), and the body checked like a nudge's.
TEST_F(NodeAdminTest, AWakeWakesTheMastersThisNodeRunsAndSaysHowMany) {
    leading_ = 2;
    auto res = admin_.WakeMasters(Post(""));
    EXPECT_EQ(res.status, 202);
    EXPECT_EQ(json::parse(res.body), (json{{"woken", 2}}));
    leading_ = 0;
    res = admin_.WakeMasters(Post("{}"));
    EXPECT_EQ(res.status, 202);
    EXPECT_EQ(json::parse(res.body), (json{{"woken", 0}}));
    EXPECT_EQ(wakes_, 2);
    ExpectBadRequestNaming(admin_.WakeMasters(Post(R"({"shard": 1})")), "shard");
    ExpectBadRequestNaming(admin_.WakeMasters(Post("not json")), "body");
    EXPECT_EQ(wakes_, 2) << "a refused body wakes nothing";

    // The route is the protocol's path, behind the router's token check like the other internal ones.
    ExpectAuthenticatedPost(protocol::kMasterWakePath);
}

// Ended runs: the ids go to the slave, whose count of dropped records is the answer; a body
// the protocol refuses reaches nobody.
TEST_F(NodeAdminTest, EndedRunsReachTheSlaveAndTheAnswerSaysHowManyRecordsWent) {
    auto res = admin_.RunsEnded(Post(protocol::ToJson(protocol::RunsEnded{.fire_ids = {7, 8, 9}}).dump()));
    EXPECT_EQ(res.status, 202);
    EXPECT_EQ(json::parse(res.body), (json{{"withdrawn", 2}}));
    EXPECT_EQ(ended_, (std::vector<std::vector<std::int64_t>>{{7, 8, 9}}));
    ExpectBadRequestNaming(admin_.RunsEnded(Post(R"({"fire_ids": [1], "epoch": 3})")), "epoch");
    ExpectBadRequestNaming(admin_.RunsEnded(Post(R"({"fire_ids": [0]})")), "fire_ids");
    ExpectBadRequestNaming(admin_.RunsEnded(Post("")), "body");
    EXPECT_EQ(ended_.size(), 1u) << "a refused body reached the slave";

    ExpectAuthenticatedPost(protocol::kRunsEndedPath);
}

TEST_F(NodeAdminTest, AdminRoutesGiveTheDocumentedShapes) {
    const http::Request get;
    auto health = admin_.Healthz(get);
    EXPECT_EQ(health.status, 200);
    EXPECT_EQ(health.body, "ok\n");

    auto ready = admin_.Readyz(get);
    EXPECT_EQ(ready.status, 200);
    EXPECT_EQ(ready.body, "ready\n");
    not_ready_ = "stopping";
    ready = admin_.Readyz(get);
    EXPECT_EQ(ready.status, 503);
    EXPECT_EQ(ready.body, "not ready: stopping\n");

    auto metrics = admin_.MetricsText(get);
    EXPECT_EQ(metrics.status, 200);
    EXPECT_EQ(metrics.headers.Get("Content-Type").value_or(""), "text/plain; version=0.0.4; charset=utf-8");
    EXPECT_NE(metrics.body.find("sched_leader 0\n"), std::string::npos) << metrics.body;

    auto status = admin_.Status(get);
    EXPECT_EQ(status.status, 200);
    EXPECT_EQ(status.headers.Get("Content-Type").value_or(""), "application/json");
    EXPECT_EQ(json::parse(status.body)["node_id"], "n1");
}

TEST_F(NodeAdminTest, RoutesAreRegisteredWithTheDocumentedAccess) {
    http::Router router;
    admin_.AddRoutes(router);
    for (const char* path : {"/healthz", "/readyz", "/metrics", "/status"}) {
        auto match = router.Find(http::Method::kGet, path);
        ASSERT_NE(match.handler, nullptr) << path;
        EXPECT_EQ(match.access, http::Access::kPublic) << path;
    }
    for (const char* path : {"/internal/v1/fires", "/internal/v1/election/nudge", "/internal/v1/master/wake"}) {
        auto match = router.Find(http::Method::kPost, path);
        ASSERT_NE(match.handler, nullptr) << path;
        EXPECT_EQ(match.access, http::Access::kAuthenticated) << path;
    }
}

}  // namespace
}  // namespace sched::trigger::impl
