// Calendars (/api/v1/calendars...) and the calendar and bounds fields of jobs.

#include <array>

#include <date/tz.h>

#include "impl/calendars.hpp"
#include "impl/context.hpp"
#include "impl/list_query.hpp"
#include "impl/resource_routes.hpp"
#include "impl/views.hpp"
#include "sched/api/calendars.hpp"
#include "sched/store/calendar.hpp"

namespace sched::web::impl {

namespace {

using http::Method;
using http::Response;

constexpr std::array<std::string_view, 7> kCalendarFields = {
    "name", "description", "time_zone", "excluded_dates", "excluded_weekdays", "excluded_times", "version"};
constexpr std::array<std::string_view, 3> kCalendarReadOnly = {"id", "created_at", "updated_at"};
constexpr std::size_t kMaxName = 191;
constexpr std::size_t kMaxDescription = 1024;
constexpr std::size_t kMaxZone = 64;
constexpr std::size_t kMaxEntry = 32;         // "2026-12-24..2026-12-26" is 22
constexpr std::int64_t kMaxCalendars = 1000;  // the master lists every calendar's version per planning
constexpr std::int64_t kMaxRuns = 1'000'000'000;
constexpr std::int64_t kMinInstant = 0;
constexpr std::int64_t kMaxInstant = 7'258'118'400'000;  // 2200-01-01T00:00:00Z
constexpr int kMaxPreviewDays = 366;

http::ApiError Invalid(std::string field, std::string message) {
    return http::ApiError{Code::kInvalidArgument, std::move(message), std::move(field)};
}

// A calendar body as read: the calendar, and on an update the version it was read at.
struct CalendarInput {
    store::CalendarRecord calendar;
    std::int64_t version = 0;
};

nlohmann::json CalendarJson(const store::CalendarRecord& c) {
    return api::ToJson(api::CalendarView{.id = c.id,
                                         .name = c.name,
                                         .description = c.description,
                                         .time_zone = c.time_zone,
                                         .excluded_dates = c.excluded_dates,
                                         .excluded_weekdays = c.excluded_weekdays,
                                         .excluded_times = c.excluded_times,
                                         .version = c.version,
                                         .created_at = c.created_at,
                                         .updated_at = c.updated_at});
}

// Validates a calendar body (create: current == nullptr) into `out`, canonicalised by cron::Calendar.
std::optional<http::ApiError> ReadCalendar(const nlohmann::json& body, const store::CalendarRecord* current,
                                           store::CalendarRecord& out, std::int64_t& version) {
    store::CalendarRecord c = current ? *current : store::CalendarRecord{};
    http::JsonFields f(body);
    if (!current) {
        c.name = f.String("name");
    } else if (f.ok() && body.contains("name") && (!body["name"].is_string() || body["name"] != current->name)) {
        f.Fail("name", "name: a calendar cannot be renamed (jobs refer to it by name); create a new one");
    }
    c.description = f.String("description", c.description);
    c.time_zone = f.String("time_zone", c.time_zone);
    for (auto [key, list] :
         {std::pair<std::string_view, std::vector<std::string>*>{"excluded_dates", &c.excluded_dates},
          {"excluded_weekdays", &c.excluded_weekdays},
          {"excluded_times", &c.excluded_times}}) {
        if (!f.ok() || !body.is_object() || !body.contains(key) || body[std::string(key)].is_null()) continue;
        const auto& value = body[std::string(key)];
        // Bounded before reading the items: a huge array costs nothing but this check.
        if (!value.is_array() || value.size() > cron::Calendar::kMaxDates) {
            f.Fail(key, std::string(key) + ": expected an array of at most " +
                            std::to_string(cron::Calendar::kMaxDates) + " strings");
            continue;
        }
        list->clear();
        for (const auto& item : value) {
            if (!item.is_string() || item.get_ref<const std::string&>().size() > kMaxEntry) {
                f.Fail(key,
                       std::string(key) + ": expected strings of at most " + std::to_string(kMaxEntry) + " characters");
                break;
            }
            list->push_back(item.get<std::string>());
        }
    }
    if (current) {
        version = f.Int("version", {.min = 1});
    } else if (f.ok() && body.contains("version")) {
        f.Fail("version", "version: set by the server; leave it out when creating");
    }
    if (f.error()) return *f.error();
    if (c.name.empty()) return Invalid("name", "name: must not be empty");
    if (CodePoints(c.name) > kMaxName) return Invalid("name", "name: at most 191 characters");
    if (CodePoints(c.description) > kMaxDescription)
        return Invalid("description", "description: at most 1024 characters");
    if (c.time_zone.size() > kMaxZone) return Invalid("time_zone", "time_zone: at most 64 characters");
    std::string field;
    auto made = cron::Calendar::Make({.time_zone = c.time_zone,
                                      .excluded_dates = c.excluded_dates,
                                      .excluded_weekdays = c.excluded_weekdays,
                                      .excluded_times = c.excluded_times},
                                     &field);
    if (!made.ok()) return Invalid(field, made.status().message());
    c.time_zone = made->rules().time_zone;
    c.excluded_dates = made->rules().excluded_dates;
    c.excluded_weekdays = made->rules().excluded_weekdays;
    c.excluded_times = made->rules().excluded_times;
    out = std::move(c);
    return std::nullopt;
}

// One instant field of a job body: epoch ms, or an ISO-8601 / decimal string (cron::ParseInstant).
std::optional<http::ApiError> ReadInstant(const nlohmann::json& body, std::string_view key, const std::string& zone,
                                          std::optional<std::int64_t>& out) {
    const std::string k(key);
    if (!body.contains(k)) return std::nullopt;
    const auto& v = body[k];
    if (v.is_null()) {
        out.reset();
        return std::nullopt;
    }
    std::optional<std::int64_t> ms;
    if (v.is_number_integer()) {
        ms = v.get<std::int64_t>();
    } else if (v.is_string() && v.get_ref<const std::string&>().size() <= 64) {
        auto z = cron::LookupZone(zone.empty() ? "UTC" : zone);
        auto parsed = cron::ParseInstant(v.get<std::string>(), z.ok() ? *z : nullptr);
        if (!parsed.ok()) return Invalid(k, k + ": " + parsed.status().message());
        ms = *parsed;
    } else {
        return Invalid(k, k + ": expected epoch milliseconds or an ISO-8601 instant");
    }
    if (*ms < kMinInstant || *ms >= kMaxInstant) return Invalid(k, k + ": must be between 1970 and 2199");
    out = ms;
    return std::nullopt;
}

}  // namespace

std::optional<http::ApiError> ReadJobBounds(const nlohmann::json& body, model::Job& job) {
    if (!body.is_object()) return std::nullopt;
    if (body.contains("calendar")) {
        const auto& v = body["calendar"];
        if (v.is_null()) {
            job.calendar.clear();
        } else if (!v.is_string()) {
            return Invalid("calendar", "calendar: expected the name of a calendar, or null");
        } else {
            if (CodePoints(v.get<std::string>()) > kMaxName)
                return Invalid("calendar", "calendar: at most 191 characters");
            job.calendar = v.get<std::string>();
        }
    }
    if (auto e = ReadInstant(body, "start_at", job.time_zone, job.start_at)) return e;
    if (auto e = ReadInstant(body, "end_at", job.time_zone, job.end_at)) return e;
    if (body.contains("max_runs")) {
        const auto& v = body["max_runs"];
        if (v.is_null()) {
            job.max_runs.reset();
        } else if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > kMaxRuns) {
            return Invalid("max_runs", "max_runs: expected an integer from 1 to 1000000000, or null");
        } else {
            job.max_runs = v.get<std::int64_t>();
        }
    }
    if (job.start_at && job.end_at && *job.end_at <= *job.start_at) {
        return Invalid("end_at", "end_at: must be after start_at");
    }
    return std::nullopt;
}

