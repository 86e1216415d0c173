#include "impl/sign_in.hpp"

#include <algorithm>
#include <charconv>

#include <spdlog/spdlog.h>

#include "impl/audit.hpp"
#include "impl/context.hpp"
#include "impl/list_query.hpp"
#include "sched/common/crypto.hpp"
#include "sched/store/audit.hpp"
#include "sched/store/web_session.hpp"
#include "sched/web/jwt.hpp"

namespace sched::web::impl {

namespace {

// An access token of the IdP is a JWS: three base64url parts, the first a JSON object ("eyJ").
// API tokens are hex and never look like this.
bool LooksLikeJwt(std::string_view secret) {
    return secret.starts_with("eyJ") && std::count(secret.begin(), secret.end(), '.') == 2;
}

bool ChangesState(const http::Request& req) {
    return req.method != http::Method::kGet && req.method != http::Method::kHead;
}

constexpr const char* kCallbackPath = "/auth/callback";

std::string Cookie(const OidcOptions& options, const std::string& name, const std::string& value, const char* path,
                   std::int64_t max_age_s) {
    std::string cookie =
        name + "=" + value + "; Path=" + path + "; HttpOnly; SameSite=Lax; Max-Age=" + std::to_string(max_age_s);
    if (options.public_url.starts_with("https://")) cookie += "; Secure";
    return cookie;
}

http::Response Redirect(const std::string& location) {
    http::Response r;
    r.status = 302;
    r.headers.Set("Location", location);
    r.headers.Set("Cache-Control", "no-store");
    return r;
}

std::int64_t Seconds(Micros d) {
    return std::chrono::duration_cast<std::chrono::seconds>(d).count();
}

}  // namespace

SignInCookies::SignInCookies(std::string_view cluster_token)
    // A key of its own: the cluster token itself is never what a browser's cookie is checked with.
    : key_(crypto::HmacSha256Hex(cluster_token, "sched-sign-in-cookie-v1")) {}

PendingSignIn SignInCookies::Start(std::int64_t now_s) const {
    return Derive(crypto::RandomHex(16), now_s);
}

PendingSignIn SignInCookies::Derive(std::string state, std::int64_t created_s) const {
    // 64 hex digits: a PKCE verifier of the allowed alphabet and length (43..128).
    std::string verifier = crypto::HmacSha256Hex(key_, "pkce:" + state);
    std::string nonce = crypto::HmacSha256Hex(key_, "nonce:" + state).substr(0, 32);
    return PendingSignIn{.state = std::move(state),
                         .code_verifier = std::move(verifier),
                         .nonce = std::move(nonce),
                         .created_s = created_s};
}

std::string SignInCookies::Mac(std::string_view state, std::int64_t created_s) const {
    return crypto::HmacSha256Hex(key_, "state:" + std::string(state) + "." + std::to_string(created_s));
}

std::string SignInCookies::CookieValue(const PendingSignIn& p) const {
    return p.state + "." + std::to_string(p.created_s) + "." + Mac(p.state, p.created_s);
}

std::optional<PendingSignIn> SignInCookies::Check(std::string_view state, std::string_view cookie,
                                                  std::int64_t now_s) const {
    // state "." created "." mac; anything else (or longer than a real one) is no sign-in.
    if (cookie.size() > 128) return std::nullopt;
    const auto first = cookie.find('.');
    const auto second = first == std::string_view::npos ? first : cookie.find('.', first + 1);
    if (second == std::string_view::npos) return std::nullopt;
    if (cookie.substr(0, first) != state) return std::nullopt;
    std::int64_t created_s = 0;
    const auto created_text = cookie.substr(first + 1, second - first - 1);
    const auto [end, ec] = std::from_chars(created_text.data(), created_text.data() + created_text.size(), created_s);
    if (ec != std::errc() || end != created_text.data() + created_text.size()) return std::nullopt;
    if (!crypto::ConstantTimeEqual(cookie.substr(second + 1), Mac(state, created_s))) return std::nullopt;
    if (now_s - created_s > kTtlS || created_s > now_s + 60) return std::nullopt;
    return Derive(std::string(state), created_s);
}

namespace {

bool IsHex64(std::string_view id) {
    return id.size() == 64 &&
           std::all_of(id.begin(), id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

Session FromRow(const store::WebSession& row, std::string_view id) {
    return Session{
        .who =
            Principal{
                .name = row.name, .role = row.role, .subject = row.subject, .issuer = row.issuer, .session = true},
        .csrf = SessionStore::CsrfToken(id),
        .created_s = row.created_ms / 1000,
        .used_s = row.last_seen_ms / 1000,
        .expires_s = row.expires_ms / 1000};
}

}  // namespace

std::string SessionStore::CsrfToken(std::string_view id) {
    // A label of its own: the CSRF token is never the table's key (SHA-256 of the bare value).
    return crypto::Sha256Hex("sched-csrf:" + std::string(id));
}

std::string SessionStore::AuditRef(std::string_view id) {
    return crypto::Sha256Hex(id).substr(0, 16);
}

Result<std::pair<std::string, Session>> SessionStore::Create(db::Database& db, const Principal& who,
                                                             std::int64_t now_s) {
    const std::string id = crypto::RandomHex(32);
    const store::WebSession row{.id_hash = crypto::Sha256Hex(id),
                                .subject = who.subject,
                                .issuer = who.issuer,
                                .name = who.name,
                                .role = who.role,
                                .created_ms = now_s * 1000,
                                .last_seen_ms = now_s * 1000,
                                .expires_ms = (now_s + Seconds(options_.session_absolute)) * 1000};
    const store::WebSessionLimits limits{.per_subject = static_cast<int>(options_.max_sessions_per_subject),
                                         .total = static_cast<int>(options_.max_sessions),
                                         .idle_ms = Seconds(options_.session_idle) * 1000};
    auto ended = store::WebSessionRepository(db).Create(row, limits, now_s * 1000);
    if (!ended.ok()) return ended.status();
    if (*ended > 0) spdlog::info("web: {} session(s) ended to make room for a sign-in of {}", *ended, who.name);
    return std::pair{id, FromRow(row, id)};
}

Result<std::optional<Session>> SessionStore::Find(db::Database& db, std::string_view id, std::int64_t now_s) {
    // Not the shape of a cookie this code sets: no query at all.
    if (!IsHex64(id)) return std::optional<Session>();
    const std::string key = crypto::Sha256Hex(id);
    store::WebSessionRepository sessions(db);
    auto row = sessions.Find(key);
    if (row.status().code() == Code::kNotFound) return std::optional<Session>();
    if (!row.ok()) return row.status();
    Session s = FromRow(*row, id);
    if (now_s - s.used_s > Seconds(options_.session_idle) || now_s >= s.expires_s) {
        // Ended: gone for every process now, not at the next purge. A failed delete changes
        // nothing for the caller (the row stays ended and a later sign-in purges it).
        (void)sessions.Delete(key);
        return std::optional<Session>();
    }
    if (now_s - s.used_s >= kTouchIntervalS) {
        auto touched = sessions.Touch(key, now_s * 1000, kTouchIntervalS * 1000);
        if (!touched.ok()) return touched.status();
        s.used_s = now_s;
    }
    return std::optional<Session>(std::move(s));
}

Result<bool> SessionStore::End(db::Database& db, std::string_view id) {
    if (!IsHex64(id)) return false;
    return store::WebSessionRepository(db).Delete(crypto::Sha256Hex(id));
}

bool RefusalBudget::Take(std::int64_t now_s, std::int64_t& unrecorded) {
    std::lock_guard lock(mu_);
    if (now_s - window_start_s_ >= 60 || now_s < window_start_s_) {
        window_start_s_ = now_s;
        recorded_ = 0;
    }
    if (recorded_ >= kPerMinute) {
        ++unrecorded_;
        return false;
    }
    ++recorded_;
    unrecorded = unrecorded_;
    unrecorded_ = 0;
    return true;
}

std::optional<std::string> CookieValue(const http::Request& req, std::string_view name) {
    for (const auto& [field, value] : req.headers) {
        if (field.size() != 6 || !std::equal(field.begin(), field.end(), "cookie", [](char a, char b) {
                return std::tolower(static_cast<unsigned char>(a)) == b;
            })) {
            continue;
        }
        std::string_view rest = value;
        while (!rest.empty()) {
            const auto semi = rest.find(';');
            std::string_view pair = rest.substr(0, semi);
            rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
            while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
            const auto eq = pair.find('=');
            if (eq != std::string_view::npos && pair.substr(0, eq) == name) return std::string(pair.substr(eq + 1));
        }
    }
    return std::nullopt;
}

namespace {

net::awaitable<Result<std::optional<Session>>> FindSession(Context& ctx, std::string id) {
    auto find = [store = ctx.sessions.get(), id = std::move(id),
                 now = ctx.oidc->Now()](db::Database& db) -> Result<std::optional<Session>> {
        return store->Find(db, id, now);
    };
    auto found = co_await WithDb(ctx, std::move(find));
    co_return found;
}

// A refused sign-in, in the audit log within the budget and in the process log. `who` is the
// person when the provider vouched for them (a valid ID token without a mapped group), else
// nobody. The reason is the refusal's message: never a token, code or cookie.
net::awaitable<void> AuditRefusedSignIn(Context& ctx, const std::optional<Principal>& who, const Status& why) {
    std::int64_t unrecorded = 0;
    if (!ctx.sign_in_refusals.Take(ctx.oidc->Now(), unrecorded)) co_return;
    spdlog::warn("web: sign-in of {} refused: {}", who ? who->name : std::string("an unknown person"), why.message());
    nlohmann::json after = {{"reason", why.message().substr(0, 512)}, {"code", std::string(CodeName(why.code()))}};
    if (who) after["subject"] = who->subject;
    if (unrecorded > 0) after["unrecorded_refusals_before"] = unrecorded;
    store::AuditEntry entry = MakeAuditEntry(who.value_or(Principal{.name = "anonymous"}),
                                             AuditChange{.action = "sign-in-refused",
                                                         .target_kind = "session",
                                                         .target_id = "",
                                                         .target_name = who ? who->name : std::string(),
                                                         .before = std::nullopt,
                                                         .after = std::move(after)});
    // Nobody was given a role: the entry must not show one.
    entry.actor_role = "none";
    auto record = [entry = std::move(entry)](db::Database& db) -> Status {
        auto recorded = store::AuditRepository(db).Record(entry);
        if (!recorded.ok()) {
            spdlog::error("web: audit entry for a refused sign-in not recorded: {}", recorded.status().ToString());
        }
        return Status::Ok();
    };
    Status done = co_await WithDb(ctx, std::move(record));
    (void)done;
}

// A session that began or ended, in the audit log (after the change, which stands either way).
net::awaitable<void> AuditSession(Context& ctx, const Session& session, std::string_view id, bool began) {
    const nlohmann::json view = {{"subject", session.who.subject},
                                 {"issuer", session.who.issuer},
                                 {"role", store::RoleName(session.who.role)},
                                 {"created_at", session.created_s * 1000},
                                 {"expires_at", session.expires_s * 1000}};
    auto record = [who = session.who,
                   change = AuditChange{.action = began ? "sign-in" : "sign-out",
                                        .target_kind = "session",
                                        .target_id = SessionStore::AuditRef(id),
                                        .target_name = session.who.name,
                                        .before = began ? std::nullopt : std::optional<nlohmann::json>(view),
                                        .after = began ? std::optional<nlohmann::json>(view) : std::nullopt}](
                      db::Database& db) -> Status {
        RecordAudit(db, who, change);
        return Status::Ok();
    };
    Status done = co_await WithDb(ctx, std::move(record));
    (void)done;
}

// The callback once its state checked out: the code exchanged, the ID token verified, the
// person's role mapped, the session created; refusals audited.
net::awaitable<http::Response> FinishSignIn(Context& ctx, std::string code, PendingSignIn pending) {
    const OidcOptions& o = ctx.options.oidc;
    auto tokens = co_await ctx.oidc->ExchangeCode(code, pending.code_verifier);
    if (!tokens.ok()) {
        if (tokens.status().code() == Code::kUnauthenticated) {
            co_await AuditRefusedSignIn(ctx, std::nullopt, tokens.status());
        }
        co_return http::Response::Error(tokens.status(), "code");
    }
    const auto id_token = tokens->find("id_token");
    if (id_token == tokens->end() || !id_token->is_string()) {
        co_return http::Response::Error(Unavailable("the OpenID provider returned no id_token"), "code");
    }
    auto claims = co_await ctx.oidc->Verify(id_token->get<std::string>(), o.client_id, pending.nonce);
    if (!claims.ok()) {
        if (claims.status().code() == Code::kUnauthenticated) {
            co_await AuditRefusedSignIn(ctx, std::nullopt, claims.status());
        }
        co_return http::Response::Error(claims.status(), "id_token");
    }
    auto who = PrincipalFromClaims(*claims, o);
    if (!who.ok()) {
        // The provider vouched for the person: the entry names them.
        std::optional<Principal> person;
        if (who.status().code() == Code::kPermissionDenied) {
            const auto sub = claims->find("sub");
            person =
                Principal{.name = PersonName(*claims),
                          .subject = sub != claims->end() && sub->is_string() ? sub->get<std::string>() : std::string(),
                          .issuer = o.issuer};
        }
        co_await AuditRefusedSignIn(ctx, person, who.status());
        co_return http::Response::Error(who.status(), "id_token");
    }
    who->session = true;
    auto create = [store = ctx.sessions.get(), who = *who,
                   now = ctx.oidc->Now()](db::Database& db) -> Result<std::pair<std::string, Session>> {
        return store->Create(db, who, now);
    };
    auto created = co_await WithDb(ctx, std::move(create));
    if (!created.ok()) co_return http::Response::Error(created.status());
    const auto& [id, session] = *created;
    spdlog::info("web: {} ({}) signed in as {}", session.who.name, session.who.subject,
                 store::RoleName(session.who.role));
    co_await AuditSession(ctx, session, id, true);
    http::Response r = Redirect(o.public_url + "/");
    r.headers.Add("Set-Cookie", Cookie(o, std::string(kSessionCookie), id, "/", Seconds(o.session_absolute)));
    co_return r;
}

}  // namespace

net::awaitable<Result<Principal>> AuthenticateRequest(Context& ctx, const http::Request& req) {
    const auto header = req.headers.Get("Authorization");
    if (ctx.oidc && header) {
        if (const auto secret = BearerSecret(*header); secret && LooksLikeJwt(*secret)) {
            auto claims = co_await ctx.oidc->Verify(std::string(*secret), ctx.options.oidc.audience);
            if (!claims.ok()) co_return claims.status();
            co_return PrincipalFromClaims(*claims, ctx.options.oidc);
        }
    }
    if (ctx.oidc && !header) {
        if (const auto id = CookieValue(req, kSessionCookie)) {
            auto found = co_await FindSession(ctx, *id);
            if (!found.ok()) co_return found.status();
            const auto& session = *found;
            if (!session) co_return Status(Code::kUnauthenticated, "the session has ended; sign in again");
            if (ChangesState(req)) {
                // SameSite=Lax already keeps other sites' forms from sending the cookie with a
                // POST; the header is what a cross-site request cannot forge at all.
                const auto csrf = req.headers.Get(kCsrfHeader);
                if (!csrf || !crypto::ConstantTimeEqual(*csrf, session->csrf)) {
                    co_return Status(Code::kPermissionDenied,
                                     "X-CSRF-Token: missing or not this session's (GET /api/v1/session gives it)");
                }
            }
            co_return session->who;
        }
    }
    auto principal = co_await ctx.auth.Authenticate(req);
    co_return principal;
}

void AddSignInRoutes(http::Router& router, const std::shared_ptr<Context>& ctx) {
    router.Add(
        http::Method::kGet, "/auth/login",
        [ctx](http::Request& req) -> net::awaitable<http::Response> {
            static constexpr std::string_view kParams[] = {"login_hint"};
            if (auto bad = RejectUnknownQuery(req, kParams)) co_return *bad;
            auto endpoints = co_await ctx->oidc->Endpoints();
            if (!endpoints.ok()) co_return http::Response::Error(endpoints.status());
            const OidcOptions& o = ctx->options.oidc;
            const PendingSignIn pending = ctx->sign_in_cookies.Start(ctx->oidc->Now());
            const auto digest = crypto::Sha256(pending.code_verifier);
            const std::string challenge = Base64UrlEncode(std::string(digest.begin(), digest.end()));
            std::string url = endpoints->authorization_endpoint;
            url += url.find('?') == std::string::npos ? '?' : '&';
            url += "response_type=code&client_id=" + FormEncode(o.client_id) +
                   "&redirect_uri=" + FormEncode(o.RedirectUri()) + "&scope=" + FormEncode(o.scopes) +
                   "&state=" + pending.state + "&nonce=" + pending.nonce + "&code_challenge=" + challenge +
                   "&code_challenge_method=S256";
            if (auto hint = req.Query("login_hint"); hint && !hint->empty() && hint->size() <= 256) {
                url += "&login_hint=" + FormEncode(*hint);
            }
            http::Response r = Redirect(url);
            r.headers.Add("Set-Cookie",
                          Cookie(o, SignInCookies::CookieName(pending.state), ctx->sign_in_cookies.CookieValue(pending),
                                 kCallbackPath, SignInCookies::kTtlS));
            co_return r;
        },
        http::Access::kPublic);

    router.Add(
        http::Method::kGet, "/auth/callback",
        [ctx](http::Request& req) -> net::awaitable<http::Response> {
            static constexpr std::string_view kParams[] = {"code",          "state", "error", "error_description",
                                                           "session_state", "iss",   "scope"};
            if (auto bad = RejectUnknownQuery(req, kParams)) co_return *bad;
            const OidcOptions& o = ctx->options.oidc;
            if (auto error = req.Query("error")) {
                co_return http::Response::Error(
                    Status(Code::kUnauthenticated, "the OpenID provider refused the sign-in: " + error->substr(0, 100)),
                    "error");
            }
            const auto state = req.Query("state");
            if (!state || state->empty() || state->size() > 128) {
                co_return http::Response::Error(InvalidArgument("state: required (1..128 characters)"), "state");
            }
            const auto code = req.Query("code");
            if (!code || code->empty() || code->size() > 4096) {
                co_return http::Response::Error(InvalidArgument("code: required (1..4096 characters)"), "code");
            }
            // The browser that started this sign-in holds its cookie; any web process can check it.
            const std::string cookie_name = SignInCookies::CookieName(*state);
            std::optional<PendingSignIn> pending;
            // Only a state this code made (hex) names a cookie: nothing else reaches a header.
            const bool hex = std::all_of(state->begin(), state->end(),
                                         [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
            if (const auto cookie = hex ? CookieValue(req, cookie_name) : std::nullopt) {
                pending = ctx->sign_in_cookies.Check(*state, *cookie, ctx->oidc->Now());
            }
            if (!pending) {
                co_return http::Response::Error(
                    InvalidArgument("state: unknown, expired or already used; sign in again"), "state");
            }
            http::Response r = co_await FinishSignIn(*ctx, *code, *pending);
            // Whatever the outcome, this sign-in is over.
            r.headers.Add("Set-Cookie", Cookie(o, cookie_name, "", kCallbackPath, 0));
            co_return r;
        },
        http::Access::kPublic);

    router.Add(
        http::Method::kPost, "/auth/logout",
        [ctx](http::Request& req) -> net::awaitable<http::Response> {
            if (const auto id = CookieValue(req, kSessionCookie)) {
                auto found = co_await FindSession(*ctx, *id);
                if (!found.ok()) co_return http::Response::Error(found.status());
                if (const auto& session = *found) {
                    const auto csrf = req.headers.Get(kCsrfHeader);
                    if (!csrf || !crypto::ConstantTimeEqual(*csrf, session->csrf)) {
                        co_return http::Response::Error(
                            Status(Code::kPermissionDenied, "X-CSRF-Token: missing or not this session's"),
                            std::string(kCsrfHeader));
                    }
                    auto end = [store = ctx->sessions.get(), id = *id](db::Database& db) -> Result<bool> {
                        return store->End(db, id);
                    };
                    auto ended = co_await WithDb(*ctx, std::move(end));
                    if (!ended.ok()) co_return http::Response::Error(ended.status());
                    spdlog::info("web: {} ({}) signed out", session->who.name, session->who.subject);
                    // Two sign-outs racing: only the one that deleted the row records it.
                    if (*ended) co_await AuditSession(*ctx, *session, *id, false);
                }
            }
            http::Response r = http::Response::NoContent();
            r.headers.Set("Set-Cookie", Cookie(ctx->options.oidc, std::string(kSessionCookie), "", "/", 0));
            co_return r;
        },
        http::Access::kPublic);
}

void AddSessionRoutes(Routes& routes) {
    auto ctx = routes.context();
    routes.Add(http::Method::kGet, "/auth/config", Permission::kPublic,
               [ctx](http::Request&, const Principal&) -> net::awaitable<http::Response> {
                   nlohmann::json out = {{"oidc", ctx->oidc != nullptr}};
                   if (ctx->oidc) {
                       out["issuer"] = ctx->options.oidc.issuer;
                       out["login_url"] = "/auth/login";
                       out["logout_url"] = "/auth/logout";
                   }
                   co_return http::Response::Json(out);
               });
    routes.Add(
        http::Method::kGet, "/api/v1/session", Permission::kAnyToken,
        [ctx](http::Request& req, const Principal& who) -> net::awaitable<http::Response> {
            nlohmann::json out = {{"name", who.name},
                                  {"role", store::RoleName(who.role)},
                                  {"via", who.session            ? "session"
                                          : !who.subject.empty() ? "oidc-bearer"
                                          : who.cluster_token    ? "cluster-token"
                                                                 : "token"},
                                  {"subject", who.subject.empty() ? nlohmann::json() : nlohmann::json(who.subject)},
                                  {"issuer", who.issuer.empty() ? nlohmann::json() : nlohmann::json(who.issuer)},
                                  {"csrf_token", nullptr}};
            if (who.session && ctx->oidc) {
                if (const auto id = CookieValue(req, kSessionCookie)) {
                    auto found = co_await FindSession(*ctx, *id);
                    if (!found.ok()) co_return http::Response::Error(found.status());
                    if (const auto& session = *found) {
                        out["csrf_token"] = session->csrf;
                        const std::int64_t ends =
                            std::min(session->expires_s, session->used_s + Seconds(ctx->options.oidc.session_idle));
                        out["expires_at"] = ends * 1000;
                    }
                }
            }
            co_return http::Response::Json(out);
        });
}

}  // namespace sched::web::impl
