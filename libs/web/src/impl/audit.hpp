#pragma once

// The audit log's writer for the web module: one call per change, after the change or inside
// its transaction (docs/architecture/audit.md).

#include <optional>
#include <string>

#include <soci/soci.h>
#include <nlohmann/json.hpp>

#include "sched/db/database.hpp"
#include "sched/store/audit.hpp"
#include "sched/web/auth.hpp"

namespace sched::web::impl {

/// One change to record: what was done (action) to which target, and the target's JSON (its
/// API view) before and after. nullopt: did not exist before / is gone after.
struct AuditChange {
    std::string
        action;  ///< create | update | delete | pause | resume | trigger | kill | revoke | rotate | cancel | rerun
    std::string target_kind;  ///< job | fire | token | alert-rule | signing-key | calendar | backfill | workflow |
                              ///< workflow-run | route
    std::string target_id;
    std::string target_name;
    std::optional<nlohmann::json> before;
    std::optional<nlohmann::json> after;
};

/// Each side of an entry is at most this many bytes of JSON; a larger one is stored as
/// {"truncated": true, "bytes_over": N}.
inline constexpr std::size_t kMaxAuditJsonBytes = 16 * 1024;
/// Strings longer than this (code points counted as bytes) are cut, with "…" appended.
inline constexpr std::size_t kMaxAuditStringBytes = 1024;

/// The JSON stored for one side: secrets redacted (keys token, token_hash, secret, secrets,
/// password, passwd, api_key, private_key and authorization, at any depth down to 4, become
/// "[redacted]"), long strings cut, the whole bounded by kMaxAuditJsonBytes.
std::string AuditJson(const nlohmann::json& target);

/// The entry `who` makes with `change` (names and ids cut to their column sizes).
store::AuditEntry MakeAuditEntry(const Principal& who, const AuditChange& change);

/// Records inside the caller's transaction: the entry commits or rolls back with the change
/// (soci errors throw, as every statement of the transaction does).
void RecordAudit(soci::session& s, const db::Dialect& dialect, const Principal& who, const AuditChange& change);

/// Records right after a change that committed on its own (a repository call with its own
/// transaction). A failure is logged, not returned: the change stands, and the caller's answer
/// should describe it.
void RecordAudit(db::Database& db, const Principal& who, const AuditChange& change);

}  // namespace sched::web::impl
