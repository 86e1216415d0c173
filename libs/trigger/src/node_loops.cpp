#include "sched/trigger/node.hpp"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "impl/node_impl.hpp"
#include "sched/protocol/fires_notice.hpp"
#include "sched/store/fire_metrics.hpp"

namespace sched::trigger {

using namespace std::chrono_literals;

void TriggerNode::OnStartedLeading(std::int64_t epoch) {
    spdlog::info("node {} is master at epoch {}", node_id_, epoch);
    std::lock_guard lock(mu_);
    leading_epoch_ = epoch;
    cv_.notify_all();
}

void TriggerNode::OnStoppedLeading(const lock::LeadershipEnd& end) {
    spdlog::warn("node {} stopped leading epoch {}: {} {}", node_id_, end.epoch, lock::StopReasonName(end.reason),
                 end.detail);
    // The master loop re-checks IsLeading(epoch) before every scan and every scan is fenced,
    // so clearing the epoch here is enough to stop master work.
    std::lock_guard lock(mu_);
    leading_epoch_.reset();
}

void TriggerNode::OnNewLeader(const std::string& node, std::int64_t epoch) {
    std::lock_guard lock(impl_->leader_mu);
    impl_->leader = std::make_pair(node, epoch);
}

void TriggerNode::MasterLoop() {
    while (!stopping_) {
        std::optional<std::int64_t> epoch;
        {
            std::unique_lock lock(mu_);
            cv_.wait_for(lock, 200ms, [this] { return stopping_ || leading_epoch_.has_value(); });
            epoch = leading_epoch_;
        }
        if (stopping_) break;
        if (!epoch || !impl_->elector->IsLeading(*epoch)) continue;
        auto report = impl_->master->Scan(*epoch);
        Micros sleep = config_.scheduler.scan_interval;
        if (report.ok()) {
            Notify(*report, *epoch);
            sleep = impl_->master->SleepAfter(*report);
        } else if (lock::IsLeaseLost(report.status())) {
            spdlog::warn("master scan refused: {}", report.status().ToString());
            std::lock_guard lock(mu_);
            if (leading_epoch_ == epoch) leading_epoch_.reset();
            continue;
        } else {
            spdlog::warn("master scan failed: {}", report.status().ToString());
        }
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, sleep, [this] { return stopping_.load(); });
    }
}

void TriggerNode::ClusterGaugesLoop() {
    // Every few seconds is enough for dashboards and alerts; the queries are aggregates over
    // indexes (pending/running/overdue, live executors) and the retained succeeded fires.
    constexpr auto kInterval = std::chrono::seconds(5);
    const auto ms = [](Micros d) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    };
    while (!stopping_) {
        std::optional<std::int64_t> epoch;
        {
            std::unique_lock lock(mu_);
            cv_.wait_for(lock, kInterval, [this] { return stopping_.load(); });
            epoch = leading_epoch_;
        }
        if (stopping_) break;
        if (!epoch || !impl_->elector->IsLeading(*epoch)) {
            std::lock_guard lock(impl_->gauges_mu);
            impl_->gauges.reset();
            continue;
        }
        auto read =
            store::ReadClusterGauges(*db_, ms(config_.scheduler.misfire_threshold), ms(config_.scheduler.executor_ttl));
        if (!read.ok()) {
            spdlog::warn("master cluster gauges: {}", read.status().ToString());
            continue;
        }
        std::lock_guard lock(impl_->gauges_mu);
        impl_->gauges = std::move(*read);
    }
}

void TriggerNode::PurgeLoop() {
    while (!stopping_) {
        std::optional<std::int64_t> epoch;
        {
            std::unique_lock lock(mu_);
            cv_.wait_for(lock, config_.scheduler.purge_interval, [this] { return stopping_.load(); });
            epoch = leading_epoch_;
        }
        if (stopping_) break;
        if (!epoch || !impl_->elector->IsLeading(*epoch)) continue;
        const auto started = std::chrono::steady_clock::now();
        auto round = impl_->purger->PurgeRound(*epoch, [this] { return stopping_.load(); });
        const auto elapsed_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
        if (!round.ok()) {
            // Batches committed before the error stay deleted; the rest is retried next interval.
            spdlog::warn("master history purge failed after {} ms: {}", elapsed_ms, round.status().ToString());
        } else if (round->by_age + round->by_cap > 0) {
            spdlog::info(
                "master history purge: {} fires deleted ({} by age, {} beyond the per-job cap) in {} batches, "
                "{} ms",
                round->by_age + round->by_cap, round->by_age, round->by_cap, round->batches, elapsed_ms);
        }
    }
}

