#include "sched/http/server.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "impl/tls.hpp"
#include "sched/common/beast.hpp"
#include "sched/http/url.hpp"

namespace sched::http {

namespace impl {

struct Connection {
    explicit Connection(tcp::socket socket) : stream(std::move(socket)) {}
    beast::tcp_stream stream;
    // Written only on the connection's strand. True while waiting for a request to begin: the
    // only state in which a graceful stop may close the connection without losing work.
    bool idle = true;
    // Written on the strand, read by the accept loop when choosing a connection to shed: true
    // from the end of one response (or the accept) until a request's header is complete, i.e.
    // while closing the connection loses no work.
    std::atomic<bool> waiting{true};
    std::atomic<std::int64_t> waiting_since{0};  // steady clock, ns
    std::atomic<bool> shed{false};               // chosen to make room; set once
};

struct ServerState {
    ServerState(net::any_io_executor ex, ServerOptions o, Router r, AuthHook a)
        : executor(std::move(ex)),
          accept_strand(net::make_strand(executor)),
          acceptor(accept_strand),
          options(std::move(o)),
          router(std::move(r)),
          auth(std::move(a)) {}

    net::any_io_executor executor;
    net::strand<net::any_io_executor> accept_strand;
    tcp::acceptor acceptor;  // after Start(), used only on accept_strand
    const ServerOptions options;
    const Router router;
    const AuthHook auth;
    tcp::endpoint endpoint;  // written once in Start(), before anything runs concurrently

    std::atomic<bool> stopping{false};
    std::atomic<bool> accept_loop_running{false};
    std::atomic<std::int64_t> rejecting{0};

    std::mutex mu;
    std::unordered_map<std::uint64_t, std::weak_ptr<Connection>> connections;
    std::unordered_map<std::string, std::size_t> per_peer;  // open connections by peer IP
    std::uint64_t next_id = 0;

    std::atomic<std::uint64_t> accepted{0};
    std::atomic<std::uint64_t> rejected{0};
    std::atomic<std::uint64_t> shed{0};
    std::atomic<std::uint64_t> active{0};
    std::atomic<std::uint64_t> requests{0};
    std::array<std::atomic<std::uint64_t>, 6> by_class{};  // index = status / 100
    std::atomic<std::uint64_t> timeouts{0};
    std::atomic<std::uint64_t> tls_failures{0};
    // TimeRoutes: one histogram child per route (index = Router::Match::route); written before
    // Start(), read-only after.
    std::vector<HistogramChild*> route_timers;

    // TLS (options.tls.enabled()): the context new connections use. Replaced whole by a reload;
    // a connection keeps the one it started with (its shared_ptr) until it closes.
    std::mutex tls_mu;
    std::shared_ptr<ssl::context> tls_context;               // guarded by tls_mu
    std::vector<std::filesystem::file_time_type> tls_stamp;  // guarded by tls_mu: files' mtimes last loaded or tried
    std::optional<net::steady_timer> reload_timer;           // used only on accept_strand
};

}  // namespace impl

namespace {

using impl::Connection;
using impl::ServerState;
using impl::TlsErrorText;
using impl::TlsStream;
namespace ssl = impl::ssl;
using Clock = std::chrono::steady_clock;

// Over this many connections waiting for their 503 we close new ones without a word.
constexpr std::int64_t kMaxRejecting = 64;
constexpr std::size_t kReadChunk = 4096;
constexpr auto kLingerTime = std::chrono::seconds(1);
constexpr std::size_t kLingerBytes = std::size_t{64} * 1024 * 1024;
// Room in a connection's read buffer beyond the header limit, for chunk-size lines, chunk
// extensions and trailers (which Boost 1.74's parser does not bound) and a pipelined request's
// start. Request bodies do not accumulate there: the parser moves them into the request.
constexpr std::size_t kReadMargin = std::size_t{64} * 1024;

std::int64_t NowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

auto LogFailure(std::string what) {
    return [what = std::move(what)](const std::exception_ptr& e) {
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            spdlog::error("{}: {}", what, ex.what());
        }
    };
}

std::string_view View(beast::string_view s) {
    return {s.data(), s.size()};
}

// Unregisters a connection however its coroutine ends (including destruction while suspended).
class ConnectionRegistration {
  public:
    // `peer` is the address counted in per_peer ("" when the connection was not counted).
    ConnectionRegistration(std::shared_ptr<ServerState> st, std::uint64_t id, bool rejecting, std::string peer)
        : st_(std::move(st)), id_(id), rejecting_(rejecting), peer_(std::move(peer)) {}
    ~ConnectionRegistration() {
        {
            std::lock_guard lock(st_->mu);
            st_->connections.erase(id_);
            if (!peer_.empty()) {
                if (auto it = st_->per_peer.find(peer_); it != st_->per_peer.end() && --it->second == 0) {
                    st_->per_peer.erase(it);
                }
            }
        }
        st_->active.fetch_sub(1);
        if (rejecting_) st_->rejecting.fetch_sub(1);
    }
    ConnectionRegistration(const ConnectionRegistration&) = delete;
    ConnectionRegistration& operator=(const ConnectionRegistration&) = delete;

