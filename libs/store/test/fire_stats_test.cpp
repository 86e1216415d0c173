#include "sched/store/fire_stats.hpp"

#include <string>

#include "sched/store/job.hpp"
#include "store_test_base.hpp"

namespace sched::store {

using model::FireStatus;
using model::FireStatusName;
namespace {

class FireStatsTest : public StoreTest {
  protected:
    void SetUpDatabase() override {
        ASSERT_TRUE(
            db().Run([&](soci::session& s) { s << "SELECT " + std::string(db().dialect().NowMs()), soci::into(now_); })
                .ok());
        pay_ = CreateManualJob("charge", "pay");
        shop_ = CreateManualJob("restock", "shop");
    }

    struct Row {
        std::int64_t job_id = 0;
        std::int64_t ago_ms = 0;  ///< scheduled this long before now
        FireStatus status = FireStatus::kSucceeded;
        std::optional<std::int64_t> lag_ms;  ///< dispatched this long after due
        std::optional<std::int64_t> skipped_count;
    };
    // A fire row in the given state, written directly: the aggregates read columns, not history.
    void Add(const Row& r) {
        const std::int64_t t = now_ - r.ago_ms;
        const std::string status(FireStatusName(r.status));
        const auto ok = db().Run([&](soci::session& s) {
            const std::int64_t seq = ++seq_;
            std::int64_t dispatched = t + r.lag_ms.value_or(0);
            soci::indicator dispatched_ind = r.lag_ms ? soci::i_ok : soci::i_null;
            const std::int64_t finished = t + 500;
            std::int64_t skipped = r.skipped_count.value_or(0);
            soci::indicator skipped_ind = r.skipped_count ? soci::i_ok : soci::i_null;
            s << "INSERT INTO job_fire (job_id, scheduled_time, kind, attempt, shard_index, shard_total, epoch, "
                 "status, due_at, created_at, dispatched_at, finished_at, skipped_count) VALUES (:job, :t, "
                 "'schedule', :seq, 0, 1, 1, :status, :due, :created, :dispatched, :finished, :skipped)",
                soci::use(r.job_id, "job"), soci::use(t, "t"), soci::use(seq, "seq"), soci::use(status, "status"),
                soci::use(t, "due"), soci::use(t, "created"), soci::use(dispatched, dispatched_ind, "dispatched"),
                soci::use(finished, "finished"), soci::use(skipped, skipped_ind, "skipped");
        });
        ASSERT_TRUE(ok.ok()) << ok.ToString();
    }

