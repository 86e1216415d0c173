#pragma once

/// Concurrency keys: limits shared by every job that names the key (job.concurrency_key; table
/// `concurrency_key`, migration 014). The claim admits a fire of such a job only while the key
/// has a free seat and, with a rate limit, a start left in its window (FireClaims::Admit;
/// docs/architecture/concurrency.md "Concurrency keys").
/// Repositories are thread-safe and blocking; times are epoch ms from the DB clock.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <soci/soci.h>

#include "sched/common/status.hpp"
#include "sched/db/database.hpp"

namespace sched::store {

struct ConcurrencyKey {
    std::string name;  ///< 1-64 of [A-Za-z0-9._-] (ValidConcurrencyKeyName)
    /// At most this many fires of the key's jobs dispatching or running at once, cluster-wide.
    int max_running = 1;
    /// At most `rate_starts` starts of the key's jobs' fires per `rate_window_ms`; 0 = no rate limit.
    int rate_starts = 0;
    std::int64_t rate_window_ms = 0;
    std::int64_t created_at = 0;
    std::int64_t updated_at = 0;
};

/// The names a key may have: 1 to 64 letters, digits, '.', '_' or '-'. The claim builds its seat
/// scopes from them ("key:<name>"), so nothing else may reach it.
bool ValidConcurrencyKeyName(std::string_view name);

class ConcurrencyKeyRepository {
  public:
    explicit ConcurrencyKeyRepository(db::Database& db) : db_(db) {}

    /// Creates the key or replaces its limits (created_at kept). kInvalidArgument for a name that
    /// is not ValidConcurrencyKeyName.
    Result<ConcurrencyKey> Put(const ConcurrencyKey& key);
    /// kNotFound when absent.
    Result<ConcurrencyKey> Get(const std::string& name);
    /// By name, names > `after`, at most `limit` (1-1000).
    Result<std::vector<ConcurrencyKey>> List(const std::string& after, int limit);
    /// Deletes the key unless a job names it: then kFailedPrecondition whose message names up to
    /// 20 of those jobs; checked and deleted in one write transaction. kNotFound when absent.
    Status Delete(const std::string& name);
    Result<std::int64_t> Count();

    // ---- session-level ----

    /// The keys among `names` that exist, by name (names not ValidConcurrencyKeyName are left out).
    static std::map<std::string, ConcurrencyKey> Find(soci::session& s, const std::set<std::string>& names);

  private:
    db::Database& db_;
};

}  // namespace sched::store
