// Job bodies: bounds, vocabulary and schedule of a create or an update (moved out of jobs_api.cpp).

#include "impl/job_input.hpp"

#include "impl/calendars.hpp"
#include "impl/context.hpp"
#include "sched/cron/misfire.hpp"
#include "sched/cron/schedule.hpp"
#include "sched/http/json.hpp"
#include "sched/store/concurrency_key.hpp"

namespace sched::web::impl {

namespace {

constexpr std::size_t kMaxDstChoice = 16;

http::ApiError Invalid(std::string field, std::string message) {
    return http::ApiError{Code::kInvalidArgument, std::move(message), std::move(field)};
}

}  // namespace

std::optional<http::ApiError> ReadManagedBy(const nlohmann::json& body, std::optional<std::string>& managed_by) {
    if (!body.is_object() || !body.contains("managed_by")) return std::nullopt;
    const auto& value = body["managed_by"];
    if (value.is_null()) {
        managed_by.reset();
        return std::nullopt;
    }
    if (!value.is_string() || value.get_ref<const std::string&>().empty() ||
        CodePoints(value.get_ref<const std::string&>()) > kMaxManagedBy) {
        return Invalid("managed_by", "managed_by: a string of 1 to " + std::to_string(kMaxManagedBy) +
                                         " characters (the file's name), or null: made by hand");
    }
    managed_by = value.get<std::string>();
    return std::nullopt;
}

// Validates a create (current == nullptr) or an update (fields left out keep current's values).
std::optional<http::ApiError> ReadJobInput(const nlohmann::json& body, const model::Job* current, JobInput& out) {
    const bool create = current == nullptr;
    model::Job j = create ? model::Job{} : *current;
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
    if (body.is_object() && body.contains("concurrency_key") && body["concurrency_key"].is_null()) {
        j.concurrency_key.clear();
    } else {
        text("concurrency_key", j.concurrency_key, false);
    }
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
    if (f.ok()) {
        if (auto invalid = ReadManagedBy(body, j.managed_by)) return invalid;
    }
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
    if (!j.concurrency_key.empty() && !store::ValidConcurrencyKeyName(j.concurrency_key)) {
        return Invalid("concurrency_key", "concurrency_key: 1 to 64 letters, digits, '.', '_' or '-' (or null: none)");
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
Status PlanNextFire(JobInput& in, const model::Job* current, std::int64_t now_ms) {
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
    if (s.code() != Code::kInvalidArgument) return RepositoryErrorField(s);
    for (const char* field : {"calendar", "concurrency_key", "end_at", "start_at", "max_runs"}) {
        if (s.message().rfind(std::string(field) + ":", 0) == 0) return field;
    }
    return "schedule_expr";
}

// The job's schedule as the master makes it (trigger::Master::ScheduleFor): with its id, jitter
// and DST choice.
Result<cron::Schedule> StoredSchedule(const model::Job& job) {
    const auto options = cron::ParseScheduleOptions(job.id, job.jitter_ms, job.dst_gap, job.dst_overlap);
    if (!options.ok()) return options.status();
    return cron::Schedule::Make(job.schedule_type, job.schedule_expr, job.time_zone, nullptr, *options);
}

http::Response JobError(const Status& s) {
    return http::Response::Error(s, FieldFor(s));
}

}  // namespace sched::web::impl
