#pragma once

/// The HTTP/1.1 server every process uses (Boost.Beast, C++20 coroutines).
///
///     Router router;
///     router.Add(Method::kGet, "/healthz", [](Request&) { return Response::Text("ok\n"); }, Access::kPublic);
///     router.Add(Method::kPost, "/v1/run", RunHandler);
///     Server server(io.get_executor(), ServerOptions::FromYaml(cfg.Child("http")), std::move(router),
///                   BearerTokenAuth(token));
///     server.Start();            // binds now (or Listen() earlier): a busy port fails at start-up
///     ...                        // run `io` on one or more threads
///     co_await server.Shutdown();  // or server.Stop() from any thread
///
/// What every connection gets (see ServerOptions for the numbers):
/// - keep-alive, with an idle timeout between requests;
/// - a first-byte timeout, a header timeout and a body timeout: a client that sends too slowly
///   is disconnected;
/// - a body limit (413) and a header limit (431); malformed HTTP gets 400; each of these closes
///   the connection after the response, other errors keep it open;
/// - a bounded read buffer (header-limit + 64 KiB): a line the parser waits for that never ends
///   (request line, header, chunk-size line, chunk extension, trailer) gets 431 or 413 and the
///   connection is closed, so memory per connection stays bounded whatever the peer sends;
/// - request bodies parsed with Request::Json() are limited to `json-max-depth` nesting levels;
/// - 404 for unknown paths, 405 with `Allow` for a wrong method, 401 from the auth hook;
///   all with the uniform error body (message.hpp);
/// - one access-log line per request with its latency (`access-log`); the path is logged
///   without its query string (which may carry secrets).
///
/// Connection slots (so that a flood of slow or idle connections cannot starve /healthz and
/// real clients):
/// - one peer IP address holds at most `max-connections-per-peer` connections; more get 503;
/// - at `max-connections`, a new connection sheds the open connection that has waited longest
///   for a complete request header (idle keep-alive or slow sender: closing it loses no work);
///   only when every connection is busy with a request does the new one get 503. A connection
///   that finishes its header just as it is chosen keeps running, so the count may exceed the
///   cap by a few for a moment.
/// A 503 is sent once the refused connection's header arrives; past 64 refusals pending, new
/// refused connections are closed without a word.
///
/// TLS (ServerOptions::tls with a certificate and key): every connection starts with a TLS
/// handshake (TLS 1.2+, ECDHE suites, no renegotiation or compression), which must complete
/// within `first-byte-timeout` together with the first request byte; with `client-ca-file` the
/// client must present a certificate signed by it. The certificate and key are read at Listen()
/// (a bad file throws) and again by ReloadTls(), on SIGHUP (ReloadAllTls) and when a file's
/// modification time changes (checked every `tls.reload-check`): new connections get the new
/// context, open ones keep theirs. Bound to a non-loopback address without TLS, Start() logs a
/// warning.
///
/// Graceful shutdown: stop accepting; close idle connections at once; let requests in flight
/// finish (their responses carry `Connection: close`); after `shutdown-grace`, close whatever
/// is left.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "sched/common/metrics.hpp"
#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/http/message.hpp"
#include "sched/http/router.hpp"
#include "sched/http/server_options.hpp"

namespace sched::http {

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
    std::uint64_t connections_rejected = 0;  ///< 503 or closed: over max-connections-per-peer, or no room
    std::uint64_t connections_shed = 0;      ///< closed at max-connections to make room for a new one
    std::uint64_t connections_active = 0;
    std::uint64_t requests = 0;
    std::uint64_t responses_2xx = 0;
    std::uint64_t responses_3xx = 0;
    std::uint64_t responses_4xx = 0;
    std::uint64_t responses_5xx = 0;
    std::uint64_t timeouts = 0;                ///< connections dropped for a header, body or write timeout
    std::uint64_t tls_handshake_failures = 0;  ///< TLS handshakes refused (timeouts count as timeouts)
};

/// Registers `stats`' counters in `registry`, named `<prefix>_connections_accepted_total`,
/// `_connections_rejected_total`, `_connections_shed_total`, `_connections_active`,
/// `_requests_total`, `_responses_total{class}`, `_timeouts_total` and
/// `_tls_handshake_failures_total` (prefix "sched_http").
/// They are read from `stats()` at every render; it must stay callable while the registry renders.
void ExportServerStats(MetricsRegistry& registry, const std::string& prefix, std::function<ServerStats()> stats);

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

    /// Binds and listens on options.listen without accepting yet: connections wait in the
    /// backlog until Start(). A process calls it before slow start-up work (migrations) so that
    /// a busy port fails first, with nothing done. Throws std::runtime_error naming the address
    /// and the cause when it cannot bind (busy port, bad host) or, with TLS, naming the file
    /// that cannot be used (unreadable, not PEM, key not matching the certificate). Idempotent.
    void Listen();
    /// Listen() if not done yet, then starts accepting. Throws as Listen() does.
    void Start();

    /// The bound endpoint (meaningful after Listen(); resolves a configured port 0).
    tcp::endpoint local_endpoint() const;
    std::uint16_t port() const { return local_endpoint().port(); }

    /// Begins a graceful shutdown and returns at once. Idempotent.
    void Stop();
    /// Begins a graceful shutdown (if not begun) and completes when every connection is closed.
    net::awaitable<void> Shutdown();

    ServerStats Stats() const;

    /// Times every request a route serves (from its first byte: reading it, routing, auth and the
    /// handler; not writing the response)
    /// in `<prefix>_request_duration_seconds{method, route}`, `route` the route's pattern
    /// ("/api/v1/jobs/{id}"), so the label set is bounded by the routes, not by the paths asked
    /// for; a request no route serves (404, 405) is not timed. Call before Start(), once.
    void TimeRoutes(MetricsRegistry& registry, const std::string& prefix);

    /// Reads the TLS certificate, key and client CA again and uses them for new connections;
    /// connections already open keep the context they started with. When a file cannot be used
    /// the previous context stays and the error (naming the file) is logged and returned
    /// (kInvalidArgument); kFailedPrecondition when this server has no TLS. Any thread.
    Status ReloadTls();

  private:
    std::shared_ptr<impl::ServerState> state_;
};

/// ReloadTls() on every Server of this process that serves TLS (what the apps do on SIGHUP).
/// Errors are logged by each server. Any thread.
void ReloadAllTls();

}  // namespace sched::http
