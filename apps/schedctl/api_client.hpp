#pragma once

/// A blocking call to the REST API for a command-line tool: each call runs the project's
/// async `http::HttpClient` on a private io_context until it completes.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sched/common/duration.hpp"
#include "sched/common/status.hpp"
#include "sched/http/message.hpp"
#include "sched/http/url.hpp"

namespace sched::ctl {

struct ApiReply {
    int status = 0;
    std::string body;
    /// The body parsed (bounded, http::ParseJson); null when it is not JSON.
    nlohmann::json json;
    bool ok() const { return status >= 200 && status < 300; }
};

class ApiClient {
  public:
    /// `server` is the base URL ("http://host:8080"); `token` may be empty.
    ApiClient(http::Url server, std::string token, Micros timeout);

    /// Sends `method` to server + `path` (path and query, starting with '/') with `body` as JSON
    /// when given. Errors: the transport's (kUnavailable, kDeadlineExceeded ...), the message
    /// naming the URL. Any HTTP status is a reply.
    Result<ApiReply> Call(http::Method method, std::string_view path, const std::optional<nlohmann::json>& body = {});

    const http::Url& server() const { return server_; }

  private:
    http::Url server_;
    std::string token_;
    Micros timeout_;
};

/// A failed reply as one readable line: "HTTP 404 not_found: job 9 not found (field: id)"
/// from the API's `{"error": {code, message, field}}`, else the status and the body's start.
std::string DescribeError(const ApiReply& reply);

/// `text` percent-encoded for a query value.
std::string QueryEscape(std::string_view text);

}  // namespace sched::ctl
