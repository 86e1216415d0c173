// Hostile input against the server and the client: bodies nested deep
// enough to overflow a recursive walk, numbers out of range, lines that never end, slot floods.

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "sched/common/beast.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/http/json.hpp"
#include "sched/http/server.hpp"
#include "sched/http/testing/test_server.hpp"

namespace sched::http {
namespace {

using namespace std::chrono_literals;
using sched::testing::PeakRss;
using testing::BlockingClient;
using testing::ErrorOf;
using testing::LoopbackOptions;
using testing::RawConnection;
using testing::TestServer;
using testing::WaitFor;

constexpr std::size_t kMiB = 1024 * 1024;

std::string Nested(std::size_t depth) {
    return std::string(depth, '[') + std::string(depth, ']');
}

Router EchoRoutes() {
    Router r;
    r.Add(Method::kPost, "/echo", [](Request& req) {
        auto body = req.Json();
        if (!body.ok()) return Response::Error(body.status(), "body");
        JsonFields f(*body);
        auto params = f.Value("params", nlohmann::json::object());
        if (f.error()) return Response::Error(*f.error());
        return Response::Json({{"params", params}, {"text", params.dump()}});
    });
    r.Add(
        Method::kGet, "/healthz", [](Request&) { return Response::Text("ok\n"); }, Access::kPublic);
    return r;
}

ClientRequest Post(const std::string& url, std::string body) {
    ClientRequest req;
    req.method = Method::kPost;
    req.url = url;
    req.headers.Set("Content-Type", "application/json");
    req.body = std::move(body);
    return req;
}

TEST(ServerLimits, BodyNested100kDeepGets400AndTheServerKeepsServing) {
    auto options = LoopbackOptions();
    TestServer server(EchoRoutes(), options);
    BlockingClient client;
    for (const std::string& body : {R"({"name":"x","params":)" + Nested(100'000) + "}",
                                    R"({"params":{"a":)" + std::string(100'000, '[') + "}",  // unbalanced
                                    Nested(100'000)}) {
        auto r = client.Send(Post(server.Url("/echo"), body));
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        EXPECT_EQ(r->status, 400) << r->body.substr(0, 200);
        EXPECT_NE(ErrorOf(r)["message"].get<std::string>().find("nesting deeper than 64 levels"), std::string::npos)
            << r->body;
    }
    auto ok = client.Send(Post(server.Url("/echo"), R"({"params":)" + Nested(60) + "}"));
    ASSERT_TRUE(ok.ok());
    EXPECT_EQ(ok->status, 200);
    EXPECT_EQ(client.Get(server.Url("/healthz"))->status, 200);
}

TEST(ServerLimits, JsonMaxDepthIsTheServersOption) {
    auto options = LoopbackOptions();
    options.json_max_depth = 3;
    TestServer server(EchoRoutes(), options);
    BlockingClient client;
    auto deep = client.Send(Post(server.Url("/echo"), R"({"params":{"a":[[1]]}})"));
    ASSERT_TRUE(deep.ok());
    EXPECT_EQ(deep->status, 400);
    EXPECT_EQ(ErrorOf(deep)["message"], "params.a[0]: nesting deeper than 3 levels");
    auto fits = client.Send(Post(server.Url("/echo"), R"({"params":{"a":[1]}})"));
    ASSERT_TRUE(fits.ok());
    EXPECT_EQ(fits->status, 200);
}

TEST(ServerLimits, NumberOutOfRangeGets400NamingTheField) {
    TestServer server(EchoRoutes());
    BlockingClient client;
    auto r = client.Send(Post(server.Url("/echo"), R"({"params":{"x":1e309}})"));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(ErrorOf(r)["code"], "invalid_argument");
    EXPECT_EQ(ErrorOf(r)["message"], "params.x: number out of range (1e309)");
    auto malformed = client.Send(Post(server.Url("/echo"), R"({"params":{"x":tru}})"));
    ASSERT_TRUE(malformed.ok());
    EXPECT_EQ(malformed->status, 400);
    EXPECT_EQ(malformed->body.find("json.exception"), std::string::npos) << malformed->body;
    EXPECT_EQ(malformed->body.find("syntax error"), std::string::npos) << malformed->body;
}

// Sends up to `total` bytes of `filler` after `prefix` while reading whatever comes back, and
// returns what came back before the server closed.
std::string SendEndless(std::uint16_t port, const std::string& prefix, char filler, std::size_t total) {
    RawConnection raw(port);
    std::string received;
    auto reader = std::async(std::launch::async, [&] { return raw.ReadUntilClose(30s); });
    if (raw.TrySend(prefix)) {
        const std::string chunk(64 * 1024, filler);
        for (std::size_t sent = 0; sent < total && raw.TrySend(chunk); sent += chunk.size()) {
            if (reader.wait_for(0s) == std::future_status::ready) break;
        }
    }
    return reader.get();
}

TEST(ServerLimits, UnterminatedChunkLinesEndTheConnectionAndMemoryStaysFlat) {
    TestServer server(EchoRoutes());
    const std::string head = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    const struct {
        const char* what;
        std::string prefix;
        char filler;
    } cases[] = {
        {"chunk-size line", head + "1", '0'},
        {"chunk extension", head + "5;ext=", 'x'},
        {"trailer", head + "2\r\n{}\r\n0\r\nX-Trailer: ", 'y'},
    };
    for (const auto& c : cases) {
        const std::size_t before = PeakRss();
        const std::string answer = SendEndless(server.port(), c.prefix, c.filler, 50 * kMiB);
        EXPECT_TRUE(answer.rfind("HTTP/1.1 413", 0) == 0 || answer.rfind("HTTP/1.1 431", 0) == 0 ||
                    answer.rfind("HTTP/1.1 400", 0) == 0)
            << c.what << ": " << answer.substr(0, 300);
        EXPECT_LT(PeakRss(), before + 20 * kMiB) << c.what;
    }
    BlockingClient client;
    EXPECT_EQ(client.Get(server.Url("/healthz"))->status, 200);
}

// 1,100 slow connections from one address (more than max-connections), one header byte per
// second each, while /healthz is probed from another.
TEST(ServerLimits, SlowFloodFromOnePeerIsRefusedAndHealthzKeepsAnswering) {
    auto options = LoopbackOptions();  // max-connections 1024, max-connections-per-peer 256
    options.header_timeout = 30s;
    options.first_byte_timeout = 30s;
    TestServer server(EchoRoutes(), options);
    std::vector<std::unique_ptr<RawConnection>> flood;
    for (int i = 0; i < 1100; ++i) flood.push_back(std::make_unique<RawConnection>(server.port(), "127.0.0.2"));
    const std::string request = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
    int answered = 0;
    int probes = 0;
    BlockingClient prober;
    for (int second = 0; second < 6; ++second) {
        // One header byte per second on every flood connection.
        for (auto& c : flood) (void)c->TrySend(request.substr(static_cast<std::size_t>(second), 1));
        for (int i = 0; i < 10; ++i, ++probes) {
            auto r = prober.Get(server.Url("/healthz"), {.timeout = 1s});
            if (r.ok() && r->status == 200) ++answered;
            std::this_thread::sleep_for(100ms);
        }
    }
    EXPECT_GE(answered * 100, probes * 95) << answered << " of " << probes;
    const auto stats = server.Stats();
    EXPECT_GE(stats.connections_rejected, 800u);
    EXPECT_LE(stats.connections_active, 256u + 64u + 2u);
}

TEST(ServerLimits, FloodFromManyPeersCannotLockOutANewClient) {
    auto options = LoopbackOptions();
    options.max_connections = 50;
    options.header_timeout = 30s;
    options.first_byte_timeout = 30s;
    TestServer server(EchoRoutes(), options);
    std::vector<std::unique_ptr<RawConnection>> flood;
    for (int i = 0; i < 200; ++i) {
        flood.push_back(std::make_unique<RawConnection>(server.port(), "127.0.1." + std::to_string(1 + i % 200)));
        (void)flood.back()->TrySend("G");
    }
    ASSERT_TRUE(WaitFor([&] { return server.Stats().connections_accepted == 200; }));
    BlockingClient client;
    for (int i = 0; i < 20; ++i) {
        auto r = client.Get(server.Url("/healthz"), {.timeout = 1s});
        ASSERT_TRUE(r.ok()) << i << ": " << r.status().ToString();
        EXPECT_EQ(r->status, 200);
        client.Stats();
    }
    EXPECT_GE(server.Stats().connections_shed, 150u);
    EXPECT_LE(server.Stats().connections_active, 52u);
}

TEST(ServerLimits, ConnectionsPerPeerAreCapped) {
    auto options = LoopbackOptions();
    options.max_connections_per_peer = 3;
    TestServer server(EchoRoutes(), options);
    std::vector<std::unique_ptr<RawConnection>> held;
    for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<RawConnection>(server.port(), "127.0.0.5"));
    ASSERT_TRUE(WaitFor([&] { return server.Stats().connections_active == 3; }));
    RawConnection fourth(server.port(), "127.0.0.5");
    fourth.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(fourth.ReadResponse().rfind("HTTP/1.1 503", 0), 0u);
    RawConnection other(server.port(), "127.0.0.6");  // another peer is not affected
    other.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(other.ReadResponse().rfind("HTTP/1.1 200", 0), 0u);
    held.clear();
    ASSERT_TRUE(WaitFor([&] { return server.Stats().connections_active <= 1; }));
    RawConnection again(server.port(), "127.0.0.5");
    again.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(again.ReadResponse().rfind("HTTP/1.1 200", 0), 0u);
}

// Keeps every formatted log line (thread-safe).
class CapturingSink final : public spdlog::sinks::base_sink<std::mutex> {
  public:
    std::vector<std::string> Lines() {
        std::lock_guard lock(mutex_);
        return lines_;
    }

  protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        lines_.emplace_back(msg.payload.data(), msg.payload.size());
    }
    void flush_() override {}

  private:
    std::vector<std::string> lines_;
};

TEST(ServerLimits, AccessLogHasThePathWithoutTheQueryString) {
    auto sink = std::make_shared<CapturingSink>();
    auto previous = spdlog::default_logger();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
    {
        auto options = LoopbackOptions();
        options.access_log = AccessLog::kAll;
        TestServer server(EchoRoutes(), options);
        BlockingClient client;
        EXPECT_EQ(client.Get(server.Url("/healthz?token=s3cret-token&x=1"))->status, 200);
        EXPECT_TRUE(WaitFor([&] {
            for (const auto& l : sink->Lines()) {
                if (l.find("\"GET /healthz\" 200") != std::string::npos) return true;
            }
            return false;
        }));
    }
    spdlog::set_default_logger(previous);
    for (const auto& l : sink->Lines()) EXPECT_EQ(l.find("s3cret"), std::string::npos) << l;
}

// A peer that answers every request with a chunked response whose chunk-size line never ends.
class EndlessChunkPeer {
  public:
    EndlessChunkPeer() : acceptor_(io_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
        thread_ = std::thread([this] {
            beast::error_code ec;
            tcp::socket socket(io_);
            acceptor_.accept(socket, ec);
            if (ec) return;
            std::array<char, 4096> buf{};
            socket.read_some(net::buffer(buf), ec);
            const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1";
            net::write(socket, net::buffer(head), ec);
            const std::string chunk(64 * 1024, '0');
            for (std::size_t sent = 0; !ec && sent < 50 * kMiB; sent += chunk.size()) {
                net::write(socket, net::buffer(chunk), ec);
            }
        });
    }
    ~EndlessChunkPeer() {
        beast::error_code ec;
        acceptor_.close(ec);
        thread_.join();
    }
    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

  private:
    net::io_context io_;
    tcp::acceptor acceptor_;
    std::thread thread_;
};

TEST(ClientLimits, EndlessChunkLineFromAPeerFailsTheCallWithBoundedMemory) {
    EndlessChunkPeer peer;
    BlockingClient client;
    const std::size_t before = PeakRss();
    auto r = client.Get("http://127.0.0.1:" + std::to_string(peer.port()) + "/", {.timeout = 20s});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kResourceExhausted) << r.status().ToString();
    EXPECT_LT(PeakRss(), before + 20 * kMiB);
}

TEST(ClientLimits, ResponseJsonIsParsedWithTheSameBounds) {
    ClientResponse deep;
    deep.body = Nested(100'000);
    ASSERT_FALSE(deep.Json().ok());
    EXPECT_NE(deep.Json().status().message().find("nesting deeper than 64 levels"), std::string::npos);
    ClientResponse huge;
    huge.body = R"({"a":[1,2,-1e400]})";
    EXPECT_EQ(huge.Json().status().message(), "a[2]: number out of range (-1e400)");
}

}  // namespace
}  // namespace sched::http
