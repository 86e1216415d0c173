// GET /api/v1/dashboard: the UI dashboard's aggregates (store::FireStats), cached briefly.

#include <chrono>
#include <map>
#include <mutex>

#include "impl/context.hpp"
#include "impl/list_query.hpp"
#include "sched/store/fire_stats.hpp"

namespace sched::web::impl {

namespace {

using http::Method;
using http::Request;
using http::Response;

struct Window {
    std::string_view name;
    std::int64_t window_ms;
    std::int64_t bucket_ms;
};
// At most 96 points per series: enough for a chart, small enough for a phone.
constexpr Window kWindows[] = {{"1h", 3'600'000, 60'000}, {"6h", 21'600'000, 300'000}, {"24h", 86'400'000, 900'000}};
// A fire still pending this long after it was due has missed its slave's timer: the dashboard
// calls it overdue. A healthy cluster dispatches within milliseconds.
constexpr std::int64_t kOverdueAfterMs = 5'000;
// Every open dashboard polls; the aggregates scan the window's fires, so many viewers share one
// read per window every few seconds.
constexpr auto kCacheFor = std::chrono::seconds(5);

nlohmann::json ActiveJson(const store::ActiveFire& f) {
    return {{"id", f.id},
            {"job_id", f.job_id},
            {"job_name", f.job_name},
            {"scheduled_time", f.scheduled_time},
            {"due_at", f.due_at},
            {"status", model::FireStatusName(f.status)},
            {"assigned_node", f.assigned_node ? nlohmann::json(*f.assigned_node) : nlohmann::json(nullptr)},
            {"executor_address", f.executor_address ? nlohmann::json(*f.executor_address) : nlohmann::json(nullptr)},
            {"started_at", f.started_at ? nlohmann::json(*f.started_at) : nlohmann::json(nullptr)}};
}

nlohmann::json ActivityJson(const store::FireActivity& a, std::string_view window) {
    nlohmann::json statuses = nlohmann::json::array();
    for (std::size_t i = 0; i < store::kFireStatusCount; ++i) {
        statuses.push_back(model::FireStatusName(static_cast<model::FireStatus>(i)));
    }
    nlohmann::json buckets = nlohmann::json::array();
    for (const auto& b : a.buckets) {
        nlohmann::json times = nlohmann::json::object();
        for (std::size_t i = 0; i < store::kFireStatusCount; ++i) {
            if (b.times[i] != 0)
                times[std::string(model::FireStatusName(static_cast<model::FireStatus>(i)))] = b.times[i];
        }
        buckets.push_back({{"start_ms", b.start_ms}, {"times", std::move(times)}});
    }
    nlohmann::json jobs = nlohmann::json::array();
    for (const auto& j : a.jobs) {
        const auto ended = j.Ended();
        jobs.push_back(
            {{"job_id", j.job_id},
             {"name", j.name},
             {"app", j.app},
             {"succeeded", j.succeeded},
             {"failed", j.failed},
             {"skipped", j.skipped},
             {"active", j.active},
             {"success_rate",
              ended > 0 ? nlohmann::json(static_cast<double>(j.succeeded) / static_cast<double>(ended)) : nullptr},
             {"lag_avg_ms", j.dispatched > 0 ? nlohmann::json(j.lag_sum_ms / j.dispatched) : nullptr},
             {"lag_max_ms", j.dispatched > 0 ? nlohmann::json(j.lag_max_ms) : nullptr},
             {"last_success_ms", j.last_success_ms ? nlohmann::json(*j.last_success_ms) : nullptr}});
    }
    nlohmann::json running = nlohmann::json::array();
    for (const auto& f : a.running_fires) running.push_back(ActiveJson(f));
    nlohmann::json overdue = nlohmann::json::array();
    for (const auto& f : a.overdue_fires) overdue.push_back(ActiveJson(f));
    return {{"window", window},
            {"now_ms", a.now_ms},
            {"from_ms", a.from_ms},
            {"bucket_ms", a.bucket_ms},
            {"statuses", std::move(statuses)},
            {"buckets", std::move(buckets)},
            {"jobs", std::move(jobs)},
            {"jobs_total", a.jobs_total},
            {"running", a.running},
            {"pending", a.pending},
            {"overdue", a.overdue},
            {"overdue_after_ms", kOverdueAfterMs},
            {"running_fires", std::move(running)},
            {"overdue_fires", std::move(overdue)}};
}

struct Cache {
    std::mutex mu;
    struct Entry {
        std::chrono::steady_clock::time_point at;
        nlohmann::json body;
    };
    std::map<std::string, Entry, std::less<>> entries;
};

}  // namespace

void AddDashboardRoutes(Routes& routes) {
    auto ctx = routes.context();
    auto cache = std::make_shared<Cache>();
    routes.Add(Method::kGet, "/api/v1/dashboard", Permission::kViewer, {{"window"}},
               [ctx, cache](Request& req, const Principal&) -> net::awaitable<Response> {
                   const std::string name = req.Query("window").value_or("1h");
                   const Window* window = nullptr;
                   for (const auto& w : kWindows) {
                       if (w.name == name) window = &w;
                   }
                   if (window == nullptr) {
                       co_return BadRequest("window",
                                            "window: expected one of 1h, 6h, 24h, got \"" + name.substr(0, 32) + "\"");
                   }
                   const auto now = std::chrono::steady_clock::now();
                   {
                       std::lock_guard lock(cache->mu);
                       if (auto it = cache->entries.find(name);
                           it != cache->entries.end() && now - it->second.at < kCacheFor) {
                           co_return Response::Json(it->second.body);
                       }
                   }
                   const store::ActivityQuery query{.window_ms = window->window_ms,
                                                    .bucket_ms = window->bucket_ms,
                                                    .overdue_after_ms = kOverdueAfterMs};
                   auto work = [query](db::Database& db) {
                       return store::FireStats(db).Activity(query);
                   };
                   auto activity = co_await WithDb(*ctx, work);
                   if (!activity.ok()) co_return Response::Error(activity.status());
                   nlohmann::json body = ActivityJson(*activity, window->name);
                   {
                       std::lock_guard lock(cache->mu);
                       cache->entries[name] = {now, body};
                   }
                   co_return Response::Json(body);
               });
}

}  // namespace sched::web::impl
