#include "sched/dispatch/executor_client.hpp"

namespace sched::dispatch {

SignedExecutorClient::SignedExecutorClient(http::HttpClient& http, std::shared_ptr<ExecutorSigner> signer)
    : http_(http), signer_(std::move(signer)) {}

net::awaitable<Result<http::ClientResponse>> SignedExecutorClient::Send(std::string app, http::Method method,
                                                                        std::string url, std::string body,
                                                                        http::CallOptions call) {
    co_return co_await signer_->Send(http_, std::move(app), method, std::move(url), std::move(body), std::move(call));
}

}  // namespace sched::dispatch
