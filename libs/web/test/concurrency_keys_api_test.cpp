// Concurrency keys and a job's concurrency_key over real HTTP, on SQLite and MariaDB.

#include "web_test_base.hpp"

namespace sched::web::testing {
namespace {

class ConcurrencyKeysApiTest : public WebApiTest {};

TEST_P(ConcurrencyKeysApiTest, PutGetListAndDeleteOnceNoJobNamesIt) {
    auto created = Put("/api/v1/concurrency-keys/warehouse", {{"max_running", 2}});
    ASSERT_EQ(created.status, 200) << created.body;
    EXPECT_EQ(Body(created)["max_running"], 2);
    EXPECT_EQ(Body(created)["rate_starts"], 0);
    auto replaced =
        Put("/api/v1/concurrency-keys/warehouse", {{"max_running", 3}, {"rate_starts", 10}, {"rate_window_ms", 60000}});
    ASSERT_EQ(replaced.status, 200) << replaced.body;
    auto got = Get("/api/v1/concurrency-keys/warehouse");
    ASSERT_EQ(got.status, 200) << got.body;
    EXPECT_EQ(Body(got)["max_running"], 3);
    EXPECT_EQ(Body(got)["rate_window_ms"], 60000);
    auto listed = Get("/api/v1/concurrency-keys");
    ASSERT_EQ(listed.status, 200);
    ASSERT_EQ(Body(listed)["items"].size(), 1u);
    EXPECT_EQ(Body(listed)["items"][0]["name"], "warehouse");

    const auto job = CreateJob("nightly-load", {{"concurrency_key", "warehouse"}});
    EXPECT_EQ(job["concurrency_key"], "warehouse");
    auto in_use = Delete("/api/v1/concurrency-keys/warehouse");
    EXPECT_EQ(in_use.status, 409) << in_use.body;
    EXPECT_EQ(ErrorField(in_use), "concurrency_key");
    EXPECT_NE(in_use.body.find("nightly-load"), std::string::npos);
    const std::string path = "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>());
    auto cleared = Put(path, {{"version", job["version"]}, {"concurrency_key", nullptr}});
    ASSERT_EQ(cleared.status, 200) << cleared.body;
    EXPECT_TRUE(Body(cleared)["concurrency_key"].is_null());
    EXPECT_EQ(Delete("/api/v1/concurrency-keys/warehouse").status, 204);
    EXPECT_EQ(Get("/api/v1/concurrency-keys/warehouse").status, 404);
}

TEST_P(ConcurrencyKeysApiTest, BadKeysAndUnknownKeysAreRefusedNamingTheField) {
    const std::tuple<std::string, nlohmann::json, const char*> cases[] = {
        {"warehouse", nlohmann::json::object(), "max_running"},
        {"warehouse", {{"max_running", 0}}, "max_running"},
        {"warehouse", {{"max_running", 1}, {"rate_starts", 5}}, "rate_window_ms"},
        {"warehouse", {{"max_running", 1}, {"rate_window_ms", 5000}}, "rate_starts"},
        {"warehouse", {{"max_running", 1}, {"rate_starts", 5}, {"rate_window_ms", 10}}, "rate_window_ms"},
        {"warehouse", {{"max_running", 1}, {"limit", 1}}, "limit"},
        {"ware%20house", {{"max_running", 1}}, "name"},
        {std::string(65, 'k'), {{"max_running", 1}}, "name"},
    };
    for (const auto& [name, body, field] : cases) {
        auto r = Put("/api/v1/concurrency-keys/" + name, body);
        EXPECT_EQ(r.status, 400) << name << " " << body.dump() << ": " << r.body;
        EXPECT_EQ(ErrorField(r), field) << body.dump() << ": " << r.body;
    }
    auto unknown = Post("/api/v1/jobs", JobBody("j", {{"concurrency_key", "nowhere"}}));
    EXPECT_EQ(unknown.status, 400) << unknown.body;
    EXPECT_EQ(ErrorField(unknown), "concurrency_key");
    auto malformed = Post("/api/v1/jobs", JobBody("j", {{"concurrency_key", "a'b"}}));
    EXPECT_EQ(malformed.status, 400) << malformed.body;
    EXPECT_EQ(ErrorField(malformed), "concurrency_key");
    EXPECT_EQ(Get("/api/v1/concurrency-keys?x=1").status, 400);
    const std::string viewer = CreateToken("v", "viewer");
    EXPECT_EQ(Put("/api/v1/concurrency-keys/k", {{"max_running", 1}}, viewer).status, 403);
    EXPECT_EQ(Get("/api/v1/concurrency-keys", viewer).status, 200);
}

SCHED_DB_TEST_SUITE(ConcurrencyKeysApiTest);

}  // namespace
}  // namespace sched::web::testing
