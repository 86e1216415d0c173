#pragma once

// A workflow run as the API's trigger makes it, for the tests of what the master does with runs.

#include <gtest/gtest.h>

#include <cstdint>

#include "sched/db/database.hpp"
#include "sched/store/workflow.hpp"
#include "sched/store/workflow_run.hpp"

namespace sched::trigger {

// Inserts a manual run of `w`'s current version, scheduled at `scheduled` and running since
// `started`; its id.
inline std::int64_t InsertManualRun(db::Database& db, const model::Workflow& w, std::int64_t scheduled,
                                    std::int64_t started) {
    model::WorkflowRun run;
    run.workflow_id = w.id;
    run.scheduled_time = scheduled;
    run.kind = model::WorkflowRunKind::kManual;
    run.workflow_version = w.version;
    run.definition = {w.steps, w.edges};
    run.created_by = "test";
    run.started_at = started;
    auto id =
        db.Run([&](soci::session& s) { return store::WorkflowRunRepository::InsertIfAbsent(s, db.dialect(), run); });
    EXPECT_TRUE(id.ok() && id->has_value());
    return **id;
}

}  // namespace sched::trigger
