#include <gtest/gtest.h>

#include "sched/common/testing/config_error.hpp"
#include "sched/http/json.hpp"
#include "sched/http/message.hpp"
#include "sched/http/server_options.hpp"
#include "sched/http/url.hpp"

namespace sched::http {
namespace {

using namespace std::chrono_literals;

TEST(PercentEncode, KeepsUnreservedAndEncodesEveryOtherByteUpperCase) {
    EXPECT_EQ(PercentEncode("aZ09-._~"), "aZ09-._~");
    EXPECT_EQ(PercentEncode("a b&c=d/e?f+g%"), "a%20b%26c%3Dd%2Fe%3Ff%2Bg%25");
    EXPECT_EQ(PercentEncode(std::string("\x00\xff\xc3\xa9", 4)), "%00%FF%C3%A9");
    EXPECT_EQ(PercentEncode("host:7071"), "host%3A7071");
    EXPECT_EQ(PercentEncode("host:7071", ":"), "host:7071");
    for (const std::string text : {"", "plain", "a b+c", "10%/x?y=z&w", "\xe6\x97\xa5\xe6\x9c\xac"}) {
        EXPECT_EQ(PercentDecode(PercentEncode(text), true), text) << text;
    }
}

TEST(LocalHostname, IsNeverEmpty) {
    EXPECT_FALSE(LocalHostname().empty());
}

TEST(Url, ParsesHttpUrlsWithDefaultsAndRefusesOtherSchemes) {
    auto u = Url::Parse("http://web-1:8080/api/v1/callback?x=1");
    ASSERT_TRUE(u.ok());
    EXPECT_EQ(u->host, "web-1");
    EXPECT_EQ(u->port, 8080);
    EXPECT_EQ(u->target, "/api/v1/callback?x=1");
    auto v = Url::Parse("127.0.0.1:9");
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->target, "/");
    EXPECT_EQ(Url::Parse("http://h")->port, 80);
    EXPECT_EQ(Url::Parse("http://h:1/base/")->WithPath("/v1/run").ToString(), "http://h:1/base/v1/run");
    auto s = Url::Parse("https://h/x");
    ASSERT_TRUE(s.ok());
    EXPECT_TRUE(s->https);
    EXPECT_EQ(s->port, 443);
    EXPECT_EQ(s->ToString(), "https://h:443/x");
    EXPECT_EQ(Url::Parse("https://h:8443")->Origin(), "https://h:8443");
    EXPECT_EQ(Url::Parse("http://h:8443")->Origin(), "http://h:8443");
    EXPECT_FALSE(Url::Parse("ftp://h/").ok());
    EXPECT_FALSE(Url::Parse("http://h/a b").ok());
    EXPECT_FALSE(Url::Parse("http:///x").ok());
    // A refused host or port says what is wrong with it.
    const auto bad_port = Url::Parse("http://h:70000/x");
    ASSERT_FALSE(bad_port.ok());
    EXPECT_NE(std::string(bad_port.status().message()).find("port out of range 0..65535"), std::string::npos)
        << bad_port.status().message();
    EXPECT_EQ(std::string(bad_port.status().message()).rfind("expected an http or https URL", 0), 0U)
        << "the expectation first: callers match on it";
}

TEST(Request, QueryParametersAreDecoded) {
    Request r;
    r.query = "fire_id=12&name=a+b%21&flag&bad=%zz";
    EXPECT_EQ(r.Query("fire_id"), "12");
    EXPECT_EQ(r.Query("name"), "a b!");
    EXPECT_EQ(r.Query("flag"), "");
    EXPECT_EQ(r.Query("bad"), std::nullopt);
    EXPECT_EQ(r.Query("absent"), std::nullopt);
}

TEST(Request, MalformedJsonBodyIsAnInvalidArgumentNamingThePosition) {
    Request r;
    r.body = R"({"a": 1,)";
    auto j = r.Json();
    ASSERT_FALSE(j.ok());
    EXPECT_EQ(j.status().code(), Code::kInvalidArgument);
    EXPECT_NE(j.status().message().find("malformed JSON"), std::string::npos);
    r.body.clear();
    EXPECT_FALSE(r.Json().ok());
}

TEST(ParseJson, RefusesNestingBeyondTheLimitWithoutRecursing) {
    const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
    auto r = ParseJson(deep);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find("nesting deeper than 64 levels"), std::string::npos) << r.status().message();
    EXPECT_FALSE(ParseJson(std::string(1'000'000, '{')).ok());
    const auto at = [](std::size_t depth) {
        return std::string(depth, '[') + std::string(depth, ']');
    };
    EXPECT_TRUE(ParseJson(at(64)).ok());
    EXPECT_FALSE(ParseJson(at(65)).ok());
    EXPECT_TRUE(ParseJson(at(5), {.max_depth = 5}).ok());
    EXPECT_EQ(ParseJson(R"({"a":{"b":[{"c":[]}]}})", {.max_depth = 4}).status().message(),
              "a.b[0].c: nesting deeper than 4 levels");
}

