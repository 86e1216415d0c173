#include "sched/http/client.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <spdlog/spdlog.h>

#include "impl/tls.hpp"
#include "sched/common/backoff.hpp"
#include "sched/common/beast.hpp"

namespace sched::http {

namespace impl {

// Bounds what a peer can make us buffer while the parser waits for the end of a line (status
// line, header, chunk-size line, chunk extension, trailer); bodies go to the response itself.
constexpr std::size_t kResponseHeaderLimit = std::size_t{64} * 1024;
constexpr std::size_t kReadBufferLimit = kResponseHeaderLimit + std::size_t{64} * 1024;

struct PooledConnection {
    explicit PooledConnection(net::any_io_executor ex) : stream(std::move(ex)), buffer(kReadBufferLimit) {}
    beast::tcp_stream stream;
    std::shared_ptr<ssl::context> tls_context;  // https: kept alive as long as `tls`
    std::unique_ptr<TlsStream> tls;             // https: over `stream` (declared after it: destroyed first)
    beast::flat_buffer buffer;
    std::chrono::steady_clock::time_point idle_since;
};

struct ClientState {
    ClientState(net::any_io_executor ex, ClientOptions o) : executor(std::move(ex)), options(std::move(o)) {}

    net::any_io_executor executor;
    const ClientOptions options;
    std::mutex mu;
    std::unordered_map<std::string, std::vector<std::unique_ptr<PooledConnection>>> idle;
    std::atomic<std::uint64_t> opened{0};
    std::atomic<std::uint64_t> reused{0};
    std::atomic<std::uint64_t> requests{0};
    std::atomic<std::uint64_t> retries{0};

