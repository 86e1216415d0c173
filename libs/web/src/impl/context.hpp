#pragma once

// What every handler of the web module shares, and the helpers they all use.

#include <charconv>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "impl/last_success_writer.hpp"
#include "impl/sign_in.hpp"
#include "sched/common/on_pool.hpp"
#include "sched/cron/time_zone.hpp"
#include "sched/http/message.hpp"
#include "sched/http/router.hpp"
#include "sched/store/fire_metrics.hpp"
#include "sched/web/auth.hpp"
#include "sched/web/oidc.hpp"
#include "sched/web/web_api.hpp"

namespace sched::web::impl {

// The provider is reached with the process's https client settings (`http-client.tls`).
inline OidcOptions WithTls(OidcOptions oidc, const http::ClientTlsOptions& tls) {
    oidc.tls = tls;
    return oidc;
}

struct Context {
    Context(WebOptions o, DatabaseProvider db, net::thread_pool& pool, MetricsRegistry* metrics = nullptr)
        : options(std::move(o)),
          database(std::move(db)),
          db_pool(pool),
          auth(options.token, database, pool, options.auth_cache),
          oidc(options.oidc.enabled() ? std::make_shared<OidcProvider>(WithTls(options.oidc, options.http_client_tls))
                                      : nullptr),
          sessions(std::make_unique<SessionStore>(options.oidc)),
          sign_in_cookies(options.token),
          fire_metrics(metrics ? std::make_shared<store::FireOutcomeMetrics>(*metrics) : nullptr),
          last_success(std::make_shared<LastSuccessWriter>(database, db_pool)) {}

    const WebOptions options;
    const DatabaseProvider database;
    net::thread_pool& db_pool;
    TokenAuthenticator auth;
    /// Null when OIDC is off (no `oidc.issuer`).
    const std::shared_ptr<OidcProvider> oidc;
    /// Sign-ins in flight and browser sessions (unused while OIDC is off).
    const std::unique_ptr<SessionStore> sessions;
    /// Sign-ins in flight, carried by the browsers.
    const SignInCookies sign_in_cookies;
    /// Bounds the audit entries of refused sign-ins.
    RefusalBudget sign_in_refusals;
    /// Null when the process exports no metrics through this module.
    const std::shared_ptr<store::FireOutcomeMetrics> fire_metrics;
    /// The jobs' latest successes the callback route applied, on their way to job_last_success.
    const std::shared_ptr<LastSuccessWriter> last_success;
};

/// A handler that runs after authentication and authorisation.
using ApiHandler = std::function<net::awaitable<http::Response>(http::Request&, const Principal&)>;

/// The query parameters a route takes. Every route declares them when it is added, and any other
/// parameter is refused before its handler runs (400 "<name>: unknown query parameter", naming
/// it), so a typo never silently widens a listing and no route can forget the check.
struct QueryParams {
    std::vector<std::string_view> names;
    bool any = false;  ///< a static file route: the query string is not its business
};
/// A route that takes no query parameter (the default).
inline const QueryParams kNoQuery{};
/// The UI's static files (cache-busting queries from browsers and proxies are harmless there).
inline const QueryParams kAnyQuery{.names = {}, .any = true};
/// A paged list without filters (PageHandler, ChildPageHandler).
inline const QueryParams kPageQuery{.names = {"limit", "cursor"}};

/// Adds routes to a router, each wrapped in the token check for its permission and the check of
/// its query parameters, and records them for the OpenAPI test.
class Routes {
  public:
    Routes(http::Router& router, std::shared_ptr<Context> ctx) : router_(router), ctx_(std::move(ctx)) {}

    /// A route that takes no query parameter.
    void Add(http::Method method, const std::string& pattern, Permission permission, ApiHandler handler) {
        Add(method, pattern, permission, kNoQuery, std::move(handler));
    }
    /// A route that takes the query parameters `query` (and no others).
    void Add(http::Method method, const std::string& pattern, Permission permission, const QueryParams& query,
             ApiHandler handler);
    std::vector<RouteInfo> TakeAdded() { return std::move(added_); }
    const std::shared_ptr<Context>& context() const { return ctx_; }

