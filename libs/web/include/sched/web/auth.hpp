#pragma once

/// Who may call which route of the web module.
///
/// Tokens:
/// - the cluster token (`token` in the config, or SCHED_TOKEN): the bootstrap admin; it also
///   reaches the executor routes, for every app (trigger nodes and operators' tools use it; a
///   business service should not: give it an executor token scoped to its app);
/// - API tokens, created through `POST /api/v1/tokens` and stored only as a SHA-256 hash
///   (`api_token.token_hash`), each with one role:
///     admin     everything, including tokens
///     operator  jobs (create, edit, delete, pause, resume, trigger) and killing fires
///     viewer    read only
///     executor  only the SDK's routes: registry, callback and the lock API, and only for the
///               apps in its scope (`apps`): heartbeats and deregistrations of those apps,
///               results for fires of their jobs, locks in their namespaces; anything else is
///               403 with `field` "app". A legacy executor token (created before scopes
///               existed, scope "*") acts for every app, and each process logs a warning the
///               first time it sees one.
///   and, the other way round, admin/operator/viewer tokens do not reach the registry and
///   callback routes. The lock API is shared: operator and admin may take, extend and release
///   locks of any app or none (and viewers inspect them) as executor tokens may for theirs.
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
#include <unordered_set>
#include <vector>

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
enum class Permission { kPublic, kViewer, kOperator, kAdmin, kExecutor, kLockHolder, kLockViewer, kAnyToken };

/// kAnyToken: any valid token of any role (GET /api/v1/whoami).
/// "public", "viewer", "operator", "admin", "executor", "operator|executor", "viewer|executor",
/// "any".
std::string_view PermissionName(Permission permission);

/// The caller of a request, once authenticated.
struct Principal {
    std::string name;  ///< the token's name; "cluster-token" for the cluster token
    store::Role role = store::Role::kViewer;
    std::int64_t token_id = 0;   ///< 0 for the cluster token
    bool cluster_token = false;  ///< the cluster token: admin, and also accepted by executor routes
    /// Executor tokens: the apps it may act for ({store::kAllApps} for a legacy token).
    std::vector<std::string> apps;
    /// A person signed in through the OpenID provider (oidc.hpp), by an access token as bearer or
    /// by a browser session: their `sub` and the provider's issuer ("" for tokens). `name` is then
    /// their email (or `name` claim, or `sub`), which is what audit entries record.
    std::string subject;
    std::string issuer;
    bool session = false;  ///< authenticated by a browser session cookie (sign_in.hpp)
};

/// OK when `principal` may call a route needing `permission`; kPermissionDenied saying which
/// role it needs otherwise.
Status Authorize(const Principal& principal, Permission permission);

/// True when `principal` is limited to the apps in its scope: an executor token that is not a
/// legacy all-apps one. The cluster token and people's tokens are not app-scoped (their role
/// decides).
bool IsAppScoped(const Principal& principal);

/// OK when `principal` may act for `app` on the SDK and lock routes (always, unless
/// IsAppScoped); kPermissionDenied naming the app and the token's scope otherwise.
Status AuthorizeApp(const Principal& principal, std::string_view app);

/// Why `app` cannot be an app name in a token scope or a lock request, or nullopt when it can:
/// 1..kMaxAppName characters (as job.app), no control characters, not "*".
inline constexpr std::size_t kMaxAppName = 128;
std::optional<std::string> AppNameProblem(std::string_view app);

/// The secret of an `Authorization: Bearer <secret>` header value (scheme case-insensitive,
/// RFC 6750, surrounding spaces trimmed), or nullopt.
std::optional<std::string_view> BearerSecret(std::string_view header);

/// A fresh secret: `bytes` bytes from the kernel's random generator (getrandom), as 2 * bytes
/// lower-case hex digits. Throws std::runtime_error when the kernel refuses (never in practice).
std::string NewSecret(std::size_t bytes = 32);

/// The web module's view of the database: nullptr until it is open (the standalone app opens it
/// inside TriggerNode::Start, after the routes were added).
using DatabaseProvider = db::DatabaseProvider;

/// Thread-safe. Must outlive every Authenticate() call it started; `db_pool` must outlive it.
class TokenAuthenticator {
  public:
    /// `cluster_token` must not be empty (std::invalid_argument): a web module that checks
    /// nothing is not an option.
    TokenAuthenticator(std::string cluster_token, DatabaseProvider database, net::thread_pool& db_pool,
                       Micros cache_ttl);

    /// The principal behind the request's bearer token. kUnauthenticated when there is none or it
    /// is unknown or revoked; kUnavailable when the database cannot be asked (not cached).
    net::awaitable<Result<Principal>> Authenticate(const http::Request& request);

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
    std::unordered_map<std::string, Entry> cache_;    // by token hash
    std::unordered_set<std::int64_t> warned_legacy_;  // legacy executor tokens logged already
};

}  // namespace sched::web
