#pragma once

/// The HTTP/1.1 server every process uses (Boost.Beast, C++20 coroutines).
///
///     Router router;
///     router.Add(Method::kGet, "/healthz", [](Request&) { return Response::Text("ok\n"); }, Access::kPublic);
///     router.Add(Method::kPost, "/v1/run", RunHandler);
///     Server server(io.get_executor(), ServerOptions::FromYaml(cfg.Child("http")), std::move(router),
///                   BearerTokenAuth(token));
///     server.Start();            // binds now: a busy port fails at start-up, not later
///     ...                        // run `io` on one or more threads
///     co_await server.Shutdown();  // or server.Stop() from any thread
///
/// What every connection gets (see ServerOptions for the numbers):
/// - keep-alive, with an idle timeout between requests;
/// - a header timeout and a body timeout: a client that sends too slowly is disconnected;
/// - a body limit (413) and a header limit (431); malformed HTTP gets 400; each of these closes
///   the connection after the response, other errors keep it open;
/// - 404 for unknown paths, 405 with `Allow` for a wrong method, 401 from the auth hook;
///   all with the uniform error body (message.hpp);
/// - one access-log line per request with its latency (`access-log`).
/// Connections beyond `max-connections` get a 503 and are closed.
///
/// Graceful shutdown: stop accepting; close idle connections at once; let requests in flight
/// finish (their responses carry `Connection: close`); after `shutdown-grace`, close whatever
/// is left.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/http/message.hpp"
#include "sched/http/router.hpp"
#include "sched/http/server_options.hpp"

namespace sched::rest {

/// Decides whether a request to an Access::kAuthenticated route may proceed. Returns OK, or
/// kUnauthenticated (401) / kPermissionDenied (403) with a message. Called on the connection's
/// strand; must be thread-safe and must not block.
using AuthHook = std::function<Status(const Request&)>;

/// An AuthHook accepting exactly `Authorization: Bearer <token>` (compared in constant time).
/// Throws std::invalid_argument for an empty token: a server that checks nothing must say so
/// by passing no hook.
AuthHook BearerTokenAuth(std::string token);

/// Counters since start. Each field is read atomically; the set is not a consistent snapshot.
struct ServerStats {
    std::uint64_t connections_accepted = 0;
    std::uint64_t connections_rejected = 0;  ///< over max-connections
    std::uint64_t connections_active = 0;
    std::uint64_t requests = 0;
    std::uint64_t responses_2xx = 0;
    std::uint64_t responses_3xx = 0;
    std::uint64_t responses_4xx = 0;
    std::uint64_t responses_5xx = 0;
    std::uint64_t timeouts = 0;  ///< connections dropped for a header, body or write timeout
};

/// Prometheus text exposition of `stats`, metric names starting with `prefix` ("sched_http").
std::string PrometheusText(const ServerStats& stats, std::string_view prefix);

namespace impl {
struct ServerState;
}

/// Thread-safety: Start() once, from one thread. Stop(), Shutdown(), Stats() and port() may be
/// called from any thread. The executor may be run by several threads: each connection runs on
/// its own strand. The Server object may be destroyed while connections are still finishing
/// (they keep the shared state alive), but the executor's context must keep running until
/// Shutdown() completes for the shutdown to be graceful.
class Server {
  public:
    Server(net::any_io_executor executor, ServerOptions options, Router router, AuthHook auth = {});
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    /// Binds and listens on options.listen and starts accepting. Throws std::runtime_error
    /// naming the address when it cannot bind (busy port, bad host).
    void Start();

    /// The bound endpoint (meaningful after Start(); resolves a configured port 0).
    tcp::endpoint local_endpoint() const;
    std::uint16_t port() const { return local_endpoint().port(); }

    /// Begins a graceful shutdown and returns at once. Idempotent.
    void Stop();
    /// Begins a graceful shutdown (if not begun) and completes when every connection is closed.
    net::awaitable<void> Shutdown();

    ServerStats Stats() const;

  private:
    std::shared_ptr<impl::ServerState> state_;
};

}  // namespace sched::rest
