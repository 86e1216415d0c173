#include "sched/db/database.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include <soci/mysql/soci-mysql.h>

#include <gtest/gtest.h>

#include "sched/common/testing/tiny_file_system.hpp"
#include "sched/db/testing/test_database.hpp"

namespace sched::db {
namespace {

using namespace std::chrono_literals;
using sched::testing::TinyFileSystem;
using testing::DbTest;

class DatabaseTest : public DbTest {};

TEST_P(DatabaseTest, DbClockIsCurrentEpochMicroseconds) {
    auto before =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    auto now = db().NowUs();
    ASSERT_TRUE(now.ok()) << now.status().ToString();
    auto after =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    // Same machine, same clock: the server's reading lies between ours (SQLite rounds to ms).
    EXPECT_GE(*now, before - 1000);
    EXPECT_LE(*now, after + 1000);
}

TEST_P(DatabaseTest, DbClockAdvancesWithinOneSecond) {
    auto a = db().NowUs();
    std::this_thread::sleep_for(5ms);
    auto b = db().NowUs();
    ASSERT_TRUE(a.ok() && b.ok());
    // Sub-second precision is what makes a same-second lease renew distinguishable.
    EXPECT_GT(*b, *a);
    EXPECT_LT(*b - *a, 1'000'000);
}

TEST_P(DatabaseTest, NowExpressionsAgreeInsideOneStatement) {
    auto r = db().Run([&](soci::session& s) {
        std::int64_t us = 0;
        std::int64_t ms = 0;
        s << "SELECT " + std::string(db().dialect().NowUs()) + ", " + std::string(db().dialect().NowMs()),
            soci::into(us), soci::into(ms);
        return us / 1000 - ms;
    });
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_LE(std::abs(*r), 1);
}

// wsrep_sync_wait = 1 (MariaDB) inside a transaction run with CausalReads once enabled (Galera
// topology), the server's default on every session before and after; nothing on SQLite.
TEST_P(DatabaseTest, CausalReadsWaitForTheClusterOnlyInsideTheGuardedTransaction) {
    EXPECT_FALSE(db().CausalReads().setting) << "off until the topology says galera";
    db().EnableCausalReads();
    if (db().backend() != Backend::kMySql) {
        EXPECT_FALSE(db().CausalReads().setting);
        return;
    }
    const auto sync_wait = [](soci::session& s) {
        int value = -1;
        s << "SELECT @@SESSION.wsrep_sync_wait", soci::into(value);
        return value;
    };
    auto inside = db().InTransaction(TxMode::kWrite, sync_wait, db().CausalReads());
    ASSERT_TRUE(inside.ok()) << inside.status().ToString();
    EXPECT_EQ(*inside, 1);
    for (int i = 0; i < 4; ++i) {  // the pool lends the session back out: its setting is restored
        auto after = db().Run(sync_wait);
        ASSERT_TRUE(after.ok()) << after.status().ToString();
        EXPECT_EQ(*after, 0);
    }
}

TEST_P(DatabaseTest, TransactionCommitsOnOkAndRollsBackOnError) {
    ASSERT_TRUE(db().Run([](soci::session& s) { s << "CREATE TABLE t (k INT PRIMARY KEY, v INT)"; }).ok());
    Status committed = db().InTransaction(TxMode::kWrite, [](soci::session& s) -> Status {
        s << "INSERT INTO t (k, v) VALUES (1, 10)";
        return Status::Ok();
    });
    ASSERT_TRUE(committed.ok()) << committed.ToString();
    Status rolled_back = db().InTransaction(TxMode::kWrite, [](soci::session& s) -> Status {
        s << "INSERT INTO t (k, v) VALUES (2, 20)";
        return Aborted("changed my mind");
    });
    EXPECT_EQ(rolled_back.code(), Code::kAborted);
    EXPECT_THROW((void)db().InTransaction(TxMode::kWrite,
                                          [](soci::session& s) -> Status {
                                              s << "INSERT INTO t (k, v) VALUES (3, 30)";
                                              throw std::logic_error("bug");
                                          }),
                 std::logic_error);
    auto count = db().Run([](soci::session& s) {
        int n = 0;
        s << "SELECT COUNT(*) FROM t", soci::into(n);
        return n;
    });
    ASSERT_TRUE(count.ok());
    EXPECT_EQ(*count, 1);
}

TEST_P(DatabaseTest, AnErrorCarriesNeitherTheStatementNorItsBoundValues) {
    // Every API error answer starts from one of these Status values: a duplicate's value (a
    // job's params, a token hash) or the statement must never be in it.
    ASSERT_TRUE(db().Run([](soci::session& s) { s << "CREATE TABLE w (k VARCHAR(64), v INT)"; }).ok());
    ASSERT_TRUE(db().Run([](soci::session& s) { s << "CREATE UNIQUE INDEX uk_w_k ON w (k)"; }).ok());
    const std::string secret = "s3cret-value-4711";
    const auto insert = [&] {
        return db().Run([&](soci::session& s) { s << "INSERT INTO w (k, v) VALUES (:k, 1)", soci::use(secret, "k"); });
    };
    ASSERT_TRUE(insert().ok());
    const Status dup = insert();
    EXPECT_EQ(dup.code(), Code::kAlreadyExists) << dup.ToString();
    EXPECT_EQ(dup.message().find(secret), std::string::npos) << dup.message();
    EXPECT_EQ(dup.message().find("INSERT"), std::string::npos) << dup.message();
    // The key (MySQL) or the columns (SQLite), not the value.
    EXPECT_TRUE(dup.message().find("uk_w_k") != std::string::npos || dup.message().find("w.k") != std::string::npos)
        << dup.message();

    const Status bad =
        db().Run([&](soci::session& s) { s << "INSERT INTO missing_table (k) VALUES (:k)", soci::use(secret, "k"); });
    EXPECT_FALSE(bad.ok());
    EXPECT_EQ(bad.message().find(secret), std::string::npos) << bad.message();
    EXPECT_EQ(bad.message().find("INSERT"), std::string::npos) << bad.message();
}

TEST_P(DatabaseTest, DuplicateKeyIsAlreadyExistsAndInsertIfAbsentIsANoOp) {
    ASSERT_TRUE(db().Run([](soci::session& s) { s << "CREATE TABLE u (k VARCHAR(32) PRIMARY KEY, v INT)"; }).ok());
    ASSERT_TRUE(db().Run([](soci::session& s) { s << "INSERT INTO u (k, v) VALUES ('a', 1)"; }).ok());
    Status dup = db().Run([](soci::session& s) { s << "INSERT INTO u (k, v) VALUES ('a', 2)"; });
    EXPECT_EQ(dup.code(), Code::kAlreadyExists) << dup.ToString();

    auto affected = db().Run([&](soci::session& s) {
        soci::statement st = (s.prepare << db().dialect().InsertIfAbsent("u (k, v) VALUES ('a', 3)"));
        return ExecuteInsertIfAbsent(st);
    });
    ASSERT_TRUE(affected.ok()) << affected.status().ToString();
    EXPECT_EQ(*affected, 0);
    auto v = db().Run([](soci::session& s) {
        int v = 0;
        s << "SELECT v FROM u WHERE k = 'a'", soci::into(v);
        return v;
    });
    EXPECT_EQ(*v, 1);
    auto inserted = db().Run([&](soci::session& s) {
        soci::statement st = (s.prepare << db().dialect().InsertIfAbsent("u (k, v) VALUES ('b', 4)"));
        return ExecuteInsertIfAbsent(st);
    });
    EXPECT_EQ(*inserted, 1);
}

TEST_P(DatabaseTest, InsertIfAbsentStillRejectsAMissingNotNullValue) {
    ASSERT_TRUE(db().Run([](soci::session& s) {
                        s << "CREATE TABLE nn (k VARCHAR(16) PRIMARY KEY, required_value BIGINT NOT NULL)";
                    })
                    .ok());
    Status missing = db().Run([&](soci::session& s) {
        soci::statement st = (s.prepare << db().dialect().InsertIfAbsent("nn (k) VALUES ('a')"));
        (void)ExecuteInsertIfAbsent(st);
    });
    EXPECT_FALSE(missing.ok()) << "a NOT NULL column was silently defaulted";
}

TEST_P(DatabaseTest, UpsertInsertsThenUpdatesOnlyTheNamedColumns) {
    ASSERT_TRUE(
        db().Run([](soci::session& s) { s << "CREATE TABLE up (k VARCHAR(16) PRIMARY KEY, v INT, w INT)"; }).ok());
    const std::string sql = db().dialect().Upsert("up", {{"k", ":k"}, {"v", ":v"}, {"w", ":w"}}, {"k"}, {"v"});
    for (int round = 1; round <= 2; ++round) {
        Status s = db().Run([&](soci::session& s) {
            const std::string k = "a";
            const int v = round * 10;
            const int w = round * 100;
            s << sql, soci::use(k, "k"), soci::use(v, "v"), soci::use(w, "w");
        });
        ASSERT_TRUE(s.ok()) << s.ToString();
    }
    auto row = db().Run([](soci::session& s) {
        int v = 0;
        int w = 0;
        int n = 0;
        s << "SELECT v, w, (SELECT COUNT(*) FROM up) FROM up WHERE k = 'a'", soci::into(v), soci::into(w),
            soci::into(n);
        return std::vector<int>{v, w, n};
    });
    ASSERT_TRUE(row.ok()) << row.status().ToString();
    EXPECT_EQ(*row, (std::vector<int>{20, 100, 1}));  // v updated, w kept from the insert
}

TEST_P(DatabaseTest, CasUpdateCountsMatchedRowsEvenWithoutChange) {
    ASSERT_TRUE(db().Run([](soci::session& s) { s << "CREATE TABLE c (k INT PRIMARY KEY, v INT)"; }).ok());
    ASSERT_TRUE(db().Run([](soci::session& s) { s << "INSERT INTO c (k, v) VALUES (1, 5)"; }).ok());
    auto affected = db().Run([](soci::session& s) {
        soci::statement st = (s.prepare << "UPDATE c SET v = 5 WHERE k = 1 AND v = 5");
        st.execute(true);
        return st.get_affected_rows();
    });
    ASSERT_TRUE(affected.ok());
    EXPECT_EQ(*affected, 1);  // documented in dialect.hpp; lock CAS logic relies on it
}

TEST_P(DatabaseTest, PoolHandsOutAtMostPoolSizeSessionsThenTimesOut) {
    DbUrl url = test_db().url();
    url.pool = 2;
    url.acquire_timeout = 100ms;
    auto small = Database::Open(url);
    ASSERT_TRUE(small.ok()) << small.status().ToString();
    auto a = (*small)->Acquire();
    auto b = (*small)->Acquire();
    ASSERT_TRUE(a.ok() && b.ok());
    auto c = (*small)->Acquire();
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), Code::kUnavailable);
    EXPECT_NE(c.status().message().find("all 2 database sessions busy"), std::string::npos);
    { auto released = std::move(*a); }  // back to the pool
    auto d = (*small)->Acquire();
    EXPECT_TRUE(d.ok());
}