  private:
    std::shared_ptr<ServerState> st_;
    std::uint64_t id_;
    bool rejecting_;
    std::string peer_;
};

enum class ReadFailure { kClosed, kTimeout, kBodyTooLarge, kHeaderTooLarge, kLineTooLong, kMalformed };

ReadFailure Classify(const beast::error_code& ec, bool header_done) {
    if (ec == beast::error::timeout) return ReadFailure::kTimeout;
    if (ec == bhttp::error::body_limit) return ReadFailure::kBodyTooLarge;
    if (ec == bhttp::error::header_limit) return ReadFailure::kHeaderTooLarge;
    // The read buffer is full and the parser still wants the end of a line.
    if (ec == bhttp::error::buffer_overflow) {
        return header_done ? ReadFailure::kLineTooLong : ReadFailure::kHeaderTooLarge;
    }
    if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message) return ReadFailure::kClosed;
    if (ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category()) return ReadFailure::kMalformed;
    return ReadFailure::kClosed;
}

Request ToRequest(bhttp::request<bhttp::string_body>&& in, const std::string& remote, std::size_t json_max_depth) {
    Request req;
    req.method_text = std::string(View(in.method_string()));
    req.method = ParseMethod(req.method_text);
    req.target = std::string(View(in.target()));
    const auto q = req.target.find('?');
    req.path = req.target.substr(0, q);
    if (q != std::string::npos) req.query = req.target.substr(q + 1);
    for (const auto& field : in)
        req.headers.Add(std::string(View(field.name_string())), std::string(View(field.value())));
    req.keep_alive = in.keep_alive();
    req.body = std::move(in.body());
    req.remote = remote;
    req.json_max_depth = json_max_depth;
    return req;
}

bhttp::response<bhttp::string_body> ToBeast(Response&& r, unsigned version, bool keep_alive, bool head) {
    bhttp::response<bhttp::string_body> out;
    out.version(version);
    out.result(static_cast<unsigned>(r.status));
    for (const auto& [name, value] : r.headers) out.insert(name, value);
    out.set(bhttp::field::server, "sched");
    out.keep_alive(keep_alive);
    // These statuses cannot carry a body; Beast would throw from prepare_payload().
    if (r.status < 200 || r.status == 204 || r.status == 304) r.body.clear();
    out.body() = std::move(r.body);
    out.prepare_payload();
    if (head) {
        const auto length = out.body().size();
        out.body().clear();
        out.content_length(length);
    }
    return out;
}

// Reads and discards what the peer still sends, briefly, after we stopped reading its request.
// Closing a socket with unread input sends an RST, and an RST can destroy our error response
// in the peer's receive buffer before the peer reads it.
net::awaitable<void> LingeringClose(beast::tcp_stream& stream) {
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream.expires_after(kLingerTime);
    std::array<char, kReadChunk> sink{};
    std::size_t total = 0;
    while (!ec && total < kLingerBytes) {
        total += co_await stream.async_read_some(net::buffer(sink), net::redirect_error(net::use_awaitable, ec));
    }
    stream.socket().close(ec);
}

