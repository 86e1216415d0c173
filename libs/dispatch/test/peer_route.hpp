#pragma once

// The other trigger nodes, for the tests of what posts to them (the master wake, the runs-ended
// notice): one internal route on a real HTTP server that refuses a request without the cluster
// token, as a node does, and keeps the JSON bodies it accepted.

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/http/testing/test_server.hpp"

namespace sched::dispatch::testing {

constexpr const char* kClusterToken = "cluster-secret";

class PeerRoute {
  public:
    /// The answer to an accepted body (a node's 202, or its error).
    using Answer = std::function<http::Response(const nlohmann::json& body)>;

    /// Held, it answers nothing until Release() (its server's thread waits).
    PeerRoute(std::string_view path, Answer answer, bool held = false)
        : answer_(std::move(answer)), held_(held), gate_(open_.get_future().share()) {
        http::Router router;
        router.Add(
            http::Method::kPost, path, [this](http::Request& req) { return Serve(req); }, http::Access::kPublic);
        server_ = std::make_unique<http::testing::TestServer>(std::move(router));
    }
    ~PeerRoute() { Release(); }
    PeerRoute(const PeerRoute&) = delete;
    PeerRoute& operator=(const PeerRoute&) = delete;

    void Release() {
        if (held_ && !released_.exchange(true)) open_.set_value();
    }
    std::string address() const { return "127.0.0.1:" + std::to_string(server_->port()); }
    /// Requests refused for want of the cluster token.
    int refused() const { return refused_.load(); }
    /// The accepted bodies, in the order they came.
    std::vector<nlohmann::json> bodies() const {
        std::lock_guard lock(mu_);
        return bodies_;
    }

  private:
    http::Response Serve(http::Request& req) {
        if (held_) gate_.wait();
        if (req.headers.Get("Authorization") != std::string("Bearer ") + kClusterToken) {
            ++refused_;
            return http::Response::Text("no\n", 401);
        }
        auto body = req.Json();
        const nlohmann::json parsed = body.ok() ? *body : nlohmann::json();
        {
            std::lock_guard lock(mu_);
            bodies_.push_back(parsed);
        }
        return answer_(parsed);
    }

    const Answer answer_;
    mutable std::mutex mu_;
    std::vector<nlohmann::json> bodies_;
    std::atomic<int> refused_{0};
    const bool held_;
    std::promise<void> open_;
    std::shared_future<void> gate_;
    std::atomic<bool> released_{false};
    std::unique_ptr<http::testing::TestServer> server_;  // last: stopped first
};

/// A loopback port nobody listens on any more: a node that died.
inline std::uint16_t ClosedPort() {
    net::io_context scratch;
    tcp::acceptor acceptor(scratch, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    return acceptor.local_endpoint().port();
}

}  // namespace sched::dispatch::testing
