#pragma once

// What the tests of the master's periodic work share: a migrated database on both backends, this
// node ("node-a") holding the master's lease, the fence over it and the master's time.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "sched/common/clock.hpp"
#include "sched/common/metrics.hpp"
#include "sched/db/testing/test_database.hpp"
#include "sched/lock/fenced.hpp"
#include "sched/lock/lock_store.hpp"
#include "sched/lock/sql_lock_store.hpp"
#include "sched/store/job.hpp"
#include "sched/trigger/db_time.hpp"
#include "sched/trigger/master_config.hpp"

namespace sched::trigger {

class MasterLeaseTest : public db::testing::MigratedDbTest {
  protected:
    void SetUpDatabase() override {
        pool_ = test_db().OpenAnother();
        lock_store_ = std::make_unique<lock::SqlLockStore>(pool_);
        auto held = lock::TryAcquireOnce(*lock_store_, "master", "node-a", LeaseTtl());
        ASSERT_TRUE(held.ok() && held->has_value()) << held.status().ToString();
        epoch_ = (*held)->epoch;
        holding_ = **held;
        fence_ = std::make_unique<lock::Fence>(pool_, "master", "node-a");
        time_ = MakeTime();
        ASSERT_TRUE(time_->Refresh().ok());
    }

    // How long the lease is taken for.
    virtual std::chrono::seconds LeaseTtl() const { return std::chrono::seconds(30); }

    // The master's time. By default the injected clock, read as the database's too, so a test
    // moves "now" by hand (the lease itself is checked by the database's own clock).
    virtual std::unique_ptr<DbTime> MakeTime() {
        return std::make_unique<DbTime>(clock_, [this]() -> Result<std::int64_t> {
            return std::chrono::duration_cast<std::chrono::microseconds>(clock_.System().time_since_epoch()).count();
        });
    }

    // A job `name` of `app` (handler `handler`) on the schedule `type` `expr`; its id, 0 when it
    // could not be created (a failure).
    std::int64_t CreateJobOf(const std::string& name, const std::string& app, const std::string& handler,
                             ScheduleType type, const std::string& expr = "") {
        const model::Job job{
            .name = name, .app = app, .handler = handler, .schedule_type = type, .schedule_expr = expr};
        auto created = store::JobRepository(db()).Create(job);
        EXPECT_TRUE(created.ok()) << created.status().ToString();
        return created.ok() ? created->id : 0;
    }

    // A manual job `name` of app "billing" (handler "report"), what the alerts are about.
    std::int64_t CreateBillingJob(const std::string& name) {
        return CreateJobOf(name, "billing", "report", ScheduleType::kManual);
    }

    FakeClock clock_;
    std::shared_ptr<db::Database> pool_;
    std::unique_ptr<lock::SqlLockStore> lock_store_;
    std::unique_ptr<lock::Fence> fence_;
    std::unique_ptr<DbTime> time_;
    MetricsRegistry metrics_;
    MasterConfig config_;
    std::int64_t epoch_ = 0;
    lock::Holding holding_;
    std::int64_t job_ = 0;
};

}  // namespace sched::trigger
