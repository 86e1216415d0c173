#include "impl/sign_in.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "impl/context.hpp"
#include "impl/list_query.hpp"
#include "sched/common/crypto.hpp"
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

std::string SessionCookie(const OidcOptions& options, const std::string& value, std::int64_t max_age_s) {
    std::string cookie = std::string(kSessionCookie) + "=" + value +
                         "; Path=/; HttpOnly; SameSite=Lax; Max-Age=" + std::to_string(max_age_s);
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

Status SessionStore::AddPending(const std::string& state, PendingSignIn pending, std::int64_t now_s) {
    std::lock_guard lock(mu_);
    if (pending_.size() >= kMaxPending) {
        std::erase_if(pending_, [&](const auto& kv) { return now_s - kv.second.created_s > kPendingTtlS; });
    }
    if (pending_.size() >= kMaxPending) {
        return Status(Code::kResourceExhausted, "too many sign-ins in progress; try again in a few minutes");
    }
    pending_[state] = std::move(pending);
    return Status::Ok();
}

std::optional<PendingSignIn> SessionStore::TakePending(const std::string& state, std::int64_t now_s) {
    std::lock_guard lock(mu_);
    const auto it = pending_.find(state);
    if (it == pending_.end()) return std::nullopt;
    PendingSignIn p = std::move(it->second);
    pending_.erase(it);
    if (now_s - p.created_s > kPendingTtlS) return std::nullopt;
    return p;
}

bool SessionStore::Live(const Session& s, std::int64_t now_s) const {
    return now_s - s.used_s <= Seconds(options_.session_idle) &&
           now_s - s.created_s <= Seconds(options_.session_absolute);
}

std::pair<std::string, Session> SessionStore::Create(Principal who, std::int64_t now_s) {
    const std::string id = crypto::RandomHex(32);
    Session s{.who = std::move(who), .csrf = crypto::RandomHex(32), .created_s = now_s, .used_s = now_s};
    std::lock_guard lock(mu_);
    if (sessions_.size() >= options_.max_sessions) {
        std::erase_if(sessions_, [&](const auto& kv) { return !Live(kv.second, now_s); });
    }
    if (sessions_.size() >= options_.max_sessions) {
        const auto oldest = std::min_element(sessions_.begin(), sessions_.end(), [](const auto& a, const auto& b) {
            return a.second.used_s < b.second.used_s;
        });
        sessions_.erase(oldest);
    }
    sessions_[crypto::Sha256Hex(id)] = s;
    return {id, s};
}

std::optional<Session> SessionStore::Find(std::string_view id, std::int64_t now_s) {
    if (id.size() != 64) return std::nullopt;
    const std::string key = crypto::Sha256Hex(id);
    std::lock_guard lock(mu_);
    const auto it = sessions_.find(key);
    if (it == sessions_.end()) return std::nullopt;
    if (!Live(it->second, now_s)) {
        sessions_.erase(it);
        return std::nullopt;
    }
    it->second.used_s = now_s;
    return it->second;
}

void SessionStore::End(std::string_view id) {
    const std::string key = crypto::Sha256Hex(id);
    std::lock_guard lock(mu_);
    sessions_.erase(key);
}

std::size_t SessionStore::size() const {
    std::lock_guard lock(mu_);
    return sessions_.size();
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
            auto session = ctx.sessions->Find(*id, ctx.oidc->Now());
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
            const std::string state = crypto::RandomHex(16);
            PendingSignIn pending{
                .code_verifier = crypto::RandomHex(32), .nonce = crypto::RandomHex(16), .created_s = ctx->oidc->Now()};
            const auto digest = crypto::Sha256(pending.code_verifier);
            const std::string challenge = Base64UrlEncode(std::string(digest.begin(), digest.end()));
            std::string url = endpoints->authorization_endpoint;
            url += url.find('?') == std::string::npos ? '?' : '&';
            url += "response_type=code&client_id=" + FormEncode(o.client_id) +
                   "&redirect_uri=" + FormEncode(o.RedirectUri()) + "&scope=" + FormEncode(o.scopes) +
                   "&state=" + state + "&nonce=" + pending.nonce + "&code_challenge=" + challenge +
                   "&code_challenge_method=S256";
            if (auto hint = req.Query("login_hint"); hint && !hint->empty() && hint->size() <= 256) {
                url += "&login_hint=" + FormEncode(*hint);
            }
            if (Status added = ctx->sessions->AddPending(state, std::move(pending), ctx->oidc->Now()); !added.ok()) {
                co_return http::Response::Error(added);
            }
            co_return Redirect(url);
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
            // Taken before anything else: a state works once, whatever happens next.
            auto pending = ctx->sessions->TakePending(*state, ctx->oidc->Now());
            if (!pending) {
                co_return http::Response::Error(
                    InvalidArgument("state: unknown, expired or already used; sign in again"), "state");
            }
            auto tokens = co_await ctx->oidc->ExchangeCode(*code, pending->code_verifier);
            if (!tokens.ok()) co_return http::Response::Error(tokens.status(), "code");
            const auto id_token = tokens->find("id_token");
            if (id_token == tokens->end() || !id_token->is_string()) {
                co_return http::Response::Error(Unavailable("the OpenID provider returned no id_token"), "code");
            }
            auto claims = co_await ctx->oidc->Verify(id_token->get<std::string>(), o.client_id, pending->nonce);
            if (!claims.ok()) co_return http::Response::Error(claims.status(), "id_token");
            auto who = PrincipalFromClaims(*claims, o);
            if (!who.ok()) co_return http::Response::Error(who.status(), "id_token");
            who->session = true;
            auto [id, session] = ctx->sessions->Create(*who, ctx->oidc->Now());
            spdlog::info("web: {} ({}) signed in as {}", session.who.name, session.who.subject,
                         store::RoleName(session.who.role));
            http::Response r = Redirect(o.public_url + "/");
            r.headers.Set("Set-Cookie", SessionCookie(o, id, Seconds(o.session_absolute)));
            co_return r;
        },
        http::Access::kPublic);

    router.Add(
        http::Method::kPost, "/auth/logout",
        [ctx](http::Request& req) -> net::awaitable<http::Response> {
            if (const auto id = CookieValue(req, kSessionCookie)) {
                if (auto session = ctx->sessions->Find(*id, ctx->oidc->Now())) {
                    const auto csrf = req.headers.Get(kCsrfHeader);
                    if (!csrf || !crypto::ConstantTimeEqual(*csrf, session->csrf)) {
                        co_return http::Response::Error(
                            Status(Code::kPermissionDenied, "X-CSRF-Token: missing or not this session's"),
                            std::string(kCsrfHeader));
                    }
                    ctx->sessions->End(*id);
                    spdlog::info("web: {} ({}) signed out", session->who.name, session->who.subject);
                }
            }
            http::Response r = http::Response::NoContent();
            r.headers.Set("Set-Cookie", SessionCookie(ctx->options.oidc, "", 0));
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
    routes.Add(http::Method::kGet, "/api/v1/session", Permission::kAnyToken,
               [ctx](http::Request& req, const Principal& who) -> net::awaitable<http::Response> {
                   nlohmann::json out = {
                       {"name", who.name},
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
                           if (auto session = ctx->sessions->Find(*id, ctx->oidc->Now())) {
                               out["csrf_token"] = session->csrf;
                               const std::int64_t ends =
                                   std::min(session->created_s + Seconds(ctx->options.oidc.session_absolute),
                                            session->used_s + Seconds(ctx->options.oidc.session_idle));
                               out["expires_at"] = ends * 1000;
                           }
                       }
                   }
                   co_return http::Response::Json(out);
               });
}

}  // namespace sched::web::impl
