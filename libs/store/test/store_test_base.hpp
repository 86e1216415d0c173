#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include <soci/soci.h>

#include "sched/db/migrator.hpp"
#include "sched/db/testing/test_database.hpp"
#include "sched/store/job.hpp"

namespace sched::store {

/// A fresh, migrated database per test, on each backend.
class StoreTest : public db::testing::DbTest {
  protected:
    void SetUp() override {
        DbTest::SetUp();
        if (IsSkipped() || HasFatalFailure()) return;
        auto migrated = db::Migrator(db()).Migrate();
        ASSERT_TRUE(migrated.ok()) << migrated.status().ToString();
    }

    /// The statements a MySQL session has run so far (its Questions counter, which counts every
    /// statement, this SHOW included): the difference of two reads less one is what ran between.
    static long long StatementsRun(soci::session& s) {
        std::string name;
        long long value = 0;
        s << "SHOW SESSION STATUS LIKE 'Questions'", soci::into(name), soci::into(value);
        return value;
    }

    /// A manual job `name` of `app` (handler "echo"); its id, 0 if it could not be created.
    std::int64_t CreateManualJob(const std::string& name, const std::string& app) {
        model::Job j;
        j.name = name;
        j.app = app;
        j.handler = "echo";
        j.schedule_type = sched::ScheduleType::kManual;
        auto created = JobRepository(db()).Create(j);
        EXPECT_TRUE(created.ok()) << created.status().ToString();
        return created.ok() ? created->id : 0;
    }
};

}  // namespace sched::store
