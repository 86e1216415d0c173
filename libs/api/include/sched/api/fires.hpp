#pragma once

/// Fires as the API answers them (schemas Fire and FireLog; docs/api.md). Vocabulary values
/// (kind, status, reason) are the wire text of the store's name tables.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sched/api/view.hpp"

namespace sched::api {

/// Schema Fire: one fire of a job (a run, a retry, or a ledger row of times that did not run).
struct FireView {
    std::int64_t id = 0;
    std::int64_t job_id = 0;
    std::int64_t scheduled_time = 0;
    std::int64_t due_at = 0;
    std::string kind;
    std::int64_t attempt = 0;
    std::int64_t shard_index = 0;
    std::int64_t shard_total = 0;
    std::int64_t epoch = 0;
    std::optional<std::int64_t> dispatch_epoch;
    std::optional<std::string> assigned_node;
    std::optional<std::string> executor_address;
    std::string status;
    std::int64_t created_at = 0;
    std::optional<std::int64_t> dispatched_at;
    std::optional<std::int64_t> started_at;
    std::optional<std::int64_t> finished_at;
    std::optional<std::int64_t> result_code;
    std::optional<std::string> result_message;
    std::optional<std::string> reason;
    std::optional<std::int64_t> skipped_until;
    std::optional<std::int64_t> skipped_count;
    std::optional<std::int64_t> workflow_run_id;
    std::optional<std::string> workflow_step;
    std::optional<std::int64_t> lag_ms;
    std::optional<std::int64_t> duration_ms;

    SCHED_API_FIELDS(FireView, id, job_id, scheduled_time, due_at, kind, attempt, shard_index, shard_total, epoch,
                     dispatch_epoch, assigned_node, executor_address, status, created_at, dispatched_at, started_at,
                     finished_at, result_code, result_message, reason, skipped_until, skipped_count, workflow_run_id,
                     workflow_step, lag_ms, duration_ms)
};

/// Schema FireLog: a page of a fire's log, stored (the tail the executor sent with its result)
/// or live (relayed from the executor).
struct FireLogView {
    std::int64_t fire_id = 0;
    std::int64_t from_line = 0;
    std::int64_t to_line = 0;  ///< the next page's from_line
    std::vector<std::string> lines;
    bool finished = false;
    std::string fire_status;
    std::string source;  ///< live or stored
    std::optional<std::string> executor_address;
    std::optional<std::int64_t> truncated_bytes;  ///< stored only
    std::optional<std::int64_t> stored_at_ms;     ///< stored only

    static constexpr auto Fields() {
        return std::tuple{Field("fire_id", &FireLogView::fire_id),
                          Field("from_line", &FireLogView::from_line),
                          Field("to_line", &FireLogView::to_line),
                          Field("lines", &FireLogView::lines),
                          Field("finished", &FireLogView::finished),
                          Field("fire_status", &FireLogView::fire_status),
                          Field("source", &FireLogView::source),
                          Field("executor_address", &FireLogView::executor_address, Presence::kWhenSet),
                          Field("truncated_bytes", &FireLogView::truncated_bytes, Presence::kWhenSet),
                          Field("stored_at_ms", &FireLogView::stored_at_ms, Presence::kWhenSet)};
    }
};

}  // namespace sched::api
