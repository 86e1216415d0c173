// Executors and the trigger cluster: /api/v1/executors, /api/v1/cluster.

#include <algorithm>
#include <map>

#include "impl/context.hpp"
#include "impl/list_query.hpp"
#include "sched/api/cluster.hpp"
#include "sched/lock/sql_lock_store.hpp"
#include "sched/store/registry.hpp"
#include "sched/store/shard.hpp"

namespace sched::web::impl {

namespace {

using http::Method;
using http::Request;
using http::Response;

std::int64_t Ms(Micros d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// The shard count the cluster recorded, bounded to what a node accepts: 1 before any trigger
// node recorded one (an unsharded cluster), and never more rows read than kMaxShards.
Result<int> ShardCount(db::Database& db) {
    auto recorded = db.Run([](soci::session& s) { return store::ReadShardCount(s); });
    if (!recorded.ok()) return recorded.status();
    return std::clamp(recorded->value_or(1), 1, store::kMaxShards);
}

// Shard `index` as its lease row says (nullopt: the row does not exist yet). Remaining time and
// the start of the holding are measured against the clock of the statement that read the row
// (lock_store.hpp).
api::ClusterShardView ShardOf(int index, const std::string& lease, const std::optional<lock::LockRow>& row) {
    api::ClusterShardView out{.shard = index, .lease = lease};
    if (!row) return out;
    out.epoch = row->epoch;
    if (!row->Available()) {
        out.leader = *row->owner;
        out.lease_remaining_ms = (row->lease_until_us - row->db_now_us) / 1000;
        if (row->held_since_us > 0) out.held_since = row->held_since_us / 1000;
    }
    return out;
}

}  // namespace

void AddClusterRoutes(Routes& routes) {
    auto ctx = routes.context();

    routes.Add(Method::kGet, "/api/v1/executors", Permission::kViewer, {{"app"}},
               [ctx](Request& req, const Principal&) -> net::awaitable<Response> {
                   std::optional<std::string> app;
                   if (auto a = req.Query("app"); a && !a->empty()) app = *a;
                   const std::int64_t ttl_ms = Ms(ctx->options.executor_ttl);
                   auto work = [app, ttl_ms](db::Database& db) -> Result<nlohmann::json> {
                       auto now = DbNowMs(db);
                       if (!now.ok()) return now.status();
                       auto instances = store::ExecutorRepository(db).List(app);
                       if (!instances.ok()) return instances.status();
                       // Liveness by the DB clock, the same judgement the slaves' routing makes.
                       std::map<std::string, api::ExecutorAppView> apps;
                       api::ExecutorListView out{.executor_ttl_ms = ttl_ms, .now = *now};
                       for (const auto& e : *instances) {
                           const bool alive = e.last_heartbeat_ms > *now - ttl_ms;
                           out.items.push_back({.app = e.app,
                                                .address = e.address,
                                                .handlers = e.handlers,
                                                .capacity = e.capacity,
                                                .running = e.running,
                                                .last_heartbeat_ms = e.last_heartbeat_ms,
                                                .heartbeat_age_ms = *now - e.last_heartbeat_ms,
                                                .registered_at_ms = e.registered_at_ms,
                                                .alive = alive});
                           auto& group = apps[e.app];
                           group.app = e.app;
                           ++group.instances;
                           if (alive) {
                               ++group.alive_instances;
                               for (const auto& h : e.handlers) {
                                   auto& hs = group.handlers;
                                   if (std::find(hs.begin(), hs.end(), h) == hs.end()) hs.push_back(h);
                               }
                           }
                       }
                       for (auto& [name, group] : apps) {
                           std::sort(group.handlers.begin(), group.handlers.end());
                           out.apps.push_back(std::move(group));
                       }
                       return api::ToJson(out);
                   };
                   auto listed = co_await WithDb(*ctx, work);
                   if (!listed.ok()) co_return Response::Error(listed.status());
                   co_return Response::Json(*listed);
               });

    routes.Add(Method::kGet, "/api/v1/cluster", Permission::kViewer,
               [ctx](Request&, const Principal&) -> net::awaitable<Response> {
                   const std::int64_t ttl_ms = Ms(ctx->options.node_ttl);
                   const std::string lease_name = ctx->options.lease_name;
                   auto work = [ttl_ms, lease_name](db::Database& db) -> Result<nlohmann::json> {
                       lock::SqlLockStore locks(db.shared_from_this());
                       auto lease = locks.Read(lease_name);
                       if (!lease.ok()) return lease.status();
                       auto shard_count = ShardCount(db);
                       if (!shard_count.ok()) return shard_count.status();
                       auto nodes = store::TriggerNodeRepository(db).List();
                       if (!nodes.ok()) return nodes.status();
                       auto now_ms = DbNowMs(db);
                       if (!now_ms.ok()) return now_ms.status();
                       api::ClusterView out{.node_ttl_ms = ttl_ms, .now = *now_ms, .shard_count = *shard_count};
                       // One point read per shard row (at most kMaxShards); shard 0's is the
                       // row read above.
                       out.shards.push_back(ShardOf(0, lease_name, *lease));
                       for (int i = 1; i < *shard_count; ++i) {
                           const std::string name = store::ShardLeaseName(lease_name, i);
                           auto row = locks.Read(name);
                           if (!row.ok()) return row.status();
                           out.shards.push_back(ShardOf(i, name, *row));
                       }
                       if (*lease) {
                           const auto& row = **lease;
                           out.epoch = row.epoch;
                           // Ages against the clock of the same statement that read the row (lock_store.hpp).
                           out.lease_age_ms = (row.db_now_us - row.update_time_us) / 1000;
                           if (!row.Available()) {
                               out.leader = *row.owner;
                               out.lease_remaining_ms = (row.lease_until_us - row.db_now_us) / 1000;
                           }
                       }
                       for (const auto& n : *nodes) {
                           std::vector<std::int64_t> led;
                           for (const auto& shard : out.shards) {
                               if (shard.leader == n.node_id) led.push_back(shard.shard);
                           }
                           out.nodes.push_back({.node_id = n.node_id,
                                                .address = n.address,
                                                .state = n.state,
                                                .capacity = n.capacity,
                                                .started_at_ms = n.started_at_ms,
                                                .last_heartbeat_ms = n.last_heartbeat_ms,
                                                .heartbeat_age_ms = *now_ms - n.last_heartbeat_ms,
                                                .alive = n.state != "stopped" && n.last_heartbeat_ms > *now_ms - ttl_ms,
                                                .leader = out.leader && *out.leader == n.node_id,
                                                .shards_led = std::move(led)});
                       }
                       return api::ToJson(out);
                   };
                   auto cluster = co_await WithDb(*ctx, work);
                   if (!cluster.ok()) co_return Response::Error(cluster.status());
                   co_return Response::Json(*cluster);
               });
}

}  // namespace sched::web::impl
