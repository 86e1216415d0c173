#include "sched/lock/lock_backend.hpp"

#include <set>
#include <stdexcept>

#include "sched/common/name_table.hpp"
#include "sched/lock/sql_lock_store.hpp"

namespace sched::lock {

namespace {

// The backend names of the lock section's `backend` key, in LockBackend's declaration order.
constexpr auto kLockBackendNames = MakeNameTable<LockBackend>({"sql", "redis", "redlock"});

}  // namespace

std::string_view LockBackendName(LockBackend backend) {
    return kLockBackendNames.Name(backend);
}

LockBackendConfig LockBackendConfig::FromYaml(const ConfigNode& node) {
    LockBackendConfig c;
    const std::string backend = node.Enum("backend", "sql", {"sql", "redis", "redlock"});
    c.backend = kLockBackendNames.Parse(backend).value_or(LockBackend::kSql);

    // The redis section is read (and checked) whatever the backend, so a typo in it is caught
    // before someone switches the backend over.
    const ConfigNode redis = node.Child("redis");
    const std::string servers_path = redis.path().empty() ? "servers" : redis.path() + ".servers";
    const auto servers = redis.StringList("servers", {});
    std::set<std::string> distinct;
    for (std::size_t i = 0; i < servers.size(); ++i) {
        auto address = RedisServerAddress::Parse(servers[i]);
        if (!address.ok()) throw ConfigError(servers_path + "[" + std::to_string(i) + "]", address.status().message());
        if (!distinct.insert(address->ToString()).second) {
            throw ConfigError(servers_path, address->ToString() + " is listed twice");
        }
        c.servers.push_back(*address);
    }
    c.redis.timeout =
        redis.Duration("timeout", c.redis.timeout, std::chrono::milliseconds(1), std::chrono::seconds(60));
    c.redis.connect_timeout =
        redis.Duration("connect-timeout", c.redis.timeout, std::chrono::milliseconds(1), std::chrono::seconds(60));
    c.redis.password = redis.String("password", "");
    if (auto env = EnvOverride("SCHED_REDIS_PASSWORD")) c.redis.password = *env;
    c.redis.db = static_cast<int>(redis.Int("db", 0, 0, 1023));
    c.redis.key_prefix = redis.String("key-prefix", c.redis.key_prefix);

    if (c.backend == LockBackend::kRedis && c.servers.size() != 1) {
        throw ConfigError(servers_path, "backend redis takes exactly one server, got " +
                                            std::to_string(c.servers.size()) +
                                            " (use backend redlock for several independent servers)");
    }
    if (c.backend == LockBackend::kRedlock && c.servers.size() < 3) {
        throw ConfigError(servers_path, "backend redlock needs at least 3 independent servers, got " +
                                            std::to_string(c.servers.size()));
    }
    return c;
}

std::shared_ptr<KeyLockStore> MakeLockStore(const LockBackendConfig& config, std::shared_ptr<db::Database> db) {
    switch (config.backend) {
        case LockBackend::kSql:
            if (!db) throw std::invalid_argument("MakeLockStore: backend sql needs a database");
            return std::make_shared<SqlLockStore>(std::move(db));
        case LockBackend::kRedis:
            if (config.servers.size() != 1)
                throw std::invalid_argument("MakeLockStore: backend redis needs one server");
            return std::make_shared<RedisLockStore>(config.servers.front(), config.redis);
        case LockBackend::kRedlock:
            return std::make_shared<RedlockStore>(config.servers, config.redis);
    }
    throw std::invalid_argument("MakeLockStore: unknown backend");
}

}  // namespace sched::lock
