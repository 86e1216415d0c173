#pragma once

/// How an app (trigger node, web module) gets its database at start-up.

#include <functional>
#include <memory>

#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/db/database_config.hpp"

namespace sched::db {

/// Opens the database `config` names, retrying an unreachable one for `connect_retry_for`
/// (Database::OpenWithRetry; `should_stop` ends the wait early); on MySQL refuses a server that
/// does not match the declared topology (CheckTopology: kFailedPrecondition with its one line);
/// then applies the missing migrations (errors prefixed "migrate: ").
Result<std::shared_ptr<Database>> OpenMigrated(const DatabaseConfig& config,
                                               const std::function<bool()>& should_stop = {});

}  // namespace sched::db