    std::int64_t now_ = 0;
    std::int64_t seq_ = 0;
    std::int64_t pay_ = 0;
    std::int64_t shop_ = 0;
};

TEST_P(FireStatsTest, CountsScheduledTimesByOutcomeBucketAndJob) {
    Add({.job_id = pay_, .ago_ms = 10'000, .status = FireStatus::kSucceeded, .lag_ms = 4});
    Add({.job_id = pay_, .ago_ms = 20'000, .status = FireStatus::kSucceeded, .lag_ms = 10});
    Add({.job_id = pay_, .ago_ms = 30'000, .status = FireStatus::kFailed, .lag_ms = 1});
    Add({.job_id = pay_, .ago_ms = 40'000, .status = FireStatus::kTimeout, .lag_ms = 1});
    Add({.job_id = shop_, .ago_ms = 5'000, .status = FireStatus::kSucceeded, .lag_ms = 2});
    // A misfire summary row standing for 7 times.
    Add({.job_id = shop_, .ago_ms = 50'000, .status = FireStatus::kSkipped, .skipped_count = 7});
    // Outside the window: counted nowhere.
    Add({.job_id = shop_, .ago_ms = 2 * 3'600'000, .status = FireStatus::kFailed, .lag_ms = 1});
    // Overdue: pending and due 60 s ago; and one running.
    Add({.job_id = shop_, .ago_ms = 60'000, .status = FireStatus::kPending});
    Add({.job_id = pay_, .ago_ms = 1'000, .status = FireStatus::kRunning, .lag_ms = 3});

    auto activity = FireStats(db()).Activity({.window_ms = 3'600'000, .bucket_ms = 60'000});
    ASSERT_TRUE(activity.ok()) << activity.status().ToString();
    const auto& a = *activity;
    EXPECT_EQ(a.from_ms % 60'000, 0);
    EXPECT_LE(a.from_ms, a.now_ms - 3'600'000);
    ASSERT_GE(a.buckets.size(), 60U);
    ASSERT_LE(a.buckets.size(), 62U);

    std::array<std::int64_t, kFireStatusCount> totals{};
    for (const auto& b : a.buckets) {
        for (std::size_t i = 0; i < kFireStatusCount; ++i) totals[i] += b.times[i];
    }
    EXPECT_EQ(totals[static_cast<std::size_t>(FireStatus::kSucceeded)], 3);
    EXPECT_EQ(totals[static_cast<std::size_t>(FireStatus::kFailed)], 1);
    EXPECT_EQ(totals[static_cast<std::size_t>(FireStatus::kTimeout)], 1);
    EXPECT_EQ(totals[static_cast<std::size_t>(FireStatus::kSkipped)], 7);
    EXPECT_EQ(totals[static_cast<std::size_t>(FireStatus::kPending)], 1);
    EXPECT_EQ(totals[static_cast<std::size_t>(FireStatus::kRunning)], 1);
    // The newest fire (5 s ago) sits in the bucket holding now - 5 s.
    const auto at = static_cast<std::size_t>((a.now_ms - 5'000 - a.from_ms) / 60'000);
    EXPECT_GE(a.buckets[at].times[static_cast<std::size_t>(FireStatus::kSucceeded)], 1);

    ASSERT_EQ(a.jobs_total, 2);
    ASSERT_EQ(a.jobs.size(), 2U);
    // Most failures first.
    EXPECT_EQ(a.jobs[0].job_id, pay_);
    EXPECT_EQ(a.jobs[0].name, "charge");
    EXPECT_EQ(a.jobs[0].app, "pay");
    EXPECT_EQ(a.jobs[0].succeeded, 2);
    EXPECT_EQ(a.jobs[0].failed, 2);
    EXPECT_EQ(a.jobs[0].active, 1);
    EXPECT_EQ(a.jobs[0].dispatched, 5);
    EXPECT_EQ(a.jobs[0].lag_sum_ms, 4 + 10 + 1 + 1 + 3);
    EXPECT_EQ(a.jobs[0].lag_max_ms, 10);
    ASSERT_TRUE(a.jobs[0].last_success_ms);
    EXPECT_EQ(*a.jobs[0].last_success_ms, now_ - 10'000 + 500);
    EXPECT_EQ(a.jobs[1].job_id, shop_);
    EXPECT_EQ(a.jobs[1].skipped, 7);
    EXPECT_EQ(a.jobs[1].failed, 0);

    EXPECT_EQ(a.pending, 1);
    EXPECT_EQ(a.running, 1);
    EXPECT_EQ(a.overdue, 1);
    ASSERT_EQ(a.overdue_fires.size(), 1U);
    EXPECT_EQ(a.overdue_fires[0].job_name, "restock");
    EXPECT_EQ(a.overdue_fires[0].status, FireStatus::kPending);
    ASSERT_EQ(a.running_fires.size(), 1U);
    EXPECT_EQ(a.running_fires[0].job_id, pay_);
    EXPECT_EQ(a.running_fires[0].status, FireStatus::kRunning);
}

TEST_P(FireStatsTest, ListsAreBoundedAndADeletedJobKeepsItsCounts) {
    for (int i = 0; i < 5; ++i) Add({.job_id = 424242, .ago_ms = 30'000 + i, .status = FireStatus::kPending});
    auto a = FireStats(db()).Activity({.window_ms = 600'000, .bucket_ms = 10'000, .max_jobs = 1, .max_fires = 2});
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->overdue, 5);
    EXPECT_EQ(a->overdue_fires.size(), 2U);
    ASSERT_EQ(a->jobs.size(), 1U);
    EXPECT_EQ(a->jobs[0].name, "");
    EXPECT_EQ(a->jobs[0].active, 5);
    // Oldest due first.
    EXPECT_LE(a->overdue_fires[0].due_at, a->overdue_fires[1].due_at);
}

TEST_P(FireStatsTest, RefusesAQueryBeyondItsBounds) {
    EXPECT_THROW((void)FireStats(db()).Activity({.window_ms = 86'400'000, .bucket_ms = 1'000}), std::invalid_argument);
    EXPECT_THROW((void)FireStats(db()).Activity({.window_ms = 0}), std::invalid_argument);
}

SCHED_DB_TEST_SUITE(FireStatsTest);

}  // namespace
}  // namespace sched::store
