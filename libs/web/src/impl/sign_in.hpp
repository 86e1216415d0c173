#pragma once

// Browser sign-in through the OpenID provider (authorization code + PKCE + state + nonce) and the
// sessions it creates (in the database); how any API request is authenticated (bearer token, bearer
// OIDC access token, or session cookie with its CSRF header).

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
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
    std::string state;
    std::string code_verifier;
    std::string nonce;
    std::int64_t created_s = 0;
};

/// A sign-in in flight is carried by the browser, not held by a web process: /auth/login sets a
/// cookie `sched_sign_in_<state>` (Path=/auth/callback, HttpOnly, SameSite=Lax, ten minutes)
/// holding the state, its time and an HMAC-SHA256 over both, under a key every web process of
/// the cluster derives from the cluster token; the PKCE verifier and the nonce are HMACs of the
/// state under that key as well. So the callback may reach any web process, the state is bound
/// to the browser that started the sign-in (a callback URL replayed elsewhere has no cookie),
/// and nothing is stored per sign-in. The callback clears the cookie; the authorization code
/// itself is single use at the provider. Thread-safe (immutable).
class SignInCookies {
  public:
    /// A sign-in must come back within this many seconds.
    static constexpr std::int64_t kTtlS = 600;
    static constexpr std::string_view kNamePrefix = "sched_sign_in_";

    explicit SignInCookies(std::string_view cluster_token);

    /// A new sign-in at `now_s` (its state is 32 random hex digits).
    PendingSignIn Start(std::int64_t now_s) const;
    /// The value of the cookie named CookieName(p.state).
    std::string CookieValue(const PendingSignIn& p) const;
    static std::string CookieName(std::string_view state) { return std::string(kNamePrefix) + std::string(state); }
    /// The sign-in of `state` when `cookie` is the value CookieValue gave for it (checked in
    /// constant time) and at most kTtlS old at `now_s`; nullopt otherwise.
    std::optional<PendingSignIn> Check(std::string_view state, std::string_view cookie, std::int64_t now_s) const;

  private:
    PendingSignIn Derive(std::string state, std::int64_t created_s) const;
    std::string Mac(std::string_view state, std::int64_t created_s) const;

    std::string key_;
};

/// A signed-in browser.
struct Session {
    Principal who;
    std::string csrf;            ///< SessionStore::CsrfToken of its cookie value
    std::int64_t created_s = 0;  ///< sign-in
    std::int64_t used_s = 0;     ///< last use as stored (written at most once per kTouchIntervalS)
    std::int64_t expires_s = 0;  ///< the absolute end: sign-in + session-absolute
};

/// Browser sessions, in the database (store::WebSessionRepository): every web process on it
/// knows every session, and a restart signs nobody out. A session's cookie value is 256 random
/// bits; the table holds only its SHA-256, and its CSRF token is derived from it (CsrfToken), so
/// neither can be read back from the table. Thread-safe; the session calls block (run them on
/// the DB pool).
class SessionStore {
  public:
    /// A session's last use is written at most this often (not on every request); its idle end
    /// is therefore exact to this much.
    static constexpr std::int64_t kTouchIntervalS = 60;

    explicit SessionStore(const OidcOptions& options) : options_(options) {}

    /// A new session for `who` in `db`: its cookie value and the session. Past
    /// max-sessions-per-subject the person's oldest session ends, past max-sessions everyone's
    /// least recently used; ended sessions are deleted on the way (a batch per sign-in).
    Result<std::pair<std::string, Session>> Create(db::Database& db, const Principal& who, std::int64_t now_s);
    /// The live session of cookie value `id` (its use recorded, at most once per
    /// kTouchIntervalS), nullopt when unknown, idle or past its end (an ended one is deleted);
    /// an error only when the database cannot answer.
    Result<std::optional<Session>> Find(db::Database& db, std::string_view id, std::int64_t now_s);
    /// Deletes the session of cookie value `id`; false when there was none.
    Result<bool> End(db::Database& db, std::string_view id);

    /// The CSRF token of the session with cookie value `id`: SHA-256 over a label and the value.
    /// The page may read it (GET /api/v1/session); the cookie (HttpOnly) it cannot, and the
    /// token does not give the cookie back.
    static std::string CsrfToken(std::string_view id);
    /// What audit entries name a session by: the first 16 hex digits of the cookie value's
    /// SHA-256, enough to pair a sign-in with its sign-out, useless as a cookie.
    static std::string AuditRef(std::string_view id);

  private:
    const OidcOptions& options_;
};

/// Refused sign-ins are audited, but anyone can make the provider refuse one: at most
/// kPerMinute entries a minute per process; the refusals past it are counted and the next entry
/// says how many were not recorded. Thread-safe.
class RefusalBudget {
  public:
    static constexpr int kPerMinute = 20;

    /// Whether the refusal at `now_s` gets an entry; when it does, `unrecorded` is set to the
    /// refusals left out since the last entry (and the count restarts).
    bool Take(std::int64_t now_s, std::int64_t& unrecorded);

  private:
    std::mutex mu_;
    std::int64_t window_start_s_ = 0;
    int recorded_ = 0;
    std::int64_t unrecorded_ = 0;
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
