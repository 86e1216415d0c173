#include "api_client.hpp"

#include <cstdlib>
#include <exception>

#include "sched/common/net.hpp"
#include "sched/http/client.hpp"
#include "sched/http/error_body.hpp"
#include "sched/http/message.hpp"
#include "table.hpp"

namespace sched::ctl {

ApiClient::ApiClient(http::Url server, std::string token, Micros timeout)
    : server_(std::move(server)), token_(std::move(token)), timeout_(timeout) {}

Result<ApiReply> ApiClient::Call(http::Method method, std::string_view path,
                                 const std::optional<nlohmann::json>& body) {
    const std::string url = server_.WithPath(path).ToString();
    net::io_context io;
    http::ClientOptions options;
    options.connect_timeout = timeout_;
    options.request_timeout = timeout_;
    options.user_agent = "schedctl";
    // An https server with a private CA: the CA bundle to verify it against (else the system store).
    if (const char* ca = std::getenv("SCHED_CA_FILE"); ca != nullptr && *ca != '\0') options.tls.ca_file = ca;
    http::HttpClient client(io.get_executor(), options);

    http::ClientRequest request;
    request.method = method;
    request.url = url;
    if (body) {
        request.headers.Set("Content-Type", "application/json");
        request.body = body->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    http::CallOptions call;
    call.timeout = timeout_;
    call.bearer_token = token_;

    std::optional<Result<http::ClientResponse>> result;
    auto run = [&]() -> net::awaitable<void> {
        auto response = co_await client.Send(request, call);
        result.emplace(std::move(response));
    };
    net::co_spawn(io, run(), [](const std::exception_ptr& e) {
        if (e) std::rethrow_exception(e);
    });
    io.run();
    if (!result) return Status(Code::kInternal, url + ": the call did not complete");
    if (!result->ok()) {
        return Status(result->status().code(), "cannot reach " + url + ": " + result->status().message());
    }
    ApiReply reply;
    reply.status = (*result)->status;
    reply.body = (*result)->body;
    if (auto parsed = http::ParseJson(reply.body); parsed.ok()) reply.json = std::move(*parsed);
    return reply;
}

std::string DescribeError(const ApiReply& reply) {
    std::string out = "HTTP " + std::to_string(reply.status);
    if (const auto e = http::ParseErrorBody(reply.json)) {
        if (!e->code.empty()) out += " " + e->code;
        if (!e->message.empty()) out += ": " + e->message;
        if (!e->field.empty()) out += " (field: " + e->field + ")";
        return SanitizeCell(out);
    }
    std::string text = reply.body.substr(0, 200);
    if (!text.empty()) out += ": " + text;
    return SanitizeCell(out);
}

std::string QueryEscape(std::string_view text) {
    return http::PercentEncode(text);
}

}  // namespace sched::ctl
