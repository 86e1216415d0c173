#include "sched/http/server.hpp"

#include <atomic>
#include <future>

#include <gtest/gtest.h>

#include "sched/http/json.hpp"
#include "sched/http/testing/test_server.hpp"
#include "wait_until_set.hpp"

namespace sched::http {
namespace {

using namespace std::chrono_literals;
using testing::BlockingClient;
using testing::ErrorOf;
using testing::LoopbackOptions;
using testing::RawConnection;
using testing::TestServer;
using testing::WaitFor;

// The answer was an error of this status whose body names this code.
::testing::AssertionResult AnsweredError(const Result<ClientResponse>& r, int status, const char* code) {
    if (!r.ok()) return ::testing::AssertionFailure() << r.status().ToString();
    if (r->status != status) return ::testing::AssertionFailure() << "status " << r->status << ": " << r->body;
    if (ErrorOf(r)["code"] != code) return ::testing::AssertionFailure() << "body " << r->body;
    return ::testing::AssertionSuccess();
}

// Loopback options with one of the server's timeouts cut to 200 ms.
ServerOptions ShortTimeout(Micros ServerOptions::*timeout) {
    auto options = LoopbackOptions();
    options.*timeout = 200ms;
    return options;
}

Router ItemRoutes() {
    Router r;
    r.Add(Method::kGet, "/items/{id}", [](Request& req) {
        return Response::Json({{"id", req.PathParam("id")}, {"q", req.Query("q").value_or("")}});
    });
    r.Add(Method::kPost, "/items", [](Request& req) {
        auto body = req.Json();
        if (!body.ok()) return Response::Error(body.status(), "body");
        JsonFields f(*body);
        const auto name = f.String("name");
        const auto count = f.Int("count", 1, {.min = 1, .max = 100});
        if (f.error()) return Response::Error(*f.error());
        return Response::Json({{"name", name}, {"count", count}}, 201);
    });
    r.Add(
        Method::kGet, "/metrics",
        [](Request&) { return Response::Text("sched_up 1\n", 200, "text/plain; version=0.0.4; charset=utf-8"); },
        Access::kPublic);
    r.Add(Method::kGet, "/boom", [](Request&) -> Response { throw std::runtime_error("kaput"); });
    return r;
}

TEST(Server, RoutesRequestsWithPathAndQueryParameters) {
    TestServer server(ItemRoutes());
    BlockingClient client;
    auto r = client.Get(server.Url("/items/a%2Fb?q=x+y"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(nlohmann::json::parse(r->body), (nlohmann::json{{"id", "a/b"}, {"q", "x y"}}));
    auto created = client.PostJson(server.Url("/items"), {{"name", "n"}, {"count", 3}});
    ASSERT_TRUE(created.ok());
    EXPECT_EQ(created->status, 201);
    EXPECT_EQ(nlohmann::json::parse(created->body)["count"], 3);
}

TEST(Server, UnknownPathIs404AndWrongMethodIs405WithAllow) {
    TestServer server(ItemRoutes());
    BlockingClient client;
    auto missing = client.Get(server.Url("/nothing"));
    ASSERT_TRUE(AnsweredError(missing, 404, "not_found"));
    ClientRequest del;
    del.method = Method::kDelete;
    del.url = server.Url("/items/1");
    auto wrong = client.Send(del);
    ASSERT_TRUE(AnsweredError(wrong, 405, "method_not_allowed"));
    EXPECT_EQ(wrong->headers.Get("Allow"), "GET, HEAD");
}

TEST(Server, BadJsonInputGets400NamingTheFieldAndTheServerKeepsServing) {
    TestServer server(ItemRoutes());
    BlockingClient client;
    const auto post = [&](std::string body) {
        ClientRequest req;
        req.method = Method::kPost;
        req.url = server.Url("/items");
        req.body = std::move(body);
        return client.Send(req);
    };
    struct Case {
        const char* body;
        const char* field;
    };
    for (const auto& c : std::initializer_list<Case>{{R"({"name": )", "body"},
                                                     {R"([1, 2])", "body"},
                                                     {R"({"count": 2})", "name"},
                                                     {R"({"name": 5})", "name"},
                                                     {R"({"name": "n", "count": 0})", "count"},
                                                     {R"({"name": "n", "count": "many"})", "count"}}) {
        auto r = post(c.body);
        ASSERT_TRUE(r.ok()) << c.body;
        EXPECT_EQ(r->status, 400) << c.body;
        EXPECT_EQ(ErrorOf(r)["code"], "invalid_argument") << c.body;
        EXPECT_EQ(ErrorOf(r)["field"], c.field) << c.body;
    }
    EXPECT_EQ(post(R"({"name": "ok"})")->status, 201);
}

TEST(Server, OversizedBodyGets413AndOthersAreStillServed) {
    auto options = LoopbackOptions();
    options.body_limit = 1024;
    TestServer server(ItemRoutes(), options);
    BlockingClient client;
    auto big = client.PostJson(server.Url("/items"), {{"name", std::string(64 * 1024, 'x')}});
    ASSERT_TRUE(AnsweredError(big, 413, "payload_too_large"));
    auto small = client.PostJson(server.Url("/items"), {{"name", "small"}});
    ASSERT_TRUE(small.ok());
    EXPECT_EQ(small->status, 201);
}

TEST(Server, OversizedChunkedBodyGets413) {
    auto options = LoopbackOptions();
    options.body_limit = 1024;
    TestServer server(ItemRoutes(), options);
    RawConnection raw(server.port());
    raw.Send("POST /items HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n" + std::string(0x800, 'a') +
             "\r\n0\r\n\r\n");
    EXPECT_EQ(raw.ReadResponse().rfind("HTTP/1.1 413", 0), 0u);
}

TEST(Server, OversizedHeadersGet431) {
    TestServer server(ItemRoutes());
    RawConnection raw(server.port());
    raw.Send("GET /items/1 HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20 * 1024, 'a') + "\r\n\r\n");
    EXPECT_EQ(raw.ReadResponse().rfind("HTTP/1.1 431", 0), 0u);
}

TEST(Server, KeepAliveServesManyRequestsOnOneConnection) {
    TestServer server(ItemRoutes());
    BlockingClient client;
    for (int i = 0; i < 5; ++i) {
        auto r = client.Get(server.Url("/items/" + std::to_string(i)));
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(r->status, 200);
    }
    EXPECT_EQ(server.Stats().connections_accepted, 1u);
    EXPECT_EQ(server.Stats().requests, 5u);
    EXPECT_EQ(client.Stats().connections_opened, 1u);
    EXPECT_EQ(client.Stats().connections_reused, 4u);
}

TEST(Server, SlowHeaderSenderIsDisconnectedWhileOthersAreServed) {
    TestServer server(ItemRoutes(), ShortTimeout(&ServerOptions::header_timeout));
    RawConnection slow(server.port());
    slow.Send("GET /items/1 HTTP/1.1\r\nHost: x\r\n");  // never finishes its headers
    BlockingClient client;
    EXPECT_EQ(client.Get(server.Url("/items/2"))->status, 200);
    EXPECT_TRUE(slow.WaitForClose());
    EXPECT_TRUE(WaitFor([&] { return server.Stats().timeouts >= 1; }));
}

TEST(Server, SilentConnectionIsDisconnectedAfterTheFirstByteTimeout) {
    auto options = ShortTimeout(&ServerOptions::first_byte_timeout);
    options.header_timeout = 60s;
    TestServer server(ItemRoutes(), options);
    RawConnection silent(server.port());
    EXPECT_TRUE(silent.WaitForClose());
}

TEST(Server, SlowBodySenderIsDisconnected) {
    TestServer server(ItemRoutes(), ShortTimeout(&ServerOptions::body_timeout));
    RawConnection slow(server.port());
    slow.Send("POST /items HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"name\":");
    EXPECT_TRUE(slow.WaitForClose());
    EXPECT_TRUE(WaitFor([&] { return server.Stats().timeouts >= 1; }));
}

TEST(Server, IdleKeepAliveConnectionIsClosedAfterTheIdleTimeout) {
    TestServer server(ItemRoutes(), ShortTimeout(&ServerOptions::idle_timeout));
    RawConnection raw(server.port());
    raw.Send("GET /items/1 HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(raw.ReadResponse().rfind("HTTP/1.1 200", 0), 0u);
    EXPECT_TRUE(raw.WaitForClose());
}

TEST(Server, MalformedHttpGets400AndTheServerKeepsServing) {
    TestServer server(ItemRoutes());
    RawConnection raw(server.port());
    raw.Send("THIS IS NOT HTTP\r\n\r\n");
    const auto response = raw.ReadResponse();
    EXPECT_EQ(response.rfind("HTTP/1.1 400", 0), 0u) << response;
    EXPECT_NE(response.find("bad_request"), std::string::npos);
    BlockingClient client;
    EXPECT_EQ(client.Get(server.Url("/items/1"))->status, 200);
}

TEST(Server, HandlerExceptionIs500AndTheConnectionStaysUsable) {
    TestServer server(ItemRoutes());
    BlockingClient client;
    auto r = client.Get(server.Url("/boom"));
    ASSERT_TRUE(AnsweredError(r, 500, "internal"));
    EXPECT_EQ(r->body.find("kaput"), std::string::npos);  // internals stay in the log
    EXPECT_EQ(client.Get(server.Url("/items/1"))->status, 200);
    EXPECT_EQ(client.Stats().connections_opened, 1u);
}

TEST(Server, ServesPlainTextAndHead) {
    TestServer server(ItemRoutes());
    BlockingClient client;
    auto r = client.Get(server.Url("/metrics"));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->body, "sched_up 1\n");
    EXPECT_EQ(r->headers.Get("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
    RawConnection raw(server.port());
    raw.Send("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /items/9 HTTP/1.1\r\nHost: x\r\n\r\n");
    const auto head = raw.ReadResponse(10s, /*to_head=*/true);
    EXPECT_NE(head.find("Content-Length: 11"), std::string::npos) << head;
    // The HEAD response has no body: the next bytes are the pipelined GET's response.
    const auto next = raw.ReadResponse();
    EXPECT_EQ(next.rfind("HTTP/1.1 200", 0), 0u) << next;
    EXPECT_NE(next.find("\"9\""), std::string::npos);
}

TEST(Server, BearerTokenAuthGuardsAuthenticatedRoutesOnly) {
    TestServer server(ItemRoutes(), LoopbackOptions(), BearerTokenAuth("s3cret"));
    BlockingClient client;
    auto none = client.Get(server.Url("/items/1"));
    ASSERT_TRUE(AnsweredError(none, 401, "unauthenticated"));
    EXPECT_EQ(none->headers.Get("WWW-Authenticate"), "Bearer");
    EXPECT_EQ(ErrorOf(none)["field"], "Authorization");
    EXPECT_EQ(client.Get(server.Url("/items/1"), {.bearer_token = "s3cre"})->status, 401);
    EXPECT_EQ(client.Get(server.Url("/items/1"), {.bearer_token = "s3cret!"})->status, 401);
    EXPECT_EQ(client.Get(server.Url("/items/1"), {.bearer_token = "s3cret"})->status, 200);
    EXPECT_EQ(client.Get(server.Url("/metrics"))->status, 200);  // public
    EXPECT_THROW(BearerTokenAuth(""), std::invalid_argument);
}

TEST(Server, AtTheCapANewConnectionShedsTheOneWaitingLongestForARequest) {
    auto options = LoopbackOptions();
    options.max_connections = 2;
    TestServer server(ItemRoutes(), options);
    RawConnection oldest(server.port(), "127.0.0.2");
    ASSERT_TRUE(WaitFor([&] { return server.Stats().connections_active == 1; }));
    RawConnection newer(server.port(), "127.0.0.3");
    newer.Send("GET /items/1 HTTP/1.1\r\nHost: x\r\n");  // a slow sender, header not complete
    ASSERT_TRUE(WaitFor([&] { return server.Stats().connections_active == 2; }));
    BlockingClient client;
    auto served = client.Get(server.Url("/items/1"));
    ASSERT_TRUE(served.ok()) << served.status().ToString();
    EXPECT_EQ(served->status, 200);
    EXPECT_TRUE(oldest.WaitForClose(2s));
    EXPECT_EQ(server.Stats().connections_shed, 1u);
    EXPECT_EQ(server.Stats().connections_rejected, 0u);
    newer.Send("\r\n");  // the newer one was kept and is served
    EXPECT_EQ(newer.ReadResponse().rfind("HTTP/1.1 200", 0), 0u);
}

TEST(Server, AtTheCapWithEveryConnectionBusyANewOneGets503) {
    std::atomic<int> entered{0};
    std::atomic<bool> release{false};
    Router router = ItemRoutes();
    router.Add(Method::kGet, "/slow", [&](Request&) -> net::awaitable<Response> {
        entered.fetch_add(1);
        co_await WaitUntilSet(release);
        co_return Response::Text("done");
    });
    auto options = LoopbackOptions();
    options.max_connections = 2;
    TestServer server(std::move(router), options);
    RawConnection first(server.port());
    RawConnection second(server.port());
    first.Send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
    second.Send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_TRUE(WaitFor([&] { return entered.load() == 2; }));
    BlockingClient client;
    auto refused = client.Get(server.Url("/items/1"));
    ASSERT_TRUE(AnsweredError(refused, 503, "unavailable"));
    EXPECT_EQ(server.Stats().connections_rejected, 1u);
    EXPECT_EQ(server.Stats().connections_shed, 0u);
    release = true;
    EXPECT_EQ(first.ReadResponse().rfind("HTTP/1.1 200", 0), 0u);
}

TEST(Server, GracefulStopFinishesInFlightRequestsAndClosesIdleOnes) {
    std::atomic<bool> entered{false};
    std::atomic<bool> release{false};
    Router router = ItemRoutes();
    router.Add(Method::kGet, "/slow", [&](Request&) -> net::awaitable<Response> {
        entered = true;
        co_await WaitUntilSet(release);
        co_return Response::Text("done");
    });
    auto options = LoopbackOptions();
    options.idle_timeout = 60s;
    TestServer server(std::move(router), options);

    RawConnection idle(server.port());
    idle.Send("GET /items/1 HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_EQ(idle.ReadResponse().rfind("HTTP/1.1 200", 0), 0u);

    BlockingClient client;
    auto in_flight = std::async(std::launch::async, [&] { return client.Get(server.Url("/slow")); });
    ASSERT_TRUE(WaitFor([&] { return entered.load(); }));

    server.BeginStop();
    EXPECT_TRUE(idle.WaitForClose());  // long before its 60 s idle timeout
    EXPECT_TRUE(WaitFor([&] { return !RawConnection::CanConnect(server.port()); }));
    EXPECT_EQ(in_flight.wait_for(0s), std::future_status::timeout);

    release = true;
    auto r = in_flight.get();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "done");
    EXPECT_EQ(r->headers.Get("Connection"), "close");
    server.Stop();
    EXPECT_EQ(server.Stats().connections_active, 0u);
}

TEST(Server, StartFailsWithTheAddressWhenThePortIsTaken) {
    TestServer first(ItemRoutes());
    net::io_context io;
    auto options = LoopbackOptions();
    options.listen = "127.0.0.1:" + std::to_string(first.port());
    Server second(io.get_executor(), options, ItemRoutes());
    try {
        second.Start();
        FAIL() << "expected a bind error";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(options.listen), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("in use"), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find("Success"), std::string::npos) << e.what();
    }
}

// Listen() takes the port before the process's slow start-up (migrations): a second server on
// it fails at once, and Start() afterwards accepts on the same port.
TEST(Server, ListenReservesThePortAndStartKeepsIt) {
    net::io_context io;
    auto options = LoopbackOptions();
    Server first(io.get_executor(), options, ItemRoutes());
    first.Listen();
    first.Listen();  // idempotent
    const auto port = first.port();
    ASSERT_NE(port, 0);
    auto taken = options;
    taken.listen = "127.0.0.1:" + std::to_string(port);
    Server second(io.get_executor(), taken, ItemRoutes());
    EXPECT_THROW(second.Listen(), std::runtime_error);
    first.Start();
    EXPECT_EQ(first.port(), port);
    first.Stop();
    io.run_for(std::chrono::milliseconds(200));
}

// Whether the rendered registry `text` holds `part`; either way the message shows both.
::testing::AssertionResult Renders(const std::string& text, std::string_view part) {
    auto result = text.find(part) != std::string::npos ? ::testing::AssertionSuccess() : ::testing::AssertionFailure();
    return result << "\"" << part << "\" in:\n" << text;
}

// One series per route pattern, whatever the paths asked for; unrouted requests are not timed.
TEST(TimeRoutes, TimesEachRouteUnderItsPattern) {
    Router router;
    router.Add(Method::kGet, "/jobs/{id}", [](Request&) { return Response::Text("job\n"); });
    router.Add(Method::kPost, "/jobs", [](Request&) { return Response::Text("made\n"); });
    MetricsRegistry registry;
    TestServer server(std::move(router), LoopbackOptions(), {}, &registry);
    BlockingClient client;
    const auto status = [](const Result<ClientResponse>& r) {
        return r.ok() ? r->status : 0;
    };
    for (const char* path : {"/jobs/1", "/jobs/2", "/jobs/3"}) ASSERT_EQ(status(client.Get(server.Url(path))), 200);
    ASSERT_EQ(status(client.PostJson(server.Url("/jobs"), nlohmann::json::object())), 200);
    ASSERT_EQ(status(client.Get(server.Url("/nope"))), 404);
    ASSERT_EQ(status(client.Get(server.Url("/jobs"))), 405);
    const auto text = registry.Render();
    EXPECT_TRUE(Renders(text, "sched_http_request_duration_seconds_count{method=\"GET\",route=\"/jobs/{id}\"} 3\n"));
    EXPECT_TRUE(Renders(text, "sched_http_request_duration_seconds_count{method=\"POST\",route=\"/jobs\"} 1\n"));
    EXPECT_FALSE(Renders(text, "/jobs/1"));
    EXPECT_FALSE(Renders(text, "/nope"));
    EXPECT_FALSE(Renders(text, "method=\"GET\",route=\"/jobs\""));
}

TEST(ExportServerStats, RegistersCountersWithThePrefixReadAtRender) {
    ServerStats s;
    MetricsRegistry registry;
    ExportServerStats(registry, "sched_http", [&s] { return s; });
    s.requests = 7;
    s.responses_4xx = 2;
    const auto text = registry.Render();
    EXPECT_TRUE(Renders(text, "# TYPE sched_http_requests_total counter\nsched_http_requests_total 7\n"));
    EXPECT_TRUE(Renders(text, "sched_http_responses_total{class=\"4xx\"} 2\n"));
    EXPECT_TRUE(Renders(text, "sched_http_responses_total{class=\"5xx\"} 0\n"));
}

}  // namespace
}  // namespace sched::http
