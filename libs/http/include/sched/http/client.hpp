#pragma once

/// The HTTP/1.1 client every process uses to call its peers (Boost.Beast, C++20 coroutines).
///
///     HttpClient client(io.get_executor());
///     CallOptions call{.timeout = 2s, .bearer_token = token};
///     Result<ClientResponse> r = co_await client.PostJson("http://10.0.0.7:9999/v1/run", body, call);
///     if (!r.ok()) ...                      // transport failure: kUnavailable or kDeadlineExceeded
///     else if (r->status == 202) ...        // any HTTP status is a response, not an error
///
/// - `https://` URLs use TLS: the server's certificate must chain to ClientOptions::tls.ca_file
///   (else the system store) and name the URL's host (DNS name or IP address; SNI is sent for
///   names); a failure is kUnavailable naming the cause ("TLS handshake with h:443 failed:
///   certificate verify failed: certificate has expired"). A client certificate is presented
///   when tls.cert-file is set.
/// - Keep-alive connections are pooled per scheme, host and port and reused (most recently used first); a
///   pooled connection the peer has closed is detected before use and discarded.
/// - `connect_timeout` bounds connecting; `CallOptions::timeout` bounds the whole call (connect,
///   send, receive, and every retry and backoff).
/// - `CallOptions::first_byte_timeout` bounds the wait for the response header once the request
///   is sent; `body_limit` bounds the response body read.
/// - Retries happen only when the caller asks (`retries`), meant for idempotent calls: on
///   kUnavailable and on 502/503/504, with exponential backoff. The one exception, as in every
///   keep-alive client: a request that fails on a *reused* connection before any response byte
///   arrived (the peer closed it while idle) is sent once more on a fresh connection.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sched/common/duration.hpp"
#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/http/message.hpp"
#include "sched/http/tls_options.hpp"
#include "sched/http/url.hpp"

namespace sched::http {

struct ClientOptions {
    Micros connect_timeout = std::chrono::seconds(2);
    /// The default for CallOptions::timeout.
    Micros request_timeout = std::chrono::seconds(10);
    /// Idle connections kept per host:port.
    std::size_t max_idle_per_host = 16;
    /// Idle connections older than this are closed rather than reused (keep it below the
    /// servers' idle-timeout).
    Micros pool_idle_timeout = std::chrono::seconds(30);
    /// Larger response bodies fail the call with kResourceExhausted.
    std::size_t body_limit = std::size_t{16} * 1024 * 1024;
    std::string user_agent = "sched-http";
    /// Asked before connecting to each address (a literal host, or each address the host
    /// resolves to): a refused address is skipped, and when every address is refused the call
    /// fails with the first refusal (kPermissionDenied). Empty: every address may be used.
    /// Pooled connections were checked when they were opened.
    std::function<Status(std::string_view host, const net::ip::address& address)> address_check{};
    /// For https:// URLs; the process-wide `http-client.tls` section (ClientTlsOptions::FromConfig).
    /// Its files are read at the first https call; a file that cannot be used fails that call
    /// (and every later one) with kFailedPrecondition naming the key and the file.
    ClientTlsOptions tls{};
};

/// Loads the files of `options` as an HttpClient would: OK, or kFailedPrecondition naming the
/// key and the file. Apps call it at start-up so that a bad file fails the start, not a call.
Status CheckClientTls(const ClientTlsOptions& options);

struct CallOptions {
    /// The whole call, retries included; nullopt = ClientOptions::request_timeout.
    std::optional<Micros> timeout{};
    /// Extra attempts after the first; only for idempotent calls.
    int retries = 0;
    /// Backoff before the first retry; doubles each time.
    Micros retry_backoff = std::chrono::milliseconds(50);
    /// From the request sent to its response's whole header, within `timeout`; nullopt: only
    /// `timeout` applies. A peer that accepts and then stays silent fails kDeadlineExceeded.
    std::optional<Micros> first_byte_timeout{};
    /// Sent as `Authorization: Bearer <token>` when not empty.
    std::string bearer_token{};
};

struct ClientRequest {
    Method method = Method::kGet;
    std::string url{};  ///< "http://host:port/path?query"
    Headers headers{};
    std::string body{};
};

struct ClientResponse {
    int status = 0;
    Headers headers;
    std::string body;

    bool ok() const { return status >= 200 && status < 300; }
    /// The body as JSON (kInvalidArgument when malformed).
    Result<nlohmann::json> Json() const;
};

/// Counters since construction.
struct ClientStats {
    std::uint64_t connections_opened = 0;
    std::uint64_t connections_reused = 0;
    std::uint64_t requests = 0;
    std::uint64_t retries = 0;
};

namespace impl {
struct ClientState;
}

/// Thread-safe: calls may run concurrently from coroutines on any executor of the same
/// execution context. The client must outlive every call it started.
class HttpClient {
  public:
    explicit HttpClient(net::any_io_executor executor, ClientOptions options = {});
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    /// Sends `request` and reads the response. Errors: kInvalidArgument (bad URL),
    /// kUnavailable (cannot connect, connection lost), kDeadlineExceeded (timeout),
    /// kResourceExhausted (response over body_limit, or a header, chunk-size line or trailer
    /// over 64 KiB: the read buffer is bounded whatever the peer sends).
    net::awaitable<Result<ClientResponse>> Send(ClientRequest request, CallOptions options);
    net::awaitable<Result<ClientResponse>> Get(std::string url, CallOptions options);
    /// POST with `body` serialised and Content-Type application/json.
    net::awaitable<Result<ClientResponse>> PostJson(std::string url, nlohmann::json body, CallOptions options);

    // The calls with default options are plain functions, not coroutines with a defaulted
    // parameter: g++ 12 destroys a coroutine's defaulted class-type argument twice.
    net::awaitable<Result<ClientResponse>> Send(ClientRequest request) {
        return Send(std::move(request), CallOptions{});
    }
    net::awaitable<Result<ClientResponse>> Get(std::string url) { return Get(std::move(url), CallOptions{}); }
    net::awaitable<Result<ClientResponse>> PostJson(std::string url, nlohmann::json body) {
        return PostJson(std::move(url), std::move(body), CallOptions{});
    }

    /// "http://<address><path>", or https:// when options.tls.https_peers: the URL of a peer known
    /// only by its host:port (an executor, another trigger node).
    std::string PeerUrl(std::string_view address, std::string_view path) const;

    /// Closes every idle pooled connection (e.g. before shutdown).
    void CloseIdle();
    ClientStats Stats() const;

  private:
    std::shared_ptr<impl::ClientState> state_;
};

}  // namespace sched::http
