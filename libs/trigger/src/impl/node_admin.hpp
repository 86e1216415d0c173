#pragma once

/// TriggerNode's HTTP surface as a unit of its own: the admin routes (/healthz, /readyz,
/// /metrics, /status) and the node-to-node ones (election nudge, peer notification, ended runs). Everything
/// it reads or wakes comes in through Hooks, so a test builds it without a database, an elector
/// or a server. Internal (TriggerNode owns one; docs/architecture/trigger-node.md).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sched/http/message.hpp"
#include "sched/http/router.hpp"
#include "sched/protocol/fires_notice.hpp"
#include "sched/protocol/master_wake.hpp"

namespace sched::trigger::impl {

class NodeAdmin {
  public:
    struct Hooks {
        /// The highest lease epoch of shard `shard` this node has observed (its own term or
        /// another holder's), nullopt before any or for a shard it does not know; a peer
        /// notification from an older epoch of the same shard is refused.
        std::function<std::optional<std::int64_t>(int shard)> observed_epoch;
        /// Wakes the local slave for the notice's fires (not called when the node runs no slave).
        std::function<void(protocol::FiresNotice)> wake_slave;
        /// Starts an election round now.
        std::function<void()> nudge;
        /// Wakes the masters of the shards this node leads; returns how many.
        std::function<int()> wake_masters;
        /// Drops the `running` records the local slave still holds for these ended fires;
        /// returns how many it dropped (0 when the node runs no slave).
        std::function<std::size_t(const std::vector<std::int64_t>&)> runs_ended;
        std::function<std::string()> status_json;
        /// "" when ready, else why not.
        std::function<std::string()> not_ready_reason;
        /// The Prometheus text exposition.
        std::function<std::string()> metrics;
    };

    explicit NodeAdmin(Hooks hooks);

    /// Adds every route to `router` (this object must outlive it).
    void AddRoutes(http::Router& router);

    http::Response Healthz(const http::Request& req) const;
    http::Response Readyz(const http::Request& req) const;
    http::Response MetricsText(const http::Request& req) const;
    http::Response Status(const http::Request& req) const;
    http::Response Nudge(const http::Request& req);
    /// POST /internal/v1/master/wake (protocol/master_wake.hpp): 202 {"woken": N}; 400 naming
    /// the field for a body other than none or `{}`.
    http::Response WakeMasters(const http::Request& req);
    /// POST /internal/v1/fires (protocol::FiresNotice): 202 and the slave woken; 400 naming the
    /// field; 409 naming epoch when the epoch is older than observed_epoch().
    http::Response Fires(const http::Request& req);
    /// POST /internal/v1/runs/ended (protocol::RunsEnded): 202 {"withdrawn": N}; 400 naming the
    /// field.
    http::Response RunsEnded(const http::Request& req);

    /// Notices refused as stale so far.
    std::uint64_t stale_notices() const { return stale_notices_.load(); }

  private:
    Hooks hooks_;
    std::atomic<std::uint64_t> stale_notices_{0};  // handlers run on several I/O threads
};

}  // namespace sched::trigger::impl
