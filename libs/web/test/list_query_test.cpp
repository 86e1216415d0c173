#include "impl/list_query.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace sched::web::impl {
namespace {

http::Request WithQuery(std::string query) {
    http::Request req;
    req.query = std::move(query);
    return req;
}

// The error a ReadPageRequest call set: {status, field, message}.
struct Rejection {
    int status = 0;
    std::string field;
    std::string message;
};

Rejection Rejected(const std::optional<http::Response>& error) {
    if (!error) return {};
    const auto body = nlohmann::json::parse(error->body);
    return {error->status, body["error"]["field"].get<std::string>(), body["error"]["message"].get<std::string>()};
}

TEST(ReadPageRequest, DefaultsWhenAbsentOrEmpty) {
    for (const char* query : {"", "limit=&cursor=", "limit", "&&"}) {
        std::optional<http::Response> error;
        const auto page = ReadPageRequest(WithQuery(query), {}, error);
        ASSERT_TRUE(page) << query;
        EXPECT_FALSE(error) << query;
        EXPECT_EQ(page->limit, 50) << query;
        EXPECT_EQ(page->cursor, 0) << query;
    }
    std::optional<http::Response> error;
    const auto page = ReadPageRequest(WithQuery(""), {}, error, {.max_limit = 10, .default_limit = 7});
    ASSERT_TRUE(page);
    EXPECT_EQ(page->limit, 7);
}

TEST(ReadPageRequest, LimitIsBetweenOneAndTheRouteMaximum) {
    for (const auto& [query, limit] :
         std::vector<std::pair<std::string, int>>{{"limit=1", 1}, {"limit=200", 200}, {"limit=37", 37}}) {
        std::optional<http::Response> error;
        const auto page = ReadPageRequest(WithQuery(query), {}, error);
        ASSERT_TRUE(page) << query;
        EXPECT_EQ(page->limit, limit);
    }
    for (const char* bad : {"0", "201", "-1", "5.0", "5x", "1e2", "0x10", "99999999999999999999"}) {
        std::optional<http::Response> error;
        EXPECT_FALSE(ReadPageRequest(WithQuery(std::string("limit=") + bad), {}, error)) << bad;
        const auto r = Rejected(error);
        EXPECT_EQ(r.status, 400) << bad;
        EXPECT_EQ(r.field, "limit") << bad;
        EXPECT_EQ(r.message, std::string("limit: expected an integer in 1..200, got \"") + bad + "\"");
    }
    std::optional<http::Response> error;
    EXPECT_FALSE(ReadPageRequest(WithQuery("limit=11"), {}, error, {.max_limit = 10}));
    EXPECT_EQ(Rejected(error).message, "limit: expected an integer in 1..10, got \"11\"");
}

TEST(ReadPageRequest, CursorIsANonNegativeInt64OrFromTheRouteMinimum) {
    {
        std::optional<http::Response> error;
        const auto page = ReadPageRequest(WithQuery("cursor=9223372036854775807"), {}, error);
        ASSERT_TRUE(page);
        EXPECT_EQ(page->cursor, INT64_MAX);
    }
    for (const char* bad : {"-1", "9223372036854775808", "abc", "1.5"}) {
        std::optional<http::Response> error;
        EXPECT_FALSE(ReadPageRequest(WithQuery(std::string("cursor=") + bad), {}, error)) << bad;
        const auto r = Rejected(error);
        EXPECT_EQ(r.field, "cursor") << bad;
        EXPECT_EQ(r.message, std::string("cursor: expected an integer in 0..9223372036854775807, got \"") + bad + "\"");
    }
    std::optional<http::Response> error;
    EXPECT_FALSE(ReadPageRequest(WithQuery("cursor=0"), {}, error, {.min_cursor = 1}));
    EXPECT_EQ(Rejected(error).field, "cursor");
    // A huge cursor text is rejected by its value, not stored.
    error.reset();
    EXPECT_FALSE(ReadPageRequest(WithQuery("cursor=" + std::string(100000, '9')), {}, error));
    EXPECT_EQ(Rejected(error).field, "cursor");
}

TEST(ReadPageRequest, UnknownParameterNamesAreRejectedBeforeAnyValue) {
    std::optional<http::Response> error;
    EXPECT_FALSE(ReadPageRequest(WithQuery("limit=0&colour=red"), {"app"}, error));
    auto r = Rejected(error);
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(r.field, "colour");
    EXPECT_EQ(r.message, "colour: unknown query parameter");

    // Filters the route names are known; the first unknown one in query order is reported.
    error.reset();
    EXPECT_TRUE(ReadPageRequest(WithQuery("app=a&limit=3"), {"app"}, error));
    EXPECT_FALSE(ReadPageRequest(WithQuery("app=a&x=1&y=2"), {"app"}, error));
    EXPECT_EQ(Rejected(error).field, "x");

    // A route without a cursor treats it as unknown.
    error.reset();
    EXPECT_FALSE(ReadPageRequest(WithQuery("cursor=5"), {}, error, {.cursor = false}));
    EXPECT_EQ(Rejected(error).message, "cursor: unknown query parameter");

    // Names are compared percent-decoded.
    error.reset();
    const auto page = ReadPageRequest(WithQuery("li%6Dit=4"), {}, error);
    ASSERT_TRUE(page);
    EXPECT_EQ(page->limit, 4);
}

TEST(ReadPageRequest, LimitIsReportedBeforeCursorWhenBothAreWrong) {
    for (const char* query : {"limit=0&cursor=-1", "cursor=-1&limit=0"}) {
        std::optional<http::Response> error;
        EXPECT_FALSE(ReadPageRequest(WithQuery(query), {}, error)) << query;
        EXPECT_EQ(Rejected(error).field, "limit") << query;
    }
}

TEST(ReadPageRequest, ARepeatedParameterCountsWithItsFirstOccurrence) {
    std::optional<http::Response> error;
    auto page = ReadPageRequest(WithQuery("limit=5&limit=500&cursor=7&cursor=x"), {}, error);
    ASSERT_TRUE(page);
    EXPECT_EQ(page->limit, 5);
    EXPECT_EQ(page->cursor, 7);
    EXPECT_FALSE(ReadPageRequest(WithQuery("limit=500&limit=5"), {}, error));
    EXPECT_EQ(Rejected(error).field, "limit");
}

TEST(RejectUnknownQuery, NamesTheFirstUnknownParameter) {
    EXPECT_FALSE(RejectUnknownQuery(WithQuery("days=3"), {"days"}));
    EXPECT_FALSE(RejectUnknownQuery(WithQuery(""), {}));
    const auto error = RejectUnknownQuery(WithQuery("days=3&day=4&z=1"), {"days"});
    const auto r = Rejected(error);
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(r.field, "day");
    EXPECT_EQ(r.message, "day: unknown query parameter");
}

}  // namespace
}  // namespace sched::web::impl
