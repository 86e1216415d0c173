#pragma once

/// A minimal HTTP/1.1 server for /healthz, /readyz and /metrics (foundation stage; the full
/// router of libs/http replaces it). Runs on the caller's io_context; every read has a timeout
/// and a body limit.

#include <functional>
#include <memory>
#include <string>

#include "sched/common/net.hpp"

namespace sched::standalone {

struct HealthHandlers {
    std::function<bool()> ready;           ///< /readyz: 200 when true, 503 otherwise
    std::function<std::string()> metrics;  ///< /metrics: Prometheus text exposition
};

class HealthServer {
  public:
    /// Binds and listens at once (throws boost::system::system_error when the address is taken).
    HealthServer(net::io_context& io, const tcp::endpoint& endpoint, HealthHandlers handlers);
    ~HealthServer();

    /// The bound address (the real port when 0 was asked for).
    tcp::endpoint local_endpoint() const;
    /// Starts accepting. Call once.
    void Start();
    /// Stops accepting; connections end after their current request. Thread-safe.
    void Stop();

  private:
    struct State;
    std::shared_ptr<State> state_;
};

}  // namespace sched::standalone
