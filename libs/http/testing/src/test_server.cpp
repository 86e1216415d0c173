#include "sched/http/testing/test_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <stdexcept>

namespace sched::http::testing {

ServerOptions LoopbackOptions() {
    ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.header_timeout = std::chrono::seconds(5);
    o.body_timeout = std::chrono::seconds(5);
    o.idle_timeout = std::chrono::seconds(10);
    o.write_timeout = std::chrono::seconds(5);
    o.shutdown_grace = std::chrono::seconds(5);
    o.access_log = AccessLog::kErrors;
    o.name = "test-server";
    return o;
}

TestServer::TestServer(Router router, ServerOptions options, AuthHook auth, MetricsRegistry* timed_routes)
    : work_(io_.get_executor()), https_(options.tls.enabled()) {
    server_ = std::make_unique<Server>(io_.get_executor(), std::move(options), std::move(router), std::move(auth));
    if (timed_routes != nullptr) server_->TimeRoutes(*timed_routes, "sched_http");
    server_->Start();
    thread_ = std::thread([this] { io_.run(); });
}

TestServer::~TestServer() {
    Stop();
}

std::string TestServer::Url(std::string_view path) const {
    return (https_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port()) + std::string(path);
}

void TestServer::Stop() {
    if (stopped_) return;
    stopped_ = true;
    net::co_spawn(io_, server_->Shutdown(), net::use_future).get();
    work_.reset();
    io_.stop();
    thread_.join();
}

BlockingClient::BlockingClient(ClientOptions options) : work_(io_.get_executor()) {
    client_ = std::make_unique<HttpClient>(io_.get_executor(), std::move(options));
    thread_ = std::thread([this] { io_.run(); });
}

BlockingClient::~BlockingClient() {
    client_->CloseIdle();
    work_.reset();
    io_.stop();
    thread_.join();
}

namespace {

// co_spawn in Boost 1.74 needs a default-constructible result; Result<T> has none on purpose.
Result<ClientResponse> RunBlocking(net::io_context& io, net::awaitable<Result<ClientResponse>> call) {
    auto wrapped =
        [](net::awaitable<Result<ClientResponse>> c) -> net::awaitable<std::optional<Result<ClientResponse>>> {
        auto r = co_await std::move(c);
        co_return r;
    };
    return *net::co_spawn(io, wrapped(std::move(call)), net::use_future).get();
}

}  // namespace

Result<ClientResponse> BlockingClient::Send(ClientRequest request, CallOptions options) {
    return RunBlocking(io_, client_->Send(std::move(request), std::move(options)));
}

Result<ClientResponse> BlockingClient::Get(std::string url, CallOptions options) {
    return RunBlocking(io_, client_->Get(std::move(url), std::move(options)));
}

nlohmann::json ErrorOf(const Result<ClientResponse>& r) {
    if (!r.ok()) return {{"transport", r.status().ToString()}};
    auto j = r->Json();
    return j.ok() && j->contains("error") ? (*j)["error"] : nlohmann::json{{"body", r->body}};
}

Result<ClientResponse> BlockingClient::PostJson(std::string url, nlohmann::json body, CallOptions options) {
    return RunBlocking(io_, client_->PostJson(std::move(url), std::move(body), std::move(options)));
}

namespace {

int ConnectLoopback(std::uint16_t port, const std::string& source_ip) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    if (source_ip != "127.0.0.1") {
        sockaddr_in source{};
        source.sin_family = AF_INET;
        if (::inet_pton(AF_INET, source_ip.c_str(), &source.sin_addr) != 1 ||
            ::bind(fd, reinterpret_cast<const sockaddr*>(&source), sizeof source) != 0) {
            const int err = errno;
            ::close(fd);
            throw std::runtime_error("bind " + source_ip + ": " + std::strerror(err));
        }
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        const int err = errno;
        ::close(fd);
        throw std::runtime_error(std::string("connect: ") + std::strerror(err));
    }
    return fd;
}

// Waits for readability up to `until`; false on timeout.
bool Readable(int fd, std::chrono::steady_clock::time_point until) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(left.count())) > 0;
}

}  // namespace

RawConnection::RawConnection(std::uint16_t port, const std::string& source_ip)
    : fd_(ConnectLoopback(port, source_ip)) {}

RawConnection::~RawConnection() {
    if (fd_ >= 0) ::close(fd_);
}

bool RawConnection::CanConnect(std::uint16_t port) {
    try {
        RawConnection c(port);
        return true;
    } catch (const std::runtime_error&) {
        return false;
    }
}

void RawConnection::Send(std::string_view bytes) {
    while (!bytes.empty()) {
        const auto n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n <= 0) throw std::runtime_error(std::string("send: ") + std::strerror(errno));
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
}

bool RawConnection::TrySend(std::string_view bytes) {
    while (!bytes.empty()) {
        const auto n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n <= 0) return false;
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

std::string RawConnection::ReadUntilClose(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    std::string out = std::move(pending_);
    pending_.clear();
    while (Readable(fd_, until)) {
        char buf[4096];
        const auto n = ::recv(fd_, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

std::string RawConnection::ReadResponse(std::chrono::milliseconds timeout, bool to_head) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const auto header_end = pending_.find("\r\n\r\n");
        if (header_end != std::string::npos) {
            std::size_t length = 0;
            std::string lower = pending_.substr(0, header_end);
            for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            if (const auto at = lower.find("content-length:"); at != std::string::npos && !to_head) {
                length = std::stoul(lower.substr(at + 15));
            }
            const std::size_t total = header_end + 4 + length;
            if (pending_.size() >= total) {
                std::string out = pending_.substr(0, total);
                pending_.erase(0, total);
                return out;
            }
        }
        if (!Readable(fd_, until)) return "";
        char buf[4096];
        const auto n = ::recv(fd_, buf, sizeof buf, 0);
        if (n <= 0) return "";
        pending_.append(buf, static_cast<std::size_t>(n));
    }
}

bool RawConnection::WaitForClose(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (!Readable(fd_, until)) return false;
        char buf[4096];
        const auto n = ::recv(fd_, buf, sizeof buf, 0);
        if (n == 0) return true;
        if (n < 0) return errno == ECONNRESET;
    }
}

}  // namespace sched::http::testing
