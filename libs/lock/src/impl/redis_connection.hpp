#pragma once

// One connection to one Redis server, for the Redis lock stores. Internal to sched::lock.

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "sched/common/status.hpp"
#include "sched/lock/redis_lock_store.hpp"

struct redisContext;

namespace sched::lock::impl {

/// A reply reduced to what the lock scripts and the few plain commands return.
struct RedisReply {
    enum class Type { kNil, kInteger, kString, kStatus, kArray };
    Type type = Type::kNil;
    long long integer = 0;
    std::string str;
    std::vector<RedisReply> elements;
};

/// A Lua script run with EVALSHA (loaded once per connection with SCRIPT LOAD; loaded again
/// after NOSCRIPT, e.g. when the server restarted).
struct RedisScript {
    const char* name;
    const char* body;
};

/// Thread-safe: one command at a time (a mutex); callers on other threads wait for it.
///
/// Connects lazily (AUTH and SELECT when configured) and again after any I/O error, since after a
/// broken or timed-out exchange the stream's state is unknown. After a failed connect, further
/// connects wait 50 ms doubling to 1 s, so a dead server costs a caller one immediate
/// kUnavailable instead of a connect timeout per command.
class RedisConnection {
  public:
    RedisConnection(RedisServerAddress address, RedisOptions options);
    ~RedisConnection();
    RedisConnection(const RedisConnection&) = delete;
    RedisConnection& operator=(const RedisConnection&) = delete;

    /// Errors: kUnavailable (connection refused or broken, server LOADING/BUSY), kDeadlineExceeded
    /// (no reply within the command timeout; the command may or may not have run),
    /// kUnauthenticated (NOAUTH / WRONGPASS), kInternal (any other error reply).
    Result<RedisReply> Command(const std::vector<std::string>& args);
    Result<RedisReply> Eval(const RedisScript& script, const std::vector<std::string>& keys,
                            const std::vector<std::string>& args);

    const RedisServerAddress& address() const { return address_; }
    std::uint64_t commands() const;

  private:
    Status ConnectLocked();
    void DropLocked();
    Result<RedisReply> CommandLocked(const std::vector<std::string>& args);

    RedisServerAddress address_;
    RedisOptions options_;
    mutable std::mutex mu_;
    redisContext* ctx_ = nullptr;
    std::map<std::string, std::string> sha_;  // script name -> SHA1 on this connection
    int connect_failures_ = 0;
    std::chrono::steady_clock::time_point next_connect_{};
    Status last_connect_error_;
    std::uint64_t commands_ = 0;
};

}  // namespace sched::lock::impl
