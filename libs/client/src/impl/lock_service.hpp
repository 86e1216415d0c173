#pragma once

// The SDK's side of the lock API (contract: sched/client/lock.hpp): HTTP calls with failover
// between the web endpoints, and one watchdog coroutine per held lock, all on one I/O thread of
// its own, so that locks work whether or not the executor is started.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/client/lock.hpp"
#include "sched/common/duration.hpp"
#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/http/client.hpp"
#include "sched/http/url.hpp"

namespace sched::client::impl {

using LockClock = std::chrono::steady_clock;

struct LockState {
    std::string key;
    std::string owner;
    std::int64_t epoch = 0;
    Micros lease{0};

    std::mutex mu;
    LockClock::time_point valid_until{};  // start of the last successful acquire/extend + lease
    bool released = false;
    bool lost = false;
    std::stop_source lost_source;
    std::shared_ptr<net::steady_timer> timer;  // the watchdog's; touched on the I/O thread only
};

/// One answered call, or the transport failure after every endpoint and retry.
struct LockCallOutcome {
    Status status;                  // not OK: no endpoint answered (kUnavailable)
    http::ClientResponse response;  // when status is OK: the answer (any HTTP status)
    LockClock::time_point sent{};   // start of the answered attempt
};

/// Thread-safe. Must outlive every guard (guards hold a shared_ptr to it).
class LockService : public std::enable_shared_from_this<LockService> {
  public:
    LockService(std::vector<http::Url> endpoints, std::string token, Micros web_timeout, const std::string& app,
                http::ClientTlsOptions tls = {});
    ~LockService();
    LockService(const LockService&) = delete;
    LockService& operator=(const LockService&) = delete;

    Result<LockGuard> Lock(std::string_view key, Micros lease, Micros wait);
    Status Release(LockState& state);

  private:
    // One request with failover and retry rounds until `deadline`; `body` builds the body for
    // each attempt (an acquire's wait_ms shrinks as time passes); `extra` is added to each
    // attempt's timeout (an acquire's remaining wait).
    net::awaitable<LockCallOutcome> Call(std::string path, std::function<nlohmann::json()> body,
                                         LockClock::time_point deadline, std::function<Micros()> extra);
    net::awaitable<void> Watchdog(std::shared_ptr<LockState> state);
    void MarkLost(LockState& state, const std::string& why);
    LockCallOutcome RunCall(std::string path, std::function<nlohmann::json()> body, LockClock::time_point deadline,
                            std::function<Micros()> extra);

    const std::vector<http::Url> endpoints_;
    const std::string token_;
    const std::string app_;  // every lock lives in this app's namespace (docs/locks.md)
    const Micros web_timeout_;
    std::atomic<std::size_t> preferred_{0};

    net::io_context io_;
    std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
    std::unique_ptr<http::HttpClient> client_;
    std::thread thread_;
};

/// The Status an error response of the lock API stands for: its error.code and error.message.
Status StatusFromResponse(const http::ClientResponse& response);

}  // namespace sched::client::impl