// `Io` is the connection's tcp_stream itself (plain HTTP) or a TLS stream over it; timeouts are
// always set on the tcp_stream (`conn.stream`), which applies them to the TLS layer's I/O too.
template <class Io>
net::awaitable<void> Write(ServerState& st, Connection& conn, Io& io, bhttp::response<bhttp::string_body>& res,
                           beast::error_code& ec) {
    conn.stream.expires_after(st.options.write_timeout);
    co_await bhttp::async_write(io, res, net::redirect_error(net::use_awaitable, ec));
    if (ec == beast::error::timeout) st.timeouts.fetch_add(1);
}

// Routing, auth and the handler; every outcome becomes a Response here.
// `route` gets the index of the route found (Router::Match::route), or stays SIZE_MAX.
net::awaitable<Response> Dispatch(ServerState& st, Request& req, std::size_t& route) {
    if (req.path.empty() || req.path.front() != '/') {
        co_return Response::Error(400, "bad_request", "the request target must be a path starting with '/'", "target");
    }
    auto match = st.router.Find(req.method, req.path);
    if (match.handler == nullptr) {
        if (!match.allow.empty()) {
            Response r =
                Response::Error(405, "method_not_allowed",
                                req.method_text + " is not allowed on " + req.path + " (allowed: " + match.allow + ")");
            r.headers.Set("Allow", match.allow);
            co_return r;
        }
        co_return Response::Error(ApiError{Code::kNotFound, "no route for " + req.method_text + " " + req.path, ""});
    }
    if (match.access == Access::kAuthenticated && st.auth) {
        const Status allowed = st.auth(req);
        if (!allowed.ok()) co_return Response::Error(allowed, "Authorization");
    }
    route = match.route;
    req.path_params = std::move(match.params);
    try {
        Response response = co_await (*match.handler)(req);
        co_return response;
    } catch (const std::exception& e) {
        spdlog::error("{}: handler for {} {} threw: {}", st.options.name, req.method_text, req.path, e.what());
    }
    co_return Response::Error(ApiError{Code::kInternal, "internal error", ""});
}

void AccessLogLine(const ServerState& st, const Request& req, int status, std::size_t bytes, Clock::time_point start) {
    const auto mode = st.options.access_log;
    if (mode == AccessLog::kOff || (mode == AccessLog::kErrors && status < 400)) return;
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    // The path only: a query string may carry a token or other secrets.
    spdlog::info("{} {} \"{} {}\" {} {}B {:.2f}ms", st.options.name, req.remote, req.method_text, req.path, status,
                 bytes, ms);
}

void Count(ServerState& st, int status) {
    const auto cls = static_cast<std::size_t>(status / 100);
    if (cls < st.by_class.size()) st.by_class[cls].fetch_add(1);
}

// Answers a request the server could not read (limits, malformed HTTP) and closes. Over TLS
// the lingering close reads the raw socket: the response is complete (Content-Length) before
// the missing close_notify could matter to the peer.
template <class Io>
net::awaitable<void> RefuseAndClose(ServerState& st, Connection& conn, Io& io, Response& response, unsigned version) {
    Count(st, response.status);
    // A copy (an error response, small): clang-tidy 14 reads a move here as used again at the co_await.
    auto res = ToBeast(Response(response), version, false, false);
    beast::error_code ec;
    co_await Write(st, conn, io, res, ec);
    co_await LingeringClose(conn.stream);
}