// A session keeps a SessionSetting after its transaction: the pool lends it to the next
// transaction that wants that setting, even when a session without it returned later, and
// restores the default before lending it to any other use.
TEST_P(DatabaseTest, ASessionSettingStaysForTheNextGuardedTransactionAndNoOtherUse) {
    const bool mysql = db().backend() == Backend::kMySql;
    const auto setting = std::make_shared<const SessionSetting>(
        mysql ? SessionSetting{.apply = "SET SESSION max_sort_length = 2048",
                               .restore = "SET SESSION max_sort_length = DEFAULT"}
              : SessionSetting{.apply = "PRAGMA cache_size = 123", .restore = "PRAGMA cache_size = -2000"});
    const std::string read = mysql ? "SELECT @@SESSION.max_sort_length" : "PRAGMA cache_size";
    const long long set_value = mysql ? 2048 : 123;
    const long long default_value = mysql ? 1024 : -2000;
    struct Seen {
        const soci::session* session = nullptr;
        long long value = 0;
    };
    const auto look = [&](soci::session& s) {
        Seen seen{.session = &s};
        s << read, soci::into(seen.value);
        return seen;
    };
    DbUrl url = test_db().url();
    url.pool = 2;
    auto pool = Database::Open(url);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    const TxGuard guard{.setting = setting};

    auto other = (*pool)->Acquire();  // the first session, never set
    ASSERT_TRUE(other.ok()) << other.status().ToString();
    auto first = (*pool)->InTransaction(TxMode::kRead, look, guard);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_EQ(first->value, set_value);
    EXPECT_NE(first->session, &**other);
    { auto back = std::move(*other); }  // returned after the set one: the most recent idle

    auto again = (*pool)->InTransaction(TxMode::kRead, look, guard);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(again->session, first->session) << "the session carrying the setting was not preferred";
    EXPECT_EQ(again->value, set_value);

    auto plain = (*pool)->Acquire();  // takes the session without the setting
    ASSERT_TRUE(plain.ok()) << plain.status().ToString();
    auto restored = (*pool)->Run(look);  // only the set one is idle: restored before it is lent
    ASSERT_TRUE(restored.ok()) << restored.status().ToString();
    EXPECT_EQ(restored->session, first->session);
    EXPECT_EQ(restored->value, default_value);

    auto set_again = (*pool)->InTransaction(TxMode::kRead, look, guard);
    ASSERT_TRUE(set_again.ok()) << set_again.status().ToString();
    EXPECT_EQ(set_again->value, set_value);
}

