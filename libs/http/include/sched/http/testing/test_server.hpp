#pragma once

/// Test helpers (target sched::http_testing, tests only): a Server on its own I/O thread and a
/// client whose calls block.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "sched/common/net.hpp"
#include "sched/common/testing/wait_for.hpp"
#include "sched/http/client.hpp"
#include "sched/http/server.hpp"

namespace sched::http::testing {

/// 127.0.0.1:0 with short timeouts suited to tests and the access log limited to errors.
ServerOptions LoopbackOptions();

/// Bounded polling is the shared test toolbox's (sched/common/testing/wait_for.hpp).
using sched::testing::WaitFor;

/// A started Server with its own io_context and thread. Stopped (gracefully) by Stop() or
/// the destructor.
class TestServer {
  public:
    /// With `timed_routes`, the server times its routes there (Server::TimeRoutes, "sched_http").
    explicit TestServer(Router router, ServerOptions options = LoopbackOptions(), AuthHook auth = {},
                        MetricsRegistry* timed_routes = nullptr);
    ~TestServer();
    TestServer(const TestServer&) = delete;
    TestServer& operator=(const TestServer&) = delete;

    std::uint16_t port() const { return server_->port(); }
    /// "http://127.0.0.1:<port>" (https:// when the options have TLS) followed by `path`.
    std::string Url(std::string_view path = "") const;
    ServerStats Stats() const { return server_->Stats(); }
    Status ReloadTls() { return server_->ReloadTls(); }
    /// Graceful shutdown; blocks until it completes. Idempotent.
    void Stop();
    /// Begins a graceful shutdown and returns; Stop() waits for its end.
    void BeginStop() { server_->Stop(); }

  private:
    net::io_context io_;
    net::executor_work_guard<net::io_context::executor_type> work_;
    std::unique_ptr<Server> server_;
    std::thread thread_;
    bool stopped_ = false;
    bool https_ = false;
};

/// An HttpClient on its own io_context and thread whose calls block until they complete.
/// Thread-safe.
class BlockingClient {
  public:
    explicit BlockingClient(ClientOptions options = {});
    ~BlockingClient();
    BlockingClient(const BlockingClient&) = delete;
    BlockingClient& operator=(const BlockingClient&) = delete;

    Result<ClientResponse> Send(ClientRequest request, CallOptions options = {});
    Result<ClientResponse> Get(std::string url, CallOptions options = {});
    Result<ClientResponse> PostJson(std::string url, nlohmann::json body, CallOptions options = {});
    ClientStats Stats() const { return client_->Stats(); }

  private:
    net::io_context io_;
    net::executor_work_guard<net::io_context::executor_type> work_;
    std::unique_ptr<HttpClient> client_;
    std::thread thread_;
};

/// The `error` object of an answer ({"code", "message", "field"}): {"transport": <status>} when no
/// answer came, {"body": <body>} when the answer carries none.
nlohmann::json ErrorOf(const Result<ClientResponse>& r);

/// A plain blocking TCP connection to 127.0.0.1, for sending exactly the bytes a test wants
/// (slow senders, malformed requests) and watching how the server reacts.
class RawConnection {
  public:
    /// Connects from `source_ip` (any 127.x.y.z address works on Linux, so tests can act as
    /// several peers); throws std::runtime_error when the connection is refused.
    explicit RawConnection(std::uint16_t port, const std::string& source_ip = "127.0.0.1");
    ~RawConnection();
    RawConnection(const RawConnection&) = delete;
    RawConnection& operator=(const RawConnection&) = delete;

    /// True when a connection to `port` is accepted right now.
    static bool CanConnect(std::uint16_t port);

    void Send(std::string_view bytes);
    /// Like Send, but returns false instead of throwing when the peer has closed or reset.
    bool TrySend(std::string_view bytes);
    /// Reads everything until the peer closes (or resets) the connection or `timeout` passes.
    std::string ReadUntilClose(std::chrono::milliseconds timeout = std::chrono::seconds(10));
    /// Reads one HTTP response (headers and a Content-Length body, none when `to_head`: the
    /// response to a HEAD request); "" when the peer closed first or nothing complete came
    /// within `timeout`.
    std::string ReadResponse(std::chrono::milliseconds timeout = std::chrono::seconds(10), bool to_head = false);
    /// Reads until the peer closes the connection. Returns true when it did within `timeout`
    /// (the bytes that came first are discarded).
    bool WaitForClose(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  private:
    int fd_ = -1;
    std::string pending_;
};

}  // namespace sched::http::testing
