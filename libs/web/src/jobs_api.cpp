// Jobs and schedules: /api/v1/jobs..., /api/v1/schedules/validate.

#include <array>

#include <spdlog/spdlog.h>

#include "impl/audit.hpp"
#include "impl/calendars.hpp"
#include "impl/context.hpp"
#include "impl/views.hpp"
#include "sched/cron/misfire.hpp"
#include "sched/cron/schedule.hpp"
#include "sched/http/json.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"
#include "sched/store/registry.hpp"

namespace sched::web::impl {

namespace {

using http::Method;
using http::Request;
using http::Response;

constexpr std::array<std::string_view, 27> kJobFields = {"name",
                                                         "app",
                                                         "handler",
                                                         "params",
                                                         "schedule_type",
                                                         "schedule_expr",
                                                         "time_zone",
                                                         "misfire_policy",
                                                         "routing",
                                                         "block_strategy",
                                                         "concurrency_limit",
                                                         "timeout_ms",
                                                         "retry_max",
                                                         "retry_backoff_ms",
                                                         "shard_total",
                                                         "at_least_once",
                                                         "enabled",
                                                         "description",
                                                         "pause_after_failures",
                                                         "jitter_ms",
                                                         "dst_gap",
                                                         "dst_overlap",
                                                         "version",
                                                         "calendar",
                                                         "start_at",
                                                         "end_at",
                                                         "max_runs"};
constexpr std::array<std::string_view, 10> kJobReadOnly = {
    "id",        "next_fire_time", "last_fire_time", "created_at",       "updated_at",
    "last_fire", "planned_runs",   "completed_at",   "completed_reason", "paused"};
constexpr std::array<std::string_view, 7> kScheduleFields = {"schedule_type", "schedule_expr", "time_zone",  "count",
                                                             "jitter_ms",     "dst_gap",       "dst_overlap"};

constexpr std::size_t kMaxName = 191;
constexpr std::size_t kMaxApp = 128;
constexpr std::size_t kMaxHandler = 128;
constexpr std::size_t kMaxDescription = 1024;
constexpr std::size_t kMaxExpr = 255;
constexpr std::size_t kMaxZone = 64;
constexpr std::size_t kMaxParamsBytes = 65535;  // a MySQL TEXT column
constexpr int kMaxPageSize = 200;
constexpr int kMaxPreview = 100;
constexpr std::size_t kMaxDstChoice = 16;
// The preview's `dst` section looks this far ahead for the zone's next offset change, and shows
// the fire times from half a day before it to half a day after.
constexpr std::int64_t kDstLookaheadMs = 400LL * 86'400'000;
constexpr std::int64_t kDstWindowMs = 12LL * 3'600'000;
constexpr std::size_t kMaxDstTimes = 24;

// A job body after validation: the job to store and what the handler still has to decide.
struct JobInput {
    store::Job job;
    std::int64_t version = 0;      // the version an update was based on
    bool schedule_changed = true;  // type, expression or zone differ from the stored job
    std::optional<cron::Schedule> schedule;
};

http::ApiError Invalid(std::string field, std::string message) {
    return http::ApiError{Code::kInvalidArgument, std::move(message), std::move(field)};
}

// Validates a create (current == nullptr) or an update (fields left out keep current's values).
std::optional<http::ApiError> ReadJobInput(const nlohmann::json& body, const store::Job* current, JobInput& out) {
    const bool create = current == nullptr;
    store::Job j = create ? store::Job{} : *current;
    http::JsonFields f(body);
    const auto text = [&](std::string_view key, std::string& field, bool required) {
        field = required ? f.String(key) : f.String(key, field);
    };
    text("name", j.name, create);
    text("app", j.app, create);
    text("handler", j.handler, create);
    // The vocabulary is read as text here and parsed below, where it always was validated, so
    // that the first invalid field named stays the same.
    std::string schedule_type(ScheduleTypeName(j.schedule_type));
    std::string misfire_policy(MisfirePolicyName(j.misfire_policy));
    std::string routing(RoutingName(j.routing));
    std::string block_strategy(BlockStrategyName(j.block_strategy));
    text("schedule_type", schedule_type, create);
    text("schedule_expr", j.schedule_expr, false);
    text("time_zone", j.time_zone, false);
    text("misfire_policy", misfire_policy, false);
    text("routing", routing, false);
    text("block_strategy", block_strategy, false);
    text("description", j.description, false);
    text("dst_gap", j.dst_gap, false);
    text("dst_overlap", j.dst_overlap, false);
    if (f.ok() && body.is_object() && body.contains("params") && !body["params"].is_string() &&
        !body["params"].is_null()) {
        // Any JSON value is stored as its text (sized before serialising); a string is stored
        // verbatim, as before JSON params existed. The handler receives the text either way.
        auto text = http::DumpWithin(body["params"], kMaxParamsBytes);
        if (!text) return Invalid("params", "params: at most " + std::to_string(kMaxParamsBytes) + " bytes");
        j.params = std::move(*text);
    } else {
        text("params", j.params, false);
    }
    j.concurrency_limit = static_cast<int>(f.Int("concurrency_limit", j.concurrency_limit, {.min = 1, .max = 1000}));
    j.timeout_ms = f.Int("timeout_ms", j.timeout_ms, {.min = 0, .max = 7LL * 24 * 3600 * 1000});
    j.retry_max = static_cast<int>(f.Int("retry_max", j.retry_max, {.min = 0, .max = 100}));
    j.pause_after_failures =
        static_cast<int>(f.Int("pause_after_failures", j.pause_after_failures, {.min = 0, .max = 1000}));
    j.retry_backoff_ms = f.Int("retry_backoff_ms", j.retry_backoff_ms, {.min = 1, .max = 24LL * 3600 * 1000});
    j.shard_total = static_cast<int>(f.Int("shard_total", j.shard_total, {.min = 1, .max = 1000}));
    j.jitter_ms = f.Int("jitter_ms", j.jitter_ms, {.min = 0, .max = cron::kMaxJitterMs});
    j.at_least_once = f.Bool("at_least_once", j.at_least_once);
    j.enabled = f.Bool("enabled", j.enabled);
    if (create) {
        if (f.ok() && body.contains("version")) f.Fail("version", "set by the server; leave it out when creating");
    } else {
        out.version = f.Int("version", {.min = 1});
    }
    if (f.error()) return *f.error();

    for (const auto& [key, value, max] :
         {std::tuple<std::string_view, const std::string&, std::size_t>{"name", j.name, kMaxName},
          {"app", j.app, kMaxApp},
          {"handler", j.handler, kMaxHandler},
          {"description", j.description, kMaxDescription},
          {"schedule_expr", j.schedule_expr, kMaxExpr},
          {"time_zone", j.time_zone, kMaxZone},
          {"dst_gap", j.dst_gap, kMaxDstChoice},
          {"dst_overlap", j.dst_overlap, kMaxDstChoice}}) {
        const std::string k(key);
        if (CodePoints(value) > max) {
            return Invalid(
                k, k + ": at most " + std::to_string(max) + " characters, got " + std::to_string(CodePoints(value)));
        }
    }
    for (const auto& [key, value] :
         {std::pair<std::string_view, const std::string&>{"name", j.name}, {"app", j.app}, {"handler", j.handler}}) {
        if (value.empty()) return Invalid(std::string(key), std::string(key) + ": must not be empty");
    }
    if (j.params.size() > kMaxParamsBytes) {
        return Invalid("params", "params: at most " + std::to_string(kMaxParamsBytes) + " bytes");
    }
    if (auto policy = ParseMisfirePolicy(misfire_policy); policy.ok()) {
        j.misfire_policy = *policy;
    } else {
        return Invalid("misfire_policy", "misfire_policy: " + policy.status().message());
    }
    if (auto parsed = ParseRouting(routing); parsed.ok()) {
        j.routing = *parsed;
    } else {
        return Invalid("routing", "routing: " + parsed.status().message());
    }
    if (auto parsed = ParseBlockStrategy(block_strategy); parsed.ok()) {
        j.block_strategy = *parsed;
    } else {
        return Invalid("block_strategy", "block_strategy: " + parsed.status().message());
    }
    if (j.time_zone.empty()) j.time_zone = "UTC";
    if (auto invalid = ReadJobBounds(body, j)) return invalid;
    std::string field;
    // A new job has no id yet: `H` validates with the seed "" and resolves once the job is stored.
    const auto options = cron::ParseScheduleOptions(create ? std::nullopt : std::optional<std::int64_t>(j.id),
                                                    j.jitter_ms, j.dst_gap, j.dst_overlap, &field);
    if (!options.ok()) return Invalid(field, options.status().message());
    if (auto type = ParseScheduleType(schedule_type); type.ok()) {
        j.schedule_type = *type;
    } else {
        return Invalid("schedule_type", "schedule_type: " + type.status().message());
    }
    auto schedule = cron::Schedule::Make(j.schedule_type, j.schedule_expr, j.time_zone, &field, *options);
    if (!schedule.ok()) return Invalid(field.empty() ? "schedule_expr" : field, schedule.status().message());
    j.schedule_expr = schedule->expression();
    out.schedule_changed = create || j.schedule_type != current->schedule_type ||
                           j.schedule_expr != current->schedule_expr || j.time_zone != current->time_zone ||
                           j.dst_gap != current->dst_gap || j.dst_overlap != current->dst_overlap;
    out.schedule = *schedule;
    out.job = std::move(j);
    return std::nullopt;
}

// Sets job.next_fire_time for a job about to be stored at DB time `now_ms`: recomputed when the
// schedule changed or the job is being (re-)enabled, cleared while paused, otherwise kept (a
// fixed-delay job's NULL "waiting for its run to finish" must survive an edit of its description).
Status PlanNextFire(JobInput& in, const store::Job* current, std::int64_t now_ms) {
    auto& j = in.job;
    if (!j.enabled) {
        j.next_fire_time.reset();
        return Status::Ok();
    }
    const bool bounded = j.start_at || j.end_at || j.max_runs || (current && current->completed_at);
    const bool recompute =
        current == nullptr || in.schedule_changed || !current->enabled || (bounded && BoundsChanged(j, *current));
    if (!recompute) return Status::Ok();
    if (bounded) {
        if (current == nullptr && j.end_at && *j.end_at <= now_ms) return InvalidArgument("end_at: is in the past");
        // A later end_at or a higher max_runs brings a completed job back; an edit that leaves no
        // time completes it (calendars_api.cpp).
        PlanBoundedNext(j, current, *in.schedule, now_ms);
        return Status::Ok();
    }
    j.completed_at.reset();
    j.completed_reason.clear();
    j.next_fire_time = in.schedule->NextFireTime(now_ms);
    if (!j.next_fire_time && in.schedule->type() != cron::ScheduleType::kManual) {
        return InvalidArgument("schedule_expr: \"" + j.schedule_expr + "\" has no fire time after now");
    }
    return Status::Ok();
}

// Which field a repository error is about.
std::string FieldFor(const Status& s) {
    switch (s.code()) {
        case Code::kAlreadyExists:
            return "name";
        case Code::kAborted:
            return "version";
        case Code::kNotFound:
            return "id";
        case Code::kInvalidArgument:
            for (const char* field : {"calendar", "end_at", "start_at", "max_runs"}) {
                if (s.message().rfind(std::string(field) + ":", 0) == 0) return field;
            }
            return "schedule_expr";
        default:
            return "";
    }
}

std::optional<store::Fire> LastFire(db::Database& db, std::int64_t job_id) {
    auto fires = store::FireRepository(db).List({.job_id = job_id, .limit = 1});
    if (!fires.ok() || fires->empty()) return std::nullopt;
    return fires->front();
}

// The job's schedule as the master makes it (trigger::Master::ScheduleFor): with its id, jitter
// and DST choice.
Result<cron::Schedule> StoredSchedule(const store::Job& job) {
    const auto options = cron::ParseScheduleOptions(job.id, job.jitter_ms, job.dst_gap, job.dst_overlap);
    if (!options.ok()) return options.status();
    return cron::Schedule::Make(job.schedule_type, job.schedule_expr, job.time_zone, nullptr, *options);
}

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

// `times` are when the runs start: nominal schedule times plus the job's jitter.
nlohmann::json PreviewJson(const cron::Schedule& schedule, std::int64_t now_ms, std::size_t count) {
    nlohmann::json times = nlohmann::json::array();
    nlohmann::json local = nlohmann::json::array();
    for (const auto t : schedule.PreviewFireTimes(now_ms, count)) {
        times.push_back(t);
        local.push_back(LocalIso(t, schedule.zone()));
    }
    const bool uses_hash = schedule.cron() && schedule.cron()->UsesHash();
    return {{"times", std::move(times)},
            {"local", std::move(local)},
            {"time_zone", schedule.zone_name()},
            {"now", now_ms},
            {"jitter_ms", schedule.options().jitter_ms},
            {"uses_hash", uses_hash},
            {"hash_seed", schedule.options().job_id ? nlohmann::json(*schedule.options().job_id) : nullptr},
            {"dst", DstPreviewJson(schedule, now_ms)}};
}

// Stores a new job. `H` depends on the id, which exists only once the row does: such a job is
// stored without a next fire time (the master does not plan it) and then given the time its
// id resolves to, with the master's CAS (version unchanged), so no fire is ever planned at the
// seed-"" time the validation used.
Result<store::Job> CreateJob(db::Database& db, JobInput& in, std::int64_t now_ms) {
    const bool needs_id = in.schedule->cron() && in.schedule->cron()->UsesHash() && in.job.enabled;
    if (needs_id) in.job.next_fire_time.reset();
    store::JobRepository jobs(db);
    auto created = jobs.Create(in.job);
    if (!created.ok() || !needs_id) return created;
    auto schedule = StoredSchedule(*created);
    if (!schedule.ok()) {
        // `H(29-31)` in February: valid with one seed, never firing with another.
        (void)jobs.Delete(created->id);
        return InvalidArgument("schedule_expr: with the job's id " + std::to_string(created->id) + " " +
                               schedule.status().message());
    }
    const auto next = schedule->NextFireTime(now_ms);
    Status advanced = db.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Status {
        store::JobRepository::AdvanceSchedule(s, created->id, created->version, std::nullopt, next, std::nullopt);
        return Status::Ok();
    });
    if (!advanced.ok()) return advanced;
    return jobs.Get(created->id);
}

Response JobError(const Status& s) {
    return Response::Error(s, FieldFor(s));
}

// Pause and resume: a state change that does not need the caller's version, so a concurrent
// edit is retried rather than reported.
Result<store::Job> SetEnabled(db::Database& db, std::int64_t id, bool enabled, store::Job* before = nullptr) {
    store::JobRepository jobs(db);
    for (int attempt = 0;; ++attempt) {
        auto current = jobs.Get(id);
        if (!current.ok()) return current.status();
        if (before != nullptr) *before = *current;
        if (current->enabled == enabled) return *current;
        JobInput in;
        in.job = *current;
        in.job.enabled = enabled;
        in.schedule_changed = false;
        if (enabled) {
            auto schedule = StoredSchedule(*current);
            if (!schedule.ok()) return schedule.status();
            in.schedule = *schedule;
            auto now = DbNowMs(db);
            if (!now.ok()) return now.status();
            // A schedule with no time left (a past `once`) resumes without a next fire.
            in.job.next_fire_time = in.schedule->NextFireTime(*now);
            if (in.job.start_at || in.job.end_at || in.job.max_runs)
                PlanBoundedNext(in.job, &*current, *in.schedule, *now);
        } else {
            in.job.next_fire_time.reset();
        }
        auto updated = jobs.Update(in.job, current->version);
        if (updated.ok() || updated.status().code() != Code::kAborted || attempt >= 4) return updated;
    }
}

constexpr std::size_t kMaxPauseNote = 1024;  // job.pause_note VARCHAR(1024)

// The body of a pause: empty, {} or {"note": "..."} (a string of at most kMaxPauseNote
// characters, or null); otherwise the 400 to answer, naming `body` or `note`.
std::optional<Response> ReadPauseNote(const Request& req, std::string& note) {
    if (req.body.empty()) return std::nullopt;
    auto body = req.Json();
    if (!body.ok()) return Response::Error(body.status(), "body");
    if (!body->is_object()) return BadRequest("body", "body: expected a JSON object");
    static constexpr std::array<std::string_view, 1> kPauseFields = {"note"};
    if (auto unknown = RejectUnknownFields(*body, kPauseFields)) return unknown;
    if (!body->contains("note") || (*body)["note"].is_null()) return std::nullopt;
    if (!(*body)["note"].is_string()) return BadRequest("note", "note: expected a string");
    note = (*body)["note"].get<std::string>();
    if (CodePoints(note) > kMaxPauseNote) {
        return BadRequest("note", "note: at most " + std::to_string(kMaxPauseNote) + " characters, got " +
                                      std::to_string(CodePoints(note)));
    }
    return std::nullopt;
}

// Pause (with `note`) or resume on the DB pool: the job's state, then who paused it and why,
// then the audit entry, each right after the other (the job repository's writes are their own
// transactions). Pausing a paused job with a note replaces the note; anything else that changes
// nothing records nothing.
Result<store::Job> PauseOrResume(db::Database& db, const Principal& who, std::int64_t id, bool enable,
                                 const std::optional<std::string>& note) {
    store::Job before;
    auto job = SetEnabled(db, id, enable, &before);
    if (!job.ok()) return job;
    const bool changed = before.enabled != enable;
    if (!changed && (enable || !note)) return job;
    store::JobRepository jobs(db);
    std::optional<store::JobPause> pause;
    if (!enable) pause = store::JobPause{who.name, 0, note.value_or("")};
    if (pause || job->paused) {
        if (Status s = jobs.SetPaused(id, pause); !s.ok()) return s;
        job = jobs.Get(id);
        if (!job.ok()) return job;
    }
    RecordAudit(db, who,
                {enable ? "resume" : "pause", "job", std::to_string(id), job->name, JobJson(before), JobJson(*job)});
    return job;
}

}  // namespace

