#pragma once

/// Test support (target sched::lock_testing): a real redis-server process on a free loopback
/// port, in a temporary directory, without persistence, stopped by its PID.
///
///   sched::lock::testing::RedisServer redis;          // started, answers PING
///   sched::lock::RedisLockStore store(redis.address());
///   redis.Kill();  ...  redis.Start();                // same port, empty data
///
/// The binary is /usr/bin/redis-server (override: SCHED_REDIS_SERVER). When it is missing the
/// constructor throws, so a test using it FAILS with that message (scripts/deps.sh installs it)
/// instead of skipping.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "sched/lock/redis_lock_store.hpp"

namespace sched::testing {
class ChildProcess;
}  // namespace sched::testing

namespace sched::lock::testing {

class RedisServer {
  public:
    struct Options {
        std::string password;  ///< --requirepass when not empty
    };

    /// Starts the server and waits (up to 10 s) until it answers PING. Throws std::runtime_error
    /// when redis-server is missing, exits, or does not answer (with the end of its log).
    RedisServer() : RedisServer(Options{}) {}
    explicit RedisServer(Options options);
    /// SIGKILL by PID, waitpid, and the temporary directory removed.
    ~RedisServer();
    RedisServer(const RedisServer&) = delete;
    RedisServer& operator=(const RedisServer&) = delete;

    RedisServerAddress address() const { return {"127.0.0.1", port_}; }
    int port() const { return port_; }
    pid_t pid() const;
    bool running() const { return process_ != nullptr; }

    /// SIGKILL and wait for the process (a crash: nothing is saved, clients see a reset).
    void Kill();
    /// Starts it again on the same port (after Kill) and waits for PING. The data is empty.
    void Start();

    /// One command on a fresh connection, for assertions: bulk/status strings as they are,
    /// integers in decimal, nil as "(nil)", errors as "(error) ...". Throws when unreachable.
    std::string Command(const std::vector<std::string>& args) const;

  private:
    void Spawn();
    void WaitUntilReady();

    Options options_;
    std::string binary_;
    std::string dir_;
    int port_ = 0;
    std::unique_ptr<sched::testing::ChildProcess> process_;  // null while killed
};

}  // namespace sched::lock::testing
