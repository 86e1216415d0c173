#include "sched/web/auth.hpp"

#include <sys/random.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <spdlog/spdlog.h>

#include "sched/common/name_table.hpp"
#include "sched/common/on_pool.hpp"
#include "sched/web/sha256.hpp"

namespace sched::web {

namespace {

// Bounds the cache against a flood of random tokens: past this size it starts over.
constexpr std::size_t kMaxCacheEntries = 10000;

bool ConstantTimeEquals(std::string_view got, std::string_view expected) {
    unsigned char diff = got.size() == expected.size() ? 0 : 1;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const char c = i < got.size() ? got[i] : '\0';
        diff |= static_cast<unsigned char>(c ^ expected[i]);
    }
    return diff == 0;
}

}  // namespace

std::optional<std::string_view> BearerSecret(std::string_view header) {
    constexpr std::string_view kScheme = "bearer ";
    if (header.size() <= kScheme.size()) return std::nullopt;
    for (std::size_t i = 0; i < kScheme.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return std::nullopt;
    }
    std::string_view secret = header.substr(kScheme.size());
    while (!secret.empty() && secret.front() == ' ') secret.remove_prefix(1);
    while (!secret.empty() && secret.back() == ' ') secret.remove_suffix(1);
    if (secret.empty()) return std::nullopt;
    return secret;
}

std::string_view PermissionName(Permission permission) {
    // In Permission's declaration order; a value outside the enum names the strictest role.
    static constexpr auto kPermissionNames = MakeNameTable<Permission>(
        {"public", "viewer", "operator", "admin", "executor", "operator|executor", "viewer|executor", "any"});
    const auto name = kPermissionNames.Name(permission);
    return name == "unknown" ? std::string_view("admin") : name;
}

Status Authorize(const Principal& principal, Permission permission) {
    const auto deny = [&](const std::string& why) {
        return Status(Code::kPermissionDenied, (principal.subject.empty() ? "token \"" : "\"") + principal.name +
                                                   "\" (" + std::string(store::RoleName(principal.role)) + "): " + why);
    };
    if (permission == Permission::kPublic || permission == Permission::kAnyToken) return Status::Ok();
    if (permission == Permission::kExecutor) {
        if (principal.cluster_token || principal.role == store::Role::kExecutor) return Status::Ok();
        return deny("the registry and callback routes need an executor token or the cluster token");
    }
    const auto rank = [](store::Role r) {
        switch (r) {
            case store::Role::kAdmin:
                return 3;
            case store::Role::kOperator:
                return 2;
            case store::Role::kViewer:
                return 1;
            case store::Role::kExecutor:
                return 0;
        }
        return 0;
    };
    if (permission == Permission::kLockHolder || permission == Permission::kLockViewer) {
        if (principal.role == store::Role::kExecutor) return Status::Ok();
    }
    if (principal.role == store::Role::kExecutor) {
        return deny("executor tokens reach only the registry, callback and lock routes");
    }
    int need = 1;
    if (permission == Permission::kAdmin) need = 3;
    if (permission == Permission::kOperator || permission == Permission::kLockHolder) need = 2;
    if (rank(principal.role) >= need) return Status::Ok();
    return deny("this needs the " + std::string(PermissionName(permission)) + " role");
}

std::optional<std::string> AppNameProblem(std::string_view app) {
    std::size_t code_points = 0;
    for (const char c : app) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) return "control characters are not allowed in an app name";
        if ((u & 0xC0) != 0x80) ++code_points;
    }
    if (code_points == 0 || code_points > kMaxAppName) {
        return "an app name has 1.." + std::to_string(kMaxAppName) + " characters";
    }
    if (app == store::kAllApps) return "\"*\" (every app) is only the legacy scope; name the apps";
    return std::nullopt;
}

bool IsAppScoped(const Principal& principal) {
    if (principal.cluster_token || principal.role != store::Role::kExecutor) return false;
    return std::find(principal.apps.begin(), principal.apps.end(), store::kAllApps) == principal.apps.end();
}

Status AuthorizeApp(const Principal& principal, std::string_view app) {
    if (!IsAppScoped(principal)) return Status::Ok();
    if (std::find(principal.apps.begin(), principal.apps.end(), app) != principal.apps.end()) return Status::Ok();
    std::string scope;
    for (const auto& a : principal.apps) scope += (scope.empty() ? "" : ", ") + a;
    return Status(Code::kPermissionDenied, "token \"" + principal.name + "\" (executor) may act only for app(s) " +
                                               (scope.empty() ? "(none)" : scope) + ", not for app \"" +
                                               std::string(app) + "\"");
}

