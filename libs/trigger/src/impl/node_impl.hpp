#pragma once

/// TriggerNode's parts, shared by the files it is split over: node.cpp (lifecycle),
/// node_config.cpp (YAML), node_loops.cpp (leader callbacks and the background loops),
/// node_admin.cpp (the status, readiness and metrics it serves; its routes are impl::NodeAdmin,
/// impl/node_admin.hpp). Internal.

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "impl/node_admin.hpp"
#include "sched/http/client.hpp"
#include "sched/http/router.hpp"
#include "sched/http/server.hpp"
#include "sched/http/url.hpp"
#include "sched/lock/fenced.hpp"
#include "sched/lock/sql_lock_store.hpp"
#include "sched/store/registry.hpp"
#include "sched/trigger/node.hpp"

namespace sched::trigger {

namespace impl {

// Webhooks through the node's I/O threads, each call bounded by alert-timeout; the answer's body
// is read up to 64 KiB (a larger one fails the attempt) and discarded.
class HttpWebhookSender final : public WebhookSender {
  public:
    HttpWebhookSender(net::io_context& io, Micros timeout) : io_(io), client_(io.get_executor(), Options(timeout)) {
        call_.timeout = timeout;
    }
    Result<int> Post(const std::string& url, const Headers& headers, const std::string& body) override {
        http::ClientRequest request;
        request.method = http::Method::kPost;
        request.url = url;
        for (const auto& [name, value] : headers) request.headers.Add(name, value);
        request.body = body;
        std::optional<Result<int>> outcome;
        // Blocks this (alert) thread only; `request` and `outcome` outlive the call because
        // get() waits for it.
        auto done = net::co_spawn(
            io_,
            [&]() -> net::awaitable<void> {
                const http::CallOptions call = call_;
                auto response = co_await client_.Send(std::move(request), call);
                if (response.ok()) {
                    outcome.emplace(response->status);
                } else {
                    outcome.emplace(response.status());
                }
            },
            net::use_future);
        done.get();
        return outcome.value_or(Result<int>(Internal("webhook call ended without an outcome")));
    }
    void CloseIdle() { client_.CloseIdle(); }

  private:
    static http::ClientOptions Options(Micros timeout) {
        http::ClientOptions o;
        o.connect_timeout = std::min<Micros>(timeout, std::chrono::seconds(2));
        o.request_timeout = timeout;
        o.body_limit = std::size_t{64} * 1024;
        o.max_idle_per_host = 2;
        o.user_agent = "sched-alerts";
        return o;
    }
    net::io_context& io_;
    http::HttpClient client_;
    http::CallOptions call_;
};

}  // namespace impl

struct TriggerNode::Impl {
    std::unique_ptr<impl::NodeAdmin> admin;  // before router: the routes call into it
    http::Router router;
    std::unique_ptr<http::Server> server;
    std::unique_ptr<http::HttpClient> http;
    std::shared_ptr<db::Database> election_db;
    std::unique_ptr<lock::SqlLockStore> lock_store;
    std::unique_ptr<lock::LeaseElector> elector;
    std::unique_ptr<lock::Fence> fence;
    std::unique_ptr<Master> master;
    std::unique_ptr<HistoryPurger> purger;
    std::unique_ptr<impl::HttpWebhookSender> webhooks;
    std::unique_ptr<Alerter> alerter;
    std::unique_ptr<Slave> slave;
    std::vector<std::thread> io_threads;
    std::jthread elector_thread;
    std::thread master_thread;
    std::thread purge_thread;
    std::thread alert_thread;
    std::thread gauges_thread;
    std::mutex gauges_mu;
    std::optional<store::ClusterGauges> gauges;  // the last read while leading; reset on losing the lease
    std::thread heartbeat_thread;
    std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
    std::mutex leader_mu;
    std::optional<std::pair<std::string, std::int64_t>> leader;
};

}  // namespace sched::trigger
