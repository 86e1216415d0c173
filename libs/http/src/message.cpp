#include "sched/http/message.hpp"

#include <algorithm>
#include <cctype>

#include "sched/common/name_table.hpp"
#include "sched/http/error_body.hpp"

namespace sched::http {

namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

}  // namespace

namespace {

// Methods are case-sensitive (RFC 9110 9.1): "get" is not GET, so the table's exact Parse fits.
constexpr auto kMethodNames =
    MakeNameTable<Method>({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "OTHER"});

}  // namespace

std::string_view MethodName(Method method) {
    const auto name = kMethodNames.Name(method);
    return name == "unknown" ? std::string_view("OTHER") : name;
}

Method ParseMethod(std::string_view token) {
    // "OTHER" is the name of the catch-all, not a method a client can send.
    const auto method = kMethodNames.Parse(token);
    return method.value_or(Method::kOther);
}

void Headers::Add(std::string name, std::string value) {
    fields_.emplace_back(std::move(name), std::move(value));
}

void Headers::Set(std::string_view name, std::string value) {
    std::erase_if(fields_, [&](const Field& f) { return EqualsIgnoreCase(f.first, name); });
    fields_.emplace_back(std::string(name), std::move(value));
}

std::optional<std::string_view> Headers::Get(std::string_view name) const {
    for (const auto& f : fields_) {
        if (EqualsIgnoreCase(f.first, name)) return std::string_view(f.second);
    }
    return std::nullopt;
}

int HttpStatusFor(Code code) {
    switch (code) {
        case Code::kOk:
            return 200;
        case Code::kInvalidArgument:
        case Code::kOutOfRange:
            return 400;
        case Code::kUnauthenticated:
            return 401;
        case Code::kPermissionDenied:
            return 403;
        case Code::kNotFound:
            return 404;
        case Code::kAlreadyExists:
        case Code::kAborted:
        case Code::kFailedPrecondition:
            return 409;
        case Code::kResourceExhausted:
            return 429;
        case Code::kCancelled:
            return 499;
        case Code::kUnimplemented:
            return 501;
        case Code::kUnavailable:
            return 503;
        case Code::kDeadlineExceeded:
            return 504;
        case Code::kInternal:
            return 500;
    }
    return 500;
}

std::string_view Request::PathParam(std::string_view name) const {
    for (const auto& [k, v] : path_params) {
        if (k == name) return v;
    }
    return {};
}

std::optional<std::string> Request::Query(std::string_view name) const {
    std::string_view rest = query;
    while (!rest.empty()) {
        const auto amp = rest.find('&');
        const auto pair = rest.substr(0, amp);
        rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
        const auto eq = pair.find('=');
        const auto key = PercentDecode(pair.substr(0, eq), true);
        if (!key || *key != name) continue;
        if (eq == std::string_view::npos) return std::string();
        return PercentDecode(pair.substr(eq + 1), true);
    }
    return std::nullopt;
}

Result<nlohmann::json> Request::Json() const {
    return ParseJson(body, JsonLimits{.max_depth = json_max_depth});
}

Response Response::Json(const nlohmann::json& body, int status) {
    Response r;
    r.status = status;
    r.headers.Set("Content-Type", "application/json");
    // Replace invalid UTF-8 instead of throwing: a handler echoing bad bytes must not become a 500.
    r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return r;
}

Response Response::Text(std::string body, int status, std::string content_type) {
    Response r;
    r.status = status;
    r.headers.Set("Content-Type", std::move(content_type));
    r.body = std::move(body);
    return r;
}

Response Response::NoContent() {
    Response r;
    r.status = 204;
    return r;
}

Response Response::Error(int http_status, std::string_view code, std::string message, std::string field) {
    Response r = Json(ErrorBody(code, std::move(message), std::move(field)), http_status);
    if (http_status == 401) r.headers.Set("WWW-Authenticate", "Bearer");
    return r;
}

Response Response::Error(const ApiError& error) {
    return Error(HttpStatusFor(error.code), CodeName(error.code), error.message, error.field);
}

Response Response::Error(const Status& status, std::string field) {
    return Error(ApiError{status.code(), status.message(), std::move(field)});
}

}  // namespace sched::http
