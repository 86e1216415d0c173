#include "sched/web/oidc.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "sched/http/client.hpp"
#include "sched/http/message.hpp"

namespace sched::web {

namespace {

// A client for one call to the provider: its answers bounded by `body_limit`, its https
// endpoints verified as the process's http-client.tls says.
http::ClientOptions ProviderClient(const OidcOptions& o, std::size_t body_limit) {
    http::ClientOptions c;
    c.body_limit = body_limit;
    c.request_timeout = o.http_timeout;
    c.tls = o.tls;
    return c;
}

bool IsHttpUrl(std::string_view url) {
    return url.starts_with("http://") || url.starts_with("https://");
}

std::string TrimSlash(std::string s) {
    while (!s.empty() && s.back() == '/') s.pop_back();
    return s;
}

// A discovery document and a key set are small; a token response carries three tokens.
constexpr std::size_t kMaxDiscoveryBytes = std::size_t{64} * 1024;
constexpr std::size_t kMaxTokenResponseBytes = std::size_t{64} * 1024;

std::int64_t SystemNow() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

std::string FormEncode(std::string_view value) {
    return http::PercentEncode(value);
}

OidcOptions OidcOptions::FromYaml(const ConfigNode& node) {
    using std::chrono::seconds;
    OidcOptions o;
    const auto key = [&](const char* name) {
        return node.path().empty() ? std::string(name) : node.path() + "." + name;
    };
    o.issuer = TrimSlash(node.String("issuer", ""));
    o.client_id = node.String("client-id", "");
    const std::string secret_file = node.String("client-secret-file", "");
    o.audience = node.String("audience", "");
    o.public_url = TrimSlash(node.String("public-url", ""));
    o.scopes = node.String("scopes", o.scopes);
    o.role_claim = node.String("role-claim", o.role_claim);
    const auto mapping = node.Child("role-mapping");
    for (const auto role : {store::Role::kAdmin, store::Role::kOperator, store::Role::kViewer}) {
        for (auto& value : mapping.StringList(store::RoleName(role), {})) o.role_mapping.emplace_back(value, role);
    }
    mapping.RejectUnknownKeys();
    o.clock_skew = node.Duration("clock-skew", o.clock_skew, Micros{0}, std::chrono::minutes(10));
    o.jwks_refresh = node.Duration("jwks-refresh", o.jwks_refresh, seconds(1), std::chrono::hours(1));
    o.http_timeout = node.Duration("http-timeout", o.http_timeout, std::chrono::milliseconds(100), seconds(60));
    o.session_idle = node.Duration("session-idle", o.session_idle, seconds(10), std::chrono::hours(24 * 30));
    o.session_absolute =
        node.Duration("session-absolute", o.session_absolute, seconds(10), std::chrono::hours(24 * 90));
    o.max_sessions = static_cast<std::size_t>(node.Int("max-sessions", 10000, 1, 1000000));
    o.max_sessions_per_subject = static_cast<std::size_t>(node.Int("max-sessions-per-subject", 10, 1, 1000));
    if (!o.enabled()) return o;
    if (!IsHttpUrl(o.issuer)) throw ConfigError(key("issuer"), "expected an http(s) URL, got \"" + o.issuer + "\"");
    if (o.client_id.empty()) throw ConfigError(key("client-id"), "required when an issuer is set");
    if (o.public_url.empty() || !IsHttpUrl(o.public_url)) {
        throw ConfigError(key("public-url"),
                          "required when an issuer is set: the http(s) URL browsers reach this UI at");
    }
    if (o.audience.empty()) o.audience = o.client_id;
    if (o.scopes.find("openid") == std::string::npos) o.scopes = "openid " + o.scopes;
    if (auto env = EnvOverride("SCHED_OIDC_CLIENT_SECRET")) {
        o.client_secret = *env;
    } else if (!secret_file.empty()) {
        std::ifstream in(secret_file);
        if (!in) throw ConfigError(key("client-secret-file"), "cannot read \"" + secret_file + "\"");
        std::stringstream text;
        text << in.rdbuf();
        o.client_secret = text.str();
        while (!o.client_secret.empty() && std::isspace(static_cast<unsigned char>(o.client_secret.back())) != 0) {
            o.client_secret.pop_back();
        }
        if (o.client_secret.empty()) throw ConfigError(key("client-secret-file"), "the file is empty");
    }
    return o;
}

OidcProvider::OidcProvider(OidcOptions options, Clock clock)
    : options_(std::move(options)), clock_(clock ? std::move(clock) : Clock(SystemNow)) {}

std::uint64_t OidcProvider::jwks_fetches() const {
    std::lock_guard lock(mu_);
    return jwks_fetches_;
}

net::awaitable<Result<OidcEndpoints>> OidcProvider::Endpoints() {
    const std::int64_t refresh_s = std::chrono::duration_cast<std::chrono::seconds>(options_.jwks_refresh).count();
    {
        std::lock_guard lock(mu_);
        if (endpoints_) co_return *endpoints_;
        if (discovery_failed_at_ && clock_() - *discovery_failed_at_ < refresh_s) {
            co_return Unavailable(
                "the OpenID provider's discovery document could not be fetched (retried at most "
                "once per jwks-refresh)");
        }
        // Claimed before the fetch: concurrent callers wait for the next interval instead of
        // all asking the IdP at once.
        discovery_failed_at_ = clock_();
    }
    const http::ClientOptions client_options = ProviderClient(options_, kMaxDiscoveryBytes);
    const auto executor = co_await net::this_coro::executor;
    http::HttpClient client(executor, client_options);
    const std::string url = options_.issuer + "/.well-known/openid-configuration";
    // Options passed explicitly: g++ 12 destroys a defaulted class-type coroutine argument twice.
    const http::CallOptions call{.timeout = options_.http_timeout};
    auto answer = co_await client.Get(url, call);
    if (!answer.ok()) {
        spdlog::warn("web: OIDC discovery {}: {}", url, answer.status().ToString());
        co_return Unavailable("the OpenID provider cannot be reached: " + answer.status().message());
    }
    if (!answer->ok()) {
        spdlog::warn("web: OIDC discovery {}: HTTP {}", url, answer->status);
        co_return Unavailable("the OpenID provider's discovery document answered HTTP " +
                              std::to_string(answer->status));
    }
    auto doc = answer->Json();
    if (!doc.ok() || !doc->is_object()) co_return FailedPrecondition("discovery document: not a JSON object");
    const auto str = [&](const char* name) -> std::string {
        const auto it = doc->find(name);
        return it != doc->end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    if (TrimSlash(str("issuer")) != options_.issuer) {
        co_return FailedPrecondition("discovery document: issuer \"" + str("issuer").substr(0, 200) +
                                     "\" is not the configured \"" + options_.issuer + "\"");
    }
    OidcEndpoints e{str("authorization_endpoint"), str("token_endpoint"), str("jwks_uri"), str("end_session_endpoint")};
    for (const auto* url_of : {&e.authorization_endpoint, &e.token_endpoint, &e.jwks_uri}) {
        if (!IsHttpUrl(*url_of)) {
            co_return FailedPrecondition(
                "discovery document: authorization_endpoint, token_endpoint and jwks_uri must be http(s) URLs");
        }
    }
    if (!e.end_session_endpoint.empty() && !IsHttpUrl(e.end_session_endpoint)) e.end_session_endpoint.clear();
    Status keys = co_await FetchKeys(e.jwks_uri);
    if (!keys.ok()) co_return keys;
    std::lock_guard lock(mu_);
    endpoints_ = e;
    discovery_failed_at_.reset();
    co_return e;
}

net::awaitable<Status> OidcProvider::FetchKeys(std::string jwks_uri) {
    const http::ClientOptions client_options = ProviderClient(options_, options_.limits.max_jwks_bytes);
    const auto executor = co_await net::this_coro::executor;
    http::HttpClient client(executor, client_options);
    const http::CallOptions call{.timeout = options_.http_timeout};
    auto answer = co_await client.Get(jwks_uri, call);
    if (!answer.ok()) co_return Unavailable("the OpenID provider's key set: " + answer.status().message());
    if (!answer->ok()) {
        co_return Unavailable("the OpenID provider's key set answered HTTP " + std::to_string(answer->status));
    }
    auto keys = JwkSet::Parse(answer->body, options_.limits);
    if (!keys.ok()) {
        spdlog::warn("web: OIDC key set {}: {}", jwks_uri, keys.status().message());
        co_return FailedPrecondition(keys.status().message());
    }
    std::lock_guard lock(mu_);
    keys_ = std::move(*keys);
    keys_fetched_at_ = clock_();
    ++jwks_fetches_;
    co_return Status::Ok();
}

net::awaitable<Result<nlohmann::json>> OidcProvider::Verify(std::string token, std::string audience,
                                                            std::optional<std::string> nonce) {
    auto endpoints = co_await Endpoints();
    if (!endpoints.ok()) co_return endpoints.status();
    const JwtCheck check{.issuer = options_.issuer,
                         .audience = std::move(audience),
                         .nonce = std::move(nonce),
                         .now_s = clock_(),
                         .clock_skew = std::chrono::duration_cast<std::chrono::seconds>(options_.clock_skew)};
    JwkSet keys;
    {
        std::lock_guard lock(mu_);
        keys = keys_;
    }
    auto claims = VerifyJwt(token, keys, check, options_.limits);
    if (claims.ok() || claims.status().code() != Code::kNotFound) co_return claims;
    // An unknown key id: the IdP may have rotated its keys. Fetch the set again unless that
    // happened less than jwks-refresh ago (the bound on what made-up key ids can cost).
    bool refresh = false;
    {
        std::lock_guard lock(mu_);
        const std::int64_t refresh_s = std::chrono::duration_cast<std::chrono::seconds>(options_.jwks_refresh).count();
        if (!keys_fetched_at_ || clock_() - *keys_fetched_at_ >= refresh_s) {
            keys_fetched_at_ = clock_();
            refresh = true;
        }
    }
    if (refresh) {
        Status fetched = co_await FetchKeys(endpoints->jwks_uri);
        if (!fetched.ok()) co_return fetched;
        {
            std::lock_guard lock(mu_);
            keys = keys_;
        }
        claims = VerifyJwt(token, keys, check, options_.limits);
    }
    if (!claims.ok() && claims.status().code() == Code::kNotFound) {
        co_return Status(Code::kUnauthenticated, claims.status().message() + " (not in the provider's key set)");
    }
    co_return claims;
}

net::awaitable<Result<nlohmann::json>> OidcProvider::ExchangeCode(std::string code, std::string code_verifier) {
    auto endpoints = co_await Endpoints();
    if (!endpoints.ok()) co_return endpoints.status();
    std::string form = "grant_type=authorization_code&code=" + FormEncode(code) +
                       "&redirect_uri=" + FormEncode(options_.RedirectUri()) +
                       "&code_verifier=" + FormEncode(code_verifier) + "&client_id=" + FormEncode(options_.client_id);
    if (!options_.client_secret.empty()) form += "&client_secret=" + FormEncode(options_.client_secret);
    const http::ClientOptions client_options = ProviderClient(options_, kMaxTokenResponseBytes);
    const auto executor = co_await net::this_coro::executor;
    http::HttpClient client(executor, client_options);
    http::ClientRequest request{.method = http::Method::kPost, .url = endpoints->token_endpoint};
    request.headers.Set("Content-Type", "application/x-www-form-urlencoded");
    request.headers.Set("Accept", "application/json");
    request.body = std::move(form);
    const http::CallOptions call{.timeout = options_.http_timeout};
    auto answer = co_await client.Send(std::move(request), call);
    if (!answer.ok()) co_return Unavailable("the OpenID provider's token endpoint: " + answer.status().message());
    auto body = answer->Json();
    if (!answer->ok()) {
        std::string why = "HTTP " + std::to_string(answer->status);
        if (body.ok() && body->is_object() && body->contains("error") && (*body)["error"].is_string()) {
            why = (*body)["error"].get<std::string>().substr(0, 100);
        }
        co_return Status(Code::kUnauthenticated, "the OpenID provider refused the code: " + why);
    }
    if (!body.ok() || !body->is_object()) co_return Unavailable("the token endpoint's answer is not a JSON object");
    co_return std::move(*body);
}

std::string PersonName(const nlohmann::json& claims) {
    const auto str = [&](const char* name) -> std::string {
        const auto it = claims.find(name);
        return it != claims.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    std::string name = str("email");
    if (name.empty()) name = str("name");
    if (name.empty()) name = str("preferred_username");
    if (name.empty()) name = str("sub");
    if (name.size() > 191) name.resize(191);
    return name;
}

Result<Principal> PrincipalFromClaims(const nlohmann::json& claims, const OidcOptions& options) {
    const auto sub = claims.find("sub");
    const std::string subject = sub != claims.end() && sub->is_string() ? sub->get<std::string>() : std::string();
    if (subject.empty() || subject.size() > 255) return Status(Code::kUnauthenticated, "token: sub is required");
    const std::string name = PersonName(claims);
    std::vector<std::string> values;
    if (const auto it = claims.find(options.role_claim); it != claims.end()) {
        if (it->is_string()) values.push_back(it->get<std::string>());
        if (it->is_array()) {
            for (const auto& v : *it) {
                if (v.is_string() && values.size() < 256) values.push_back(v.get<std::string>());
            }
        }
    }
    const auto rank = [](store::Role r) {
        return r == store::Role::kAdmin ? 3 : r == store::Role::kOperator ? 2 : 1;
    };
    std::optional<store::Role> role;
    for (const auto& [value, mapped] : options.role_mapping) {
        if (std::find(values.begin(), values.end(), value) == values.end()) continue;
        if (!role || rank(mapped) > rank(*role)) role = mapped;
    }
    if (!role) {
        std::string seen;
        for (std::size_t i = 0; i < values.size() && i < 10; ++i) seen += (i ? ", " : "") + values[i].substr(0, 64);
        return Status(Code::kPermissionDenied, "\"" + name + "\" has no role here: none of the values of claim \"" +
                                                   options.role_claim + "\" (" + (seen.empty() ? "none" : seen) +
                                                   ") is mapped in oidc.role-mapping");
    }
    return Principal{.name = name, .role = *role, .subject = subject, .issuer = options.issuer};
}

}  // namespace sched::web