// Reads requests from `io` and answers them until the connection ends. `first_byte_deadline`
// bounds the wait for the first request's first byte (after the TLS handshake, if any, which
// counts under the same deadline).
template <class Io>
net::awaitable<void> Serve(ServerState* st, Connection* conn, Io& io, bool reject, const std::string& remote,
                           Clock::time_point first_byte_deadline) {
    auto& stream = conn->stream;
    const auto& opt = st->options;
    beast::error_code ec;
    // Bounded, so that no line the parser waits for (request line, header, chunk-size line,
    // chunk extension, trailer) can grow memory without limit.
    beast::flat_buffer buffer(opt.header_limit + kReadMargin);
    bool first = true;
    for (;;) {
        conn->idle = true;
        if (st->stopping.load()) break;
        if (buffer.size() == 0) {
            // Between requests the idle timeout applies; the first request must start within
            // the first-byte timeout, so that a silent connection cannot hold a slot for long.
            if (first) {
                stream.expires_at(first_byte_deadline);
            } else {
                stream.expires_after(opt.idle_timeout);
            }
            const std::size_t n =
                co_await io.async_read_some(buffer.prepare(kReadChunk), net::redirect_error(net::use_awaitable, ec));
            if (ec) {
                if (ec == beast::error::timeout && first) st->timeouts.fetch_add(1);
                break;
            }
            buffer.commit(n);
        }
        conn->idle = false;
        const auto start = Clock::now();

        bhttp::request_parser<bhttp::string_body> parser;
        parser.header_limit(static_cast<std::uint32_t>(opt.header_limit));
        parser.body_limit(opt.body_limit);
        stream.expires_after(opt.header_timeout);
        co_await bhttp::async_read_header(io, buffer, parser, net::redirect_error(net::use_awaitable, ec));
        if (!ec) conn->waiting.store(false);
        if (!ec && reject) {
            Response refusal = Response::Error(ApiError{Code::kUnavailable, "too many connections, retry later", ""});
            refusal.headers.Set("Retry-After", "1");
            co_await RefuseAndClose(*st, *conn, io, refusal, parser.get().version());
            co_return;
        }
        if (!ec && !parser.is_done()) {
            const auto expect = parser.get()[bhttp::field::expect];
            if (beast::iequals(expect, "100-continue")) {
                bhttp::response<bhttp::empty_body> cont{bhttp::status::continue_, parser.get().version()};
                stream.expires_after(opt.write_timeout);
                co_await bhttp::async_write(io, cont, net::redirect_error(net::use_awaitable, ec));
            }
            if (!ec) {
                stream.expires_after(opt.body_timeout);
                co_await bhttp::async_read(io, buffer, parser, net::redirect_error(net::use_awaitable, ec));
            }
        }
        if (ec) {
            // Responses are built outside the co_await below: g++ 12 destroys a braced aggregate
            // temporary inside a co_await expression twice.
            std::optional<Response> refusal;
            switch (Classify(ec, parser.is_header_done())) {
                case ReadFailure::kTimeout:
                    st->timeouts.fetch_add(1);
                    break;
                case ReadFailure::kBodyTooLarge:
                    refusal = Response::Error(
                        413, "payload_too_large",
                        "the request body exceeds the limit of " + std::to_string(opt.body_limit) + " bytes", "body");
                    break;
                case ReadFailure::kHeaderTooLarge:
                    refusal = Response::Error(
                        431, "header_too_large",
                        "the request line and headers exceed " + std::to_string(opt.header_limit) + " bytes");
                    break;
                case ReadFailure::kLineTooLong:
                    refusal = Response::Error(413, "payload_too_large",
                                              "a chunk-size line, chunk extension or trailer exceeds " +
                                                  std::to_string(opt.header_limit) + " bytes",
                                              "body");
                    break;
                case ReadFailure::kMalformed:
                    refusal = Response::Error(400, "bad_request", "malformed HTTP request: " + ec.message());
                    break;
                case ReadFailure::kClosed:
                    break;
            }
            if (refusal) {
                const unsigned version = parser.is_header_done() ? parser.get().version() : 11;
                co_await RefuseAndClose(*st, *conn, io, *refusal, version);
                co_return;
            }
            break;
        }

        st->requests.fetch_add(1);
        const unsigned version = parser.get().version();
        Request req = ToRequest(parser.release(), remote, opt.json_max_depth);
        const bool head = req.method == Method::kHead;
        std::size_t route = SIZE_MAX;
        Response response = co_await Dispatch(*st, req, route);
        if (route < st->route_timers.size()) {
            st->route_timers[route]->Observe(std::chrono::duration<double>(Clock::now() - start).count());
        }
        const int status = response.status;
        const bool keep_alive = req.keep_alive && !st->stopping.load();
        auto res = ToBeast(std::move(response), version, keep_alive, head);
        const std::size_t bytes = res.body().size();
        co_await Write(*st, *conn, io, res, ec);
        Count(*st, status);
        AccessLogLine(*st, req, status, bytes, start);
        if (ec || !keep_alive) break;
        first = false;
        conn->waiting_since.store(NowNs());
        conn->waiting.store(true);
    }
}

