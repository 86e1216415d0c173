#pragma once

// Shared by the lock tests that run against both real backends.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "sched/common/testing/wait_for.hpp"
#include "sched/db/testing/test_database.hpp"
#include "sched/lock/sql_lock_store.hpp"

namespace sched::lock::testing {

/// A fresh database with the schema applied.
class LockDbTest : public db::testing::MigratedDbTest {
  protected:
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

    /// A one-row counter table for the tests that increment it under a lock: row id 1, `column`
    /// (of SQL type `type`) at 0.
    Status CreateCounter(const std::string& table, const std::string& column, const std::string& type) {
        return db().Run([&](soci::session& s) {
            s << "CREATE TABLE " + table + " (id INT PRIMARY KEY, " + column + " " + type + ")";
            s << "INSERT INTO " + table + " (id, " + column + ") VALUES (1, 0)";
        });
    }

    /// The one value `sql` selects.
    template <typename T>
    Result<T> SelectValue(const std::string& sql) {
        return db().Run([&](soci::session& s) {
            T v = 0;
            s << sql, soci::into(v);
            return v;
        });
    }

    bool IsMySql() const { return GetParam() == db::Backend::kMySql; }
};

using sched::testing::WaitFor;
}  // namespace sched::lock::testing