// A setting the server refuses fails the transaction, unless the guard's hook says to go on
// without it; the session stays usable either way.
TEST_P(DatabaseTest, ARefusedSessionSettingFailsTheTransactionUnlessTheGuardAcceptsIt) {
    const auto bogus = std::make_shared<const SessionSetting>(
        SessionSetting{.apply = "SET SESSION no_such_variable_here = 1", .restore = "SELECT 1"});
    const auto one = [](soci::session& s) {
        int v = 0;
        s << "SELECT 1", soci::into(v);
        return v;
    };
    auto refused = db().InTransaction(TxMode::kRead, one, TxGuard{.setting = bogus});
    EXPECT_FALSE(refused.ok());
    int asked = 0;
    auto accepted =
        db().InTransaction(TxMode::kRead, one, TxGuard{.setting = bogus, .setting_refused = [&](const Status&) {
                                                           ++asked;
                                                           return true;
                                                       }});
    ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
    EXPECT_EQ(*accepted, 1);
    EXPECT_EQ(asked, 1);
}

// A session whose setting cannot be put back (refused here; a server gone does the same) is
// closed instead of lent, and the pool opens another in its place: the caller gets a session
// with the server's defaults, and the pool does not lock itself up handing the closed one back.
TEST_P(DatabaseTest, ASessionWhoseSettingCannotBeRestoredIsClosedAndAnotherOpened) {
    const bool mysql = db().backend() == Backend::kMySql;
    const auto stuck = std::make_shared<const SessionSetting>(
        SessionSetting{.apply = mysql ? "SET SESSION max_sort_length = 2048" : "PRAGMA cache_size = 123",
                       .restore = "SELECT no_such_column FROM no_such_table"});
    const std::string read = mysql ? "SELECT @@SESSION.max_sort_length" : "PRAGMA cache_size";
    const auto value = [&](soci::session& s) {
        long long v = 0;
        s << read, soci::into(v);
        return v;
    };
    DbUrl url = test_db().url();
    url.pool = 1;
    auto pool = Database::Open(url);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    auto set = (*pool)->InTransaction(TxMode::kRead, value, TxGuard{.setting = stuck});
    ASSERT_TRUE(set.ok()) << set.status().ToString();
    EXPECT_EQ(*set, mysql ? 2048 : 123);

    auto plain = std::async(std::launch::async, [&] { return (*pool)->Run(value); });
    if (plain.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
        ADD_FAILURE() << "the pool hung handing back the session it closed";
        std::_Exit(1);  // a pool locked up cannot be torn down
    }
    auto fresh = plain.get();
    ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
    EXPECT_EQ(*fresh, mysql ? 1024 : -2000) << "lent with a setting it could not restore";
}

