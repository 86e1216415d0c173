#pragma once

// Shared by the lock tests that run against both real backends.

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "sched/db/migrator.hpp"
#include "sched/db/testing/test_database.hpp"
#include "sched/lock/sql_lock_store.hpp"

namespace sched::lock::testing {

/// A fresh database with the schema applied.
class LockDbTest : public db::testing::DbTest {
  protected:
    void SetUp() override {
        DbTest::SetUp();
        if (IsSkipped() || HasFatalFailure()) return;
        db::Migrator migrator(db());
        auto migrated = migrator.Migrate();
        ASSERT_TRUE(migrated.ok()) << migrated.status().ToString();
    }

    /// A pool of its own, as another process would have.
    std::shared_ptr<db::Database> Pool(int size = 4) {
        db::DbUrl url = test_db().url();
        url.pool = size;
        auto d = db::Database::Open(url);
        if (!d.ok()) throw std::runtime_error(d.status().ToString());
        return *d;
    }

    std::shared_ptr<db::Database> PoolWith(const db::DbUrl& url) {
        auto d = db::Database::Open(url);
        if (!d.ok()) throw std::runtime_error(d.status().ToString());
        return *d;
    }

    bool IsMySql() const { return GetParam() == db::Backend::kMySql; }
};

/// Polls `done` every few milliseconds until it holds or `timeout` passes.
inline bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
}

}  // namespace sched::lock::testing