TEST(ParseJson, NumberOutOfRangeNamesThePath) {
    EXPECT_EQ(ParseJson(R"({"params":{"x":1e309}})").status().message(), "params.x: number out of range (1e309)");
    EXPECT_EQ(ParseJson(R"({"a":[1,{"b":[2,-1E+999]}]})").status().message(),
              "a[1].b[1]: number out of range (-1E+999)");
    EXPECT_EQ(ParseJson("1e309").status().message(), "number out of range (1e309)");
    EXPECT_EQ(ParseJson("[" + std::string(400, '9') + "]").status().code(), Code::kInvalidArgument);
    // Large but finite, and integers beyond 64 bits, are numbers like any other.
    EXPECT_TRUE(ParseJson(R"({"x":1e308,"y":1e-400,"z":123456789012345678901234567890})").ok());
}

TEST(ParseJson, ErrorsAreOurOwnTextNeverTheLibrarys) {
    const std::pair<std::string, std::string> cases[] = {
        {"{\"a\":", "a: malformed JSON: unexpected end of input"},
        {"{\"a\":1,}", "malformed JSON at byte 8: unexpected character '}'"},
        {"{\"a\":[1,{\"b\":nul}]}", "a[1].b: malformed JSON at byte 17: unexpected character '}'"},
        {"{\"a\":\"\xff\"}", "a: invalid UTF-8 at byte 7"},
        {"{\"a\":\"x\ny\"}",
         "a: malformed JSON at byte 8: control character \\x0a (inside a string it must be escaped)"},
        {"{\"a\":1} x", "malformed JSON at byte 9: unexpected character 'x'"},
        {std::string("{\"a\":1}\0{\"b\":2}", 15), "malformed JSON at byte 8: NUL byte"},
        {"", "expected a JSON document, got an empty body"},
    };
    for (const auto& [text, want] : cases) {
        auto r = ParseJson(text);
        ASSERT_FALSE(r.ok()) << text;
        EXPECT_EQ(r.status().message(), want) << text;
        EXPECT_EQ(r.status().message().find("json.exception"), std::string::npos);
    }
    // A key as long as the body is cut in the path.
    auto long_key = ParseJson("{\"" + std::string(100'000, 'k') + "\":1e999}");
    ASSERT_FALSE(long_key.ok());
    EXPECT_LT(long_key.status().message().size(), 200u);
}

TEST(ParseJson, BuildsTheSameDocumentAsNlohmann) {
    const std::string text = R"({"s":"caf\u00e9 \"q\"","i":-7,"u":18446744073709551615,"f":1.5,"t":true,"n":null,)"
                             R"("a":[[],{},[1,[2,[3]]]],"o":{"k":{"k":"v"}},"dup":1,"dup":2})";
    auto r = ParseJson(text);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r, nlohmann::json::parse(text));
    EXPECT_EQ(*ParseJson(" 42 "), 42);
}

