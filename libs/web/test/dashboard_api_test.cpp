// The dashboard's aggregates over real HTTP: shape, counts, validation, role and the short cache.

#include "web_test_base.hpp"

namespace sched::web::testing {
namespace {

class DashboardApiTest : public WebApiTest {
  protected:
    // A fire of `job_id` scheduled `ago_ms` before now, in `status`.
    void AddFire(std::int64_t job_id, std::int64_t ago_ms, const std::string& status, std::int64_t attempt) {
        const std::int64_t t = DbNowMs() - ago_ms;
        const std::int64_t dispatched = t + 7;
        const std::int64_t finished = t + 100;
        ASSERT_TRUE(db().Run([&](soci::session& s) {
                            s << "INSERT INTO job_fire (job_id, scheduled_time, kind, attempt, shard_index, "
                                 "shard_total, epoch, status, due_at, created_at, dispatched_at, finished_at) VALUES "
                                 "(:job, :t, 'schedule', :attempt, 0, 1, 1, :status, :due, :created, :dispatched, "
                                 ":finished)",
                                soci::use(job_id, "job"), soci::use(t, "t"), soci::use(attempt, "attempt"),
                                soci::use(status, "status"), soci::use(t, "due"), soci::use(t, "created"),
                                soci::use(dispatched, "dispatched"), soci::use(finished, "finished");
                        })
                        .ok());
    }
};

TEST_P(DashboardApiTest, SummarisesTheWindowByOutcomeAndJob) {
    const auto job = CreateJob("nightly-report");
    const std::int64_t id = job["id"];
    AddFire(id, 30'000, "succeeded", 0);
    AddFire(id, 90'000, "succeeded", 1);
    AddFire(id, 150'000, "failed", 2);
    AddFire(id, 40'000, "pending", 3);

    auto r = Get("/api/v1/dashboard");
    ASSERT_EQ(r.status, 200) << r.body;
    const auto body = Body(r);
    EXPECT_EQ(body["window"], "1h");
    EXPECT_EQ(body["bucket_ms"], 60'000);
    EXPECT_GE(body["buckets"].size(), 60u);
    std::int64_t succeeded = 0, failed = 0;
    for (const auto& b : body["buckets"]) {
        succeeded += b["times"].value("succeeded", 0);
        failed += b["times"].value("failed", 0);
    }
    EXPECT_EQ(succeeded, 2);
    EXPECT_EQ(failed, 1);
    ASSERT_EQ(body["jobs"].size(), 1u);
    const auto& j = body["jobs"][0];
    EXPECT_EQ(j["name"], "nightly-report");
    EXPECT_EQ(j["succeeded"], 2);
    EXPECT_EQ(j["failed"], 1);
    EXPECT_NEAR(j["success_rate"].get<double>(), 2.0 / 3.0, 1e-9);
    EXPECT_EQ(j["lag_avg_ms"], 7);
    EXPECT_EQ(body["overdue"], 1);
    ASSERT_EQ(body["overdue_fires"].size(), 1u);
    EXPECT_EQ(body["overdue_fires"][0]["job_name"], "nightly-report");

    auto day = Get("/api/v1/dashboard?window=24h");
    ASSERT_EQ(day.status, 200) << day.body;
    EXPECT_EQ(Body(day)["bucket_ms"], 900'000);
}

TEST_P(DashboardApiTest, RefusesUnknownWindowsAndParametersNamingThem) {
    EXPECT_EQ(RefusedField(Get("/api/v1/dashboard?window=7d"), 400), "window");
    EXPECT_EQ(ErrorField(Get("/api/v1/dashboard?from=0")), "from");
    EXPECT_EQ(Get("/api/v1/dashboard", "not-a-token").status, 401);
    const auto viewer = CreateToken("watcher", "viewer");
    EXPECT_EQ(Get("/api/v1/dashboard", viewer).status, 200);
}

TEST_P(DashboardApiTest, ViewersShareOneReadPerWindowForAFewSeconds) {
    const auto job = CreateJob("cached");
    ASSERT_EQ(Body(Get("/api/v1/dashboard"))["jobs"].size(), 0u);
    AddFire(job["id"], 10'000, "succeeded", 0);
    // Within the cache's 5 s the new fire is not seen yet; another window reads afresh.
    EXPECT_EQ(Body(Get("/api/v1/dashboard"))["jobs"].size(), 0u);
    EXPECT_EQ(Body(Get("/api/v1/dashboard?window=6h"))["jobs"].size(), 1u);
}

SCHED_DB_TEST_SUITE(DashboardApiTest);

}  // namespace
}  // namespace sched::web::testing
