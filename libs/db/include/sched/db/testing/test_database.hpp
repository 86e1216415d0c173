#pragma once

/// Test support (target sched::db_testing): a throw-away database per test on either backend.
///
/// SQLite: a new file in a new temporary directory. MySQL: a new database `t_<random>` on the
/// server named by SCHED_TEST_MYSQL_URL (scripts/test.sh starts a private MariaDB and sets it),
/// dropped again at the end. When that variable is unset, MySQL cases are skipped, unless
/// SCHED_REQUIRE_MYSQL=1 (set by scripts/test.sh and so in CI): then they fail, so a missing
/// MariaDB can never pass silently.
///
/// Parameterise a suite over both backends with SCHED_DB_TEST_SUITE(Suite); the instances are
/// named Sqlite and MySql (sched_add_db_test in cmake/SchedHelpers.cmake filters on that).

#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "sched/db/database.hpp"

namespace sched::db::testing {

class TestDatabase {
  public:
    /// kUnavailable when the backend is MySQL and SCHED_TEST_MYSQL_URL is unset.
    static Result<std::unique_ptr<TestDatabase>> Create(Backend backend);
    ~TestDatabase();
    TestDatabase(const TestDatabase&) = delete;
    TestDatabase& operator=(const TestDatabase&) = delete;

    const DbUrl& url() const { return url_; }
    /// A pool over this database (opened on first use).
    Database& db();
    /// A second, independent pool (another "process" as far as the server can tell).
    std::shared_ptr<Database> OpenAnother() const;

  private:
    TestDatabase() = default;
    DbUrl url_;
    DbUrl admin_url_;                 // MySQL: where to drop the database from
    std::filesystem::path temp_dir_;  // SQLite
    std::shared_ptr<Database> db_;
};

/// Base fixture: GetParam() is the backend. SetUp creates the database (skip/fail for MySQL as
/// described above), migrates it for a MigratedDbTest, and only then, when all that worked, runs
/// the fixture's own SetUpDatabase(): a fixture never sets up on a database that is not there.
class DbTest : public ::testing::TestWithParam<Backend> {
  protected:
    void SetUp() final;
    void TearDown() override { test_db_.reset(); }
    /// A fixture's own set-up. An override that extends another fixture's calls it first and
    /// returns on HasFatalFailure().
    virtual void SetUpDatabase() {}
    Database& db() { return test_db_->db(); }
    TestDatabase& test_db() { return *test_db_; }

  private:
    virtual bool Migrated() const { return false; }
    std::unique_ptr<TestDatabase> test_db_;
};

/// A DbTest whose database is migrated to the newest schema (Migrator) before each test; a
/// failed migration fails the test.
class MigratedDbTest : public DbTest {
  private:
    bool Migrated() const final { return true; }
};

/// "Sqlite" / "MySql".
std::string BackendParamName(const ::testing::TestParamInfo<Backend>& info);

}  // namespace sched::db::testing

#define SCHED_DB_TEST_SUITE(Suite)                                                                           \
    INSTANTIATE_TEST_SUITE_P(Backends, Suite,                                                                \
                             ::testing::Values(::sched::db::Backend::kSqlite, ::sched::db::Backend::kMySql), \
                             ::sched::db::testing::BackendParamName)
