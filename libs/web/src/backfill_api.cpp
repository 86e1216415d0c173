// Backfills: POST /api/v1/jobs/{id}/backfill, GET /api/v1/jobs/{id}/backfills,
// GET /api/v1/backfills/{id}, POST /api/v1/backfills/{id}/cancel (docs/api.md "Backfills").

#include <array>
#include <memory>

#include <spdlog/spdlog.h>

#include "impl/audit.hpp"
#include "impl/context.hpp"
#include "impl/list_query.hpp"
#include "impl/resource_routes.hpp"
#include "sched/api/backfills.hpp"
#include "sched/cron/schedule.hpp"
#include "sched/cron/time_zone.hpp"
#include "sched/cron/times_in_range.hpp"
#include "sched/http/json.hpp"
#include "sched/store/backfill.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"

namespace sched::web::impl {

namespace {

using http::Method;
using http::Request;
using http::Response;

constexpr std::array<std::string_view, 5> kBackfillFields = {"from", "to", "overlap", "max_parallel", "dry_run"};
/// Scheduled times one backfill may cover; the range is counted up to kCountCap to say how many
/// it holds when it is over.
constexpr std::size_t kMaxTimes = 10000;
constexpr std::size_t kCountCap = 100000;
constexpr int kMaxParallel = 100;
constexpr int kDefaultParallel = 4;
/// Running backfills one job may have at once.
constexpr int kMaxRunningPerJob = 10;

struct BackfillInput {
    std::int64_t from = 0;
    std::int64_t to = 0;
    store::BackfillOverlap overlap = store::BackfillOverlap::kSerial;
    int max_parallel = 1;
    bool dry_run = false;
};

// An instant field: epoch ms (a JSON integer) or an ISO-8601 string (UTC unless it has an offset).
std::optional<std::int64_t> ReadInstant(const nlohmann::json& body, std::string_view key, http::JsonFields& f) {
    const auto it = body.find(std::string(key));
    if (it == body.end() || it->is_null()) {
        f.Fail(key, std::string(key) + ": required (epoch milliseconds or ISO-8601)");
        return std::nullopt;
    }
    std::string text;
    if (it->is_number_integer()) {
        if (it->get<std::int64_t>() < 0) {
            f.Fail(key, std::string(key) + ": must not be negative");
            return std::nullopt;
        }
        text = std::to_string(it->get<std::int64_t>());
    } else if (it->is_string()) {
        text = it->get<std::string>();
        if (text.size() > 64) {
            f.Fail(key, std::string(key) + ": at most 64 characters");
            return std::nullopt;
        }
    } else {
        f.Fail(key, std::string(key) + ": expected epoch milliseconds (integer) or an ISO-8601 string");
        return std::nullopt;
    }
    auto parsed = cron::ParseInstant(text, cron::UtcZone());
    if (!parsed.ok()) {
        f.Fail(key, std::string(key) + ": " + parsed.status().message());
        return std::nullopt;
    }
    return *parsed;
}

std::optional<http::ApiError> ReadBackfillInput(const nlohmann::json& body, BackfillInput& out) {
    http::JsonFields f(body);
    const auto from = ReadInstant(body, "from", f);
    const auto to = ReadInstant(body, "to", f);
    const std::string overlap = f.Enum("overlap", "serial", {"serial", "parallel"});
    out.overlap = store::ParseBackfillOverlap(overlap).value_or(store::BackfillOverlap::kSerial);
    const bool parallel = out.overlap == store::BackfillOverlap::kParallel;
    out.max_parallel = static_cast<int>(
        f.Int("max_parallel", parallel ? kDefaultParallel : 1, {.min = 1, .max = parallel ? kMaxParallel : 1}));
    out.dry_run = f.Bool("dry_run", false);
    if (f.error()) return f.error();
    out.from = *from;
    out.to = *to;
    if (out.from >= out.to) return http::ApiError{Code::kInvalidArgument, "to: must be after from", "to"};
    return std::nullopt;
}

nlohmann::json BackfillJson(const store::Backfill& b, const store::BackfillFireCounts& counts) {
    return api::ToJson(api::BackfillView{.id = b.id,
                                         .job_id = b.job_id,
                                         .from = b.range_from,
                                         .to = b.range_to,
                                         .overlap = std::string(store::BackfillOverlapName(b.overlap)),
                                         .max_parallel = b.max_parallel,
                                         .state = std::string(store::BackfillStateName(b.state)),
                                         .cursor = b.cursor_ms,
                                         .counts = {.planned = b.planned,
                                                    .existing = b.existing,
                                                    .created = b.created,
                                                    .running = counts.running,
                                                    .succeeded = counts.succeeded,
                                                    .failed = counts.failed},
                                         .created_by = b.created_by,
                                         .created_at = b.created_at,
                                         .updated_at = b.updated_at,
                                         .finished_at = b.finished_at});
}

// The range's scheduled times (at most kMaxTimes), or why there is nothing to backfill:
// kInvalidArgument naming `field` (a range in the future, too many times), kFailedPrecondition
// (a schedule without times of its own).
Result<std::vector<std::int64_t>> RangeTimes(const model::Job& job, const BackfillInput& in, std::int64_t now,
                                             std::string& field) {
    auto schedule = cron::Schedule::Make(job.schedule_type, job.schedule_expr, job.time_zone);
    if (!schedule.ok()) {
        return FailedPrecondition("job " + std::to_string(job.id) +
                                  ": stored schedule: " + schedule.status().message());
    }
    if (schedule->WaitsForFinish()) {
        return FailedPrecondition("job " + std::to_string(job.id) +
                                  " is fixed-delay: its times follow each run's finish, so it has no past "
                                  "scheduled times to backfill");
    }
    if (in.to > now) {
        field = "to";
        return InvalidArgument("to: must not be in the future (" + std::to_string(in.to) + " > now " +
                               std::to_string(now) + "); a backfill runs past scheduled times");
    }
    auto times = cron::FireTimesInRange(*schedule, in.from, in.to, kCountCap);
    if (times.times.size() > kMaxTimes) {
        field = "to";
        const std::string held =
            times.more ? "more than " + std::to_string(kCountCap) : std::to_string(times.times.size());
        return InvalidArgument("to: the range holds " + held + " scheduled times of job " + std::to_string(job.id) +
                               ", at most " + std::to_string(kMaxTimes) + " per backfill; split it");
    }
    return std::move(times.times);
}

Result<nlohmann::json> CreateBackfill(db::Database& db, std::int64_t job_id, const BackfillInput& in,
                                      const Principal& who, std::string& field) {
    auto job = store::JobRepository(db).Get(job_id);
    if (!job.ok()) return job.status();
    auto now = DbNowMs(db);
    if (!now.ok()) return now.status();
    auto times = RangeTimes(*job, in, *now, field);
    if (!times.ok()) return times.status();
    if (in.dry_run) {
        return db.Run([&](soci::session& s) -> Result<nlohmann::json> {
            // Shards make several rows per time; more rows than that are not needed.
            const auto existing =
                store::BackfillRepository::ExistingTimes(s, job_id, in.from, in.to, static_cast<int>(kMaxTimes) * 8);
            api::BackfillDryRunView dry{
                .job_id = job_id, .from = in.from, .to = in.to, .planned = static_cast<std::int64_t>(times->size())};
            for (const std::int64_t t : *times) {
                api::BackfillTimeView item{.scheduled_time = t};
                if (const auto it = existing.find(t); it != existing.end()) {
                    item.existing = std::string(model::FireKindName(it->second));
                } else {
                    ++dry.would_run;
                }
                dry.items.push_back(std::move(item));
            }
            dry.existing = dry.planned - dry.would_run;
            return api::ToJson(dry);
        });
    }
    if (times->empty()) {
        field = "from";
        return InvalidArgument("from: the range [from, to) holds no scheduled time of job " + std::to_string(job_id));
    }
    return db.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<nlohmann::json> {
        if (!store::JobRepository::Find(s, job_id)) return NotFound("job " + std::to_string(job_id) + " not found");
        const int of_job = store::BackfillRepository::CountRunning(s, job_id);
        if (of_job >= kMaxRunningPerJob) {
            return FailedPrecondition("job " + std::to_string(job_id) + " has " + std::to_string(of_job) +
                                      " running backfills, at most " + std::to_string(kMaxRunningPerJob) +
                                      "; wait for one or cancel it");
        }
        store::Backfill b;
        b.job_id = job_id;
        b.range_from = in.from;
        b.range_to = in.to;
        b.overlap = in.overlap;
        b.max_parallel = in.max_parallel;
        b.cursor_ms = in.from;
        b.planned = static_cast<int>(times->size());
        b.created_by = who.name;
        b.created_at = *now;
        b.updated_at = *now;
        b.id = store::BackfillRepository::Insert(s, b);
        auto created = BackfillJson(b, store::BackfillRepository::CountFires(s, job_id, in.from, in.to));
        // In the same transaction: the backfill and its audit entry commit together.
        RecordAudit(s, db.dialect(), who,
                    {"create", "backfill", std::to_string(b.id), job->name, std::nullopt, created});
        return created;
    });
}

Result<nlohmann::json> BackfillWithCounts(db::Database& db, const Result<store::Backfill>& backfill) {
    if (!backfill.ok()) return backfill.status();
    auto counts = store::BackfillRepository(db).Counts(*backfill);
    if (!counts.ok()) return counts.status();
    return BackfillJson(*backfill, *counts);
}

}  // namespace