  private:
    http::Router& router_;
    std::shared_ptr<Context> ctx_;
    std::vector<RouteInfo> added_;
};

void AddJobRoutes(Routes& routes);
void AddScheduleRoutes(Routes& routes);  // /jobs/{id}/next, /schedules/validate
void AddBackfillRoutes(Routes& routes);
void AddCalendarRoutes(Routes& routes);
void AddConcurrencyKeyRoutes(Routes& routes);
void AddFireRoutes(Routes& routes);
void AddDashboardRoutes(Routes& routes);
void AddAlertRoutes(Routes& routes);
void AddClusterRoutes(Routes& routes);
void AddTokenRoutes(Routes& routes);
void AddSdkRoutes(Routes& routes);  // and AddLockRoutes
void AddLockRoutes(Routes& routes);
void AddUiRoutes(Routes& routes);
void AddAuditRoutes(Routes& routes);
void AddSessionRoutes(Routes& routes);  // GET /api/v1/session, GET /auth/config
void AddWorkflowRoutes(Routes& routes);
void AddWorkflowRunRoute(Routes& routes);  // GET /api/v1/workflow-runs/{id}, with each step's state

/// Runs fn(db::Database&) on the DB pool; kUnavailable when the database is not open yet.
/// fn returns Status or Result<T>. Not a coroutine itself: one coroutine (OnPool) owns `fn`.
template <typename F>
net::awaitable<std::invoke_result_t<F, db::Database&>> WithDb(Context& ctx, F fn) {
    using R = std::invoke_result_t<F, db::Database&>;
    return OnPool(ctx.db_pool, [db = ctx.database(), fn = std::move(fn)]() mutable -> R {
        if (!db) return R(Unavailable("the database is not open yet"));
        return fn(*db);
    });
}

/// Tells the masters that a committed write gave them work (WebOptions::wake_masters); returns
/// at once. Call it only after the write succeeded: a refused or failed one gives them nothing.
inline void WakeMasters(const Context& ctx) {
    if (ctx.options.wake_masters) ctx.options.wake_masters();
}

/// 400 naming `field`.
inline http::Response BadRequest(std::string field, std::string message) {
    return http::Response::Error(http::ApiError{Code::kInvalidArgument, std::move(message), std::move(field)});
}

/// A strictly decimal int64 ("12"; not "+1", " 1", "1e3", "0x1"); nullopt otherwise.
inline std::optional<std::int64_t> ParseInt64(std::string_view text) {
    std::int64_t v = 0;
    const auto* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
    return v;
}

/// Which request field a versioned repository's error is about: "name" for kAlreadyExists (the
/// name is taken), "version" for kAborted (a stale version), "id" for kNotFound; "" otherwise.
std::string RepositoryErrorField(const Status& s);

/// The path parameter `name` as a positive id, or the 400 to answer.
std::optional<std::int64_t> PathId(const http::Request& req, std::optional<http::Response>& error,
                                   std::string_view name = "id");

/// Query parameters: the first one not in `allowed`, if any (an unknown parameter is a 400, so
/// that a typo never silently widens a listing).
std::optional<std::string> UnknownQueryParam(const http::Request& req, std::initializer_list<std::string_view> allowed);
std::optional<std::string> UnknownQueryParam(const http::Request& req, std::span<const std::string_view> allowed);

/// The largest id a path or a query may name (ids are BIGINT).
inline constexpr std::int64_t kMaxId = std::numeric_limits<std::int64_t>::max();

/// An optional integer query parameter in [min, max]; error set to the 400 when malformed.
std::optional<std::int64_t> QueryInt(const http::Request& req, std::string_view name, std::int64_t min,
                                     std::int64_t max, std::optional<http::Response>& error);

/// The first key of `body` (an object) not in `allowed`: "unknown field" 400 naming it.
std::optional<http::Response> RejectUnknownFields(const nlohmann::json& body, std::span<const std::string_view> allowed,
                                                  std::span<const std::string_view> read_only = {});

/// A body of fields (create, update): JSON, with no field outside `allowed` and none of
/// `read_only` (RejectUnknownFields); otherwise the 400 to answer in `error`, naming `body` when
/// it is not JSON.
std::optional<nlohmann::json> ReadBodyFields(const http::Request& req, std::optional<http::Response>& error,
                                             std::span<const std::string_view> allowed,
                                             std::span<const std::string_view> read_only = {});

/// For routes that take no fields (pause, resume, trigger, kill): the body must be empty or a
/// JSON object without fields (`{}`); otherwise the 400 to answer, naming `body` (not JSON, not
/// an object) or the first field.
std::optional<http::Response> RejectAnyBody(const http::Request& req);

/// The handler of a route on one resource that takes no fields (trigger, pause, cancel, kill,
/// test): the path id (PathId), then no body (RejectAnyBody), each answered with its 400; then
/// `act(req, id, who)` answers.
template <typename Act>
ApiHandler ActionHandler(Act act) {
    return [act = std::move(act)](http::Request& req, const Principal& who) -> net::awaitable<http::Response> {
        std::optional<http::Response> error;
        const auto id = PathId(req, error);
        if (!id) co_return *error;
        if (auto rejected = RejectAnyBody(req)) co_return *rejected;
        co_return co_await act(req, *id, who);
    };
}

/// Characters (Unicode code points) in a UTF-8 string: what VARCHAR(n) limits count.
std::size_t CodePoints(std::string_view utf8);

/// The database clock in epoch milliseconds.
Result<std::int64_t> DbNowMs(db::Database& db);

/// Epoch ms as local ISO-8601 in `zone` ("2025-03-30T03:00:00+02:00"; ".250" when not whole).
std::string LocalIso(std::int64_t epoch_ms, const date::time_zone* zone);

}  // namespace sched::web::impl
