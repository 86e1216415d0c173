#pragma once

#include <gtest/gtest.h>

#include "sched/db/migrator.hpp"
#include "sched/db/testing/test_database.hpp"

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
};

}  // namespace sched::store
