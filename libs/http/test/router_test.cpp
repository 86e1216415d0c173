#include "sched/http/router.hpp"

#include <future>
#include <stdexcept>

#include <gtest/gtest.h>

namespace sched::http {
namespace {

// Runs the matched handler to completion and returns its body, so tests see which route won.
std::string Call(const Router::Match& match, Request req = {}) {
    if (match.handler == nullptr) return "<no handler>";
    net::io_context io;
    req.path_params = match.params;
    auto result = net::co_spawn(
        io,
        [&]() -> net::awaitable<Response> {
            Response r = co_await (*match.handler)(req);
            co_return r;
        },
        net::use_future);
    io.run();
    return result.get().body;
}

Router Sample() {
    Router r;
    r.Add(Method::kGet, "/jobs", [](Request&) { return Response::Text("list"); });
    r.Add(Method::kPost, "/jobs", [](Request&) { return Response::Text("create"); });
    r.Add(Method::kGet, "/jobs/{id}",
          [](Request& q) { return Response::Text("get " + std::string(q.PathParam("id"))); });
    r.Add(Method::kGet, "/jobs/search", [](Request&) { return Response::Text("search"); });
    r.Add(Method::kDelete, "/jobs/{id}", [](Request&) { return Response::Text("delete"); });
    r.Add(
        Method::kGet, "/ui/{file...}",
        [](Request& q) { return Response::Text("ui " + std::string(q.PathParam("file"))); }, Access::kPublic);
    r.Add(Method::kGet, "/async/{x}", [](Request& q) -> net::awaitable<Response> {
        co_return Response::Text("async " + std::string(q.PathParam("x")));
    });
    return r;
}

TEST(Router, MatchesLiteralsAndExtractsDecodedParameters) {
    const Router r = Sample();
    EXPECT_EQ(Call(r.Find(Method::kGet, "/jobs")), "list");
    EXPECT_EQ(Call(r.Find(Method::kPost, "/jobs")), "create");
    EXPECT_EQ(Call(r.Find(Method::kGet, "/jobs/42")), "get 42");
    EXPECT_EQ(Call(r.Find(Method::kGet, "/jobs/a%20b")), "get a b");
    EXPECT_EQ(Call(r.Find(Method::kGet, "/async/7")), "async 7");
}

TEST(Router, LiteralSegmentWinsOverParameterWhateverTheOrderOfAdding) {
    const Router r = Sample();
    EXPECT_EQ(Call(r.Find(Method::kGet, "/jobs/search")), "search");
}

TEST(Router, RestParameterTakesTheRemainingSegments) {
    const Router r = Sample();
    const auto m = r.Find(Method::kGet, "/ui/css/site.css");
    EXPECT_EQ(m.access, Access::kPublic);
    EXPECT_EQ(Call(m), "ui css/site.css");
    EXPECT_EQ(r.Find(Method::kGet, "/ui").handler, nullptr);
}

TEST(Router, UnknownPathHasNoHandlerAndNoAllow) {
    const Router r = Sample();
    for (const auto* path : {"/nope", "/jobs/1/2", "/jobs//", "", "jobs", "/jobs/%zz"}) {
        const auto m = r.Find(Method::kGet, path);
        EXPECT_EQ(m.handler, nullptr) << path;
        EXPECT_EQ(m.allow, "") << path;
    }
}

TEST(Router, WrongMethodListsTheAllowedOnes) {
    const Router r = Sample();
    const auto m = r.Find(Method::kPut, "/jobs/3");
    EXPECT_EQ(m.handler, nullptr);
    EXPECT_EQ(m.allow, "GET, HEAD, DELETE");
    EXPECT_EQ(r.Find(Method::kOther, "/jobs").allow, "GET, HEAD, POST");
}

TEST(Router, HeadIsServedByTheGetRoute) {
    const Router r = Sample();
    EXPECT_EQ(Call(r.Find(Method::kHead, "/jobs/5")), "get 5");
}

TEST(Router, RoutesAreAuthenticatedUnlessMarkedPublic) {
    const Router r = Sample();
    EXPECT_EQ(r.Find(Method::kGet, "/jobs").access, Access::kAuthenticated);
}

TEST(Router, RejectsMalformedAndDuplicatePatterns) {
    Router r = Sample();
    const auto add = [&](Method m, const char* pattern) {
        r.Add(m, pattern, [](Request&) { return Response::NoContent(); });
    };
    EXPECT_THROW(add(Method::kGet, "jobs"), std::invalid_argument);
    EXPECT_THROW(add(Method::kGet, "/a/{rest...}/b"), std::invalid_argument);
    EXPECT_THROW(add(Method::kGet, "/a/{}"), std::invalid_argument);
    EXPECT_THROW(add(Method::kGet, "/a/x{y}"), std::invalid_argument);
    EXPECT_THROW(add(Method::kGet, "/jobs/{other}"), std::invalid_argument);  // same shape as /jobs/{id}
    EXPECT_NO_THROW(add(Method::kPut, "/jobs/{other}"));
}

}  // namespace
}  // namespace sched::http
