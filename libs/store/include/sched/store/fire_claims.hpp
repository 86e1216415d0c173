#pragma once

/// The slave's group operations on `job_fire` (docs/architecture/slave.md): a group of due
/// fires is claimed with one UPDATE and the fires won are learnt with one SELECT by claim
/// token; the fires accepted by one executor instance are recorded `running` with one UPDATE.
/// All of them are session-level: the caller owns the transaction.

#include <cstdint>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "sched/store/fire.hpp"

namespace sched::store {

/// A fire an executor instance accepted, and when (its 202).
struct StartedFire {
    std::int64_t id = 0;
    std::int64_t started_at = 0;
};

class FireClaims {
  public:
    /// Moves the fires among `ids` that are still `pending` and assigned to `node` to
    /// `dispatching`, stamping claim_token = `token`, dispatch_epoch = `epoch` and dispatched_at
    /// = `now_ms` (the claim time: before the due time for a fire claimed ahead), and returns the
    /// fires that carry `token` and are still `dispatching`: those this claim won, and those an
    /// earlier try of the same claim (same token) won before its commit was lost. A fire another
    /// slave claimed first, or that is no longer pending, is not returned.
    static std::vector<Fire> Claim(soci::session& s, const std::string& node, const std::vector<std::int64_t>& ids,
                                   std::int64_t token, std::int64_t epoch, std::int64_t now_ms);

    /// Sets the dispatch epoch of fire `id` to `epoch` if it is `dispatching` under `token`;
    /// whether it did.
    static bool Restamp(soci::session& s, std::int64_t id, std::int64_t token, std::int64_t epoch);

    /// Records `running` (executor_address, each fire's own started_at) for the fires among
    /// `fires` still `dispatching`: the fires one executor instance accepted, in one UPDATE
    /// (started_at is a CASE over the distinct start times, usually one per batch of runs). A
    /// fast handler's callback may have ended a fire already; that fire is left as it is.
    /// Returns how many moved.
    static int MarkRunning(soci::session& s, const std::vector<StartedFire>& fires, const std::string& address);

    /// The ids of the fires `pending` and assigned to `node`, earliest scheduled first, at most
    /// `limit` (the slave's poll: read from idx_fire_node alone, no row, no sort).
    static std::vector<std::int64_t> ListPendingIds(soci::session& s, const std::string& node, int limit);

    /// The fires among `ids` that are `pending` and assigned to `node` (a notification's ids).
    static std::vector<Fire> FindPending(soci::session& s, const std::string& node,
                                         const std::vector<std::int64_t>& ids);
};

}  // namespace sched::store
