#include "sched/db/db_url.hpp"

#include <cstdlib>

#include <gtest/gtest.h>

namespace sched::db {
namespace {

using namespace std::chrono_literals;

TEST(ParseDbUrl, MySqlWithEverything) {
    auto url = ParseDbUrl("mysql://sched:p%40ss%20word@db.example:3307/scheduler?pool=16&read-timeout=2s");
    ASSERT_TRUE(url.ok()) << url.status().ToString();
    EXPECT_EQ(url->backend, Backend::kMySql);
    EXPECT_EQ(url->user, "sched");
    EXPECT_EQ(url->password, "p@ss word");
    EXPECT_EQ(url->host, "db.example");
    EXPECT_EQ(url->port, 3307);
    EXPECT_EQ(url->database, "scheduler");
    EXPECT_EQ(url->pool, 16);
    EXPECT_EQ(url->read_timeout, 2s);
}

TEST(ParseDbUrl, MySqlDefaultsPort) {
    auto url = ParseDbUrl("mysql://u@localhost/db");
    ASSERT_TRUE(url.ok());
    EXPECT_EQ(url->port, 3306);
    EXPECT_EQ(url->password, "");
    EXPECT_EQ(url->pool, 8);
}

TEST(ParseDbUrl, SqliteAbsoluteAndRelative) {
    auto abs = ParseDbUrl("sqlite:///var/lib/sched/scheduler.db?busy-timeout=250ms");
    ASSERT_TRUE(abs.ok());
    EXPECT_EQ(abs->backend, Backend::kSqlite);
    EXPECT_EQ(abs->path, "/var/lib/sched/scheduler.db");
    EXPECT_EQ(abs->busy_timeout, 250ms);
    auto rel = ParseDbUrl("sqlite://data/scheduler.db");
    ASSERT_TRUE(rel.ok());
    EXPECT_EQ(rel->path, "data/scheduler.db");
}

TEST(ParseDbUrl, RejectsBadUrlsNamingThePart) {
    const std::pair<const char*, const char*> cases[] = {
        {"postgres://u@h/db", "expected mysql://"},
        {"mysql://host/db", "needs user@host"},
        {"mysql://u@host", "needs a database name"},
        {"mysql://u@host:99999/db", "port must be 1..65535"},
        {"mysql://u@host:abc/db", "port must be 1..65535"},
        {"mysql://u@:3306/db", "host is empty"},
        {"mysql://u@h/db?pool=0", "option pool: expected an integer in 1..256"},
        {"mysql://u@h/db?read-timeout=fast", "option read-timeout"},
        {"mysql://u@h/db?colour=blue", "unknown option \"colour\""},
        {"mysql://u@h/db?pool", "needs a value"},
        {"mysql://u@h/db;drop", "may hold only letters"},
        {"mysql://u:%zz@h/db", "bad percent-escape in password"},
        {"mysql://u:%-1@h/db", "bad percent-escape in password"},  // a sign is not a hex digit
        {"mysql://%+f@h/db", "bad percent-escape in user"},
        {"mysql://u:pw%4@h/db", "bad percent-escape in password"},
        {"sqlite:///tmp/a%2", "bad percent-escape in path"},
        {"sqlite://", "needs a file path"},
    };
    for (const auto& [text, want] : cases) {
        auto url = ParseDbUrl(text);
        ASSERT_FALSE(url.ok()) << text;
        EXPECT_EQ(url.status().code(), Code::kInvalidArgument) << text;
        EXPECT_NE(url.status().message().find(want), std::string::npos) << text << " -> " << url.status().message();
    }
}

TEST(DbUrl, RedactedNeverShowsThePassword) {
    auto url = ParseDbUrl("mysql://sched:hunter2@h:3306/db");
    ASSERT_TRUE(url.ok());
    EXPECT_EQ(url->Redacted(), "mysql://sched:***@h:3306/db");
    EXPECT_EQ(url->Redacted().find("hunter2"), std::string::npos);
}

TEST(DbUrl, ToStringRoundTrips) {
    for (const char* text : {"mysql://a%20b:p%3Aw%40d@127.0.0.1:3310/x_y?pool=3&lock-wait-timeout=2s",
                             "sqlite:///tmp/some dir/s.db?busy-timeout=100ms", "mysql://root@h:3306/db"}) {
        auto url = ParseDbUrl(text);
        ASSERT_TRUE(url.ok()) << text;
        auto again = ParseDbUrl(url->ToString());
        ASSERT_TRUE(again.ok()) << url->ToString();
        EXPECT_EQ(again->user, url->user);
        EXPECT_EQ(again->password, url->password);
        EXPECT_EQ(again->path, url->path);
        EXPECT_EQ(again->port, url->port);
        EXPECT_EQ(again->pool, url->pool);
        EXPECT_EQ(again->lock_wait_timeout, url->lock_wait_timeout);
        EXPECT_EQ(again->busy_timeout, url->busy_timeout);
    }
}

TEST(DbUrl, PasswordFromEnvironmentOverrides) {
    auto url = ParseDbUrl("mysql://sched:fromfile@h/db");
    ASSERT_TRUE(url.ok());
    ::setenv("SCHED_DB_PASSWORD", "fromenv", 1);
    ApplyPasswordFromEnv(*url);
    ::unsetenv("SCHED_DB_PASSWORD");
    EXPECT_EQ(url->password, "fromenv");
    ApplyPasswordFromEnv(*url);  // unset: unchanged
    EXPECT_EQ(url->password, "fromenv");
}

}  // namespace
}  // namespace sched::db

#include "sched/db/database_config.hpp"

namespace sched::db {
namespace {

TEST(DatabaseConfig, ReadsUrlAndRetryWindow) {
    auto root = ConfigNode::LoadString("database:\n  url: \"mysql://s@h:3306/d\"\n  connect-retry-for: 5s\n");
    auto c = DatabaseConfig::FromYaml(root.Child("database"), "sqlite://x.db");
    EXPECT_EQ(c.url.backend, Backend::kMySql);
    EXPECT_EQ(c.connect_retry_for, std::chrono::seconds(5));
    EXPECT_NO_THROW(root.RejectUnknownKeys());
}

TEST(DatabaseConfig, DefaultsWhenAbsent) {
    auto root = ConfigNode::LoadString("");
    auto c = DatabaseConfig::FromYaml(root.Child("database"), "sqlite://data/s.db");
    EXPECT_EQ(c.url.backend, Backend::kSqlite);
    EXPECT_EQ(c.url.path, "data/s.db");
}

TEST(DatabaseConfig, BadUrlNamesTheKey) {
    auto root = ConfigNode::LoadString("database:\n  url: \"postgres://x\"\n");
    try {
        (void)DatabaseConfig::FromYaml(root.Child("database"), "sqlite://x.db");
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_EQ(e.path(), "database.url");
        EXPECT_EQ(std::string(e.what()).rfind("database.url: expected mysql://", 0), 0u) << e.what();
    }
}

}  // namespace
}  // namespace sched::db
