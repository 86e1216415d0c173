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
/// executor: only the SDK's routes (registry, callback and locks), and only for the apps in
/// its scope (ApiToken::apps).
enum class Role { kAdmin, kOperator, kViewer, kExecutor };
std::string_view RoleName(Role r);
std::optional<Role> ParseRole(std::string_view name);

/// The scope entry of a legacy executor token: every app. Executor tokens created before app
/// scopes existed (migration 002) have it; new ones cannot get it (the web module refuses it).
inline constexpr std::string_view kAllApps = "*";

struct ApiToken {
    std::int64_t id = 0;
    std::string name;
    Role role = Role::kViewer;
    /// Executor tokens: the app names it may act for (column `app_scope`, a JSON array), or
    /// {kAllApps} for a legacy token (also what a stored NULL reads as). Empty for the other
    /// roles, which have no app scope.
    std::vector<std::string> apps;
    std::int64_t created_at = 0;
    std::optional<std::int64_t> last_used_at;
    std::optional<std::int64_t> revoked_at;
    /// Who created it, as the audit log names the creator; nullopt for tokens from before
    /// migration 020.
    std::optional<std::string> created_by;
};

class TokenRepository {
  public:
    explicit TokenRepository(db::Database& db) : db_(db) {}

    /// kAlreadyExists when the same hash is stored already. `apps` is stored as given (the web
    /// module validates it); it is ignored (stored NULL) for roles other than executor.
    /// `created_by` names the creator (stored NULL when empty).
    Result<ApiToken> Create(const std::string& name, Role role, const std::string& token_hash,
                            const std::vector<std::string>& apps = {}, const std::string& created_by = {});
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