void TriggerNode::AlertLoop() {
    while (!stopping_) {
        std::optional<std::int64_t> epoch;
        {
            std::unique_lock lock(mu_);
            cv_.wait_for(lock, config_.scheduler.alert_interval, [this] { return stopping_.load(); });
            epoch = leading_epoch_;
        }
        if (stopping_) break;
        if (!epoch || !impl_->elector->IsLeading(*epoch)) continue;
        auto round = impl_->alerter->Round(*epoch, [this] { return stopping_.load(); });
        if (!round.ok()) {
            // What committed stays; the cursor and the pending deliveries are retried next round.
            spdlog::warn("master alerts round failed: {}", round.status().ToString());
        } else if (round->deliveries_created + round->delivered + round->retried + round->failed > 0) {
            spdlog::info("master alerts: {} deliveries created, {} delivered, {} to retry, {} failed",
                         round->deliveries_created, round->delivered, round->retried, round->failed);
        }
    }
}

void TriggerNode::Notify(const ScanReport& report, std::int64_t epoch) {
    for (const auto& [node, fires] : report.assigned) {
        if (node == node_id_) {
            if (impl_->slave) impl_->slave->Notify(fires);
            continue;
        }
        auto it = report.node_addresses.find(node);
        if (it == report.node_addresses.end()) continue;
        protocol::FiresNotice notice = protocol::MakeFiresNotice(epoch, fires);
        const std::string url = "http://" + it->second + std::string(protocol::kFiresNoticePath);
        net::co_spawn(
            io_,
            [this, url, notice = std::move(notice)]() mutable -> net::awaitable<void> {
                http::CallOptions call{.timeout = std::chrono::seconds(1), .bearer_token = config_.token};
                auto r = co_await impl_->http->PostJson(url, protocol::ToJson(notice), call);
                if (r.ok() && protocol::RefusedDueAt(r->status, r->body)) {
                    // A node older than due_at (a rolling upgrade): the ids alone, which it
                    // reads itself, rather than its poll up to a second later.
                    notice.due_at.reset();
                    r = co_await impl_->http->PostJson(url, protocol::ToJson(notice), call);
                }
                // Best effort: the slave's poll finds the fires anyway.
                if (!r.ok() || !r->ok()) spdlog::debug("notify {} failed", url);
            },
            net::detached);
    }
}

void TriggerNode::HeartbeatLoop() {
    store::TriggerNodeRepository nodes(*db_);
    auto next_clock = std::chrono::steady_clock::now();
    while (!stopping_) {
        Status s = nodes.Heartbeat({.node_id = node_id_,
                                    .address = advertised_,
                                    .capacity = config_.slave.enabled ? config_.slave.capacity : 0,
                                    .state = config_.slave.enabled ? "active" : "standby"});
        if (s.ok() != db_ok_.load()) {
            if (s.ok()) {
                spdlog::info("node {}: database reachable again", node_id_);
            } else {
                spdlog::warn("node {}: heartbeat failed: {}", node_id_, s.ToString());
            }
        }
        db_ok_ = s.ok();
        if (config_.database.topology == db::Topology::kGalera) {
            // A Galera node that left the primary component, or is a donor, may still answer.
            auto facts = db::ReadServerFacts(*db_);
            const Status serving = facts.ok() ? db::CheckServing(*facts, config_.database.topology) : facts.status();
            std::lock_guard serving_lock(serving_mu_);
            if (serving.ok() != db_not_serving_.empty()) {
                if (serving.ok()) {
                    spdlog::info("node {}: database node serves again", node_id_);
                } else {
                    spdlog::warn("node {}: database node cannot serve: {}", node_id_, serving.message());
                }
            }
            db_not_serving_ = serving.ok() ? "" : serving.message();
        }
        if (std::chrono::steady_clock::now() >= next_clock) {
            if (Status c = time_->Refresh(); !c.ok()) spdlog::debug("DB clock refresh failed: {}", c.ToString());
            next_clock = std::chrono::steady_clock::now() + config_.clock_refresh;
        }
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, config_.heartbeat_interval, [this] { return stopping_.load(); });
    }
}

}  // namespace sched::trigger
