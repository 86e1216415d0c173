// Schedule previews: /api/v1/jobs/{id}/next and /api/v1/schedules/validate (moved out of jobs_api.cpp).

#include <spdlog/spdlog.h>
#include <array>
#include <limits>
#include "impl/audit.hpp"
#include "impl/calendars.hpp"
#include "impl/context.hpp"
#include "impl/job_input.hpp"
#include "impl/list_query.hpp"
#include "impl/resource_routes.hpp"
#include "impl/views.hpp"
#include "sched/cron/misfire.hpp"
#include "sched/cron/planned_time.hpp"
#include "sched/cron/schedule.hpp"
#include "sched/http/json.hpp"
#include "sched/protocol/run.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"
#include "sched/store/registry.hpp"

namespace sched::web::impl {

namespace {

using http::Method;
using http::Request;
using http::Response;

constexpr std::array<std::string_view, 7> kScheduleFields = {"schedule_type", "schedule_expr", "time_zone",  "count",
                                                             "jitter_ms",     "dst_gap",       "dst_overlap"};

constexpr int kMaxPreview = 100;
constexpr std::size_t kMaxPreviewScan = 100'000;  // scheduled times a preview looks at
// The preview's `dst` section looks this far ahead for the zone's next offset change, and shows
// the fire times from half a day before it to half a day after.
constexpr std::int64_t kDstLookaheadMs = 400LL * 86'400'000;
constexpr std::int64_t kDstWindowMs = 12LL * 3'600'000;
constexpr std::size_t kMaxDstTimes = 24;

// The preview's `dst` section: the zone's next offset change within kDstLookaheadMs and the fire
// times around it, as the job's DST choice resolves them; null when there is none (UTC, a zone
// without DST) or the schedule is not cron (only cron times are local wall-clock times).
nlohmann::json DstPreviewJson(const cron::Schedule& schedule, std::int64_t now_ms) {
    if (schedule.type() != cron::ScheduleType::kCron || !schedule.zone()) return nullptr;
    const auto change = cron::NextOffsetChange(*schedule.zone(), now_ms, kDstLookaheadMs);
    if (!change) return nullptr;
    nlohmann::json times = nlohmann::json::array();
    nlohmann::json local = nlohmann::json::array();
    for (const auto t : schedule.PreviewFireTimes(std::max(now_ms, change->at_ms - kDstWindowMs), kMaxDstTimes)) {
        if (t > change->at_ms + kDstWindowMs) break;
        times.push_back(t);
        local.push_back(LocalIso(t, schedule.zone()));
    }
    const auto& o = schedule.options();
    return {{"transition", change->at_ms},
            {"transition_local", LocalIso(change->at_ms, schedule.zone())},
            {"kind", change->offset_after_s > change->offset_before_s ? "gap" : "overlap"},
            {"offset_before_s", change->offset_before_s},
            {"offset_after_s", change->offset_after_s},
            {"dst_gap", cron::DstGapName(o.dst_gap)},
            {"dst_overlap", cron::DstOverlapName(o.dst_overlap)},
            {"times", std::move(times)},
            {"local", std::move(local)}};
}

// What a preview needs of a job beyond its schedule; the default is a schedule being validated.
struct PreviewScope {
    const model::Job* job = nullptr;
    const cron::Calendar* calendar = nullptr;
};

// The preview asks cron::PlanTime about each scheduled time, as the master's planner does: `times`
// are when the runs start (jitter applied) of the times the calendar allows, `excluded` the
// nominal times it excludes, and `fires` every scheduled time looked at with its plan. Bounds
// (start_at, end_at, max_runs) cut the list as PlanBoundedJobFires does.
nlohmann::json PreviewJson(const cron::Schedule& schedule, const PreviewScope& scope, std::int64_t now_ms,
                           std::size_t count) {
    nlohmann::json times = nlohmann::json::array();
    nlohmann::json local = nlohmann::json::array();
    nlohmann::json excluded = nlohmann::json::array();
    nlohmann::json fires = nlohmann::json::array();
    nlohmann::json ends = nullptr;
    const model::Job* job = scope.job;
    std::int64_t runs_left = job && job->max_runs ? std::max<std::int64_t>(0, *job->max_runs - job->planned_runs)
                                                  : std::numeric_limits<std::int64_t>::max();
    std::int64_t from = now_ms;
    if (job && job->start_at && *job->start_at - 1 > from) from = *job->start_at - 1;
    // A fixed-delay preview assumes every run finishes the moment it starts.
    auto t = schedule.NextFireTime(from, from);
    for (std::size_t scanned = 0; t && times.size() < count && scanned < kMaxPreviewScan; ++scanned) {
        if (job && job->end_at && *t > *job->end_at) {
            ends = "end_at";
            break;
        }
        if (runs_left == 0) {
            ends = "max_runs";
            break;
        }
        const auto planned = cron::PlanTime(schedule, scope.calendar, *t);
        if (planned.excluded) {
            if (excluded.size() >= count) {
                t = schedule.NextFireTime(*t, *t);
                continue;
            }
            excluded.push_back(planned.nominal_ms);
        } else {
            times.push_back(planned.fire_ms);
            local.push_back(LocalIso(planned.fire_ms, schedule.zone()));
            --runs_left;
        }
        const auto dst = cron::DstCaseName(planned.dst);
        fires.push_back({{"nominal", planned.nominal_ms},
                         {"at", planned.fire_ms},
                         {"local", LocalIso(planned.fire_ms, schedule.zone())},
                         {"excluded", planned.excluded},
                         {"dst", dst.empty() ? nlohmann::json(nullptr) : nlohmann::json(dst)}});
        t = schedule.NextFireTime(*t, *t);
    }
    if (ends.is_null() && runs_left == 0 && job && job->max_runs) ends = "max_runs";
    const bool uses_hash = schedule.cron() && schedule.cron()->UsesHash();
    nlohmann::json out = {
        {"times", std::move(times)},
        {"local", std::move(local)},
        {"fires", std::move(fires)},
        {"time_zone", schedule.zone_name()},
        {"now", now_ms},
        {"jitter_ms", schedule.options().jitter_ms},
        {"uses_hash", uses_hash},
        {"hash_seed", schedule.options().job_id ? nlohmann::json(*schedule.options().job_id) : nullptr},
        {"dst", DstPreviewJson(schedule, now_ms)}};
    if (job) {
        out["excluded"] = std::move(excluded);
        out["calendar"] = job->calendar.empty() ? nlohmann::json(nullptr) : nlohmann::json(job->calendar);
        out["ends"] = std::move(ends);
    }
    return out;
}

}  // namespace

void AddScheduleRoutes(Routes& routes) {
    auto ctx = routes.context();

    routes.Add(Method::kGet, "/api/v1/jobs/{id}/next", Permission::kViewer, {{"count"}},
               GetHandler(ctx, IntQuery{.name = "count", .min = 1, .max = kMaxPreview, .fallback = 5}, JobError,
                          [](db::Database& db, std::int64_t id, std::int64_t count) -> Result<nlohmann::json> {
                              auto job = store::JobRepository(db).Get(id);
                              if (!job.ok()) return job.status();
                              auto schedule = StoredSchedule(*job);
                              if (!schedule.ok())
                                  return FailedPrecondition("stored schedule: " + schedule.status().message());
                              auto now = DbNowMs(db);
                              if (!now.ok()) return now.status();
                              std::optional<cron::Calendar> calendar;
                              if (!job->calendar.empty()) {
                                  auto loaded = LoadCalendar(db, job->calendar);
                                  if (!loaded.ok()) return FailedPrecondition(loaded.status().message());
                                  calendar = std::move(*loaded);
                              }
                              auto out =
                                  PreviewJson(*schedule, {.job = &*job, .calendar = calendar ? &*calendar : nullptr},
                                              *now, static_cast<std::size_t>(count));
                              out["job_id"] = id;
                              out["enabled"] = job->enabled;
                              return out;
                          }));

    routes.Add(Method::kPost, "/api/v1/schedules/validate", Permission::kViewer,
               [ctx](Request& req, const Principal&) -> net::awaitable<Response> {
                   auto body = req.Json();
                   if (!body.ok()) co_return Response::Error(body.status(), "body");
                   if (auto unknown = RejectUnknownFields(*body, kScheduleFields)) co_return *unknown;
                   http::JsonFields f(*body);
                   const std::string type = f.String("schedule_type");
                   const std::string expr = f.String("schedule_expr", "");
                   const std::string zone = f.String("time_zone", "UTC");
                   const auto count = f.Int("count", 5, {.min = 1, .max = kMaxPreview});
                   const auto jitter_ms = f.Int("jitter_ms", 0, {.min = 0, .max = cron::kMaxJitterMs});
                   const std::string dst_gap = f.String("dst_gap", "auto");
                   const std::string dst_overlap = f.String("dst_overlap", "auto");
                   if (f.error()) co_return Response::Error(*f.error());
                   if (expr.size() > kMaxExpr) {
                       co_return BadRequest("schedule_expr",
                                            "schedule_expr: at most " + std::to_string(kMaxExpr) + " characters");
                   }
                   std::string field;
                   // No job id: `H` resolves with the seed "" (the job's own preview shows its times).
                   const auto options =
                       cron::ParseScheduleOptions(std::nullopt, jitter_ms, dst_gap, dst_overlap, &field);
                   if (!options.ok()) co_return BadRequest(field, options.status().message());
                   auto schedule = cron::Schedule::Make(type, expr, zone.empty() ? "UTC" : zone, &field, *options);
                   if (!schedule.ok()) {
                       co_return BadRequest(field.empty() ? "schedule_expr" : field, schedule.status().message());
                   }
                   auto work = [](db::Database& db) {
                       return DbNowMs(db);
                   };
                   auto now = co_await WithDb(*ctx, work);
                   if (!now.ok()) co_return Response::Error(now.status());
                   auto out = PreviewJson(*schedule, {}, *now, static_cast<std::size_t>(count));
                   out["valid"] = true;
                   out["schedule_expr"] = schedule->expression();
                   co_return Response::Json(out);
               });
}

}  // namespace sched::web::impl
