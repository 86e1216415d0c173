#include "peer_posts.hpp"

#include <chrono>
#include <exception>
#include <utility>

#include <spdlog/spdlog.h>

namespace sched::dispatch::impl {

net::awaitable<Result<nlohmann::json>> PostToPeer(http::HttpClient& http, std::string_view what,
                                                  const std::string& node_id, const std::string& address,
                                                  std::string_view path, nlohmann::json body,
                                                  const http::CallOptions& call) {
    try {
        const std::string url = http.PeerUrl(address, path);
        auto answer = co_await http.PostJson(url, std::move(body), call);
        if (!answer.ok()) {
            spdlog::debug("{}: {} ({}) not reached: {}", what, node_id, url, answer.status().ToString());
            co_return answer.status();
        }
        if (!answer->ok()) {
            // A wrong cluster token is the operator's to fix; anything else passes.
            const bool refused = answer->status == 401 || answer->status == 403;
            spdlog::log(refused ? spdlog::level::warn : spdlog::level::debug, "{}: {} ({}) answered {}", what, node_id,
                        url, answer->status);
            co_return Unavailable(std::string(what) + ": " + node_id + " answered " + std::to_string(answer->status));
        }
        auto json = answer->Json();
        if (json.ok() && json->is_object()) co_return std::move(*json);
        co_return nlohmann::json::object();
    } catch (const std::exception& e) {
        spdlog::warn("{}: {}: {}", what, node_id, e.what());
        co_return Internal(std::string(what) + ": " + e.what());
    }
}

struct RoundPosts::Shared {
    explicit Shared(const net::strand<net::any_io_executor>& s)
        : strand(s), done(s, std::chrono::steady_clock::time_point::max()) {}
    net::strand<net::any_io_executor> strand;
    int left = 0;            // on the strand only
    net::steady_timer done;  // cancelled by the last POST to end
};

RoundPosts::RoundPosts(const net::strand<net::any_io_executor>& strand) : shared_(std::make_shared<Shared>(strand)) {}

void RoundPosts::Spawn(net::awaitable<void> post) {
    ++shared_->left;
    auto run = [](std::shared_ptr<Shared> shared, net::awaitable<void> one) -> net::awaitable<void> {
        try {
            co_await std::move(one);
        } catch (const std::exception& e) {
            spdlog::warn("a POST to a node failed: {}", e.what());
        }
        if (--shared->left == 0) shared->done.cancel();
    };
    net::co_spawn(shared_->strand, run(shared_, std::move(post)), net::detached);
}

net::awaitable<void> RoundPosts::Wait() {
    if (shared_->left == 0) co_return;
    boost::system::error_code ec;
    co_await shared_->done.async_wait(net::redirect_error(net::use_awaitable, ec));
}

}  // namespace sched::dispatch::impl
