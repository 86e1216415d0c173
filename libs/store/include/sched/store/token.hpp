#pragma once

/// API tokens (table `api_token`). Only a hash of each secret is stored (the web module hashes;
/// this repository never sees a secret). Revoked tokens stay for the audit trail.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sched/common/status.hpp"
#include "sched/db/database.hpp"

namespace sched::store {

/// admin: everything incl. tokens; operator: jobs, kill, trigger; viewer: read only;
/// executor: only the SDK's routes: registry, callback and locks (client SDKs).
enum class Role { kAdmin, kOperator, kViewer, kExecutor };
std::string_view RoleName(Role r);
std::optional<Role> ParseRole(std::string_view name);

struct ApiToken {
    std::int64_t id = 0;
    std::string name;
    Role role = Role::kViewer;
    std::int64_t created_at = 0;
    std::optional<std::int64_t> last_used_at;
    std::optional<std::int64_t> revoked_at;
};

class TokenRepository {
  public:
    explicit TokenRepository(db::Database& db) : db_(db) {}

    /// kAlreadyExists when the same hash is stored already.
    Result<ApiToken> Create(const std::string& name, Role role, const std::string& token_hash);
    /// The unrevoked token with this hash; kNotFound otherwise.
    Result<ApiToken> FindActive(const std::string& token_hash);
    Result<std::vector<ApiToken>> List();
    /// kNotFound when absent or already revoked.
    Status Revoke(std::int64_t id);
    /// Records a use (DB clock).
    Status Touch(std::int64_t id);

  private:
    db::Database& db_;
};

}  // namespace sched::store
