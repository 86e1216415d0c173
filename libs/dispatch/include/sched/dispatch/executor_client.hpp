#pragma once

/// How a node calls an executor instance's `/v1/*` API, as one interface: the trigger's slave
/// (runs, kills, probes) and the web module's kill and log relay use it, and tests replace it
/// with a fake. The one implementation, SignedExecutorClient, signs every call with the app's
/// key (ExecutorSigner, docs/protocol.md) and sends it with a shared http::HttpClient.
///
/// Thread-safe: calls may overlap from any thread of the I/O context.

#include <memory>
#include <string>

#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/dispatch/executor_signer.hpp"
#include "sched/http/client.hpp"

namespace sched::dispatch {

class ExecutorClient {
  public:
    virtual ~ExecutorClient() = default;
    /// Sends `method url` with `body` (JSON text, or "" for none) to an executor instance of `app`.
    /// Every argument is taken by value (safe to pass named locals from a coroutine).
    virtual net::awaitable<Result<http::ClientResponse>> Send(std::string app, http::Method method, std::string url,
                                                              std::string body, http::CallOptions call) = 0;
};

/// Every call signed with the app's signing key (ExecutorSigner, docs/protocol.md).
class SignedExecutorClient final : public ExecutorClient {
  public:
    /// `http` must outlive this client.
    SignedExecutorClient(http::HttpClient& http, std::shared_ptr<ExecutorSigner> signer);
    net::awaitable<Result<http::ClientResponse>> Send(std::string app, http::Method method, std::string url,
                                                      std::string body, http::CallOptions call) override;

  private:
    http::HttpClient& http_;
    std::shared_ptr<ExecutorSigner> signer_;
};

}  // namespace sched::dispatch
