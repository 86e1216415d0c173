#pragma once

/// The audit log (table `audit_log`): who changed what through the API, when, and how the
/// target looked before and after.
///
/// Entries are written by the web module (web::impl::RecordAudit) and by the master's automatic
/// pause (trigger::Alerter); this repository stores what it is given: redacting secrets and
/// bounding `before_json`/`after_json` is the writer's job (the web module does both). `at_ms`
/// is always the database clock. Entries are purged with fires under `history-retention`
/// (trigger::HistoryPurger, PurgeBefore).
///
/// Thread-safe and blocking, like every repository: call it off the I/O threads.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "sched/common/status.hpp"
#include "sched/db/database.hpp"

namespace sched::store {

/// The actor name of changes made by the scheduler itself (the master's automatic pause).
inline constexpr const char* kSchedulerActor = "scheduler";

struct AuditEntry {
    std::int64_t id = 0;
    std::int64_t at_ms = 0;           ///< DB clock, set on insert
    std::string actor;                ///< the token's name, "cluster-token" or kSchedulerActor
    std::string actor_role;           ///< admin | operator | viewer | executor | scheduler | none
    std::int64_t actor_token_id = 0;  ///< 0 for the cluster token and the scheduler
    /// create | update | delete | pause | resume | trigger | kill | revoke | rotate | denied | sign-in |
    /// sign-out | sign-in-refused
    std::string action;
    std::string target_kind;  ///< job | fire | token | alert-rule | signing-key | route | session
    std::string target_id;
    std::string target_name;
    std::optional<std::string> before_json;  ///< the target before the change (nullopt: none)
    std::optional<std::string> after_json;   ///< the target after the change (nullopt: gone)
};

struct AuditFilter {
    std::optional<std::string> target_kind;
    std::optional<std::string> target_id;
    std::optional<std::string> actor;
    std::optional<std::string> action;
    std::optional<std::int64_t> since_ms;  ///< at_ms >= since_ms
    std::optional<std::int64_t> until_ms;  ///< at_ms < until_ms
    std::int64_t before_id = 0;            ///< cursor: entries with id < before_id (0 = from the newest)
    int limit = 50;
};

class AuditRepository {
  public:
    explicit AuditRepository(db::Database& db) : db_(db) {}

    /// Stores `entry` in its own statement (id and at_ms assigned); returns the id.
    Result<std::int64_t> Record(const AuditEntry& entry);
    /// Entries matching `filter`, newest first (descending id), at most filter.limit.
    Result<std::vector<AuditEntry>> List(const AuditFilter& filter);

    // ---- session-level operations, inside the caller's transaction ----

    /// Stores `entry` in the caller's transaction, so it commits or rolls back with the change.
    static std::int64_t Record(soci::session& s, const db::Dialect& dialect, const AuditEntry& entry);
    /// Deletes at most `limit` entries with at_ms < cutoff_ms, oldest first; returns how many.
    static int PurgeBefore(soci::session& s, std::int64_t cutoff_ms, int limit);

  private:
    db::Database& db_;
};

}  // namespace sched::store