void AddBackfillRoutes(Routes& routes) {
    const auto ctx = routes.context();

    // Authorised as POST /jobs/{id}/trigger: running a job on demand is an operator's call.
    routes.Add(Method::kPost, "/api/v1/jobs/{id}/backfill", Permission::kOperator,
               [ctx](Request& req, const Principal& who) -> net::awaitable<Response> {
                   std::optional<Response> error;
                   const auto id = PathId(req, error);
                   if (!id) co_return *error;
                   auto body = req.Json();
                   if (!body.ok()) co_return Response::Error(body.status(), "body");
                   if (!body->is_object()) co_return BadRequest("body", "body: expected a JSON object");
                   if (auto unknown = RejectUnknownFields(*body, kBackfillFields)) co_return *unknown;
                   BackfillInput in;
                   if (auto invalid = ReadBackfillInput(*body, in)) co_return Response::Error(*invalid);
                   // The field a 400 names, set on the DB pool, read after the co_await.
                   auto field = std::make_shared<std::string>();
                   auto work = [id = *id, in, &who, field](db::Database& db) {
                       return CreateBackfill(db, id, in, who, *field);
                   };
                   auto made = co_await WithDb(*ctx, work);
                   if (!made.ok()) co_return Response::Error(made.status(), *field);
                   if (in.dry_run) co_return Response::Json(*made);
                   // The master plans a running backfill's fires.
                   WakeMasters(*ctx);
                   const auto backfill_id = (*made)["id"].get<std::int64_t>();
                   spdlog::info("web: backfill {} of job {} over [{}, {}) created by {}", backfill_id, *id, in.from,
                                in.to, who.name);
                   auto response = Response::Json(*made, 201);
                   response.headers.Set("Location", "/api/v1/backfills/" + std::to_string(backfill_id));
                   co_return response;
               });

    // Newest first: the cursor is the last backfill id of the page.
    routes.Add(
        Method::kGet, "/api/v1/jobs/{id}/backfills", Permission::kViewer, kPageQuery,
        ChildPageHandler(ctx, [](db::Database& db, std::int64_t id, const PageRequest& page) -> Result<nlohmann::json> {
            auto job = store::JobRepository(db).Get(id);
            if (!job.ok()) return job.status();
            auto list = store::BackfillRepository(db).ListForJob(id, page.cursor, page.limit + 1);
            if (!list.ok()) return list.status();
            // Each backfill's fire counts are a read of their own, so they are read inside the
            // page's item function and the first failure is kept.
            Status failed = Status::Ok();
            auto out = CursorPage(*list, page.limit, [&](const store::Backfill& b) -> nlohmann::json {
                auto one = failed.ok() ? BackfillWithCounts(db, b) : Result<nlohmann::json>(failed);
                if (!one.ok()) {
                    failed = one.status();
                    return nullptr;
                }
                return std::move(*one);
            });
            if (!failed.ok()) return failed;
            return out;
        }));

    routes.Add(Method::kGet, "/api/v1/backfills/{id}", Permission::kViewer,
               GetHandler(
                   ctx, [](const Status& s) { return Response::Error(s); },
                   [](db::Database& db, std::int64_t id) {
                       return BackfillWithCounts(db, store::BackfillRepository(db).Get(id));
                   }));

    routes.Add(
        Method::kPost, "/api/v1/backfills/{id}/cancel", Permission::kOperator,
        ActionHandler([ctx](Request&, std::int64_t id, const Principal& who) -> net::awaitable<Response> {
            auto work = [id, &who](db::Database& db) {
                auto cancelled = BackfillWithCounts(db, store::BackfillRepository(db).Cancel(id));
                if (cancelled.ok()) {
                    RecordAudit(db, who, {"cancel", "backfill", std::to_string(id), "", std::nullopt, *cancelled});
                }
                return cancelled;
            };
            auto out = co_await WithDb(*ctx, work);
            if (!out.ok()) co_return Response::Error(out.status());
            spdlog::info("web: backfill {} cancelled by {}", id, who.name);
            co_return Response::Json(*out);
        }));
}

}  // namespace sched::web::impl