TEST_P(DatabaseTest, MySqlPasswordWithSpacesAndQuotesConnects) {
    if (GetParam() != Backend::kMySql) GTEST_SKIP() << "MySQL credentials only";
    const std::string user = "u_" + std::to_string(::getpid());
    const std::string password = "a b'c\\d\"e";
    Status created = db().Run([&](soci::session& s) {
        s << "DROP USER IF EXISTS '" + user + "'@'127.0.0.1'";
        std::string literal;
        for (char c : password) {
            if (c == '\'' || c == '\\') literal += '\\';
            literal += c;
        }
        s << "CREATE USER '" + user + "'@'127.0.0.1' IDENTIFIED BY '" + literal + "'";
        s << "GRANT ALL ON " + test_db().url().database + ".* TO '" + user + "'@'127.0.0.1'";
    });
    ASSERT_TRUE(created.ok()) << created.ToString();
    DbUrl url = test_db().url();
    url.user = user;
    url.password = password;
    auto other = Database::Open(url);
    ASSERT_TRUE(other.ok()) << other.status().ToString();
    url.password = "wrong";
    auto denied = Database::Open(url);
    ASSERT_FALSE(denied.ok());
    EXPECT_EQ(denied.status().code(), Code::kPermissionDenied) << denied.status().ToString();
    (void)db().Run([&](soci::session& s) { s << "DROP USER '" + user + "'@'127.0.0.1'"; });
}