std::shared_ptr<ssl::context> CurrentTlsContext(ServerState& st) {
    std::lock_guard lock(st.tls_mu);
    return st.tls_context;
}

net::awaitable<void> Session(std::shared_ptr<ServerState> st, std::shared_ptr<Connection> conn, std::uint64_t id,
                             bool reject, std::string counted_peer) {
    ConnectionRegistration registration(st, id, reject, std::move(counted_peer));
    auto& stream = conn->stream;
    beast::error_code ec;
    std::string remote;
    if (auto ep = stream.socket().remote_endpoint(ec); !ec)
        remote = ep.address().to_string() + ":" + std::to_string(ep.port());
    const auto first_byte_deadline = Clock::now() + st->options.first_byte_timeout;
    if (!st->options.tls.enabled()) {
        co_await Serve(st.get(), conn.get(), stream, reject, remote, first_byte_deadline);
    } else {
        // The context this connection keeps, whatever a reload installs meanwhile.
        const std::shared_ptr<ssl::context> context = CurrentTlsContext(*st);
        TlsStream tls(stream, *context);
        stream.expires_at(first_byte_deadline);
        co_await tls.async_handshake(ssl::stream_base::server, net::redirect_error(net::use_awaitable, ec));
        if (!ec) {
            co_await Serve(st.get(), conn.get(), tls, reject, remote, first_byte_deadline);
        } else if (ec == beast::error::timeout) {
            st->timeouts.fetch_add(1);
        } else if (ec != net::error::operation_aborted) {
            st->tls_failures.fetch_add(1);
            spdlog::info("{}: TLS handshake with {} failed: {}", st->options.name, remote, TlsErrorText(tls, ec));
        }
    }
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream.socket().close(ec);
}

// At max-connections: closes the connection that has waited longest for a complete request
// header (an idle keep-alive connection or a slow sender; closing it loses no work), so that a
// flood of connections that never finish a request cannot lock out everyone else. Returns false
// when no connection qualifies (every one is busy with a request).
bool ShedOne(ServerState& st) {
    std::shared_ptr<Connection> victim;
    {
        std::lock_guard lock(st.mu);
        std::int64_t oldest = std::numeric_limits<std::int64_t>::max();
        for (const auto& [id, weak] : st.connections) {
            auto c = weak.lock();
            if (!c || c->shed.load() || !c->waiting.load()) continue;
            if (const auto since = c->waiting_since.load(); since < oldest) {
                oldest = since;
                victim = std::move(c);
            }
        }
        if (!victim) return false;
        victim->shed.store(true);
    }
    st.shed.fetch_add(1);
    net::post(victim->stream.get_executor(), [victim] {
        // Re-checked on the strand: if its header completed meanwhile it is serving a request
        // and keeps running (the new connection then briefly exceeds the cap by one).
        if (victim->waiting.load()) victim->stream.cancel();
    });
    return true;
}

net::awaitable<void> AcceptLoop(std::shared_ptr<ServerState> st) {
    struct Running {
        ServerState& st;
        ~Running() { st.accept_loop_running.store(false); }
    } running{*st};
    for (;;) {
        beast::error_code ec;
        net::any_io_executor conn_executor = net::make_strand(st->executor);
        tcp::socket socket =
            co_await st->acceptor.async_accept(conn_executor, net::redirect_error(net::use_awaitable, ec));
        if (st->stopping.load() || ec == net::error::operation_aborted) break;
        if (ec) {
            // Typically EMFILE: pause instead of spinning on an error that persists.
            spdlog::warn("{}: accept failed: {}", st->options.name, ec.message());
            net::steady_timer pause(st->accept_strand, std::chrono::milliseconds(50));
            co_await pause.async_wait(net::redirect_error(net::use_awaitable, ec));
            continue;
        }
        st->accepted.fetch_add(1);
        socket.set_option(tcp::no_delay(true), ec);
        std::string peer;
        if (auto ep = socket.remote_endpoint(ec); !ec) peer = ep.address().to_string();
        bool reject = false;
        if (!peer.empty()) {
            std::lock_guard lock(st->mu);
            auto& count = st->per_peer[peer];
            if (count >= st->options.max_connections_per_peer) {
                reject = true;
            } else {
                ++count;
            }
        }
        if (!reject && st->active.load() >= st->options.max_connections) reject = !ShedOne(*st);
        if (reject) {
            st->rejected.fetch_add(1);
            if (st->rejecting.load() >= kMaxRejecting) {
                socket.close(ec);
                continue;
            }
        }
        auto conn = std::make_shared<Connection>(std::move(socket));
        conn->waiting_since.store(NowNs());
        std::uint64_t id = 0;
        {
            std::lock_guard lock(st->mu);
            id = st->next_id++;
            st->connections.emplace(id, conn);
        }
        st->active.fetch_add(1);
        if (reject) st->rejecting.fetch_add(1);
        net::co_spawn(conn_executor, Session(st, conn, id, reject, reject ? std::string() : std::move(peer)),
                      LogFailure(st->options.name + ": connection"));
    }
}

