#pragma once

// Calendars and job bounds for the web API (calendars_api.cpp): shared with the job routes.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sched/common/status.hpp"
#include "sched/cron/calendar.hpp"
#include "sched/cron/schedule.hpp"
#include "sched/db/database.hpp"
#include "sched/http/json.hpp"
#include "sched/store/job.hpp"

namespace sched::web::impl {

/// The job body fields of a job's calendar and bounds (docs/schedules.md).
inline constexpr std::array<std::string_view, 4> kJobBoundsFields = {"calendar", "start_at", "end_at", "max_runs"};
inline constexpr std::array<std::string_view, 3> kJobBoundsReadOnly = {"planned_runs", "completed_at",
                                                                       "completed_reason"};

/// Reads calendar, start_at, end_at and max_runs of a job body into `job` (absent: unchanged; null:
/// cleared). Instants are epoch ms or ISO-8601 strings (local ones in `job.time_zone`). Checks
/// sizes and ranges and that end_at is after start_at; not whether the calendar exists.
std::optional<http::ApiError> ReadJobBounds(const nlohmann::json& body, model::Job& job);

/// The stored calendar named `name` as evaluated rules; kInvalidArgument naming `calendar` when
/// there is none.
Result<cron::Calendar> LoadCalendar(db::Database& db, const std::string& name);

/// Sets next_fire_time, completed_at and completed_reason of a job about to be stored, whose
/// schedule, bounds or enabled state changed (or which is new) at DB time `now_ms`: the first
/// scheduled time within its bounds, or completed when none is left (end_at passed, max_runs
/// reached). `current` is the stored job (nullptr on create); a newly set max_runs counts from 0.
void PlanBoundedNext(model::Job& job, const model::Job* current, const cron::Schedule& schedule, std::int64_t now_ms);

/// True when the fields PlanBoundedNext depends on differ from `current`.
bool BoundsChanged(const model::Job& job, const model::Job& current);

}  // namespace sched::web::impl
