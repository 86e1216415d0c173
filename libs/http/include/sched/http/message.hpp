#pragma once

/// HTTP requests and responses as handlers see them: plain structs with no Beast types, so that
/// handler code and tests compile without Beast, and one uniform error body for every failure.
///
/// Error bodies always have this shape, whoever produces them (router, limits, auth,
/// handlers):
///
///     {"error": {"code": "invalid_argument", "message": "fire_id: expected an integer", "field": "fire_id"}}
///
/// The library's C++ namespace is `sched::http`, like its directory; Beast's HTTP namespace is
/// `sched::bhttp` (sched/common/beast.hpp), seen only by the files that speak HTTP on the wire.
///
/// `field` is null when the error is not about one field. `code` is the canonical code name
/// (sched::CodeName) or, for failures only HTTP has, "method_not_allowed",
/// "payload_too_large", "header_too_large" or "bad_request".

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/common/percent_encode.hpp"
#include "sched/common/status.hpp"

namespace sched::http {

enum class Method { kGet, kHead, kPost, kPut, kPatch, kDelete, kOptions, kOther };

/// "GET", "POST", ...; "OTHER" for kOther.
std::string_view MethodName(Method method);
/// The method for a request-line token; kOther for anything this library does not route.
Method ParseMethod(std::string_view token);

/// Header fields in arrival order. Names compare case-insensitively. Not thread-safe.
class Headers {
  public:
    using Field = std::pair<std::string, std::string>;

    /// Appends a field (a repeated name keeps every value).
    void Add(std::string name, std::string value);
    /// Replaces every field called `name` by one with `value`.
    void Set(std::string_view name, std::string value);
    /// The first value of `name`, if present.
    std::optional<std::string_view> Get(std::string_view name) const;

    std::vector<Field>::const_iterator begin() const { return fields_.begin(); }
    std::vector<Field>::const_iterator end() const { return fields_.end(); }
    std::size_t size() const { return fields_.size(); }

  private:
    std::vector<Field> fields_;
};

/// An expected failure of a request, on its way to becoming an error response. Handlers build
/// these from validation results and from Status values returned by the code they call.
struct ApiError {
    Code code = Code::kInvalidArgument;
    std::string message;
    std::string field;  ///< the offending field ("" when the error is not about one field)
};

/// The HTTP status for a canonical code. This is the one place where errors become statuses:
///   invalid_argument, out_of_range -> 400; unauthenticated -> 401; permission_denied -> 403;
///   not_found -> 404; already_exists, aborted, failed_precondition -> 409 (a conflict with the
///   current state, e.g. "busy"); resource_exhausted -> 429; cancelled -> 499; unimplemented
///   -> 501; unavailable -> 503; deadline_exceeded -> 504; internal (and anything else) -> 500.
int HttpStatusFor(Code code);

/// A request after routing. `path_params` is filled by the router.
struct Request {
    Method method = Method::kGet;
    std::string method_text;  ///< the method as received (for logs of kOther)
    std::string target;       ///< as received: path and query ("/v1/log?fire_id=3")
    std::string path;         ///< target before '?', not percent-decoded
    std::string query;        ///< target after '?' ("" when none)
    Headers headers;
    std::string body;
    std::string remote;  ///< peer "ip:port"
    bool keep_alive = true;
    std::vector<std::pair<std::string, std::string>> path_params;  ///< percent-decoded

    /// A path parameter by name ("id" for pattern "/jobs/{id}"); "" when the route has none.
    std::string_view PathParam(std::string_view name) const;
    /// A query parameter, percent-decoded ('+' is a space); nullopt when absent or badly encoded.
    std::optional<std::string> Query(std::string_view name) const;
    /// Nesting limit for Json(); the server sets it from its `json-max-depth` option.
    std::size_t json_max_depth = 64;

    /// The body parsed as JSON by ParseJson (with `json_max_depth`): kInvalidArgument naming the
    /// field path on malformed JSON, too deep nesting, a number out of range or an empty body.
    Result<nlohmann::json> Json() const;
};

/// A response a handler returns. Set headers freely; the server adds Content-Length,
/// Connection and Server.
struct Response {
    int status = 200;
    Headers headers;
    std::string body;

    /// `body` serialised, Content-Type application/json.
    static Response Json(const nlohmann::json& body, int status = 200);
    /// Plain text (e.g. Prometheus metrics: pass "text/plain; version=0.0.4; charset=utf-8").
    static Response Text(std::string body, int status = 200, std::string content_type = "text/plain; charset=utf-8");
    /// 204 without a body.
    static Response NoContent();
    /// The uniform error body with HttpStatusFor(error.code). 401s also carry
    /// `WWW-Authenticate: Bearer`.
    static Response Error(const ApiError& error);
    /// The uniform error body for `status` (a non-OK Status) about `field`.
    static Response Error(const Status& status, std::string field = {});
    /// The uniform error body with an explicit HTTP status and code name, for failures that
    /// only exist in HTTP (405, 413, 431, malformed requests).
    static Response Error(int http_status, std::string_view code, std::string message, std::string field = {});
};

/// Bounds ParseJson applies while it reads (sizes are bounded by whoever holds the bytes: the
/// server's body-limit, the client's body_limit).
struct JsonLimits {
    /// Objects and arrays nested deeper than this fail the parse. Everything nlohmann does on a
    /// value afterwards (dump, copy, compare) recurses once per level, so an unbounded depth
    /// would let a 140 KB body overflow the stack.
    std::size_t max_depth = 64;
};

/// Parses untrusted JSON text: the one parser for request bodies, peer responses and anything
/// else that arrives over the network (nothing else may call nlohmann::json::parse on such
/// bytes). It reads with nlohmann's iterative SAX parser and builds the document itself, so no
/// recursion depends on the input. It never throws for bad input; failures are
/// kInvalidArgument with this library's own message (never nlohmann's exception text), led by
/// the path of the offending value when there is one:
///   "params.x: number out of range (1e309)", "params.a[3]: nesting deeper than 64 levels",
///   "malformed JSON at byte 17: unexpected character '}'", "invalid UTF-8 at byte 9",
///   "expected a JSON document, got an empty body".
Result<nlohmann::json> ParseJson(std::string_view text, JsonLimits limits = {});

/// sched/common/percent_encode.hpp: a query value, a form field or a path segment.
using sched::PercentDecode;
using sched::PercentEncode;

}  // namespace sched::http
