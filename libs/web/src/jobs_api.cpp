// Jobs and schedules: /api/v1/jobs..., /api/v1/schedules/validate.

#include <algorithm>
#include <array>
#include <cctype>

#include <spdlog/spdlog.h>

#include "impl/audit.hpp"
#include "impl/calendars.hpp"
#include "impl/context.hpp"
#include "impl/job_input.hpp"
#include "impl/list_query.hpp"
#include "impl/resource_routes.hpp"
#include "impl/views.hpp"
#include "sched/api/page.hpp"
#include "sched/cron/misfire.hpp"
#include "sched/cron/schedule.hpp"
#include "sched/http/json.hpp"
#include "sched/protocol/fire_spans.hpp"
#include "sched/store/concurrency_key.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"
#include "sched/store/registry.hpp"

namespace sched::web::impl {

namespace {

bool SameHeaderName(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

// The W3C trace context a manual trigger may carry (docs/api.md "Trigger a job").
struct CallerTrace {
    std::optional<std::string> parent;  // as version 00 (a later version's first 55 characters)
    std::optional<std::string> state;
};

// The `planned` span of each fire a trigger inserted (a node in this process exports them).
void TracePlanned(const std::vector<model::Fire>& fires, const std::string& app, std::int64_t now_ms) {
    constexpr std::int64_t kNanosPerMs = 1'000'000;
    for (const auto& f : fires) {
        const protocol::FireRef ref{
            .fire_id = f.id,
            .job_id = f.job_id,
            .scheduled_ms = f.scheduled_time,
            .attempt = f.attempt,
            .app = app,
            .caller = f.trace_parent ? protocol::ParseTraceParent(*f.trace_parent) : std::nullopt};
        protocol::FireTracer::Step(ref, protocol::FireStep::kPlanned, now_ms * kNanosPerMs, now_ms * kNanosPerMs);
    }
}

// Reads `traceparent` and `tracestate` strictly: a malformed or repeated traceparent, or a bad
// tracestate, is a 400 naming the header. A tracestate without a traceparent is ignored, as the
// specification says.
std::optional<http::Response> ReadCallerTrace(const http::Request& req, CallerTrace& out) {
    int parents = 0;
    int states = 0;
    std::string parent;
    std::string state;
    for (const auto& [name, value] : req.headers) {
        if (SameHeaderName(name, "traceparent")) {
            ++parents;
            parent = value;
        } else if (SameHeaderName(name, "tracestate")) {
            // Repeated tracestate fields are one list (RFC 9110 field combination).
            state += (states++ > 0 ? "," : "") + value;
            if (state.size() > protocol::kMaxTraceStateLength) break;
        }
    }
    if (parents == 0) return std::nullopt;
    if (parents > 1)
        return BadRequest("traceparent", "traceparent: expected one header, got " + std::to_string(parents));
    const auto parsed = protocol::ParseTraceParent(parent);
    if (!parsed) {
        return BadRequest("traceparent",
                          "traceparent: expected a W3C traceparent like \"00-<32 hex digits>-<16 hex digits>-01\" "
                          "(lower-case, ids not all zero)");
    }
    out.parent = parsed->TraceParent();
    if (states > 0) {
        if (auto bad = protocol::CheckTraceState(state)) return BadRequest("tracestate", "tracestate: " + *bad);
        out.state = std::move(state);
    }
    return std::nullopt;
}

using http::Method;
using http::Request;

// A job may name only a key that exists (its limits are the key's): 400 naming concurrency_key.
Status CheckConcurrencyKey(db::Database& db, const std::string& key) {
    if (key.empty()) return Status::Ok();
    auto found = store::ConcurrencyKeyRepository(db).Get(key);
    if (found.ok()) return Status::Ok();
    if (found.status().code() != Code::kNotFound) return found.status();
    return InvalidArgument("concurrency_key: no concurrency key named \"" + key + "\" (create it with PUT " +
                           "/api/v1/concurrency-keys/" + key + ")");
}
using http::Response;

constexpr std::array<std::string_view, 29> kJobFields = {"name",
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
                                                         "max_runs",
                                                         "concurrency_key",
                                                         "managed_by"};
constexpr std::array<std::string_view, 10> kJobReadOnly = {
    "id",        "next_fire_time", "last_fire_time", "created_at",       "updated_at",
    "last_fire", "planned_runs",   "completed_at",   "completed_reason", "paused"};

// The newest fire of each job, read for a whole page at once (store::FireRepository::NewestOfJobs).
Result<std::map<std::int64_t, model::Fire>> NewestFires(db::Database& db, const std::vector<std::int64_t>& job_ids) {
    return db.Run([&](soci::session& s) { return store::FireRepository::NewestOfJobs(s, job_ids); });
}

std::optional<model::Fire> NewestOf(const std::map<std::int64_t, model::Fire>& newest, std::int64_t job_id) {
    const auto it = newest.find(job_id);
    if (it == newest.end()) return std::nullopt;
    return it->second;
}

// Stores a new job. `H` depends on the id, which exists only once the row does: such a job is
// stored without a next fire time (the master does not plan it) and then given the time its
// id resolves to, with the master's CAS (version unchanged), so no fire is ever planned at the
// seed-"" time the validation used.
Result<model::Job> CreateJob(db::Database& db, JobInput& in, std::int64_t now_ms) {
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

// Pause and resume: a state change that does not need the caller's version, so a concurrent
// edit is retried rather than reported.
Result<model::Job> SetEnabled(db::Database& db, std::int64_t id, bool enabled, model::Job* before = nullptr) {
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
Result<model::Job> PauseOrResume(db::Database& db, const Principal& who, std::int64_t id, bool enable,
                                 const std::optional<std::string>& note) {
    model::Job before;
    auto job = SetEnabled(db, id, enable, &before);
    if (!job.ok()) return job;
    const bool changed = before.enabled != enable;
    if (!changed && (enable || !note)) return job;
    store::JobRepository jobs(db);
    std::optional<model::JobPause> pause;
    if (!enable) pause = model::JobPause{who.name, 0, note.value_or("")};
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

    routes.Add(Method::kGet, "/api/v1/jobs", Permission::kViewer, {{"limit", "cursor", "app", "enabled", "q"}},
               [ctx](Request& req, const Principal&) -> net::awaitable<Response> {
                   std::optional<Response> error;
                   const auto paging = ReadPageRequest(req, {"app", "enabled", "q"}, error);
                   if (!paging) co_return *error;
                   store::JobFilter filter;
                   filter.limit = paging->limit;
                   filter.after_id = paging->cursor;
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
                       std::vector<std::int64_t> ids;
                       for (std::size_t i = 0; i < jobs->size() && i < static_cast<std::size_t>(page); ++i) {
                           ids.push_back((*jobs)[i].id);
                       }
                       auto newest = NewestFires(db, ids);
                       if (!newest.ok()) return newest.status();
                       return CursorPage(*jobs, page,
                                         [&](const auto& job) { return JobJson(job, NewestOf(*newest, job.id)); });
                   };
                   filter.limit = page + 1;  // one more tells whether there is a next page
                   auto listed = co_await WithDb(*ctx, work);
                   if (!listed.ok()) co_return Response::Error(listed.status());
                   co_return Response::Json(*listed);
               });

    const Resource<JobInput, model::Job> job{
        .collection = "/api/v1/jobs",
        .kind = "job",
        .fields = {kJobFields, kJobReadOnly},
        .read = ReadJobInput,
        .find = [](db::Database& db, std::int64_t id) { return store::JobRepository(db).Get(id); },
        .view = [](const model::Job& j) { return JobJson(j); },
        .error = JobError};

    routes.Add(Method::kPost, "/api/v1/jobs", Permission::kOperator,
               CreateHandler(ctx, job,
                             {.store = [](db::Database& db, const model::Job*, JobInput& in,
                                          const Principal&) -> Result<model::Job> {
                                  auto now = DbNowMs(db);
                                  if (!now.ok()) return now.status();
                                  if (!in.job.calendar.empty()) {
                                      if (auto calendar = LoadCalendar(db, in.job.calendar); !calendar.ok()) {
                                          return calendar.status();
                                      }
                                  }
                                  if (Status s = CheckConcurrencyKey(db, in.job.concurrency_key); !s.ok()) return s;
                                  if (Status s = PlanNextFire(in, nullptr, *now); !s.ok()) return s;
                                  return CreateJob(db, in, *now);
                              },
                              .log =
                                  [](const model::Job& created, const Principal& who) {
                                      spdlog::info("web: job {} \"{}\" (app {}) created by {}", created.id,
                                                   created.name, created.app, who.name);
                                  },
                              // Its first fire is the master's to plan.
                              .wakes_masters = true}));

    routes.Add(Method::kGet, "/api/v1/jobs/{id}", Permission::kViewer,
               GetHandler(ctx, JobError, [](db::Database& db, std::int64_t id) -> Result<nlohmann::json> {
                   auto found = store::JobRepository(db).Get(id);
                   if (!found.ok()) return found.status();
                   auto newest = NewestFires(db, {id});
                   if (!newest.ok()) return newest.status();
                   return JobJson(*found, NewestOf(*newest, id));
               }));

    routes.Add(Method::kPut, "/api/v1/jobs/{id}", Permission::kOperator,
               UpdateHandler(ctx, job,
                             {.store = [](db::Database& db, const model::Job* current, JobInput& in,
                                          const Principal&) -> Result<model::Job> {
                                  auto now = DbNowMs(db);
                                  if (!now.ok()) return now.status();
                                  if (!in.job.calendar.empty() && in.job.calendar != current->calendar) {
                                      if (auto calendar = LoadCalendar(db, in.job.calendar); !calendar.ok()) {
                                          return calendar.status();
                                      }
                                  }
                                  if (in.job.concurrency_key != current->concurrency_key) {
                                      if (Status s = CheckConcurrencyKey(db, in.job.concurrency_key); !s.ok()) return s;
                                  }
                                  if (Status s = PlanNextFire(in, current, *now); !s.ok()) return s;
                                  in.job.id = current->id;
                                  store::JobRepository jobs(db);
                                  auto updated = jobs.Update(in.job, in.version);
                                  if (!updated.ok()) return updated;
                                  // Enabled by an edit: no longer paused, so no longer "paused by".
                                  if (updated->enabled && current->paused) {
                                      if (Status s = jobs.SetPaused(current->id, std::nullopt); s.ok())
                                          updated->paused.reset();
                                  }
                                  return updated;
                              },
                              // A new schedule or next fire time, or a job enabled by the edit.
                              .wakes_masters = true}));

    routes.Add(
        Method::kDelete, "/api/v1/jobs/{id}", Permission::kOperator,
        DeleteHandler(ctx, job, [](db::Database& db, std::int64_t id) { return store::JobRepository(db).Delete(id); }));

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
                       // A resumed job has a next fire time again; a paused one needs nothing.
                       if (enable) WakeMasters(*ctx);
                       spdlog::info("web: job {} {} by {}", *id, enable ? "resumed" : "paused", who.name);
                       co_return Response::Json(JobJson(*job));
                   });
    }

