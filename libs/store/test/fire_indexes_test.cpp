// Which index the reads of job_fire's history take. One secondary index holds `status`
// (idx_fire_state: status, assigned_node, scheduled_time), so a claim or an end rewrites one
// status entry; the reads of the past go by time instead (idx_fire_time, idx_fire_finished).
// SQLite plans without statistics and takes `status = ?` for selective, so on idx_fire_state a
// read meant for the last seconds would walk every fire of that status ever kept.

#include <string>

#include "sched/store/alert.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/fire_metrics.hpp"
#include "store_test_base.hpp"

namespace sched::store {
namespace {

class FireIndexesTest : public StoreTest {};

TEST_P(FireIndexesTest, SqliteReadsTheHistoryByTimeNotByStatus) {
    if (GetParam() != db::Backend::kSqlite) GTEST_SKIP() << "MariaDB plans by its statistics";
    LastSuccessTracker tracker;
    // The tracker's first read is every job's row, by design; the reads after it are not.
    ASSERT_TRUE(db().Run([&](soci::session& s) { tracker.Refresh(s, 1'000'000); }).ok());
    const auto statements = SqlitePlansOf([&](soci::session& s) {
        FireRepository::ListExpired(s, 500'000, 100);
        tracker.Refresh(s, 1'005'000);
        AlertRepository::ListEndedAfter(s, 990'000, 0, 1'005'000, 100);
    });
    int history_reads = 0;
    int last_success_reads = 0;
    for (const auto& [sql, plan] : statements) {
        if (sql.find("job_last_success") != std::string::npos) {
            // The tracker reads the jobs recorded since, not the fires' history.
            ++last_success_reads;
            EXPECT_NE(plan.find("USING INDEX idx_last_success_recorded (recorded_at>?)"), std::string::npos)
                << plan << " for " << sql;
            continue;
        }
        if (sql.find("job_fire") == std::string::npos) continue;
        ++history_reads;
        EXPECT_EQ(plan.find("idx_fire_state"), std::string::npos) << plan << " for " << sql;
        EXPECT_EQ(plan.find("SCAN"), std::string::npos) << plan << " for " << sql;
        const bool by_time = plan.find("USING INDEX idx_fire_time (scheduled_time<?)") != std::string::npos ||
                             plan.find("USING INDEX idx_fire_finished (finished_at>") != std::string::npos;
        EXPECT_TRUE(by_time) << plan << " for " << sql;
    }
    EXPECT_EQ(history_reads, 2);
    EXPECT_EQ(last_success_reads, 1);
}

SCHED_DB_TEST_SUITE(FireIndexesTest);

}  // namespace
}  // namespace sched::store