SCHED_DB_TEST_SUITE(DatabaseTest);

// Port 1 on loopback: nothing listens there, the connect is refused at once.
DbUrl UnreachableMySql() {
    auto url = ParseDbUrl("mysql://nobody@127.0.0.1:1/none?connect-timeout=1s");
    EXPECT_TRUE(url.ok()) << url.status().ToString();
    return url.ok() ? *url : DbUrl{};
}

TEST(Database, UnreachableMySqlIsUnavailable) {
    auto db = Database::Open(UnreachableMySql());
    ASSERT_FALSE(db.ok());
    EXPECT_EQ(db.status().code(), Code::kUnavailable) << db.status().ToString();
    EXPECT_NE(db.status().message().find("mysql://nobody@127.0.0.1:1/none"), std::string::npos);
}

TEST(Database, OpenWithRetryGivesUpAfterTheConfiguredTime) {
    const DbUrl url = UnreachableMySql();
    const auto start = std::chrono::steady_clock::now();
    auto db = Database::OpenWithRetry(url, 700ms);
    const auto took = std::chrono::steady_clock::now() - start;
    ASSERT_FALSE(db.ok());
    EXPECT_EQ(db.status().code(), Code::kUnavailable);
    EXPECT_NE(db.status().message().find("attempts"), std::string::npos) << db.status().message();
    EXPECT_GE(took, 700ms);
}

TEST(Database, OpenWithRetryStopsWhenAsked) {
    auto db = Database::OpenWithRetry(UnreachableMySql(), 1h, [] { return true; });
    ASSERT_FALSE(db.ok());
    EXPECT_EQ(db.status().code(), Code::kCancelled);
}

TEST(Database, UnwritableSqlitePathIsNotRetried) {
    auto url = ParseDbUrl("sqlite:///proc/no/such/dir/x.db");
    ASSERT_TRUE(url.ok());
    auto db = Database::Open(*url);
    ASSERT_FALSE(db.ok());
    EXPECT_NE(db.status().code(), Code::kUnavailable) << db.status().ToString();
}

// --- SQLite files on disk: modes and a full disk -------------------------------------------

std::filesystem::path FreshDir(const std::string& what) {
    return std::filesystem::temp_directory_path() /
           ("sched-db-" + what + "-" + std::to_string(::getpid()) + "-" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
}

int ModeOf(const std::filesystem::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 0777) : -1;
}