// The modification times of the TLS files (a missing file reads as the minimum): a change in
// any of them is what the reload check looks for.
std::vector<std::filesystem::file_time_type> TlsStamp(const ServerTlsOptions& tls) {
    std::vector<std::filesystem::file_time_type> out;
    for (const std::string* file : {&tls.cert_file, &tls.key_file, &tls.client_ca_file}) {
        std::error_code ec;
        const auto t =
            file->empty() ? std::filesystem::file_time_type::min() : std::filesystem::last_write_time(*file, ec);
        out.push_back(ec ? std::filesystem::file_time_type::min() : t);
    }
    return out;
}

Status ReloadTlsOf(ServerState& st) {
    const auto& tls = st.options.tls;
    if (!tls.enabled()) return FailedPrecondition(st.options.name + ": TLS is not configured");
    auto stamp = TlsStamp(tls);
    auto context = impl::MakeServerContext(tls);
    std::lock_guard lock(st.tls_mu);
    // Remembered even when loading failed: the check waits for the next change instead of
    // logging the same error every few seconds.
    st.tls_stamp = std::move(stamp);
    // At start (no context yet) Listen() throws the error instead.
    if (!context.ok() && !st.tls_context) return context.status();
    if (!context.ok()) {
        spdlog::error("{}: TLS reload failed, new connections keep the previous certificate: {}", st.options.name,
                      context.status().message());
        return context.status();
    }
    st.tls_context = std::move(*context);
    spdlog::info("{}: TLS certificate loaded from {}", st.options.name, tls.cert_file);
    return Status::Ok();
}

net::awaitable<void> ReloadCheckLoop(std::shared_ptr<ServerState> st) {
    while (!st->stopping.load()) {
        st->reload_timer->expires_after(st->options.tls.reload_check);
        beast::error_code ec;
        co_await st->reload_timer->async_wait(net::redirect_error(net::use_awaitable, ec));
        if (st->stopping.load()) break;
        bool changed = false;
        {
            std::lock_guard lock(st->tls_mu);
            changed = TlsStamp(st->options.tls) != st->tls_stamp;
        }
        if (changed) (void)ReloadTlsOf(*st);
    }
}

// Servers with TLS in this process, for ReloadAllTls (SIGHUP).
std::mutex registry_mu;
std::vector<std::weak_ptr<ServerState>> tls_servers;  // guarded by registry_mu

std::vector<std::shared_ptr<Connection>> LiveConnections(ServerState& st) {
    std::vector<std::shared_ptr<Connection>> out;
    std::lock_guard lock(st.mu);
    for (const auto& [id, weak] : st.connections) {
        if (auto c = weak.lock()) out.push_back(std::move(c));
    }
    return out;
}

}  // namespace

AuthHook BearerTokenAuth(std::string token) {
    if (token.empty()) throw std::invalid_argument("BearerTokenAuth: empty token");
    return [expected = "Bearer " + std::move(token)](const Request& req) -> Status {
        const auto got = req.headers.Get("Authorization");
        if (!got) return {Code::kUnauthenticated, "missing Authorization: Bearer <token> header"};
        // Constant time in the token's content, so response timing does not reveal a prefix.
        unsigned char diff = got->size() == expected.size() ? 0 : 1;
        for (std::size_t i = 0; i < expected.size(); ++i) {
            const char c = i < got->size() ? (*got)[i] : '\0';
            diff |= static_cast<unsigned char>(c ^ expected[i]);
        }
        if (diff != 0) return {Code::kUnauthenticated, "invalid bearer token"};
        return Status::Ok();
    };
}

