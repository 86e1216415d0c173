#pragma once

// Browser sign-in through the OpenID provider (authorization code + PKCE + state + nonce) and the
// server-side sessions it creates; how any API request is authenticated (bearer token, bearer
// OIDC access token, or session cookie with its CSRF header).

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/http/message.hpp"
#include "sched/http/router.hpp"
#include "sched/web/auth.hpp"
#include "sched/web/oidc.hpp"

namespace sched::web::impl {

struct Context;

/// The cookie that carries a session id.
inline constexpr std::string_view kSessionCookie = "sched_session";
/// The header a cookie-authenticated change must carry (the session's CSRF token).
inline constexpr std::string_view kCsrfHeader = "X-CSRF-Token";

/// One sign-in in flight, between /auth/login and /auth/callback.
struct PendingSignIn {
    std::string code_verifier;
    std::string nonce;
    std::int64_t created_s = 0;
};

/// A signed-in browser.
struct Session {
    Principal who;
    std::string csrf;
    std::int64_t created_s = 0;
    std::int64_t used_s = 0;
};

/// In-memory sign-ins and sessions of this web process (a restart signs everyone out; several
/// web processes need sticky sessions). Thread-safe. Session ids are kept only as SHA-256
/// hashes, so the map's lookup time says nothing about a guessed id.
class SessionStore {
  public:
    /// A pending sign-in lives this long, and at most kMaxPending are pending at once.
    static constexpr std::int64_t kPendingTtlS = 600;
    static constexpr std::size_t kMaxPending = 1000;

    explicit SessionStore(const OidcOptions& options) : options_(options) {}

    /// Remembers a sign-in under `state`; kResourceExhausted when kMaxPending live ones exist.
    Status AddPending(const std::string& state, PendingSignIn pending, std::int64_t now_s);
    /// Takes (and forgets: single use) the sign-in of `state`; nullopt when unknown, used or
    /// expired.
    std::optional<PendingSignIn> TakePending(const std::string& state, std::int64_t now_s);

    /// A new session for `who`: its id (for the cookie) and the session. Past max-sessions the
    /// least recently used session ends.
    std::pair<std::string, Session> Create(Principal who, std::int64_t now_s);
    /// The live session of cookie value `id` (touched), or nullopt (unknown, idle or too old).
    std::optional<Session> Find(std::string_view id, std::int64_t now_s);
    void End(std::string_view id);
    std::size_t size() const;

  private:
    bool Live(const Session& s, std::int64_t now_s) const;

    const OidcOptions& options_;
    mutable std::mutex mu_;
    std::unordered_map<std::string, PendingSignIn> pending_;  // by state
    std::unordered_map<std::string, Session> sessions_;       // by SHA-256 of the id
};

/// The value of cookie `name` in the request's Cookie header(s), if any.
std::optional<std::string> CookieValue(const http::Request& req, std::string_view name);

/// Who sent `req`: an `Authorization: Bearer` header is a JWT access token of the OpenID
/// provider (when OIDC is on and the secret has the shape of a JWT) or an API/cluster token;
/// without one, a session cookie (OIDC on), whose changes (any method but GET and HEAD) must
/// carry X-CSRF-Token. kUnauthenticated / kPermissionDenied (a person without a mapped role, a
/// missing or wrong CSRF token) / kUnavailable as the checks say.
net::awaitable<Result<Principal>> AuthenticateRequest(Context& ctx, const http::Request& req);

/// GET /auth/login, GET /auth/callback, POST /auth/logout: browser redirects and cookies, not
/// JSON API routes (so outside the OpenAPI document). Added only when OIDC is on.
void AddSignInRoutes(http::Router& router, const std::shared_ptr<Context>& ctx);

}  // namespace sched::web::impl