TEST(SqliteFiles, ANewDatabaseAndItsWalAndShmAre0600InDirectoriesCreated0700) {
    const auto root = FreshDir("modes");
    const mode_t old_umask = ::umask(022);  // the usual default: SQLite alone would give 0644 / 0755
    {
        auto url = ParseDbUrl("sqlite://" + (root / "data/sub/s.db").string());
        ASSERT_TRUE(url.ok());
        auto db = Database::Open(*url);
        ASSERT_TRUE(db.ok()) << db.status().ToString();
        ASSERT_TRUE((*db)->Run([](soci::session& s) { s << "CREATE TABLE t (k INT)"; }).ok());
        ASSERT_TRUE((*db)->Run([](soci::session& s) { s << "INSERT INTO t VALUES (1)"; }).ok());
        EXPECT_EQ(ModeOf(root / "data"), 0700);
        EXPECT_EQ(ModeOf(root / "data/sub"), 0700);
        for (const char* name : {"s.db", "s.db-wal", "s.db-shm"}) {
            ASSERT_TRUE(std::filesystem::exists(root / "data/sub" / name)) << name;
            EXPECT_EQ(ModeOf(root / "data/sub" / name), 0600) << name;
        }
    }
    ::umask(old_umask);
    std::filesystem::remove_all(root);
}

TEST(SqliteFiles, AnExistingDirectoryKeepsItsMode) {
    const auto root = FreshDir("keep");
    std::filesystem::create_directories(root);
    ::chmod(root.c_str(), 0750);
    {
        auto db = Database::Open(*ParseDbUrl("sqlite://" + (root / "s.db").string()));
        ASSERT_TRUE(db.ok()) << db.status().ToString();
    }
    EXPECT_EQ(ModeOf(root), 0750);
    EXPECT_EQ(ModeOf(root / "s.db"), 0600);
    std::filesystem::remove_all(root);
}

/// The election's pool (DbUrl::priority) against a stream of other calls on the same file.
class SqlitePriority : public ::testing::Test {
  protected:
    void SetUp() override {
        root_ = FreshDir("priority");
        auto url = ParseDbUrl("sqlite://" + (root_ / "s.db").string() + "?pool=4&acquire-timeout=3s");
        ASSERT_TRUE(url.ok());
        auto db = Database::Open(*url);
        ASSERT_TRUE(db.ok()) << db.status().ToString();
        others_ = *db;
        url->priority = true;
        url->pool = 2;
        auto first = Database::Open(*url);
        ASSERT_TRUE(first.ok()) << first.status().ToString();
        priority_ = *first;
        ASSERT_TRUE(others_->Run([](soci::session& s) { s << "CREATE TABLE t (k INT)"; }).ok());
    }
    void TearDown() override {
        others_.reset();
        priority_.reset();
        std::filesystem::remove_all(root_);
    }

    struct Contended {
        int failed = 0;  ///< of the caller's writes
        int writes = 0;  ///< the writers' transactions
    };

    // `writer_count` threads write on others_ back to back (inserting `writer_value`, each
    // holding the write lock 10 ms) while `caller` makes `attempts` writes (inserting `value`),
    // `pause` apart.
    Contended WriteUnderContention(Database& caller, int writer_count, int writer_value, int attempts, int value,
                                   std::chrono::milliseconds pause) {
        std::atomic<bool> stop{false};
        std::atomic<int> writes{0};
        std::vector<std::thread> writers;
        for (int i = 0; i < writer_count; ++i) {
            writers.emplace_back([&] {
                while (!stop) {
                    auto st = others_->InTransaction(TxMode::kWrite, [&](soci::session& s) {
                        s << "INSERT INTO t VALUES (:v)", soci::use(writer_value);
                        std::this_thread::sleep_for(std::chrono::milliseconds(10));
                    });
                    if (st.ok()) ++writes;
                }
            });
        }
        int failed = 0;
        for (int i = 0; i < attempts; ++i) {
            auto st = caller.InTransaction(
                TxMode::kWrite, [&](soci::session& s) { s << "INSERT INTO t VALUES (:v)", soci::use(value); });
            if (!st.ok()) ++failed;
            std::this_thread::sleep_for(pause);
        }
        stop = true;
        for (auto& w : writers) w.join();
        return {failed, writes.load()};
    }

