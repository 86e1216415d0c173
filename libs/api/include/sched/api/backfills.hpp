#pragma once

/// Backfills as the API answers them (schemas Backfill and BackfillDryRun; docs/api.md
/// "Backfills"). Instants are epoch milliseconds; [from, to) is the range.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sched/api/view.hpp"

namespace sched::api {

/// How far a backfill got: its range's times and its fires by outcome.
struct BackfillCountsView {
    std::int64_t planned = 0;
    std::int64_t existing = 0;
    std::int64_t created = 0;
    std::int64_t running = 0;
    std::int64_t succeeded = 0;
    std::int64_t failed = 0;

    SCHED_API_FIELDS(BackfillCountsView, planned, existing, created, running, succeeded, failed)
};

/// Schema Backfill.
struct BackfillView {
    std::int64_t id = 0;
    std::int64_t job_id = 0;
    std::int64_t from = 0;
    std::int64_t to = 0;
    std::string overlap;
    std::int64_t max_parallel = 0;
    std::string state;
    std::int64_t cursor = 0;
    BackfillCountsView counts;
    std::string created_by;
    std::int64_t created_at = 0;
    std::int64_t updated_at = 0;
    std::optional<std::int64_t> finished_at;

    SCHED_API_FIELDS(BackfillView, id, job_id, from, to, overlap, max_parallel, state, cursor, counts, created_by,
                     created_at, updated_at, finished_at)
};

/// One scheduled time of a dry run: the kind of the fire it already has, or null (it would run).
struct BackfillTimeView {
    std::int64_t scheduled_time = 0;
    std::optional<std::string> existing;

    SCHED_API_FIELDS(BackfillTimeView, scheduled_time, existing)
};

/// Schema BackfillDryRun: what a backfill would run, nothing stored.
struct BackfillDryRunView {
    bool dry_run = true;
    std::int64_t job_id = 0;
    std::int64_t from = 0;
    std::int64_t to = 0;
    std::int64_t planned = 0;
    std::int64_t would_run = 0;
    std::int64_t existing = 0;
    std::vector<BackfillTimeView> items;

    SCHED_API_FIELDS(BackfillDryRunView, dry_run, job_id, from, to, planned, would_run, existing, items)
};

}  // namespace sched::api
