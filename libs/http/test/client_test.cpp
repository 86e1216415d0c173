#include "sched/http/client.hpp"

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "sched/http/testing/test_server.hpp"
#include "wait_until_set.hpp"

namespace sched::http {
namespace {

using namespace std::chrono_literals;
using testing::BlockingClient;
using testing::LoopbackOptions;
using testing::TestServer;
using testing::WaitFor;

// A port nothing listens on: bind one, note it, close it.
std::uint16_t ClosedPort() {
    net::io_context io;
    tcp::acceptor a(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    return a.local_endpoint().port();
}

TEST(HttpClient, RefusedConnectionIsUnavailable) {
    BlockingClient client;
    auto r = client.Get("http://127.0.0.1:" + std::to_string(ClosedPort()) + "/");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kUnavailable);
    EXPECT_NE(r.status().message().find("connect to 127.0.0.1:"), std::string::npos) << r.status().message();
}

// The overloads without CallOptions: a coroutine with a defaulted class-type parameter had its
// argument destroyed twice by g++ 12 (a crash, or a heap error under ASan).
TEST(HttpClient, CallsWithoutOptionsUseTheDefaults) {
    Router router;
    router.Add(Method::kGet, "/get", [](Request&) { return Response::Text("got"); });
    router.Add(Method::kPost, "/post", [](Request& req) { return Response::Text(req.body); });
    TestServer server(std::move(router));
    net::io_context io;
    HttpClient client(io.get_executor());
    std::vector<std::string> bodies;
    net::co_spawn(
        io,
        [&]() -> net::awaitable<void> {
            for (int i = 0; i < 3; ++i) {
                auto got = co_await client.Get(server.Url("/get"));
                bodies.push_back(got.ok() ? got->body : got.status().message());
                nlohmann::json body = nlohmann::json::object();
                body["n"] = i;  // no braced list: g++ 12 rejects initializer lists in coroutines
                auto posted = co_await client.PostJson(server.Url("/post"), std::move(body));
                bodies.push_back(posted.ok() ? posted->body : posted.status().message());
                ClientRequest request;
                request.url = server.Url("/get");
                auto sent = co_await client.Send(std::move(request));
                bodies.push_back(sent.ok() ? sent->body : sent.status().message());
            }
            client.CloseIdle();
        },
        net::detached);
    io.run();
    ASSERT_EQ(bodies.size(), 9U);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(bodies[3 * i], "got");
        EXPECT_EQ(bodies[3 * i + 1], nlohmann::json({{"n", i}}).dump());
        EXPECT_EQ(bodies[3 * i + 2], "got");
    }
}

TEST(HttpClient, BadUrlIsInvalidArgument) {
    BlockingClient client;
    EXPECT_EQ(client.Get("not a url").status().code(), Code::kInvalidArgument);
}

TEST(HttpClient, SlowServerGivesDeadlineExceeded) {
    std::atomic<bool> release{false};
    Router router;
    router.Add(Method::kGet, "/hang", [&](Request&) -> net::awaitable<Response> {
        co_await WaitUntilSet(release);
        co_return Response::Text("late");
    });
    TestServer server(std::move(router));
    BlockingClient client;
    auto r = client.Get(server.Url("/hang"), {.timeout = 200ms});
    release = true;
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kDeadlineExceeded);
}

TEST(HttpClient, RetriesOnlyWhenTheCallerAsks) {
    std::atomic<int> calls{0};
    Router router;
    router.Add(Method::kGet, "/flaky", [&](Request&) {
        return ++calls < 3 ? Response::Error(ApiError{Code::kUnavailable, "not yet", ""}) : Response::Text("ok");
    });
    TestServer server(std::move(router));
    BlockingClient client;

    auto once = client.Get(server.Url("/flaky"));
    ASSERT_TRUE(once.ok());
    EXPECT_EQ(once->status, 503);
    EXPECT_EQ(calls.load(), 1);

    calls = 0;
    auto retried = client.Get(server.Url("/flaky"), {.retries = 2, .retry_backoff = 1ms});
    ASSERT_TRUE(retried.ok());
    EXPECT_EQ(retried->status, 200);
    EXPECT_EQ(calls.load(), 3);
    EXPECT_EQ(client.Stats().retries, 2u);
}

TEST(HttpClient, RetriesStopAtTheBound) {
    std::atomic<int> calls{0};
    Router router;
    router.Add(Method::kGet, "/down", [&](Request&) {
        ++calls;
        return Response::Error(ApiError{Code::kUnavailable, "down", ""});
    });
    TestServer server(std::move(router));
    BlockingClient client;
    auto r = client.Get(server.Url("/down"), {.retries = 3, .retry_backoff = 1ms});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 503);
    EXPECT_EQ(calls.load(), 4);
}