    // Another pool on `db`'s URL with `change` made to it; null, a failure recorded, when it does
    // not open.
    static std::shared_ptr<Database> OpenLike(const Database& db, const std::function<void(DbUrl&)>& change) {
        DbUrl url = db.url();
        change(url);
        auto opened = Database::Open(url);
        EXPECT_TRUE(opened.ok()) << opened.status().ToString();
        return opened.ok() ? *opened : nullptr;
    }

    struct OtherCall {
        Status status;
        bool saw_end = false;  ///< it began only once the holding call had ended
    };
    using Holding = std::function<Status(std::atomic<bool>& started, std::atomic<bool>& ended)>;

    // A call on `other` (inserting a row) made once `hold`, run on a thread of its own, has set
    // `started`: its status, and whether `hold` had set `ended` by the time it began.
    static OtherCall CallWhileHeld(Database& other, const Holding& hold) {
        std::atomic<bool> started{false};
        std::atomic<bool> ended{false};
        std::thread holder([&] { EXPECT_TRUE(hold(started, ended).ok()); });
        while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        OtherCall call;
        call.status = other.Run([&](soci::session& s) {
            call.saw_end = ended.load();
            s << "INSERT INTO t VALUES (2)";
        });
        holder.join();
        return call;
    }
    // A call on `db` that only sleeps for `d`.
    static Holding Sleeping(Database& db, std::chrono::milliseconds d) {
        return [&db, d](std::atomic<bool>& started, std::atomic<bool>& ended) {
            return db.Run([&](soci::session&) {
                started = true;
                std::this_thread::sleep_for(d);
                ended = true;
            });
        };
    }

    std::filesystem::path root_;
    std::shared_ptr<Database> others_;
    std::shared_ptr<Database> priority_;
};

TEST_F(SqlitePriority, AnotherPoolsCallStartsOnlyAfterThePriorityCallEnded) {
    const OtherCall other = CallWhileHeld(*others_, [&](std::atomic<bool>& started, std::atomic<bool>& ended) {
        return priority_->InTransaction(TxMode::kWrite, [&](soci::session& s) {
            started = true;
            s << "INSERT INTO t VALUES (1)";
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            ended = true;
        });
    });
    ASSERT_TRUE(other.status.ok()) << other.status.ToString();
    EXPECT_TRUE(other.saw_end) << "the other pool's call ran while the priority call held the file";
}

TEST_F(SqlitePriority, AnOtherCallGivesUpAfterItsAcquireTimeoutNamingThePriorityCall) {
    const auto impatient = OpenLike(*others_, [](DbUrl& url) { url.acquire_timeout = std::chrono::milliseconds(100); });
    ASSERT_NE(impatient, nullptr);
    const OtherCall other = CallWhileHeld(*impatient, Sleeping(*priority_, std::chrono::milliseconds(500)));
    EXPECT_EQ(other.status.code(), Code::kUnavailable);
    EXPECT_NE(other.status.message().find("priority call"), std::string::npos) << other.status.ToString();
}

TEST_F(SqlitePriority, APriorityCallOnAnotherFileHoldsNothingBack) {
    const auto elsewhere = OpenLike(*priority_, [&](DbUrl& url) { url.path = (root_ / "other.db").string(); });
    ASSERT_NE(elsewhere, nullptr);
    const OtherCall other = CallWhileHeld(*others_, Sleeping(*elsewhere, std::chrono::milliseconds(300)));
    ASSERT_TRUE(other.status.ok()) << other.status.ToString();
    EXPECT_FALSE(other.saw_end) << "a call on another file waited for the priority call";
}

TEST_F(SqlitePriority, RenewsSucceedUnderAStreamOfWriteTransactions) {
    // Four writers keep the write lock busy back to back, as the fire path does at its limit;
    // the priority pool's short busy timeout is the election's (margin / 2), scaled down.
    const auto elector = OpenLike(*priority_, [](DbUrl& url) {
        url.busy_timeout = std::chrono::milliseconds(100);
        url.acquire_timeout = std::chrono::milliseconds(100);
    });
    ASSERT_NE(elector, nullptr);
    const auto run = WriteUnderContention(*elector, 4, 5, 30, 6, std::chrono::milliseconds(20));
    EXPECT_EQ(run.failed, 0);
    EXPECT_GT(run.writes, 30) << "the writers did not keep the lock busy";
}

