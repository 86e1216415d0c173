#pragma once

/// Picks the DistributedLock backend from configuration: the SQL table (default), one Redis
/// server, or Redlock over several.
///
///   locks:
///     backend: redlock            # sql | redis | redlock
///     redis:
///       servers: ["10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"]
///       timeout: 200ms            # per command
///       connect-timeout: 200ms
///       password: ""              # or SCHED_REDIS_PASSWORD
///       db: 0
///       key-prefix: "sched:"
///
///   auto config = sched::lock::LockBackendConfig::FromYaml(root.Child("locks"));  // ConfigError
///   sched::lock::DistributedLock locks(sched::lock::MakeLockStore(config, db));
///
/// Only DistributedLock runs on the Redis backends; the master lease (LeaseElector) and fenced
/// transactions always use the SQL table of the scheduler's own database.

#include <memory>
#include <string_view>
#include <vector>

#include "sched/common/config.hpp"
#include "sched/db/database.hpp"
#include "sched/lock/lock_store.hpp"
#include "sched/lock/redis_lock_store.hpp"

namespace sched::lock {

enum class LockBackend { kSql, kRedis, kRedlock };

/// "sql", "redis", "redlock".
std::string_view LockBackendName(LockBackend backend);

struct LockBackendConfig {
    LockBackend backend = LockBackend::kSql;
    /// redis: exactly one; redlock: at least 3, independent (not replicas), none twice.
    std::vector<RedisServerAddress> servers;
    RedisOptions redis;

    /// Reads the `locks` section (absent: sql). Throws ConfigError naming the key: unknown
    /// backend, a server that is not host:port, the wrong number of servers for the backend, a
    /// server listed twice, a timeout outside 1ms..60s, a db outside 0..1023. The password may be
    /// given as SCHED_REDIS_PASSWORD instead (the environment wins). Unknown keys are left to
    /// ConfigNode::RejectUnknownKeys, as for every section.
    static LockBackendConfig FromYaml(const ConfigNode& node);
};

/// The store for `config`: SqlLockStore over `db` (which must then be set: std::invalid_argument
/// otherwise), RedisLockStore or RedlockStore (`db` unused). Connecting to Redis is lazy: a
/// server that is down shows up as kUnavailable from the lock calls, never here.
std::shared_ptr<KeyLockStore> MakeLockStore(const LockBackendConfig& config, std::shared_ptr<db::Database> db);

}  // namespace sched::lock
