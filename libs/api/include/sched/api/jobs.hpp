#pragma once

/// A job as the API answers it (schema Job; docs/api.md). Vocabulary
/// values (schedule_type, routing, a fire's status, ...) are the wire text of their name tables
/// (sched/common/job_vocabulary.hpp, the store's fire tables): a reader shows an unknown one as
/// it came instead of failing on a name a newer server added.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sched/api/view.hpp"

namespace sched::api {

/// Who paused a job, when (DB clock, epoch ms) and why.
struct JobPauseView {
    std::string by;
    std::int64_t at = 0;
    std::string note;

    SCHED_API_FIELDS(JobPauseView, by, at, note)
};

/// A job's newest fire, as the job list shows it.
struct LastFireView {
    std::int64_t id = 0;
    std::string status;
    std::string kind;
    std::int64_t scheduled_time = 0;
    std::optional<std::int64_t> finished_at;

    SCHED_API_FIELDS(LastFireView, id, status, kind, scheduled_time, finished_at)
};

/// Schema Job. Times are epoch milliseconds.
struct JobView {
    std::int64_t id = 0;
    std::string name;
    std::string app;
    std::string handler;
    nlohmann::json params;  ///< the stored text parsed when it is JSON, else that text
    std::string schedule_type;
    std::string schedule_expr;
    std::string time_zone;
    std::string misfire_policy;
    std::string routing;
    std::string block_strategy;
    std::int64_t concurrency_limit = 0;
    std::int64_t timeout_ms = 0;
    std::int64_t retry_max = 0;
    std::int64_t retry_backoff_ms = 0;
    std::int64_t pause_after_failures = 0;
    std::int64_t jitter_ms = 0;
    std::string dst_gap;
    std::string dst_overlap;
    std::int64_t shard_total = 0;
    bool at_least_once = false;
    bool enabled = false;
    std::string description;
    std::optional<std::int64_t> next_fire_time;
    std::optional<std::int64_t> last_fire_time;
    std::int64_t version = 0;
    std::int64_t created_at = 0;
    std::int64_t updated_at = 0;
    std::optional<JobPauseView> paused;  ///< while the job is paused (disabled)
    std::optional<std::string> calendar;
    std::optional<std::string> concurrency_key;  ///< null: none
    std::optional<std::int64_t> start_at;
    std::optional<std::int64_t> end_at;
    std::optional<std::int64_t> max_runs;
    std::int64_t planned_runs = 0;
    std::optional<std::int64_t> completed_at;
    std::optional<std::string> completed_reason;  ///< end_at or max_runs, with completed_at
    std::optional<LastFireView> last_fire;        ///< only in the list and a job's GET, when it has fired
    std::optional<std::string> managed_by;        ///< the file that declares the job; null: made by hand

    static constexpr auto Fields() {
        return std::tuple{Field("id", &JobView::id),
                          Field("name", &JobView::name),
                          Field("app", &JobView::app),
                          Field("handler", &JobView::handler),
                          Field("params", &JobView::params),
                          Field("schedule_type", &JobView::schedule_type),
                          Field("schedule_expr", &JobView::schedule_expr),
                          Field("time_zone", &JobView::time_zone),
                          Field("misfire_policy", &JobView::misfire_policy),
                          Field("routing", &JobView::routing),
                          Field("block_strategy", &JobView::block_strategy),
                          Field("concurrency_limit", &JobView::concurrency_limit),
                          Field("timeout_ms", &JobView::timeout_ms),
                          Field("retry_max", &JobView::retry_max),
                          Field("retry_backoff_ms", &JobView::retry_backoff_ms),
                          Field("pause_after_failures", &JobView::pause_after_failures),
                          Field("jitter_ms", &JobView::jitter_ms),
                          Field("dst_gap", &JobView::dst_gap),
                          Field("dst_overlap", &JobView::dst_overlap),
                          Field("shard_total", &JobView::shard_total),
                          Field("at_least_once", &JobView::at_least_once),
                          Field("enabled", &JobView::enabled),
                          Field("description", &JobView::description),
                          Field("next_fire_time", &JobView::next_fire_time),
                          Field("last_fire_time", &JobView::last_fire_time),
                          Field("version", &JobView::version),
                          Field("created_at", &JobView::created_at),
                          Field("updated_at", &JobView::updated_at),
                          Field("paused", &JobView::paused),
                          Field("calendar", &JobView::calendar),
                          Field("concurrency_key", &JobView::concurrency_key),
                          Field("start_at", &JobView::start_at),
                          Field("end_at", &JobView::end_at),
                          Field("max_runs", &JobView::max_runs),
                          Field("planned_runs", &JobView::planned_runs),
                          Field("completed_at", &JobView::completed_at),
                          Field("completed_reason", &JobView::completed_reason),
                          Field("last_fire", &JobView::last_fire, Presence::kWhenSet),
                          Field("managed_by", &JobView::managed_by)};
    }
};

}  // namespace sched::api