TEST_F(SqlitePriority, AWriterBackToBackGivesWaySoAnotherWriterDoesNotWaitOutItsBusyTimeout) {
    // The master rescanning at once (its batch full at overload) took the lock back
    // microseconds after each commit while the claims, heartbeats and callbacks slept in
    // SQLite's busy handler (up to 100 ms between polls) until their busy timeout. Two writers
    // back to back, as that master, and a third caller (a claim) whose busy timeout is 300 ms.
    const auto claims = OpenLike(*others_, [](DbUrl& url) { url.busy_timeout = std::chrono::milliseconds(300); });
    ASSERT_NE(claims, nullptr);
    const auto run = WriteUnderContention(*claims, 2, 7, 20, 8, std::chrono::milliseconds(5));
    EXPECT_EQ(run.failed, 0);
    EXPECT_GT(run.writes, 10) << "the writers did not keep the lock busy";
}

TEST(SqliteDiskFull, AFullDiskIsUnavailableNamingTheDiskAndWritesWorkOnceSpaceReturns) {
    TinyFileSystem fs(FreshDir("tmpfs"), "2m", /*remove_dir=*/true);
    if (!fs.mounted()) {
        GTEST_SKIP() << "cannot mount a tmpfs here (" << fs.error() << "): run as root to test a full disk";
    }
    auto url = ParseDbUrl("sqlite://" + (fs.dir() / "s.db").string());
    ASSERT_TRUE(url.ok());
    auto opened = Database::Open(*url);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    Database& db = **opened;
    ASSERT_TRUE(db.Run([](soci::session& s) { s << "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)"; }).ok());
    ASSERT_TRUE(fs.Fill());
    // Rows larger than any free page the file already has: the write needs new space.
    const std::string big(256 * 1024, 'v');
    Status full = Status::Ok();
    for (int i = 0; i < 16 && full.ok(); ++i) {
        full = db.Run([&](soci::session& s) { s << "INSERT INTO t (v) VALUES (:v)", soci::use(big); });
    }
    ASSERT_FALSE(full.ok()) << "the disk never filled";
    EXPECT_EQ(full.code(), Code::kUnavailable) << full.ToString().substr(0, 300);
    EXPECT_NE(full.message().find("disk is full"), std::string::npos) << full.ToString().substr(0, 300);
    // The bound 256 KiB value is not echoed whole.
    EXPECT_LT(full.message().size(), 2048u);

    fs.Free();
    Status again = db.Run([&](soci::session& s) { s << "INSERT INTO t (v) VALUES (:v)", soci::use(big); });
    EXPECT_TRUE(again.ok()) << again.ToString().substr(0, 300);
}

TEST(MySqlErrors, AFullServerDiskIsUnavailableNotResourceExhausted) {
    const std::pair<int, std::string> cases[] = {
        {1021, "Disk full (/var/tmp/#sql_1.MAI); waiting for someone to free some space..."},
        {1114, "The table 'job_fire' is full"},
        {3, "Error writing file './sched/job_fire.ibd' (Errcode: 28 \"No space left on device\")"},
        {1030, "Got error 28 \"No space left on device\" from storage engine InnoDB"},
    };
    for (const auto& [code, text] : cases) {
        const soci::mysql_soci_error e(text, code);
        const Status s = ClassifyError(e);
        EXPECT_EQ(s.code(), Code::kUnavailable) << code << ": " << s.ToString();
        EXPECT_NE(s.message().find("disk is full"), std::string::npos) << s.ToString();
    }
    // Another storage-engine errno stays an internal error.
    const soci::mysql_soci_error other("Got error 128 \"Too many transactions\" from storage engine InnoDB", 1030);
    EXPECT_EQ(ClassifyError(other).code(), Code::kInternal);
}

}  // namespace
}  // namespace sched::db
