#include "sched/trigger/webhook_sender.hpp"

#include <algorithm>
#include <memory>

namespace sched::trigger {

namespace {

http::ClientOptions ClientOptionsFor(const WebhookLimits& limits) {
    http::ClientOptions o;
    o.connect_timeout = std::min(limits.connect_timeout, limits.timeout);
    o.request_timeout = limits.timeout;
    o.body_limit = limits.body_limit;
    o.max_idle_per_host = 2;
    o.user_agent = "sched-alerts";
    o.tls = limits.tls;
    // The policy is copied into the check: the client may outlive nothing else.
    o.address_check = [policy = limits.addresses](std::string_view host, const net::ip::address& address) {
        return policy.CheckAddress(host, address);
    };
    return o;
}

}  // namespace

HttpWebhookSender::HttpWebhookSender(net::any_io_executor executor, WebhookLimits limits)
    : executor_(std::move(executor)), limits_(std::move(limits)), client_(executor_, ClientOptionsFor(limits_)) {}

void HttpWebhookSender::Start(const std::string& url, const Headers& headers, std::string body, Done done) {
    http::ClientRequest request;
    request.method = http::Method::kPost;
    request.url = url;
    for (const auto& [name, value] : headers) request.headers.Add(name, value);
    request.body = std::move(body);
    http::CallOptions call;
    call.timeout = limits_.timeout;
    call.first_byte_timeout = std::min(limits_.first_byte_timeout, limits_.timeout);
    net::co_spawn(
        executor_,
        [this, request = std::move(request), call, done = std::move(done)]() mutable -> net::awaitable<void> {
            auto response = co_await client_.Send(std::move(request), call);
            if (response.ok()) {
                done(response->status);
            } else {
                done(response.status());
            }
        },
        net::detached);
}

}  // namespace sched::trigger