void ExportServerStats(MetricsRegistry& registry, const std::string& prefix, std::function<ServerStats()> stats) {
    using Kind = MetricsRegistry::Kind;
    const auto one = [&](const char* suffix, Kind kind, const char* help, std::uint64_t ServerStats::*field) {
        registry.Observed(prefix + suffix, help, kind, {}, [stats, field] {
            return std::vector<ObservedSample>{{{}, static_cast<double>(stats().*field)}};
        });
    };
    one("_connections_accepted_total", Kind::kCounter, "Connections accepted.", &ServerStats::connections_accepted);
    one("_connections_rejected_total", Kind::kCounter, "Connections refused with 503 over max-connections.",
        &ServerStats::connections_rejected);
    one("_connections_shed_total", Kind::kCounter,
        "Connections closed at max-connections to make room (waiting longest for a request).",
        &ServerStats::connections_shed);
    one("_connections_active", Kind::kGauge, "Open connections.", &ServerStats::connections_active);
    one("_requests_total", Kind::kCounter, "Requests read completely.", &ServerStats::requests);
    registry.Observed(prefix + "_responses_total", "Responses by status class.", Kind::kCounter, {"class"}, [stats] {
        const auto s = stats();
        return std::vector<ObservedSample>{{{"2xx"}, static_cast<double>(s.responses_2xx)},
                                           {{"3xx"}, static_cast<double>(s.responses_3xx)},
                                           {{"4xx"}, static_cast<double>(s.responses_4xx)},
                                           {{"5xx"}, static_cast<double>(s.responses_5xx)}};
    });
    one("_timeouts_total", Kind::kCounter, "Connections dropped for a header, body or write timeout.",
        &ServerStats::timeouts);
    one("_tls_handshake_failures_total", Kind::kCounter, "TLS handshakes refused (bad or missing certificate).",
        &ServerStats::tls_handshake_failures);
}

Server::Server(net::any_io_executor executor, ServerOptions options, Router router, AuthHook auth)
    : state_(
          std::make_shared<ServerState>(std::move(executor), std::move(options), std::move(router), std::move(auth))) {}

Server::~Server() {
    Stop();
}

void Server::Listen() {
    auto& st = *state_;
    if (st.acceptor.is_open()) return;
    const auto fail = [&](const std::string& why) {
        return std::runtime_error(st.options.name + ": cannot listen on " + st.options.listen + ": " + why);
    };
    auto hp = HostPort::Parse(st.options.listen);
    if (!hp.ok()) throw fail(hp.status().message());
    beast::error_code ec;
    tcp::endpoint endpoint;
    const auto address = net::ip::make_address(hp->host, ec);
    if (!ec) {
        endpoint = tcp::endpoint(address, hp->port);
    } else {
        // A host name: resolving blocks, which is acceptable once at start-up.
        tcp::resolver resolver(st.executor);
        auto results = resolver.resolve(hp->host, std::to_string(hp->port), ec);
        if (ec || results.empty()) throw fail(ec ? ec.message() : "host not found");
        endpoint = results.begin()->endpoint();
    }
    st.acceptor.open(endpoint.protocol(), ec);
    if (!ec) st.acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) st.acceptor.bind(endpoint, ec);
    if (!ec) st.acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
        // The cause first: close() resets ec, and the message would read "Success".
        const std::string why = ec.message();
        st.acceptor.close(ec);
        throw fail(why);
    }
    st.endpoint = st.acceptor.local_endpoint();
    if (st.options.tls.enabled()) {
        if (Status loaded = ReloadTlsOf(st); !loaded.ok()) {
            st.acceptor.close(ec);
            throw fail(loaded.message());
        }
        std::lock_guard lock(registry_mu);
        std::erase_if(tls_servers, [](const auto& weak) { return weak.expired(); });
        tls_servers.push_back(state_);
    }
}

Status Server::ReloadTls() {
    return ReloadTlsOf(*state_);
}