    routes.Add(
        Method::kPost, "/api/v1/jobs/{id}/trigger", Permission::kOperator,
        ActionHandler([ctx](Request& req, std::int64_t id, const Principal& who) -> net::awaitable<Response> {
            CallerTrace trace;
            if (auto bad = ReadCallerTrace(req, trace)) co_return *bad;
            const std::int64_t ttl_ms =
                std::chrono::duration_cast<std::chrono::milliseconds>(ctx->options.executor_ttl).count();
            auto work = [&who, &trace, id, ttl_ms](db::Database& db) -> Result<std::vector<model::Fire>> {
                return db.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<std::vector<model::Fire>> {
                    const auto job = store::JobRepository::Find(s, id);
                    if (!job) return NotFound("job " + std::to_string(id) + " not found");
                    std::int64_t now = 0;
                    s << "SELECT " + std::string(db.dialect().NowMs()), soci::into(now);
                    const int shards = model::ShardsPerFire(
                        *job, [&] { return store::ExecutorRepository::CountLive(s, db.dialect(), job->app, ttl_ms); });
                    // (job, scheduled_time, kind, attempt, shard) is unique: two triggers within one
                    // millisecond take the next free millisecond.
                    for (std::int64_t t = now; t < now + 1000; ++t) {
                        std::vector<model::Fire> out;
                        for (int shard = 0; shard < shards; ++shard) {
                            model::Fire fire;
                            fire.job_id = id;
                            fire.scheduled_time = t;
                            fire.kind = model::FireKind::kManual;
                            fire.shard_index = shard;
                            fire.shard_total = shards;
                            fire.trace_parent = trace.parent;
                            fire.trace_state = trace.state;
                            // assigned_node stays NULL: the master hands it to a live slave within one scan.
                            auto inserted = store::FireRepository::InsertIfAbsent(s, db.dialect(), fire);
                            if (!inserted) break;
                            out.push_back(*store::FireRepository::Find(s, *inserted));
                        }
                        if (static_cast<int>(out.size()) == shards) {
                            if (protocol::FireTracer::On()) TracePlanned(out, job->app, now);
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
            // Its fires wait unassigned until a master hands them to a slave.
            WakeMasters(*ctx);
            api::ItemList<api::FireView> created;
            for (const auto& f : *fires) created.items.push_back(FireViewOf(f));
            spdlog::info("web: job {} triggered by {} (fire {})", id, who.name, fires->front().id);
            co_return Response::Json(api::ToJson(created), 202);
        }));
}

}  // namespace sched::web::impl
