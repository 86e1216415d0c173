#pragma once

/// How the master sends alert webhooks (trigger::Alerter decides what and when).

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sched/common/duration.hpp"
#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/http/address_policy.hpp"
#include "sched/http/client.hpp"

namespace sched::trigger {

/// Starts webhook calls without waiting for them.
class WebhookSender {
  public:
    using Headers = std::vector<std::pair<std::string, std::string>>;
    /// The HTTP status of the answer, or why there is none (kDeadlineExceeded, kUnavailable,
    /// kResourceExhausted for an answer over the body limit, kPermissionDenied for a refused
    /// address).
    using Done = std::function<void(Result<int>)>;
    virtual ~WebhookSender() = default;
    /// Starts one POST of `body` to `url` and returns at once. `done` runs exactly once, on any
    /// thread, possibly before Start returns, unless the sender is destroyed (or its I/O stopped)
    /// first. Thread-safe.
    virtual void Start(const std::string& url, const Headers& headers, std::string body, Done done) = 0;
};

/// The bounds of one webhook call.
struct WebhookLimits {
    Micros timeout = std::chrono::seconds(5);  ///< the whole call: connect, send, header and body
    Micros connect_timeout = std::chrono::seconds(2);
    Micros first_byte_timeout = std::chrono::seconds(3);  ///< request sent -> the answer's header
    std::size_t body_limit = std::size_t{64} * 1024;      ///< answer body bytes read, then discarded
    http::AddressPolicy addresses;                        ///< checked on every address connected to
    http::ClientTlsOptions tls;                           ///< https:// receivers (http-client.tls)
};

/// Webhooks through the pooled HTTP client on `executor` (the node's I/O threads): every call
/// ends within limits.timeout (a receiver answering slowly or trickling an endless body fails
/// kDeadlineExceeded), reads at most limits.body_limit body bytes, and connects only to addresses
/// limits.addresses allows (resolved names included, so DNS rebinding is refused). Thread-safe;
/// must outlive the calls it started (stop the executor's context first).
class HttpWebhookSender final : public WebhookSender {
  public:
    HttpWebhookSender(net::any_io_executor executor, WebhookLimits limits);
    void Start(const std::string& url, const Headers& headers, std::string body, Done done) override;
    /// Closes the idle pooled connections (before shutdown).
    void CloseIdle() { client_.CloseIdle(); }

  private:
    net::any_io_executor executor_;
    WebhookLimits limits_;
    http::HttpClient client_;
};

}  // namespace sched::trigger