TEST(HttpClient, ReconnectsWhenTheServerClosedAnIdlePooledConnection) {
    auto options = LoopbackOptions();
    options.idle_timeout = 50ms;
    Router router;
    router.Add(Method::kPost, "/echo", [](Request& req) { return Response::Text(req.body); });
    TestServer server(std::move(router), options);
    BlockingClient client;
    EXPECT_EQ(client.PostJson(server.Url("/echo"), {{"n", 1}})->status, 200);
    ASSERT_TRUE(WaitFor([&] { return server.Stats().connections_active == 0; }));
    auto second = client.PostJson(server.Url("/echo"), {{"n", 2}});
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    EXPECT_EQ(second->body, R"({"n":2})");
    EXPECT_EQ(client.Stats().connections_opened, 2u);
}

TEST(HttpClient, ResponseOverTheBodyLimitIsResourceExhausted) {
    Router router;
    router.Add(Method::kGet, "/big", [](Request&) { return Response::Text(std::string(4096, 'x')); });
    TestServer server(std::move(router));
    ClientOptions options;
    options.body_limit = 1024;
    BlockingClient client(options);
    EXPECT_EQ(client.Get(server.Url("/big")).status().code(), Code::kResourceExhausted);
}

TEST(HttpClient, ConcurrentCallsUseSeparatePooledConnections) {
    std::atomic<int> inside{0};
    std::atomic<bool> release{false};
    Router router;
    router.Add(Method::kGet, "/wait", [&](Request&) -> net::awaitable<Response> {
        ++inside;
        co_await WaitUntilSet(release);
        co_return Response::Text("ok");
    });
    TestServer server(std::move(router));
    BlockingClient client;
    auto a = std::async(std::launch::async, [&] { return client.Get(server.Url("/wait")); });
    auto b = std::async(std::launch::async, [&] { return client.Get(server.Url("/wait")); });
    ASSERT_TRUE(WaitFor([&] { return inside.load() == 2; }));
    release = true;
    EXPECT_EQ(a.get()->status, 200);
    EXPECT_EQ(b.get()->status, 200);
    EXPECT_EQ(server.Stats().connections_accepted, 2u);
    EXPECT_EQ(client.Get(server.Url("/wait"))->status, 200);
    EXPECT_EQ(client.Stats().connections_opened, 2u);  // the third call reused one
}

// Calls from coroutines on an io_context with several threads (a node's I/O threads), to a
// peer that accepts and never answers: each ends at its first-byte timeout, reported as such.
// The stream's timeout handler and the read it cancels once ran at the same time on two
// threads (a call on a plain executor, no strand): 2-8 of these calls then read "Operation
// canceled", a data race on the socket.
TEST(HttpClient, TimeoutsOfCallsOnSeveralThreadsAreReportedAsTimeouts) {
    net::io_context peer_io;
    tcp::acceptor silent(peer_io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    silent.listen(256);  // connections wait in the backlog, never read, never answered
    const std::string url = "http://127.0.0.1:" + std::to_string(silent.local_endpoint().port()) + "/hook";

    net::io_context io;
    auto work = net::make_work_guard(io);
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) threads.emplace_back([&io] { io.run(); });
    HttpClient client(io.get_executor());
    constexpr int kCalls = 64;
    std::mutex mu;
    std::vector<Status> errors;
    std::atomic<int> done{0};
    for (int i = 0; i < kCalls; ++i) {
        net::co_spawn(
            io,
            [&]() -> net::awaitable<void> {
                CallOptions call;
                call.timeout = 2s;
                call.first_byte_timeout = 100ms;
                // A named request: with a temporary argument here, g++ 12's build freed the
                // request twice (ASan), as with the defaulted arguments of client.hpp.
                ClientRequest request{.method = Method::kPost, .url = url, .body = "{}"};
                auto r = co_await client.Send(std::move(request), call);
                std::lock_guard lock(mu);
                errors.push_back(r.ok() ? Status::Ok() : r.status());
                ++done;
            },
            net::detached);
    }
    const bool all_ended = WaitFor([&] { return done.load() == kCalls; }, 20s);
    work.reset();
    io.stop();
    for (auto& t : threads) t.join();
    ASSERT_TRUE(all_ended) << done.load() << " of " << kCalls;
    for (const Status& e : errors) {
        EXPECT_EQ(e.code(), Code::kDeadlineExceeded) << e.ToString();
        EXPECT_NE(e.message().find("no response header"), std::string::npos) << e.ToString();
    }
}

}  // namespace
}  // namespace sched::http
