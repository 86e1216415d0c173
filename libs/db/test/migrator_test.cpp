#include "sched/db/migrator.hpp"

#include <thread>

#include <gtest/gtest.h>

#include "sched/db/testing/test_database.hpp"

namespace sched::db {
namespace {

using testing::DbTest;

class MigratorTest : public DbTest {};

int CountTables(Database& db, const std::vector<std::string>& names) {
    int found = 0;
    for (const auto& n : names) {
        auto r = db.Run([&](soci::session& s) {
            int c = 0;
            s << "SELECT COUNT(*) FROM " + n, soci::into(c);
            return c;
        });
        if (r.ok()) ++found;
    }
    return found;
}

const std::vector<std::string> kTables = {"scheduler_lock", "trigger_node", "executor_instance", "job",
                                          "job_fire",       "api_token"};

TEST_P(MigratorTest, AppliesEverythingOnceAndIsIdempotent) {
    Migrator migrator(db());
    auto first = migrator.Migrate();
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_EQ(first->from_version, 0);
    EXPECT_GE(first->to_version, 1);
    EXPECT_FALSE(first->applied.empty());
    EXPECT_EQ(CountTables(db(), kTables), static_cast<int>(kTables.size()));

    auto second = migrator.Migrate();
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    EXPECT_TRUE(second->applied.empty());
    EXPECT_EQ(second->from_version, first->to_version);
    EXPECT_EQ(second->to_version, first->to_version);

    auto rows = db().Run([](soci::session& s) {
        int n = 0;
        s << "SELECT COUNT(*) FROM schema_version", soci::into(n);
        return n;
    });
    EXPECT_EQ(*rows, static_cast<int>(first->applied.size()));
}

TEST_P(MigratorTest, RacingMigratorsApplyEachMigrationExactlyOnce) {
    constexpr int kRacers = 4;
    std::vector<std::shared_ptr<Database>> pools;
    for (int i = 0; i < kRacers; ++i) pools.push_back(test_db().OpenAnother());
    std::vector<Result<MigrationReport>> results(kRacers, Status(Code::kInternal, "not run"));
    std::vector<std::thread> threads;
    for (int i = 0; i < kRacers; ++i) {
        threads.emplace_back([&, i] { results[i] = Migrator(*pools[i]).Migrate(); });
    }
    for (auto& t : threads) t.join();
    std::size_t applied_total = 0;
    for (const auto& r : results) {
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        applied_total += r->applied.size();
    }
    EXPECT_EQ(applied_total, BuiltinMigrations(GetParam()).size());
    EXPECT_EQ(CountTables(db(), kTables), static_cast<int>(kTables.size()));
}

TEST_P(MigratorTest, RefusesASchemaNewerThanItKnows) {
    ASSERT_TRUE(Migrator(db()).Migrate().ok());
    ASSERT_TRUE(
        db().Run([](soci::session& s) {
                s << "INSERT INTO schema_version (version, name, applied_at_ms) VALUES (999, '999_future.sql', 0)";
            })
            .ok());
    auto r = Migrator(db()).Migrate();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
    EXPECT_NE(r.status().message().find("999 is newer"), std::string::npos) << r.status().message();
}

TEST_P(MigratorTest, AppliesOnlyTheMissingOnes) {
    auto all = BuiltinMigrations(GetParam());
    std::vector<Migration> with_extra = all;
    with_extra.push_back({all.back().version + 1, "extra.sql", "CREATE TABLE extra_t (x INT);\n"});
    ASSERT_TRUE(Migrator(db(), all).Migrate().ok());
    auto r = Migrator(db(), with_extra).Migrate();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->applied, std::vector<std::string>{"extra.sql"});
    EXPECT_EQ(CountTables(db(), {"extra_t"}), 1);
}

TEST_P(MigratorTest, FailingMigrationReportsTheError) {
    std::vector<Migration> bad = {{1, "001_bad.sql", "CREATE TABLE ok_t (x INT);\nTHIS IS NOT SQL;\n"}};
    auto r = Migrator(db(), bad).Migrate();
    ASSERT_FALSE(r.ok());
    auto v = Migrator(db(), bad).CurrentVersion();
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(*v, 0);  // not recorded as applied
}

SCHED_DB_TEST_SUITE(MigratorTest);

TEST(SplitStatements, SplitsAtLineEndSemicolonsAndDropsComments) {
    auto parts = SplitStatements(
        "-- header\nCREATE TABLE a (\n  x INT -- inline stays\n);\n\n  -- c\nINSERT INTO a VALUES (1);\nSELECT 1");
    ASSERT_EQ(parts.size(), 3u);
    EXPECT_EQ(parts[0], "CREATE TABLE a (\n  x INT -- inline stays\n)");
    EXPECT_EQ(parts[1], "INSERT INTO a VALUES (1)");
    EXPECT_EQ(parts[2], "SELECT 1\n");
}

TEST(BuiltinMigrations, BothDialectsHaveTheSameVersions) {
    auto my = BuiltinMigrations(Backend::kMySql);
    auto lite = BuiltinMigrations(Backend::kSqlite);
    ASSERT_FALSE(my.empty());
    ASSERT_EQ(my.size(), lite.size());
    for (std::size_t i = 0; i < my.size(); ++i) {
        EXPECT_EQ(my[i].version, lite[i].version);
        EXPECT_EQ(my[i].name, lite[i].name);
    }
}

}  // namespace
}  // namespace sched::db
