#pragma once

/// OpenID Connect: the provider (IdP) this web module trusts, its discovery document and signing
/// keys, and the checks of the tokens it issues (jwt.hpp does the cryptography).
///
/// Discovery (`{issuer}/.well-known/openid-configuration`) and the key set (`jwks_uri`) are
/// fetched with http::HttpClient on first use, not at start-up, so a web node starts while its
/// IdP is down (requests needing it get 503 until it answers). The discovery document's
/// `issuer` must equal the configured one. A token signed with a key id the set does not hold
/// makes the set be fetched again, at most once per `jwks-refresh` (a flood of made-up key ids
/// costs one fetch per interval, not one per request); when it is still unknown afterwards the
/// token is refused. A failed discovery is retried at most once per `jwks-refresh` as well.
///
/// Thread-safe: coroutines on any thread may call it at once; no lock is held across a
/// co_await.

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/common/config.hpp"
#include "sched/common/duration.hpp"
#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/http/tls_options.hpp"
#include "sched/store/token.hpp"
#include "sched/web/auth.hpp"
#include "sched/web/jwt.hpp"

namespace sched::web {

/// The `oidc:` section (of the web module's settings). Absent or with an empty `issuer`: single
/// sign-on is off and only API tokens and the cluster token authenticate.
///
///     oidc:
///       issuer: ""                     # https://idp.example.com/realms/x (exactly as the IdP's `iss`)
///       client-id: ""                  # required with issuer
///       client-secret-file: ""         # file holding the client secret (SCHED_OIDC_CLIENT_SECRET
///                                      #   overrides); empty: a public client (PKCE only)
///       audience: ""                   # `aud` access tokens must carry; default: client-id
///       public-url: ""                 # this UI as browsers reach it (https://sched.example.com);
///                                      #   the redirect URI is {public-url}/auth/callback; cookies
///                                      #   are Secure when it is https. Required with issuer.
///       scopes: "openid email profile" # asked for at sign-in ("openid" is added when missing)
///       role-claim: groups             # the claim (array or string) the role is read from
///       role-mapping:                  # which claim values give which role (the highest wins);
///         admin: []                    #   a person with none of them is refused (403)
///         operator: []
///         viewer: []
///       clock-skew: 60s                # tolerance for exp/nbf/iat (0s..10m)
///       jwks-refresh: 60s              # least time between two key-set fetches (1s..1h)
///       http-timeout: 5s               # one call to the IdP
///       session-idle: 1h               # a browser session unused this long ends
///       session-absolute: 12h          # and any session ends this long after sign-in
///       max-sessions: 10000            # sessions of everyone (in the database, shared by every web
///                                      #   process); past it the least recently used ends
///       max-sessions-per-subject: 10   # sessions of one person; past it their oldest ends
struct OidcOptions {
    std::string issuer;
    std::string client_id;
    std::string client_secret;  ///< read from client-secret-file; never logged
    std::string audience;
    std::string public_url;
    std::string scopes = "openid email profile";
    std::string role_claim = "groups";
    /// claim value -> role, in the order admin, operator, viewer as configured.
    std::vector<std::pair<std::string, store::Role>> role_mapping;
    Micros clock_skew = std::chrono::seconds(60);
    Micros jwks_refresh = std::chrono::seconds(60);
    Micros http_timeout = std::chrono::seconds(5);
    Micros session_idle = std::chrono::hours(1);
    Micros session_absolute = std::chrono::hours(12);
    std::size_t max_sessions = 10000;
    std::size_t max_sessions_per_subject = 10;
    JwtLimits limits;
    /// How the provider's https endpoints are verified (not a key of `oidc:`: the process's
    /// `http-client.tls`, set by the web module from WebOptions::http_client_tls).
    http::ClientTlsOptions tls;

    bool enabled() const { return !issuer.empty(); }
    /// The redirect URI registered at the IdP: {public-url}/auth/callback.
    std::string RedirectUri() const { return public_url + "/auth/callback"; }
    /// Reads the section above from `node` (the `oidc` map itself). Throws ConfigError naming the
    /// key: a missing client-id or public-url with an issuer, an unreadable secret file, an
    /// unknown role, an issuer or public-url that is not an http(s) URL.
    static OidcOptions FromYaml(const ConfigNode& node);
};

/// The endpoints of the discovery document this module uses.
struct OidcEndpoints {
    std::string authorization_endpoint;
    std::string token_endpoint;
    std::string jwks_uri;
    std::string end_session_endpoint;  ///< "" when the IdP has none
};

class OidcProvider {
  public:
    /// The current time in epoch seconds (tests inject one).
    using Clock = std::function<std::int64_t()>;

    /// `clock` defaults to the system clock.
    explicit OidcProvider(OidcOptions options, Clock clock = {});

    const OidcOptions& options() const { return options_; }
    std::int64_t Now() const { return clock_(); }

    /// The discovery document's endpoints, fetched on first use. kUnavailable when the IdP cannot
    /// be reached (or was not reachable less than jwks-refresh ago), kFailedPrecondition when its
    /// document is malformed or names another issuer.
    net::awaitable<Result<OidcEndpoints>> Endpoints();

    /// Verifies a token of this issuer for `audience` (and `nonce` when set) and returns its
    /// claims. Refusals are kUnauthenticated (VerifyJwt's messages; an unknown key id after the
    /// key set was refreshed: "unknown key id ..."); kUnavailable when the IdP cannot be asked.
    net::awaitable<Result<nlohmann::json>> Verify(std::string token, std::string audience,
                                                  std::optional<std::string> nonce = std::nullopt);

    /// Redeems an authorization code at the token endpoint (client_secret_post when a secret is
    /// configured, with the PKCE `code_verifier`) and returns the token response (`id_token`,
    /// `access_token`, ...). kUnauthenticated when the IdP refuses the code (its `error` quoted),
    /// kUnavailable when it cannot be reached.
    net::awaitable<Result<nlohmann::json>> ExchangeCode(std::string code, std::string code_verifier);

    /// How many times the key set was fetched (the refresh bound is observable).
    std::uint64_t jwks_fetches() const;

  private:
    net::awaitable<Status> FetchKeys(std::string jwks_uri);

    const OidcOptions options_;
    const Clock clock_;
    mutable std::mutex mu_;
    std::optional<OidcEndpoints> endpoints_;
    std::optional<std::int64_t> discovery_failed_at_;
    JwkSet keys_;
    std::optional<std::int64_t> keys_fetched_at_;
    std::uint64_t jwks_fetches_ = 0;
};

/// The person `claims` (a verified token's payload) name, with the highest role their role-claim
/// values map to. `name` is the `email` claim, else `name`, else `preferred_username`, else
/// `sub` (cut to 191 bytes). kUnauthenticated without a `sub`; kPermissionDenied, saying which
/// claim and values were seen, when no value is mapped to a role.
Result<Principal> PrincipalFromClaims(const nlohmann::json& claims, const OidcOptions& options);

/// The name PrincipalFromClaims gives the person of `claims` (email, name, preferred_username or
/// sub, cut to 191 bytes; "" when none is a string).
std::string PersonName(const nlohmann::json& claims);

/// application/x-www-form-urlencoded encoding of one value (RFC 3986 unreserved kept).
std::string FormEncode(std::string_view value);

}  // namespace sched::web