void AddJobRoutes(Routes& routes) {
    auto ctx = routes.context();

    routes.Add(Method::kGet, "/api/v1/jobs", Permission::kViewer,
               [ctx](Request& req, const Principal&) -> net::awaitable<Response> {
                   if (auto unknown = UnknownQueryParam(req, {"app", "enabled", "q", "cursor", "limit"})) {
                       co_return BadRequest(*unknown, *unknown + ": unknown query parameter");
                   }
                   std::optional<Response> error;
                   store::JobFilter filter;
                   filter.limit = static_cast<int>(QueryInt(req, "limit", 1, kMaxPageSize, error).value_or(50));
                   filter.after_id = QueryInt(req, "cursor", 0, INT64_MAX, error).value_or(0);
                   if (error) co_return *error;
                   if (auto app = req.Query("app"); app && !app->empty()) filter.app = *app;
                   if (auto enabled = req.Query("enabled"); enabled && !enabled->empty()) {
                       if (*enabled != "true" && *enabled != "false") {
                           co_return BadRequest("enabled", "enabled: expected true or false, got \"" + *enabled + "\"");
                       }
                       filter.enabled = *enabled == "true";
                   }
                   filter.name_contains = req.Query("q").value_or("");
                   if (CodePoints(filter.name_contains) > kMaxName) {
                       co_return BadRequest("q", "q: at most " + std::to_string(kMaxName) + " characters");
                   }
                   const int page = filter.limit;
                   filter.limit = page + 1;
                   auto work = [filter, page](db::Database& db) -> Result<nlohmann::json> {
                       auto jobs = store::JobRepository(db).List(filter);
                       if (!jobs.ok()) return jobs.status();
                       nlohmann::json items = nlohmann::json::array();
                       const bool more = static_cast<int>(jobs->size()) > page;
                       if (more) jobs->resize(static_cast<std::size_t>(page));
                       for (const auto& job : *jobs) items.push_back(JobJson(job, LastFire(db, job.id)));
                       nlohmann::json next = nullptr;
                       if (more) next = std::to_string(jobs->back().id);
                       return nlohmann::json{{"items", std::move(items)}, {"next_cursor", std::move(next)}};
                   };
                   filter.limit = page + 1;  // one more tells whether there is a next page
                   auto listed = co_await WithDb(*ctx, work);
                   if (!listed.ok()) co_return Response::Error(listed.status());
                   co_return Response::Json(*listed);
               });

    routes.Add(Method::kPost, "/api/v1/jobs", Permission::kOperator,
               [ctx](Request& req, const Principal& who) -> net::awaitable<Response> {
                   auto body = req.Json();
                   if (!body.ok()) co_return Response::Error(body.status(), "body");
                   if (auto unknown = RejectUnknownFields(*body, kJobFields, kJobReadOnly)) co_return *unknown;
                   JobInput in;
                   if (auto invalid = ReadJobInput(*body, nullptr, in)) co_return Response::Error(*invalid);
                   auto work = [&in, &who](db::Database& db) -> Result<store::Job> {
                       auto now = DbNowMs(db);
                       if (!now.ok()) return now.status();
                       if (!in.job.calendar.empty()) {
                           if (auto calendar = LoadCalendar(db, in.job.calendar); !calendar.ok()) {
                               return calendar.status();
                           }
                       }
                       if (Status s = PlanNextFire(in, nullptr, *now); !s.ok()) return s;
                       auto created = CreateJob(db, in, *now);
                       if (created.ok()) {
                           RecordAudit(db, who,
                                       {"create", "job", std::to_string(created->id), created->name, std::nullopt,
                                        JobJson(*created)});
                       }
                       return created;
                   };
                   auto created = co_await WithDb(*ctx, work);
                   if (!created.ok()) co_return JobError(created.status());
                   spdlog::info("web: job {} \"{}\" (app {}) created by {}", created->id, created->name, created->app,
                                who.name);
                   Response response = Response::Json(JobJson(*created), 201);
                   response.headers.Set("Location", "/api/v1/jobs/" + std::to_string(created->id));
                   co_return response;
               });

    routes.Add(Method::kGet, "/api/v1/jobs/{id}", Permission::kViewer,
               [ctx](Request& req, const Principal&) -> net::awaitable<Response> {
                   std::optional<Response> error;
                   const auto id = PathId(req, error);
                   if (!id) co_return *error;
                   auto work = [id = *id](db::Database& db) -> Result<nlohmann::json> {
                       auto found = store::JobRepository(db).Get(id);
                       if (!found.ok()) return found.status();
                       return JobJson(*found, LastFire(db, id));
                   };
                   auto job = co_await WithDb(*ctx, work);
                   if (!job.ok()) co_return JobError(job.status());
                   co_return Response::Json(*job);
               });

    routes.Add(Method::kPut, "/api/v1/jobs/{id}", Permission::kOperator,
               [ctx](Request& req, const Principal& who) -> net::awaitable<Response> {
                   std::optional<Response> error;
                   const auto id = PathId(req, error);
                   if (!id) co_return *error;
                   auto body = req.Json();
                   if (!body.ok()) co_return Response::Error(body.status(), "body");
                   if (auto unknown = RejectUnknownFields(*body, kJobFields, kJobReadOnly)) co_return *unknown;
                   std::optional<http::ApiError> invalid;
                   auto work = [&invalid, &body, &who, id = *id](db::Database& db) -> Result<store::Job> {
                       store::JobRepository jobs(db);
                       auto current = jobs.Get(id);
                       if (!current.ok()) return current.status();
                       JobInput in;
                       invalid = ReadJobInput(*body, &*current, in);
                       if (invalid) return InvalidArgument(invalid->message);
                       auto now = DbNowMs(db);
                       if (!now.ok()) return now.status();
                       if (!in.job.calendar.empty() && in.job.calendar != current->calendar) {
                           if (auto calendar = LoadCalendar(db, in.job.calendar); !calendar.ok()) {
                               return calendar.status();
                           }
                       }
                       if (Status s = PlanNextFire(in, &*current, *now); !s.ok()) return s;
                       in.job.id = id;
                       auto updated = jobs.Update(in.job, in.version);
                       if (!updated.ok()) return updated;
                       // Enabled by an edit: no longer paused, so no longer "paused by".
                       if (updated->enabled && current->paused) {
                           if (Status s = jobs.SetPaused(id, std::nullopt); s.ok()) updated->paused.reset();
                       }
                       RecordAudit(
                           db, who,
                           {"update", "job", std::to_string(id), updated->name, JobJson(*current), JobJson(*updated)});
                       return updated;
                   };
                   auto updated = co_await WithDb(*ctx, work);
                   if (invalid) co_return Response::Error(*invalid);
                   if (!updated.ok()) co_return JobError(updated.status());
                   spdlog::info("web: job {} updated to version {} by {}", updated->id, updated->version, who.name);
                   co_return Response::Json(JobJson(*updated));
               });

    routes.Add(Method::kDelete, "/api/v1/jobs/{id}", Permission::kOperator,
               [ctx](Request& req, const Principal& who) -> net::awaitable<Response> {
                   std::optional<Response> error;
                   const auto id = PathId(req, error);
                   if (!id) co_return *error;
                   auto work = [&who, id = *id](db::Database& db) -> Status {
                       store::JobRepository jobs(db);
                       auto before = jobs.Get(id);
                       if (!before.ok()) return before.status();
                       Status deleted = jobs.Delete(id);
                       if (deleted.ok()) {
                           RecordAudit(
                               db, who,
                               {"delete", "job", std::to_string(id), before->name, JobJson(*before), std::nullopt});
                       }
                       return deleted;
                   };
                   Status deleted = co_await WithDb(*ctx, work);
                   if (!deleted.ok()) co_return JobError(deleted);
                   spdlog::info("web: job {} deleted by {}", *id, who.name);
                   co_return Response::NoContent();
               });

    for (const bool enable : {false, true}) {
        const std::string pattern = enable ? "/api/v1/jobs/{id}/resume" : "/api/v1/jobs/{id}/pause";
        routes.Add(Method::kPost, pattern, Permission::kOperator,
                   [ctx, enable](Request& req, const Principal& who) -> net::awaitable<Response> {
                       std::optional<Response> error;
                       const auto id = PathId(req, error);
                       if (!id) co_return *error;
                       std::optional<std::string> note;
                       if (enable) {
                           if (auto rejected = RejectAnyBody(req)) co_return *rejected;
                       } else {
                           std::string text;
                           if (auto rejected = ReadPauseNote(req, text)) co_return *rejected;
                           if (!text.empty()) note = std::move(text);
                       }
                       auto work = [&who, &note, id = *id, enable](db::Database& db) {
                           return PauseOrResume(db, who, id, enable, note);
                       };
                       auto job = co_await WithDb(*ctx, work);
                       if (!job.ok()) co_return JobError(job.status());
                       spdlog::info("web: job {} {} by {}", *id, enable ? "resumed" : "paused", who.name);
                       co_return Response::Json(JobJson(*job));
                   });
    }

    routes.Add(
        Method::kPost, "/api/v1/jobs/{id}/trigger", Permission::kOperator,
        [ctx](Request& req, const Principal& who) -> net::awaitable<Response> {
            std::optional<Response> error;
            const auto id = PathId(req, error);
            if (!id) co_return *error;
            if (auto rejected = RejectAnyBody(req)) co_return *rejected;
            const std::int64_t ttl_ms =
                std::chrono::duration_cast<std::chrono::milliseconds>(ctx->options.executor_ttl).count();
            auto work = [&who, id = *id, ttl_ms](db::Database& db) -> Result<std::vector<store::Fire>> {
                return db.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<std::vector<store::Fire>> {
                    const auto job = store::JobRepository::Find(s, id);
                    if (!job) return NotFound("job " + std::to_string(id) + " not found");
                    std::int64_t now = 0;
                    s << "SELECT " + std::string(db.dialect().NowMs()), soci::into(now);
                    const int shards = store::ShardsPerFire(
                        *job, [&] { return store::ExecutorRepository::CountLive(s, db.dialect(), job->app, ttl_ms); });
                    // (job, scheduled_time, kind, attempt, shard) is unique: two triggers within one
                    // millisecond take the next free millisecond.
                    for (std::int64_t t = now; t < now + 1000; ++t) {
                        std::vector<store::Fire> out;
                        for (int shard = 0; shard < shards; ++shard) {
                            store::Fire fire;
                            fire.job_id = id;
                            fire.scheduled_time = t;
                            fire.kind = store::FireKind::kManual;
                            fire.shard_index = shard;
                            fire.shard_total = shards;
                            // assigned_node stays NULL: the master hands it to a live slave within one scan.
                            auto inserted = store::FireRepository::InsertIfAbsent(s, db.dialect(), fire);
                            if (!inserted) break;
                            out.push_back(*store::FireRepository::Find(s, *inserted));
                        }
                        if (static_cast<int>(out.size()) == shards) {
                            nlohmann::json fires = nlohmann::json::array();
                            for (const auto& f : out) fires.push_back(f.id);
                            RecordAudit(s, db.dialect(), who,
                                        {"trigger", "job", std::to_string(id), job->name, std::nullopt,
                                         nlohmann::json{{"fires", std::move(fires)}, {"scheduled_time", t}}});
                            return out;
                        }
                        if (!out.empty()) return Internal("a manual fire's shards collided with another trigger");
                    }
                    return Aborted("job " + std::to_string(id) + " was triggered too often within one second");
                });
            };
            auto fires = co_await WithDb(*ctx, work);
            if (!fires.ok()) co_return JobError(fires.status());
            nlohmann::json items = nlohmann::json::array();
            for (const auto& f : *fires) items.push_back(FireJson(f));
            spdlog::info("web: job {} triggered by {} (fire {})", *id, who.name, fires->front().id);
            co_return Response::Json({{"items", std::move(items)}}, 202);
        });

    routes.Add(Method::kGet, "/api/v1/jobs/{id}/next", Permission::kViewer,
               [ctx](Request& req, const Principal&) -> net::awaitable<Response> {
                   std::optional<Response> error;
                   const auto id = PathId(req, error);
                   if (!id) co_return *error;
                   if (auto unknown = UnknownQueryParam(req, {"count"})) {
                       co_return BadRequest(*unknown, *unknown + ": unknown query parameter");
                   }
                   const auto count = QueryInt(req, "count", 1, kMaxPreview, error).value_or(5);
                   if (error) co_return *error;
                   auto work = [id = *id, count](db::Database& db) -> Result<nlohmann::json> {
                       auto job = store::JobRepository(db).Get(id);
                       if (!job.ok()) return job.status();
                       auto schedule = StoredSchedule(*job);
                       if (!schedule.ok()) return FailedPrecondition("stored schedule: " + schedule.status().message());
                       auto now = DbNowMs(db);
                       if (!now.ok()) return now.status();
                       nlohmann::json out;
                       if (!job->calendar.empty() || job->start_at || job->end_at || job->max_runs) {
                           std::optional<cron::Calendar> calendar;
                           if (!job->calendar.empty()) {
                               auto loaded = LoadCalendar(db, job->calendar);
                               if (!loaded.ok()) return FailedPrecondition(loaded.status().message());
                               calendar = std::move(*loaded);
                           }
                           out = BoundedPreviewJson(*job, *schedule, calendar ? &*calendar : nullptr, *now,
                                                    static_cast<std::size_t>(count));
                       } else {
                           out = PreviewJson(*schedule, *now, static_cast<std::size_t>(count));
                       }
                       out["job_id"] = id;
                       out["enabled"] = job->enabled;
                       return out;
                   };
                   auto preview = co_await WithDb(*ctx, work);
                   if (!preview.ok()) co_return JobError(preview.status());
                   co_return Response::Json(*preview);
               });

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
                   auto out = PreviewJson(*schedule, *now, static_cast<std::size_t>(count));
                   out["valid"] = true;
                   out["schedule_expr"] = schedule->expression();
                   co_return Response::Json(out);
               });
}

}  // namespace sched::web::impl
