#include <cstdlib>

#include <gtest/gtest.h>

#include "sched/common/testing/config_error.hpp"
#include "sched/lock/lock_backend.hpp"

namespace sched::lock {
namespace {

using namespace std::chrono_literals;

LockBackendConfig Parse(const std::string& yaml) {
    const ConfigNode root = ConfigNode::LoadString(yaml);
    auto c = LockBackendConfig::FromYaml(root.Child("locks"));
    root.RejectUnknownKeys();
    return c;
}

std::string ErrorOf(const std::string& yaml) {
    return sched::testing::ConfigErrorOf([&] { (void)Parse(yaml); });
}

TEST(LockBackendConfig, AbsentSectionIsTheSqlTable) {
    const auto c = Parse("{}");
    EXPECT_EQ(c.backend, LockBackend::kSql);
    EXPECT_TRUE(c.servers.empty());
    EXPECT_EQ(LockBackendName(c.backend), "sql");
}

TEST(LockBackendConfig, ReadsARedlockSection) {
    const auto c = Parse(
        "locks: {backend: redlock, redis: {servers: ['127.0.0.1:7001', '127.0.0.1:7002', 'redis-3:7003'], "
        "timeout: 50ms, connect-timeout: 100ms, password: pw, db: 2, key-prefix: 'app:'}}");
    EXPECT_EQ(c.backend, LockBackend::kRedlock);
    ASSERT_EQ(c.servers.size(), 3u);
    EXPECT_EQ(c.servers[2].host, "redis-3");
    EXPECT_EQ(c.servers[2].port, 7003);
    EXPECT_EQ(c.redis.timeout, 50ms);
    EXPECT_EQ(c.redis.connect_timeout, 100ms);
    EXPECT_EQ(c.redis.password, "pw");
    EXPECT_EQ(c.redis.db, 2);
    EXPECT_EQ(c.redis.key_prefix, "app:");
}

TEST(LockBackendConfig, ConnectTimeoutDefaultsToTheCommandTimeout) {
    const auto c = Parse("locks: {backend: redis, redis: {servers: ['127.0.0.1:6379'], timeout: 80ms}}");
    EXPECT_EQ(c.backend, LockBackend::kRedis);
    EXPECT_EQ(c.redis.connect_timeout, 80ms);
}

TEST(LockBackendConfig, PasswordFromTheEnvironmentWins) {
    ::setenv("SCHED_REDIS_PASSWORD", "from-env", 1);
    const auto c = Parse("locks: {backend: redis, redis: {servers: ['h:1'], password: in-file}}");
    ::unsetenv("SCHED_REDIS_PASSWORD");
    EXPECT_EQ(c.redis.password, "from-env");
}

TEST(LockBackendConfig, UnknownBackendNamesTheKey) {
    const std::string e = ErrorOf("locks: {backend: zookeeper}");
    EXPECT_NE(e.find("locks.backend"), std::string::npos) << e;
}

TEST(LockBackendConfig, BadServerNamesItsIndex) {
    const std::string e = ErrorOf("locks: {backend: redis, redis: {servers: ['127.0.0.1:99999']}}");
    EXPECT_NE(e.find("locks.redis.servers[0]: "), std::string::npos) << e;
    EXPECT_NE(e.find("port out of range"), std::string::npos) << e;
    const std::string e2 = ErrorOf("locks: {redis: {servers: ['h:1', 'no-port']}}");
    EXPECT_NE(e2.find("locks.redis.servers[1]: "), std::string::npos) << e2;
}

TEST(LockBackendConfig, ServerCountMustFitTheBackend) {
    EXPECT_NE(
        ErrorOf("locks: {backend: redis}").find("locks.redis.servers: backend redis takes exactly one server, got 0"),
        std::string::npos);
    EXPECT_NE(ErrorOf("locks: {backend: redis, redis: {servers: ['h:1', 'h:2']}}")
                  .find("locks.redis.servers: backend redis takes exactly one server, got 2"),
              std::string::npos);
    EXPECT_NE(ErrorOf("locks: {backend: redlock, redis: {servers: ['h:1', 'h:2']}}")
                  .find("locks.redis.servers: backend redlock needs at least 3 independent servers, got 2"),
              std::string::npos);
    EXPECT_NE(ErrorOf("locks: {backend: redlock, redis: {servers: ['h:1', 'h:2', 'h:1']}}")
                  .find("locks.redis.servers: h:1 is listed twice"),
              std::string::npos);
}

TEST(LockBackendConfig, BadValuesNameTheKey) {
    EXPECT_NE(ErrorOf("locks: {redis: {timeout: 0ms}}").find("locks.redis.timeout"), std::string::npos);
    EXPECT_NE(ErrorOf("locks: {redis: {timeout: soon}}").find("locks.redis.timeout"), std::string::npos);
    EXPECT_NE(ErrorOf("locks: {redis: {connect-timeout: 2m}}").find("locks.redis.connect-timeout"), std::string::npos);
    EXPECT_NE(ErrorOf("locks: {redis: {db: -1}}").find("locks.redis.db"), std::string::npos);
    EXPECT_NE(ErrorOf("locks: {redis: {servers: {a: 1}}}").find("locks.redis.servers"), std::string::npos);
}

TEST(LockBackendConfig, UnknownKeysAreRejectedWithTheirPath) {
    const std::string e = ErrorOf("locks: {backend: sql, redis: {severs: ['h:1']}}");
    EXPECT_NE(e.find("locks.redis.severs: unknown key"), std::string::npos) << e;
    const std::string e2 = ErrorOf("locks: {backnd: redis}");
    EXPECT_NE(e2.find("locks.backnd: unknown key"), std::string::npos) << e2;
}

TEST(MakeLockStore, PicksTheConfiguredBackend) {
    LockBackendConfig c;
    EXPECT_THROW((void)MakeLockStore(c, nullptr), std::invalid_argument);
    c.backend = LockBackend::kRedis;
    c.servers = {{"127.0.0.1", 1}};
    auto redis = MakeLockStore(c, nullptr);
    ASSERT_NE(dynamic_cast<RedisLockStore*>(redis.get()), nullptr);
    EXPECT_TRUE(redis->fenced());
    c.backend = LockBackend::kRedlock;
    c.servers = {{"127.0.0.1", 1}, {"127.0.0.1", 2}, {"127.0.0.1", 3}};
    auto redlock = MakeLockStore(c, nullptr);
    ASSERT_NE(dynamic_cast<RedlockStore*>(redlock.get()), nullptr);
    EXPECT_FALSE(redlock->fenced());
}

}  // namespace
}  // namespace sched::lock