Result<cron::Calendar> LoadCalendar(db::Database& db, const std::string& name) {
    auto record = store::CalendarRepository(db).GetByName(name);
    if (!record.ok()) {
        if (record.status().code() == Code::kNotFound) {
            return InvalidArgument("calendar: no calendar named \"" + name + "\"");
        }
        return record.status();
    }
    auto made = cron::Calendar::Make({.time_zone = record->time_zone,
                                      .excluded_dates = record->excluded_dates,
                                      .excluded_weekdays = record->excluded_weekdays,
                                      .excluded_times = record->excluded_times});
    if (!made.ok()) return FailedPrecondition("calendar \"" + name + "\": " + made.status().message());
    return *made;
}

bool BoundsChanged(const model::Job& job, const model::Job& current) {
    return job.start_at != current.start_at || job.end_at != current.end_at || job.max_runs != current.max_runs ||
           job.calendar != current.calendar;
}

void PlanBoundedNext(model::Job& job, const model::Job* current, const cron::Schedule& schedule, std::int64_t now_ms) {
    // max_runs counts the runs planned while it is set: one set anew starts from zero.
    if (job.max_runs && (!current || !current->max_runs)) job.planned_runs = 0;
    job.completed_at.reset();
    job.completed_reason.clear();
    if (job.max_runs && job.planned_runs >= *job.max_runs) {
        job.next_fire_time.reset();
        job.completed_at = now_ms;
        job.completed_reason = "max_runs";
        return;
    }
    std::int64_t from = now_ms;
    if (job.start_at && *job.start_at - 1 > from) from = *job.start_at - 1;
    job.next_fire_time = schedule.NextFireTime(from);
    if (job.next_fire_time && job.end_at && *job.next_fire_time > *job.end_at) {
        job.next_fire_time.reset();
        job.completed_at = now_ms;
        job.completed_reason = "end_at";
    }
}

