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

    static constexpr auto Fields() {
        return std::tuple{
            Field("planned", &BackfillCountsView::planned),     Field("existing", &BackfillCountsView::existing),
            Field("created", &BackfillCountsView::created),     Field("running", &BackfillCountsView::running),
            Field("succeeded", &BackfillCountsView::succeeded), Field("failed", &BackfillCountsView::failed)};
    }
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

    static constexpr auto Fields() {
        return std::tuple{Field("id", &BackfillView::id),
                          Field("job_id", &BackfillView::job_id),
                          Field("from", &BackfillView::from),
                          Field("to", &BackfillView::to),
                          Field("overlap", &BackfillView::overlap),
                          Field("max_parallel", &BackfillView::max_parallel),
                          Field("state", &BackfillView::state),
                          Field("cursor", &BackfillView::cursor),
                          Field("counts", &BackfillView::counts),
                          Field("created_by", &BackfillView::created_by),
                          Field("created_at", &BackfillView::created_at),
                          Field("updated_at", &BackfillView::updated_at),
                          Field("finished_at", &BackfillView::finished_at)};
    }
};

/// One scheduled time of a dry run: the kind of the fire it already has, or null (it would run).
struct BackfillTimeView {
    std::int64_t scheduled_time = 0;
    std::optional<std::string> existing;

    static constexpr auto Fields() {
        return std::tuple{Field("scheduled_time", &BackfillTimeView::scheduled_time),
                          Field("existing", &BackfillTimeView::existing)};
    }
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

    static constexpr auto Fields() {
        return std::tuple{
            Field("dry_run", &BackfillDryRunView::dry_run),   Field("job_id", &BackfillDryRunView::job_id),
            Field("from", &BackfillDryRunView::from),         Field("to", &BackfillDryRunView::to),
            Field("planned", &BackfillDryRunView::planned),   Field("would_run", &BackfillDryRunView::would_run),
            Field("existing", &BackfillDryRunView::existing), Field("items", &BackfillDryRunView::items)};
    }
};

}  // namespace sched::api
