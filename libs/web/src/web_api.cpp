#include "sched/web/web_api.hpp"

#include <date/tz.h>

#include <cstdio>

#include <spdlog/spdlog.h>

#include "impl/audit.hpp"
#include "impl/context.hpp"
#include "impl/list_query.hpp"
#include "impl/signing_keys.hpp"

namespace sched::web {

WebOptions WebOptions::FromYaml(const ConfigNode& node, const WebOptions& defaults) {
    using std::chrono::milliseconds;
    WebOptions o = defaults;
    o.token = node.String("token", o.token);
    if (auto env = EnvOverride("SCHED_TOKEN")) o.token = *env;
    if (node.Has("executor-token")) {
        throw ConfigError(node.path().empty() ? "executor-token" : node.path() + ".executor-token",
                          "removed: nodes no longer send executors a token; they sign each call with the app's "
                          "signing key (docs/protocol.md). Delete the key; give services an executor token instead");
    }
    o.executor_api = node.Bool("executor-api", o.executor_api);
    o.ui = node.Bool("ui", o.ui);
    o.executor_ttl = node.Duration("executor-ttl", o.executor_ttl, milliseconds(100), std::chrono::hours(24));
    o.node_ttl = node.Duration("node-ttl", o.node_ttl, milliseconds(100), std::chrono::hours(24));
    o.auth_cache = node.Duration("auth-cache", o.auth_cache, Micros{0}, std::chrono::minutes(10));
    o.executor_timeout =
        node.Duration("executor-timeout", o.executor_timeout, milliseconds(10), std::chrono::minutes(5));
    o.locks = LockApiOptions::FromYaml(node.Child("locks"), o.locks);
    if (node.Has("oidc")) o.oidc = OidcOptions::FromYaml(node.Child("oidc"));
    if (node.Has("alert-addresses")) o.alert_addresses = http::AddressPolicy::FromYaml(node.Child("alert-addresses"));
    if (o.token.empty()) {
        throw ConfigError(node.path().empty() ? "token" : node.path() + ".token",
                          "required: a web module without a token refuses to start (set it or SCHED_TOKEN)");
    }
    return o;
}

std::vector<RouteInfo> AddWebRoutes(http::Router& router, const WebOptions& options, DatabaseProvider database,
                                    net::thread_pool& db_pool, MetricsRegistry* metrics) {
    auto ctx = std::make_shared<impl::Context>(options, std::move(database), db_pool, metrics);
    impl::Routes routes(router, ctx);
    impl::AddJobRoutes(routes);
    impl::AddScheduleRoutes(routes);
    impl::AddBackfillRoutes(routes);
    impl::AddCalendarRoutes(routes);
    impl::AddConcurrencyKeyRoutes(routes);
    impl::AddWorkflowRoutes(routes);
    impl::AddFireRoutes(routes);
    impl::AddDashboardRoutes(routes);
    impl::AddAlertRoutes(routes);
    impl::AddClusterRoutes(routes);
    impl::AddTokenRoutes(routes);
    impl::AddAuditRoutes(routes);
    impl::AddSigningKeyRoutes(routes);
    if (options.executor_api) impl::AddSdkRoutes(routes);
    impl::AddSessionRoutes(routes);
    impl::AddUiRoutes(routes);
    if (ctx->oidc) impl::AddSignInRoutes(router, ctx);
    return routes.TakeAdded();
}

namespace impl {

void Routes::Add(http::Method method, const std::string& pattern, Permission permission, const QueryParams& query,
                 ApiHandler handler) {
    auto ctx = ctx_;
    RouteInfo info{method, pattern, permission, {query.names.begin(), query.names.end()}, query.any};
    // The names as owned strings: the views may point into a caller's temporary list.
    auto query_names = std::make_shared<const std::vector<std::string>>(info.query);
    auto wrapped = [ctx, permission, pattern, query_names, any_query = query.any,
                    handler = std::move(handler)](http::Request& req) -> net::awaitable<http::Response> {
        // After authentication (a caller without a token learns nothing about a route's
        // parameters), before the handler reads any.
        const auto check_query = [&]() -> std::optional<http::Response> {
            if (any_query) return std::nullopt;
            const std::vector<std::string_view> names(query_names->begin(), query_names->end());
            return RejectUnknownQuery(req, names);
        };
        if (permission == Permission::kPublic) {
            if (auto unknown = check_query()) co_return *unknown;
            const Principal nobody{.name = "anonymous"};
            http::Response response = co_await handler(req, nobody);
            co_return response;
        }
        auto principal = co_await AuthenticateRequest(*ctx, req);
        if (!principal.ok()) {
            const bool csrf = principal.status().message().starts_with(kCsrfHeader);
            co_return http::Response::Error(principal.status(), csrf ? std::string(kCsrfHeader) : "Authorization");
        }
        if (Status allowed = Authorize(*principal, permission); !allowed.ok()) {
            // A valid token refused a change is worth an entry (a probe or a misconfigured
            // tool); refused reads are not recorded.
            if (req.method != http::Method::kGet) {
                AuditChange denied{"denied",     "route",     req.method_text + " " + req.path, std::string(pattern),
                                   std::nullopt, std::nullopt};
                auto record = [who = *principal, denied](db::Database& db) -> Status {
                    RecordAudit(db, who, denied);
                    return Status::Ok();
                };
                Status recorded = co_await WithDb(*ctx, record);
                (void)recorded;
            }
            co_return http::Response::Error(allowed, "Authorization");
        }
        if (auto unknown = check_query()) co_return *unknown;
        http::Response response = co_await handler(req, *principal);
        co_return response;
    };
    router_.Add(method, pattern, std::move(wrapped), http::Access::kPublic);
    added_.push_back(std::move(info));
}

std::string RepositoryErrorField(const Status& s) {
    switch (s.code()) {
        case Code::kAlreadyExists:
            return "name";
        case Code::kAborted:
            return "version";
        case Code::kNotFound:
            return "id";
        default:
            return "";
    }
}

std::optional<std::int64_t> PathId(const http::Request& req, std::optional<http::Response>& error,
                                   std::string_view name) {
    const auto text = req.PathParam(name);
    const auto id = ParseInt64(text);
    if (!id || *id <= 0) {
        error = BadRequest(std::string(name),
                           std::string(name) + ": expected a positive integer, got \"" + std::string(text) + "\"");
        return std::nullopt;
    }
    return id;
}

std::optional<std::string> UnknownQueryParam(const http::Request& req,
                                             std::initializer_list<std::string_view> allowed) {
    return UnknownQueryParam(req, std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

std::optional<std::string> UnknownQueryParam(const http::Request& req, std::span<const std::string_view> allowed) {
    std::string_view rest = req.query;
    while (!rest.empty()) {
        const auto amp = rest.find('&');
        const auto pair = rest.substr(0, amp);
        rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
        if (pair.empty()) continue;
        const auto key = http::PercentDecode(pair.substr(0, pair.find('=')), true).value_or(std::string(pair));
        bool known = false;
        for (const auto a : allowed) known = known || a == key;
        if (!known) return key;
    }
    return std::nullopt;
}

std::optional<std::int64_t> QueryInt(const http::Request& req, std::string_view name, std::int64_t min,
                                     std::int64_t max, std::optional<http::Response>& error) {
    const auto text = req.Query(name);
    if (!text || text->empty()) return std::nullopt;
    const auto v = ParseInt64(*text);
    if (!v || *v < min || *v > max) {
        error = BadRequest(std::string(name), std::string(name) + ": expected an integer in " + std::to_string(min) +
                                                  ".." + std::to_string(max) + ", got \"" + *text + "\"");
        return std::nullopt;
    }
    return v;
}

std::optional<http::Response> RejectUnknownFields(const nlohmann::json& body, std::span<const std::string_view> allowed,
                                                  std::span<const std::string_view> read_only) {
    if (!body.is_object()) return std::nullopt;  // JsonFields reports the type
    for (const auto& [key, value] : body.items()) {
        bool known = false;
        for (const auto a : allowed) known = known || a == key;
        if (known) continue;
        for (const auto r : read_only) {
            if (r == key) return BadRequest(key, key + ": read-only field; leave it out");
        }
        return BadRequest(key, key + ": unknown field");
    }
    return std::nullopt;
}

std::optional<nlohmann::json> ReadBodyFields(const http::Request& req, std::optional<http::Response>& error,
                                             std::span<const std::string_view> allowed,
                                             std::span<const std::string_view> read_only) {
    auto body = req.Json();
    if (!body.ok()) {
        error = http::Response::Error(body.status(), "body");
        return std::nullopt;
    }
    error = RejectUnknownFields(*body, allowed, read_only);
    if (error) return std::nullopt;
    return std::move(*body);
}

std::optional<http::Response> RejectAnyBody(const http::Request& req) {
    if (req.body.empty()) return std::nullopt;
    auto body = req.Json();
    if (!body.ok()) return BadRequest("body", "body: expected no body or {}: " + body.status().message());
    if (!body->is_object()) return BadRequest("body", "body: expected no body or {}");
    if (body->empty()) return std::nullopt;
    return RejectUnknownFields(*body, {});
}

std::size_t CodePoints(std::string_view utf8) {
    std::size_t n = 0;
    for (const char c : utf8) {
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
    }
    return n;
}

Result<std::int64_t> DbNowMs(db::Database& db) {
    auto us = db.NowUs();
    if (!us.ok()) return us.status();
    return *us / 1000;
}

std::string LocalIso(std::int64_t epoch_ms, const date::time_zone* zone) {
    using namespace std::chrono;
    // The offset from cron::ZoneInfoAt, not date::make_zoned: after 2037 only the former follows
    // the zone's DST rule, and the preview must show the local times the schedule fires at.
    const seconds offset =
        zone ? cron::ZoneInfoAt(*zone, date::floor<seconds>(milliseconds(epoch_ms)).count()).offset : seconds(0);
    const date::local_time<milliseconds> local{milliseconds(epoch_ms) + offset};
    std::string out =
        epoch_ms % 1000 == 0 ? date::format("%FT%T", date::floor<seconds>(local)) : date::format("%FT%T", local);
    const auto minutes = date::floor<std::chrono::minutes>(offset < seconds(0) ? -offset : offset).count();
    char sign_hh_mm[16];  // "+hh:mm" fits in 7; room for what the compiler cannot rule out
    std::snprintf(sign_hh_mm, sizeof sign_hh_mm, "%c%02d:%02d", offset < seconds(0) ? '-' : '+',
                  static_cast<int>(minutes / 60 % 100), static_cast<int>(minutes % 60));
    return out + sign_hh_mm;
}

}  // namespace impl

}  // namespace sched::web