void AddCalendarRoutes(Routes& routes) {
    auto ctx = routes.context();

    const Resource<CalendarInput, store::CalendarRecord> calendar{
        .collection = "/api/v1/calendars",
        .kind = "calendar",
        .fields = {kCalendarFields, kCalendarReadOnly},
        .read = [](const nlohmann::json& body, const store::CalendarRecord* current,
                   CalendarInput& in) { return ReadCalendar(body, current, in.calendar, in.version); },
        .find = [](db::Database& db, std::int64_t id) { return store::CalendarRepository(db).Get(id); },
        .view = CalendarJson};

    routes.Add(Method::kGet, "/api/v1/calendars", Permission::kViewer, kPageQuery,
               ListHandler<store::CalendarRepository>(ctx, calendar));

    routes.Add(Method::kPost, "/api/v1/calendars", Permission::kOperator,
               CreateHandler(ctx, calendar,
                             {.store = [](db::Database& db, const store::CalendarRecord*, CalendarInput& in,
                                          const Principal&) -> Result<store::CalendarRecord> {
                                 store::CalendarRepository calendars(db);
                                 auto count = calendars.Count();
                                 if (!count.ok()) return count.status();
                                 if (*count >= kMaxCalendars) {
                                     return Status(Code::kResourceExhausted,
                                                   "at most " + std::to_string(kMaxCalendars) + " calendars");
                                 }
                                 return calendars.Create(in.calendar);
                             }}));

    routes.Add(Method::kGet, "/api/v1/calendars/{id}", Permission::kViewer, GetHandler(ctx, calendar));

    routes.Add(Method::kPut, "/api/v1/calendars/{id}", Permission::kOperator,
               UpdateHandler(
                   ctx, calendar,
                   {.store = [](db::Database& db, const store::CalendarRecord*, CalendarInput& in, const Principal&) {
                       return store::CalendarRepository(db).Update(in.calendar, in.version);
                   }}));

    routes.Add(
        Method::kDelete, "/api/v1/calendars/{id}", Permission::kOperator,
        DeleteHandler(
            ctx, calendar, [](db::Database& db, std::int64_t id) { return store::CalendarRepository(db).Delete(id); },
            // A calendar still named by jobs: 409 naming `calendar`.
            [](const Status& s) {
                return Response::Error(s, s.code() == Code::kFailedPrecondition ? "calendar" : RepositoryErrorField(s));
            }));

    // The next `days` local days of the calendar: which are excluded whole, and the daily windows.
    routes.Add(
        Method::kGet, "/api/v1/calendars/{id}/preview", Permission::kViewer, {{"days"}},
        GetHandler(ctx, IntQuery{.name = "days", .min = 1, .max = kMaxPreviewDays, .fallback = 14}, RepositoryError,
                   [](db::Database& db, std::int64_t id, std::int64_t days) -> Result<nlohmann::json> {
                       auto record = store::CalendarRepository(db).Get(id);
                       if (!record.ok()) return record.status();
                       auto calendar = LoadCalendar(db, record->name);
                       if (!calendar.ok()) return calendar.status();
                       auto now = DbNowMs(db);
                       if (!now.ok()) return now.status();
                       nlohmann::json out_days = nlohmann::json::array();
                       // Walks the local days with NextIncluded: each excluded period once.
                       const std::int64_t today = calendar->LocalDay(*now);
                       for (std::int64_t d = today; d < today + days; ++d) {
                           const std::int64_t begin_ms = calendar->LocalDayStartMs(d);
                           const std::int64_t end_ms = calendar->LocalDayStartMs(d + 1);
                           nlohmann::json periods = nlohmann::json::array();
                           std::int64_t t = begin_ms;
                           for (int guard = 0; t < end_ms && guard < 100; ++guard) {
                               const auto start = calendar->NextExcluded(t, end_ms);
                               if (!start) break;
                               const auto stop = calendar->NextIncluded(*start).value_or(end_ms);
                               periods.push_back({{"from", *start}, {"to", std::min(stop, end_ms)}});
                               t = stop;
                           }
                           const date::local_days day{date::days{d}};
                           out_days.push_back({{"date", date::format("%F", day)},
                                               {"weekday", date::format("%a", date::weekday{day})},
                                               {"excluded", std::move(periods)}});
                       }
                       return nlohmann::json{{"calendar", record->name},
                                             {"time_zone", record->time_zone},
                                             {"now", *now},
                                             {"excluded_now", calendar->IsExcluded(*now)},
                                             {"days", std::move(out_days)}};
                   }));
}

}  // namespace sched::web::impl