    // Built at the first https call (most clients never make one, and some are made per
    // request); a failure is kept and reported by every https call.
    std::mutex tls_mu;
    std::shared_ptr<ssl::context> tls_context;  // guarded by tls_mu
    std::optional<Status> tls_error;            // guarded by tls_mu
};

}  // namespace impl

namespace {

using impl::ClientState;
using impl::PooledConnection;
using impl::SetPeerHost;
using impl::TlsErrorText;
using impl::TlsStream;
namespace ssl = impl::ssl;
using Clock = std::chrono::steady_clock;
using ConnectionPtr = std::unique_ptr<PooledConnection>;

std::string_view View(beast::string_view s) {
    return {s.data(), s.size()};
}

std::string Ms(Clock::duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + "ms";
}

// A pooled connection whose peer closed it (idle timeout, restart) reads as EOF; one with
// unexpected bytes waiting is out of step with the protocol. Either must not carry a request.
bool PeerStillOpen(tcp::socket& socket) {
    char byte = 0;
    const auto n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

ConnectionPtr TakeIdle(ClientState& st, const std::string& key) {
    std::lock_guard lock(st.mu);
    auto it = st.idle.find(key);
    if (it == st.idle.end()) return nullptr;
    auto& pool = it->second;
    const auto now = Clock::now();
    while (!pool.empty()) {
        ConnectionPtr c = std::move(pool.back());
        pool.pop_back();
        if (now - c->idle_since < st.options.pool_idle_timeout && PeerStillOpen(c->stream.socket())) return c;
    }
    return nullptr;
}

void GiveBack(ClientState& st, const std::string& key, ConnectionPtr conn) {
    conn->idle_since = Clock::now();
    std::lock_guard lock(st.mu);
    auto& pool = st.idle[key];
    if (pool.size() < st.options.max_idle_per_host) pool.push_back(std::move(conn));
}

Result<std::shared_ptr<ssl::context>> TlsContext(ClientState& st) {
    std::lock_guard lock(st.tls_mu);
    if (st.tls_context) return st.tls_context;
    if (st.tls_error) return *st.tls_error;
    try {
        st.tls_context = impl::MakeClientContext(st.options.tls);
        return st.tls_context;
    } catch (const std::exception& e) {
        st.tls_error = FailedPrecondition(e.what());
        spdlog::error("https client: {}", e.what());
        return *st.tls_error;
    }
}

net::awaitable<Status> Handshake(ClientState& st, PooledConnection& conn, std::shared_ptr<ssl::context> context,
                                 const Url& url, Clock::time_point connect_end, Clock::time_point deadline) {
    const std::string where = url.Authority();
    conn.tls_context = std::move(context);
    conn.tls = std::make_unique<TlsStream>(conn.stream, *conn.tls_context);
    if (!SetPeerHost(*conn.tls, url.host))
        co_return InvalidArgument("cannot verify TLS host name \"" + url.host + "\"");
    beast::error_code ec;
    conn.stream.expires_at(connect_end);
    co_await conn.tls->async_handshake(ssl::stream_base::client, net::redirect_error(net::use_awaitable, ec));
    if (ec == beast::error::timeout) {
        if (connect_end >= deadline)
            co_return DeadlineExceeded("TLS handshake with " + where + " timed out (call timeout)");
        co_return Unavailable("TLS handshake with " + where + " timed out after " +
                              Ms(std::chrono::duration_cast<Clock::duration>(st.options.connect_timeout)));
    }
    if (ec) {
        co_return Unavailable("TLS handshake with " + where +
                              " failed: " + TlsErrorText(*conn.tls, ec, st.options.tls.cert_file.empty()));
    }
    co_return Status::Ok();
}

net::awaitable<Result<ConnectionPtr>> Connect(ClientState& st, const Url& url, Clock::time_point deadline) {
    const auto connect_end = std::min(deadline, Clock::now() + st.options.connect_timeout);
    const std::string where = url.Authority();
    std::shared_ptr<ssl::context> tls_context;
    if (url.https) {
        auto context = TlsContext(st);
        if (!context.ok()) co_return context.status();
        tls_context = std::move(*context);
    }
    beast::error_code ec;
    std::vector<tcp::endpoint> endpoints;
    const auto address = net::ip::make_address(url.host, ec);
    if (!ec) {
        endpoints.emplace_back(address, url.port);
    } else {
        // The resolver has no timeout of its own: a timer cancels it, on the call's strand.
        const auto strand = co_await net::this_coro::executor;
        auto resolver = std::make_shared<tcp::resolver>(strand);
        net::steady_timer guard(strand);
        guard.expires_at(connect_end);
        guard.async_wait([resolver](const beast::error_code& e) {
            if (!e) resolver->cancel();
        });
        ec = {};
        const std::string service = std::to_string(url.port);
        auto results = co_await resolver->async_resolve(url.host, service, net::redirect_error(net::use_awaitable, ec));
        guard.cancel();
        if (ec) {
            if (Clock::now() >= deadline) co_return DeadlineExceeded("resolving " + url.host + " timed out");
            co_return Unavailable("cannot resolve " + url.host + ": " + ec.message());
        }
        for (const auto& r : results) endpoints.push_back(r.endpoint());
    }
    if (st.options.address_check) {
        // Checked here, on the very addresses connected to next, so a name cannot resolve to a
        // checked address first and to another one for the connection.
        std::optional<Status> refused;
        std::erase_if(endpoints, [&](const tcp::endpoint& e) {
            Status s = st.options.address_check(url.host, e.address());
            if (s.ok()) return false;
            if (!refused) refused = std::move(s);
            return true;
        });
        if (endpoints.empty() && refused) co_return *refused;
    }
    auto conn = std::make_unique<PooledConnection>(st.executor);
    conn->stream.expires_at(connect_end);
    ec = {};
    co_await conn->stream.async_connect(endpoints, net::redirect_error(net::use_awaitable, ec));
    if (ec == beast::error::timeout) {
        if (connect_end >= deadline) co_return DeadlineExceeded("connect to " + where + " timed out (call timeout)");
        co_return Unavailable("connect to " + where + " timed out after " +
                              Ms(std::chrono::duration_cast<Clock::duration>(st.options.connect_timeout)));
    }
    if (ec) co_return Unavailable("connect to " + where + ": " + ec.message());
    conn->stream.socket().set_option(tcp::no_delay(true), ec);
    st.opened.fetch_add(1);
    if (url.https) {
        // The handshake shares the connect timeout: together they are "getting a connection".
        Status shaken = co_await Handshake(st, *conn, std::move(tls_context), url, connect_end, deadline);
        if (!shaken.ok()) co_return shaken;
    }
    co_return conn;
}

struct Exchanged {
    Result<ClientResponse> response;
    bool keep_alive = false;
    bool nothing_received = false;  // failed before any response byte arrived
};

std::string ErrorText(ClientState& /*st*/, beast::tcp_stream& /*io*/, const beast::error_code& ec) {
    return ec.message();
}

std::string ErrorText(ClientState& st, TlsStream& io, const beast::error_code& ec) {
    return TlsErrorText(io, ec, st.options.tls.cert_file.empty());
}

// `Io` is the connection's tcp_stream (http) or the TLS stream over it (https); timeouts are set
// on the tcp_stream, which applies them to the TLS layer's reads and writes too.
template <class Io>
net::awaitable<Exchanged> ExchangeOn(ClientState& st, PooledConnection& conn, Io& io,
                                     bhttp::request<bhttp::string_body>& req, const std::string& where,
                                     Clock::time_point deadline, std::optional<Clock::duration> first_byte) {
    beast::error_code ec;
    conn.stream.expires_at(deadline);
    co_await bhttp::async_write(io, req, net::redirect_error(net::use_awaitable, ec));
    if (ec == beast::error::timeout)
        co_return Exchanged{DeadlineExceeded("sending to " + where + " timed out"), false, true};
    if (ec) co_return Exchanged{Unavailable("sending to " + where + ": " + ErrorText(st, io, ec)), false, true};

    bhttp::response_parser<bhttp::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(impl::kResponseHeaderLimit));
    parser.body_limit(st.options.body_limit);
    const auto header_end = first_byte ? std::min(deadline, Clock::now() + *first_byte) : deadline;
    conn.stream.expires_at(header_end);
    // Header first: Beast 1.74 skips the body limit check for a response with Content-Length
    // when the whole message is read eagerly; reading the header alone reports it.
    co_await bhttp::async_read_header(io, conn.buffer, parser, net::redirect_error(net::use_awaitable, ec));
    if (!ec && !parser.is_done()) {
        conn.stream.expires_at(deadline);
        co_await bhttp::async_read(io, conn.buffer, parser, net::redirect_error(net::use_awaitable, ec));
    }
    if (ec) {
        const bool nothing = !parser.got_some();
        if (ec == beast::error::timeout && !parser.is_header_done() && header_end < deadline) {
            co_return Exchanged{DeadlineExceeded("no response header from " + where + " within " +
                                                 Ms(std::chrono::duration_cast<Clock::duration>(*first_byte))),
                                false, nothing};
        }
        if (ec == beast::error::timeout) {
            co_return Exchanged{DeadlineExceeded("no response from " + where + " in time"), false, nothing};
        }
        if (ec == bhttp::error::body_limit) {
            co_return Exchanged{Status(Code::kResourceExhausted, "response from " + where + " exceeds " +
                                                                     std::to_string(st.options.body_limit) + " bytes"),
                                false, nothing};
        }
        if (ec == bhttp::error::buffer_overflow || ec == bhttp::error::header_limit) {
            co_return Exchanged{
                Status(Code::kResourceExhausted, "response from " + where + " has a header or chunk line over " +
                                                     std::to_string(impl::kResponseHeaderLimit) + " bytes"),
                false, nothing};
        }
        co_return Exchanged{Unavailable("reading from " + where + ": " + ErrorText(st, io, ec)), false, nothing};
    }
    auto msg = parser.release();
    ClientResponse out;
    out.status = static_cast<int>(msg.result_int());
    for (const auto& field : msg)
        out.headers.Add(std::string(View(field.name_string())), std::string(View(field.value())));
    out.body = std::move(msg.body());
    const bool keep = msg.keep_alive() && conn.buffer.size() == 0;
    co_return Exchanged{std::move(out), keep, false};
}

net::awaitable<Exchanged> Exchange(ClientState& st, PooledConnection& conn, bhttp::request<bhttp::string_body>& req,
                                   const std::string& where, Clock::time_point deadline,
                                   std::optional<Clock::duration> first_byte) {
    if (conn.tls) {
        Exchanged ex = co_await ExchangeOn(st, conn, *conn.tls, req, where, deadline, first_byte);
        co_return ex;
    }
    Exchanged ex = co_await ExchangeOn(st, conn, conn.stream, req, where, deadline, first_byte);
    co_return ex;
}

net::awaitable<Result<ClientResponse>> SendOnce(ClientState& st, const Url& url,
                                                bhttp::request<bhttp::string_body>& req, Clock::time_point deadline,
                                                std::optional<Clock::duration> first_byte) {
    const std::string key = url.Origin();
    const std::string where = url.Authority();
    for (int round = 0;; ++round) {
        ConnectionPtr conn = TakeIdle(st, key);
        const bool reused = conn != nullptr;
        if (reused) {
            st.reused.fetch_add(1);
        } else {
            auto connected = co_await Connect(st, url, deadline);
            if (!connected.ok()) co_return connected.status();
            conn = std::move(*connected);
        }
        Exchanged ex = co_await Exchange(st, *conn, req, where, deadline, first_byte);
        if (ex.response.ok()) {
            if (ex.keep_alive) GiveBack(st, key, std::move(conn));
            co_return std::move(ex.response);
        }
        // The peer closed a pooled connection just as we used it: nothing reached the
        // application, so one more try on a fresh connection is safe even for a POST.
        const bool stale = reused && ex.nothing_received && ex.response.status().code() == Code::kUnavailable;
        if (!stale || round > 0 || Clock::now() >= deadline) co_return std::move(ex.response);
    }
}

bool Retryable(const Result<ClientResponse>& r) {
    if (!r.ok()) return r.status().code() == Code::kUnavailable;
    return r->status == 502 || r->status == 503 || r->status == 504;
}

}  // namespace

Status CheckClientTls(const ClientTlsOptions& options) {
    try {
        (void)impl::MakeClientContext(options);
    } catch (const std::exception& e) {
        return FailedPrecondition(e.what());
    }
    return Status::Ok();
}

Result<nlohmann::json> ClientResponse::Json() const {
    return ParseJson(body);
}

HttpClient::HttpClient(net::any_io_executor executor, ClientOptions options)
    : state_(std::make_shared<ClientState>(std::move(executor), std::move(options))) {}

HttpClient::~HttpClient() {
    CloseIdle();
}

std::string HttpClient::PeerUrl(std::string_view address, std::string_view path) const {
    return (state_->options.tls.https_peers ? "https://" : "http://") + std::string(address) + std::string(path);
}

void HttpClient::CloseIdle() {
    std::lock_guard lock(state_->mu);
    state_->idle.clear();
}

ClientStats HttpClient::Stats() const {
    return {state_->opened.load(), state_->reused.load(), state_->requests.load(), state_->retries.load()};
}

namespace {

// One call, on the strand HttpClient::Send made for it.
net::awaitable<Result<ClientResponse>> SendCall(std::shared_ptr<ClientState> st, ClientRequest request,
                                                CallOptions options) {
    auto url = Url::Parse(request.url);
    if (!url.ok()) co_return url.status();
    if (request.method == Method::kOther) co_return InvalidArgument("HttpClient cannot send Method::kOther");
    const auto verb = bhttp::string_to_verb(MethodName(request.method).data());
    bhttp::request<bhttp::string_body> req{verb, url->target, 11};
    req.set(bhttp::field::host, url->Authority());
    req.set(bhttp::field::user_agent, st->options.user_agent);
    for (const auto& [name, value] : request.headers) req.set(name, value);
    if (!options.bearer_token.empty()) req.set(bhttp::field::authorization, "Bearer " + options.bearer_token);
    req.keep_alive(true);
    req.body() = std::move(request.body);
    req.prepare_payload();

    const auto timeout =
        std::chrono::duration_cast<Clock::duration>(options.timeout.value_or(st->options.request_timeout));
    const auto deadline = Clock::now() + timeout;
    std::optional<Clock::duration> first_byte;
    if (options.first_byte_timeout)
        first_byte = std::chrono::duration_cast<Clock::duration>(*options.first_byte_timeout);
    // Capped at the whole timeout: a longer pause could never end before the deadline anyway.
    Backoff backoff(options.retry_backoff,
                    std::max(options.retry_backoff, std::chrono::duration_cast<Micros>(timeout)));
    st->requests.fetch_add(1);
    for (int attempt = 0;; ++attempt) {
        Result<ClientResponse> r = co_await SendOnce(*st, *url, req, deadline, first_byte);
        if (attempt >= options.retries || !Retryable(r) || Clock::now() + backoff.base() >= deadline) co_return r;
        st->retries.fetch_add(1);
        net::steady_timer timer(co_await net::this_coro::executor, backoff.Next());
        beast::error_code ec;
        co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
}

}  // namespace

net::awaitable<Result<ClientResponse>> HttpClient::Send(ClientRequest request, CallOptions options) {
    // beast::tcp_stream's timeouts wait on a timer beside each read, write and connect, and its
    // handler, which closes the socket, runs on the operation's executor: this coroutine's. On
    // an io_context with several threads (a node's I/O threads) that handler and the operation's
    // completion ran at the same time on two threads: a timeout reported as "Operation
    // canceled", and a data race on the socket. A strand per call runs the call's handlers one
    // at a time, whatever executor the caller is on.
    // (Wrapped in an optional: co_spawn's result must be default-constructible, a Result is not.)
    auto on_strand = [](std::shared_ptr<ClientState> st, ClientRequest request,
                        CallOptions options) -> net::awaitable<std::optional<Result<ClientResponse>>> {
        co_return co_await SendCall(std::move(st), std::move(request), std::move(options));
    };
    auto sent = co_await net::co_spawn(net::make_strand(state_->executor),
                                       on_strand(state_, std::move(request), std::move(options)), net::use_awaitable);
    co_return std::move(*sent);
}

net::awaitable<Result<ClientResponse>> HttpClient::Get(std::string url, CallOptions options) {
    ClientRequest req;
    req.method = Method::kGet;
    req.url = std::move(url);
    auto r = co_await Send(std::move(req), std::move(options));
    co_return r;
}

net::awaitable<Result<ClientResponse>> HttpClient::PostJson(std::string url, nlohmann::json body, CallOptions options) {
    ClientRequest req;
    req.method = Method::kPost;
    req.url = std::move(url);
    req.headers.Set("Content-Type", "application/json");
    req.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    auto r = co_await Send(std::move(req), std::move(options));
    co_return r;
}

}  // namespace sched::http
