#pragma once

/// Who may call which route of the web module.
///
/// Tokens:
/// - the cluster token (`token` in the config, or SCHED_TOKEN): the bootstrap admin; it is also
///   what SDKs and trigger nodes use, so it reaches the executor routes too;
/// - API tokens, created through `POST /api/v1/tokens` and stored only as a SHA-256 hash
///   (`api_token.token_hash`), each with one role:
///     admin     everything, including tokens
///     operator  jobs (create, edit, delete, pause, resume, trigger) and killing fires
///     viewer    read only
///     executor  only the SDK's routes: registry, callback and the lock API; nothing else
///   and, the other way round, admin/operator/viewer tokens do not reach the registry and
///   callback routes. The lock API is shared: operator and admin may take, extend and release
///   locks (and viewers inspect them) as executor tokens may.
///
/// Requests carry `Authorization: Bearer <secret>`. A missing, malformed, unknown or revoked
/// token is 401 (kUnauthenticated); a token whose role is too low is 403 (kPermissionDenied).
///
/// Why the check runs inside the handlers and not in the server's AuthHook: the hook runs on
/// the connection's strand and must not block, while an API token needs a database lookup. The
/// cluster token is compared in constant time without any I/O; other tokens are looked up on the
/// DB pool (co_await) and the answer is cached for `cache_ttl`, positive and negative alike. A
/// token revoked through this process stops working at once; one revoked through another web
/// process works here for at most `cache_ttl`. A lookup also records `last_used_at`, so that
/// column is exact to about `cache_ttl`.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "sched/common/duration.hpp"
#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/http/message.hpp"
#include "sched/store/token.hpp"

namespace sched::web {

/// What a route needs. The OpenAPI document's `x-role` spells these names.
/// kLockHolder (taking, extending and releasing locks) admits executor tokens and the operator
/// role and above; kLockViewer (inspecting a lock) executor tokens and every people's role.
enum class Permission { kPublic, kViewer, kOperator, kAdmin, kExecutor, kLockHolder, kLockViewer };

/// "public", "viewer", "operator", "admin", "executor", "operator|executor", "viewer|executor".
std::string_view PermissionName(Permission permission);

/// The caller of a request, once authenticated.
struct Principal {
    std::string name;  ///< the token's name; "cluster-token" for the cluster token
    store::Role role = store::Role::kViewer;
    std::int64_t token_id = 0;   ///< 0 for the cluster token
    bool cluster_token = false;  ///< the cluster token: admin, and also accepted by executor routes
};

/// OK when `principal` may call a route needing `permission`; kPermissionDenied saying which
/// role it needs otherwise.
Status Authorize(const Principal& principal, Permission permission);

/// A fresh secret: `bytes` bytes from the kernel's random generator (getrandom), as 2 * bytes
/// lower-case hex digits. Throws std::runtime_error when the kernel refuses (never in practice).
std::string NewSecret(std::size_t bytes = 32);

/// The web module's view of the database: nullptr until it is open (the standalone app opens it
/// inside TriggerNode::Start, after the routes were added).
using DatabaseProvider = std::function<std::shared_ptr<db::Database>()>;

/// Thread-safe. Must outlive every Authenticate() call it started; `db_pool` must outlive it.
class TokenAuthenticator {
  public:
    /// `cluster_token` must not be empty (std::invalid_argument): a web module that checks
    /// nothing is not an option.
    TokenAuthenticator(std::string cluster_token, DatabaseProvider database, net::thread_pool& db_pool,
                       Micros cache_ttl);

    /// The principal behind the request's bearer token. kUnauthenticated when there is none or it
    /// is unknown or revoked; kUnavailable when the database cannot be asked (not cached).
    net::awaitable<Result<Principal>> Authenticate(const rest::Request& request);

    /// Forgets cached answers about token `token_id` (call after revoking it).
    void Forget(std::int64_t token_id);

  private:
    struct Entry {
        std::optional<Principal> principal;  // nullopt: no active token has this hash
        std::chrono::steady_clock::time_point expires;
    };
    std::optional<Entry> Cached(const std::string& hash);
    void Remember(const std::string& hash, std::optional<Principal> principal);

    const std::string cluster_token_;
    const DatabaseProvider database_;
    net::thread_pool& db_pool_;
    const Micros cache_ttl_;
    std::mutex mu_;
    std::unordered_map<std::string, Entry> cache_;  // by token hash
};

}  // namespace sched::web