void ReloadAllTls() {
    std::vector<std::shared_ptr<ServerState>> servers;
    {
        std::lock_guard lock(registry_mu);
        for (const auto& weak : tls_servers) {
            if (auto st = weak.lock()) servers.push_back(std::move(st));
        }
    }
    for (const auto& st : servers) (void)ReloadTlsOf(*st);
}

void Server::Start() {
    Listen();
    auto& st = *state_;
    st.accept_loop_running.store(true);
    net::co_spawn(st.accept_strand, AcceptLoop(state_), LogFailure(st.options.name + ": accept loop"));
    const bool tls = st.options.tls.enabled();
    if (tls) {
        st.reload_timer.emplace(st.accept_strand);
        net::co_spawn(st.accept_strand, ReloadCheckLoop(state_), LogFailure(st.options.name + ": TLS reload check"));
    }
    spdlog::info("{}: listening on {}:{} ({})", st.options.name, st.endpoint.address().to_string(), st.endpoint.port(),
                 tls ? "https" : "http");
    if (!tls && !st.endpoint.address().is_loopback()) {
        spdlog::warn(
            "{}: listening on {} without TLS: requests, tokens and job data cross the network in plain text "
            "(set tls.cert-file and tls.key-file in this server's section)",
            st.options.name, st.options.listen);
    }
}

tcp::endpoint Server::local_endpoint() const {
    return state_->endpoint;
}

void Server::Stop() {
    auto st = state_;
    if (st->stopping.exchange(true)) return;
    net::post(st->accept_strand, [st] {
        beast::error_code ec;
        st->acceptor.close(ec);
        if (st->reload_timer) st->reload_timer->cancel();
    });
    for (auto& conn : LiveConnections(*st)) {
        net::post(conn->stream.get_executor(), [conn] {
            if (conn->idle) conn->stream.cancel();
        });
    }
}

net::awaitable<void> Server::Shutdown() {
    Stop();
    auto st = state_;
    net::steady_timer timer(co_await net::this_coro::executor);
    const auto poll = [&]() -> net::awaitable<void> {
        timer.expires_after(std::chrono::milliseconds(5));
        beast::error_code ec;
        co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    };
    const auto busy = [&] {
        return st->active.load() > 0 || st->accept_loop_running.load();
    };
    const auto grace_end = Clock::now() + st->options.shutdown_grace;
    while (busy() && Clock::now() < grace_end) co_await poll();
    if (st->active.load() > 0) {
        spdlog::warn("{}: closing {} connection(s) still busy after the shutdown grace", st->options.name,
                     st->active.load());
        for (auto& conn : LiveConnections(*st)) {
            net::post(conn->stream.get_executor(), [conn] {
                beast::error_code ec;
                conn->stream.socket().shutdown(tcp::socket::shutdown_both, ec);
                conn->stream.socket().close(ec);
            });
        }
    }
    // A handler that never returns would keep its connection forever; do not wait for it forever.
    const auto force_end = Clock::now() + std::chrono::seconds(2);
    while (busy() && Clock::now() < force_end) co_await poll();
    spdlog::info("{}: stopped", st->options.name);
}

void Server::TimeRoutes(MetricsRegistry& registry, const std::string& prefix) {
    auto& family = registry.Histogram(
        prefix + "_request_duration_seconds",
        "Time from a request's first byte to its response ready (reading, routing, auth, handler), by route.",
        {"method", "route"}, {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10});
    state_->route_timers.clear();
    for (const auto& r : state_->router.Routes()) {
        state_->route_timers.push_back(&family.Labels({std::string(MethodName(r.method)), std::string(r.pattern)}));
    }
}

ServerStats Server::Stats() const {
    const auto& st = *state_;
    ServerStats s;
    s.connections_accepted = st.accepted.load();
    s.connections_rejected = st.rejected.load();
    s.connections_shed = st.shed.load();
    s.connections_active = st.active.load();
    s.requests = st.requests.load();
    s.responses_2xx = st.by_class[2].load();
    s.responses_3xx = st.by_class[3].load();
    s.responses_4xx = st.by_class[4].load();
    s.responses_5xx = st.by_class[5].load();
    s.timeouts = st.timeouts.load();
    s.tls_handshake_failures = st.tls_failures.load();
    return s;
}

}  // namespace sched::http