std::string NewSecret(std::size_t bytes) {
    std::vector<unsigned char> raw(bytes);
    std::size_t got = 0;
    while (got < bytes) {
        const ssize_t n = getrandom(raw.data() + got, bytes - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw std::runtime_error(std::string("getrandom: ") + std::strerror(errno));
        }
        got += static_cast<std::size_t>(n);
    }
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes * 2);
    for (const unsigned char b : raw) {
        out += kHex[b >> 4];
        out += kHex[b & 0xf];
    }
    return out;
}

TokenAuthenticator::TokenAuthenticator(std::string cluster_token, DatabaseProvider database, net::thread_pool& db_pool,
                                       Micros cache_ttl)
    : cluster_token_(std::move(cluster_token)),
      database_(std::move(database)),
      db_pool_(db_pool),
      cache_ttl_(cache_ttl) {
    if (cluster_token_.empty()) throw std::invalid_argument("TokenAuthenticator: empty cluster token");
}

std::optional<TokenAuthenticator::Entry> TokenAuthenticator::Cached(const std::string& hash) {
    std::lock_guard lock(mu_);
    const auto it = cache_.find(hash);
    if (it == cache_.end()) return std::nullopt;
    if (it->second.expires <= std::chrono::steady_clock::now()) {
        cache_.erase(it);
        return std::nullopt;
    }
    return it->second;
}

void TokenAuthenticator::Remember(const std::string& hash, std::optional<Principal> principal) {
    if (cache_ttl_ <= Micros{0}) return;
    std::lock_guard lock(mu_);
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();
    cache_[hash] = Entry{std::move(principal), std::chrono::steady_clock::now() + cache_ttl_};
}

void TokenAuthenticator::Forget(std::int64_t token_id) {
    std::lock_guard lock(mu_);
    std::erase_if(cache_,
                  [&](const auto& kv) { return kv.second.principal && kv.second.principal->token_id == token_id; });
}

net::awaitable<Result<Principal>> TokenAuthenticator::Authenticate(const http::Request& request) {
    const auto header = request.headers.Get("Authorization");
    if (!header) co_return Status(Code::kUnauthenticated, "missing Authorization: Bearer <token> header");
    const auto secret = BearerSecret(*header);
    if (!secret) co_return Status(Code::kUnauthenticated, "expected Authorization: Bearer <token>");
    if (ConstantTimeEquals(*secret, cluster_token_)) {
        co_return Principal{.name = "cluster-token", .role = store::Role::kAdmin, .cluster_token = true};
    }
    // Only the hash is ever compared or kept, as in the table.
    const std::string hash = Sha256Hex(*secret);
    std::optional<Principal> principal;
    if (auto cached = Cached(hash)) {
        principal = std::move(cached->principal);
    } else {
        auto db = database_();
        if (!db) co_return Unavailable("the database is not open yet");
        auto lookup = [db, hash]() -> Result<std::optional<Principal>> {
            store::TokenRepository tokens(*db);
            auto token = tokens.FindActive(hash);
            if (!token.ok()) {
                if (token.status().code() == Code::kNotFound) return std::optional<Principal>();
                return token.status();
            }
            (void)tokens.Touch(token->id);  // best effort: a failed stamp must not refuse the call
            return std::optional<Principal>(
                Principal{.name = token->name, .role = token->role, .token_id = token->id, .apps = token->apps});
        };
        auto found = co_await OnPool(db_pool_, lookup);
        if (!found.ok()) co_return found.status();
        principal = *found;
        Remember(hash, principal);
        if (principal && principal->role == store::Role::kExecutor && !IsAppScoped(*principal)) {
            std::lock_guard lock(mu_);
            if (warned_legacy_.insert(principal->token_id).second) {
                spdlog::warn(
                    "web: executor token {} \"{}\" has the legacy scope \"*\" (every app); issue one scoped to its "
                    "app(s) and revoke it",
                    principal->token_id, principal->name);
            }
        }
    }
    if (!principal) co_return Status(Code::kUnauthenticated, "invalid or revoked bearer token");
    co_return *principal;
}

}  // namespace sched::web
