#pragma once

// A job body (POST/PUT /api/v1/jobs) read and validated into a model::Job: the field bounds, the
// vocabulary and the schedule. Used by the job routes (jobs_api.cpp); no I/O.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sched/common/status.hpp"
#include "sched/cron/schedule.hpp"
#include "sched/http/message.hpp"
#include "sched/store/job.hpp"

namespace sched::web::impl {

constexpr std::size_t kMaxName = 191;
constexpr std::size_t kMaxApp = 128;
constexpr std::size_t kMaxHandler = 128;
constexpr std::size_t kMaxDescription = 1024;
constexpr std::size_t kMaxExpr = 255;
constexpr std::size_t kMaxZone = 64;
constexpr std::size_t kMaxParamsBytes = 65535;  // a MySQL TEXT column
constexpr std::size_t kMaxManagedBy = 191;      // the column of migration 018

/// `managed_by` of a job or workflow body (the file that declares the object, docs/schedctl.md
/// "Managed from a file"): left out keeps `managed_by`, null clears it, a string of 1 to
/// kMaxManagedBy characters sets it; anything else is the 400 naming the field.
std::optional<http::ApiError> ReadManagedBy(const nlohmann::json& body, std::optional<std::string>& managed_by);

// A job body after validation: the job to store and what the handler still has to decide.
struct JobInput {
    model::Job job;
    std::int64_t version = 0;      // the version an update was based on
    bool schedule_changed = true;  // type, expression or zone differ from the stored job
    std::optional<cron::Schedule> schedule;
};

/// Validates a create (current == nullptr) or an update (fields left out keep current's values):
/// nullopt and `out` filled, or the 400 naming the first wrong field. Unknown fields are the
/// caller's check (RejectUnknownFields with kJobFields).
std::optional<http::ApiError> ReadJobInput(const nlohmann::json& body, const model::Job* current, JobInput& out);

/// Sets job.next_fire_time for a job about to be stored at DB time `now_ms`: recomputed when the
/// schedule changed or the job is being (re-)enabled, cleared while paused, otherwise kept (a
/// fixed-delay job's NULL "waiting for its run to finish" must survive an edit of its description).
/// kInvalidArgument naming the field when no fire time is left (end_at past, expression exhausted).
Status PlanNextFire(JobInput& in, const model::Job* current, std::int64_t now_ms);

/// The job's schedule as the master makes it (trigger::Master::ScheduleFor): with its id, jitter
/// and DST choice.
Result<cron::Schedule> StoredSchedule(const model::Job& job);

/// Which request field a job repository error is about: RepositoryErrorField, and for
/// kInvalidArgument the schedule field the message starts with.
std::string FieldFor(const Status& s);

/// A job repository error as the response, naming FieldFor(s).
http::Response JobError(const Status& s);

}  // namespace sched::web::impl