TEST(DumpWithin, SerialisesOnlyWithinTheBound) {
    const auto small = nlohmann::json::parse(R"({"a":[1,"two",{"b":null}]})");
    EXPECT_EQ(DumpWithin(small, 100), small.dump());
    EXPECT_EQ(DumpWithin(small, small.dump().size()), small.dump());
    EXPECT_FALSE(DumpWithin(small, small.dump().size() - 1).has_value());
    nlohmann::json big = nlohmann::json::array();
    for (int i = 0; i < 100'000; ++i) big.push_back(std::string(100, 'x'));
    EXPECT_FALSE(DumpWithin(big, 65535).has_value());
}

TEST(Response, ErrorBodyHasTheUniformShape) {
    const Response r = Response::Error(ApiError{Code::kNotFound, "no handler \"x\"", "handler"});
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(r.headers.Get("content-type"), "application/json");
    const auto body = nlohmann::json::parse(r.body);
    EXPECT_EQ(body["error"]["code"], "not_found");
    EXPECT_EQ(body["error"]["message"], "no handler \"x\"");
    EXPECT_EQ(body["error"]["field"], "handler");
    const auto unauth = Response::Error(Status(Code::kUnauthenticated, "bad token"));
    EXPECT_EQ(unauth.status, 401);
    EXPECT_EQ(unauth.headers.Get("WWW-Authenticate"), "Bearer");
    EXPECT_TRUE(nlohmann::json::parse(unauth.body)["error"]["field"].is_null());
}

TEST(HttpStatusFor, MapsCanonicalCodes) {
    EXPECT_EQ(HttpStatusFor(Code::kInvalidArgument), 400);
    EXPECT_EQ(HttpStatusFor(Code::kUnauthenticated), 401);
    EXPECT_EQ(HttpStatusFor(Code::kPermissionDenied), 403);
    EXPECT_EQ(HttpStatusFor(Code::kNotFound), 404);
    EXPECT_EQ(HttpStatusFor(Code::kAborted), 409);
    EXPECT_EQ(HttpStatusFor(Code::kFailedPrecondition), 409);
    EXPECT_EQ(HttpStatusFor(Code::kResourceExhausted), 429);
    EXPECT_EQ(HttpStatusFor(Code::kUnavailable), 503);
    EXPECT_EQ(HttpStatusFor(Code::kInternal), 500);
}

TEST(JsonFields, ReadsTypedFieldsWithDefaults) {
    const auto j =
        nlohmann::json::parse(R"({"id": 7, "name": "echo", "on": true, "kind": "b", "tags": ["x"], "p": {"k": 1}})");
    JsonFields f(j);
    EXPECT_EQ(f.Int("id", {.min = 0}), 7);
    EXPECT_EQ(f.Int("absent", 5), 5);
    EXPECT_EQ(f.String("name"), "echo");
    EXPECT_EQ(f.String("absent", "dflt"), "dflt");
    EXPECT_TRUE(f.Bool("on", false));
    EXPECT_EQ(f.Enum("kind", "a", {"a", "b"}), "b");
    EXPECT_EQ(f.StringList("tags"), std::vector<std::string>{"x"});
    EXPECT_EQ(f.Value("p", nullptr)["k"], 1);
    EXPECT_TRUE(f.ok());
}

TEST(JsonFields, FirstProblemNamesItsField) {
    struct Case {
        const char* json;
        const char* field;
        const char* message_part;
    };
    for (const auto& c : std::initializer_list<Case>{
             {R"({"name": "x"})", "id", "required"},
             {R"({"id": "7", "name": "x"})", "id", "expected an integer"},
             {R"({"id": 1.5, "name": "x"})", "id", "fractional"},
             {R"({"id": -1, "name": "x"})", "id", "in 0.."},
             {R"({"id": 18446744073709551615, "name": "x"})", "id", "expected an integer"},
             {R"({"id": 1, "name": ""})", "name", "must not be empty"},
             {R"({"id": 1, "name": 3})", "name", "expected a string"},
             {R"({"id": 1, "name": "x", "kind": "c"})", "kind", "expected one of a, b"},
         }) {
        const auto j = nlohmann::json::parse(c.json);
        JsonFields f(j);
        (void)f.Int("id", {.min = 0});
        (void)f.String("name");
        (void)f.Enum("kind", "a", {"a", "b"});
        ASSERT_TRUE(f.error().has_value()) << c.json;
        EXPECT_EQ(f.error()->field, c.field) << c.json;
        EXPECT_EQ(f.error()->code, Code::kInvalidArgument);
        EXPECT_NE(f.error()->message.find(c.message_part), std::string::npos) << f.error()->message;
    }
}

TEST(JsonFields, NonObjectBodyAndNestedPrefix) {
    JsonFields top(nlohmann::json::array());
    ASSERT_FALSE(top.ok());
    EXPECT_NE(top.error()->message.find("expected a JSON object"), std::string::npos);
    const auto params = nlohmann::json::parse(R"({"ms": "slow"})");
    JsonFields nested(params, "params");
    (void)nested.Int("ms", 0);
    ASSERT_FALSE(nested.ok());
    EXPECT_EQ(nested.error()->field, "params.ms");
}

TEST(ServerOptions, ReadsYamlKeysAndRejectsBadValues) {
    auto root = ConfigNode::LoadString(R"(
http:
  listen: "0.0.0.0:9000"
  body-limit: 2048
  header-timeout: 2s
  max-connections: 10
  max-connections-per-peer: 7
  first-byte-timeout: 1500ms
  json-max-depth: 20
  access-log: errors
)");
    const auto o = ServerOptions::FromYaml(root.Child("http"));
    EXPECT_EQ(o.listen, "0.0.0.0:9000");
    EXPECT_EQ(o.body_limit, 2048u);
    EXPECT_EQ(o.header_timeout, 2s);
    EXPECT_EQ(o.idle_timeout, 60s);
    EXPECT_EQ(o.max_connections, 10u);
    EXPECT_EQ(o.max_connections_per_peer, 7u);
    EXPECT_EQ(o.first_byte_timeout, 1500ms);
    EXPECT_EQ(o.json_max_depth, 20u);
    EXPECT_EQ(o.access_log, AccessLog::kErrors);
    EXPECT_NO_THROW(root.RejectUnknownKeys());

    const auto error_of = [](const char* yaml) {
        return sched::testing::ConfigErrorOf(
            [&] { (void)ServerOptions::FromYaml(ConfigNode::LoadString(yaml).Child("http")); });
    };
    EXPECT_EQ(error_of("http:\n  listen: nowhere\n").rfind("http.listen: expected host:port", 0), 0u);
    EXPECT_EQ(error_of("http:\n  body-limit: 0\n").rfind("http.body-limit:", 0), 0u);
    EXPECT_EQ(error_of("http:\n  idle-timeout: soon\n").rfind("http.idle-timeout:", 0), 0u);
}

}  // namespace
}  // namespace sched::http
