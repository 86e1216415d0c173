#pragma once

/// The web module's routes: the REST API under /api/v1, the SDK's registry and callback routes,
/// and the web UI, mounted on any http::Router (scheduler-web's own server, or the trigger node's
/// port in scheduler-standalone). The API is described by the OpenAPI document served at
/// GET /api/v1/openapi.json (libs/web/assets/openapi.json; a test keeps the two in step).
///
///   jobs       GET/POST /api/v1/jobs, GET/PUT/DELETE /api/v1/jobs/{id},
///              POST /api/v1/jobs/{id}/pause|resume|trigger, GET /api/v1/jobs/{id}/next
///   schedules  POST /api/v1/schedules/validate
///   fires      GET /api/v1/fires, GET /api/v1/fires/{id}, POST /api/v1/fires/{id}/kill,
///              GET /api/v1/fires/{id}/log
///   executors  GET /api/v1/executors;  cluster  GET /api/v1/cluster
///   tokens     GET/POST /api/v1/tokens, DELETE /api/v1/tokens/{id}
///   SDK        POST /api/v1/registry/heartbeat, /api/v1/registry/deregister, /api/v1/callback
///              (the contract of executor_api.hpp)
///   locks      POST /api/v1/locks/{key}/acquire|extend|release, GET /api/v1/locks/{key}
///              (with the SDK routes; the contract of lock_api.hpp)
///   UI         GET / and GET /ui/{path...} (static files compiled into the binary)
///
/// Authentication and roles: auth.hpp. Every route is added to the router as Access::kPublic and
/// authenticates inside its handler, so the server's AuthHook is never consulted for them (the
/// hook must not block; API tokens need a database lookup). Only `/`, `/ui/...` and the OpenAPI
/// document are public.
///
/// Errors use the uniform body {"error": {"code", "message", "field"}}: invalid JSON, unknown
/// fields (named), wrong types and out-of-range values are 400 naming the field; an invalid
/// schedule is 400 naming schedule_type, schedule_expr or time_zone with the parser's position;
/// a version conflict is 409 (field "version"). All SQL is parameterised (libs/store).
///
/// Database work runs on `db_pool`, never on the I/O threads. Times in the API are epoch
/// milliseconds; "now" is the database clock.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sched/common/config.hpp"
#include "sched/common/duration.hpp"
#include "sched/common/metrics.hpp"
#include "sched/common/net.hpp"
#include "sched/http/address_policy.hpp"
#include "sched/http/router.hpp"
#include "sched/http/tls_options.hpp"
#include "sched/web/auth.hpp"
#include "sched/web/lock_api.hpp"
#include "sched/web/oidc.hpp"

namespace sched::web {

/// The web module's settings. As YAML (keys at the level of the section passed to FromYaml),
/// every key optional, with these defaults:
///
///     token: ""               # required: the cluster token (admin; also accepted by the SDK
///                             #   routes, for every app); SCHED_TOKEN overrides
///                             # (`executor-token` is refused: calls to executors are signed
///                             #   with per-app signing keys, docs/protocol.md)
///     executor-api: true      # serve the SDK's registry, callback and lock routes
///     ui: true                # serve the web UI at /
///     executor-ttl: 30s       # executor instances with an older heartbeat are shown as not alive
///     node-ttl: 5s            # trigger nodes with an older heartbeat are shown as not alive
///     auth-cache: 5s          # how long a token lookup is cached (0s = ask the database every time)
///     executor-timeout: 5s    # one kill or log call to an executor
///     locks: {...}            # the lock API (LockApiOptions, lock_api.hpp)
///     alert-addresses:        # alert rule webhook URLs (http::AddressPolicy): by default a host
///       allow: []             #   that is a loopback, link-local, unspecified or multicast address
///       deny: []              #   (or `localhost`) is refused with a 400 naming `url`; CIDRs,
///                             #   addresses or host names, at most 256 each
///     oidc: {...}             # single sign-on through an OpenID provider (OidcOptions, oidc.hpp)
struct WebOptions {
    std::string token;
    bool executor_api = true;
    bool ui = true;
    Micros executor_ttl = std::chrono::seconds(30);
    Micros node_ttl = std::chrono::seconds(5);
    Micros auth_cache = std::chrono::seconds(5);
    Micros executor_timeout = std::chrono::seconds(5);
    /// The lock API's limits and its LockStore (an injected store is not a YAML key).
    LockApiOptions locks;
    /// Which hosts alert rule URLs may name (the trigger nodes check each resolved address again,
    /// with their scheduler.alert-addresses).
    http::AddressPolicy alert_addresses;
    /// Single sign-on (oidc.hpp); off unless `oidc.issuer` is set.
    OidcOptions oidc;
    /// Kill and log calls to executors and the identity provider's discovery, keys and token
    /// endpoint (not a key of this section: the process's `http-client.tls`,
    /// ClientTlsOptions::FromConfig, set by the app).
    http::ClientTlsOptions http_client_tls;
    /// The master lease's row in scheduler_lock (not a YAML key: a cluster has one master lease).
    std::string lease_name = "master";
    /// Called after the commit of every write a master must act on (a job created, changed or
    /// resumed, a manual trigger, a workflow written or run, a backfill created, a kill,
    /// a callback whose results leave a follow-up), so that the masters plan it now instead
    /// of at their next probe (sched/protocol/master_wake.hpp). Must return at once and never
    /// throw (dispatch::MasterWaker::Wake). Empty: no wakes. Not a YAML key: the process sets it.
    std::function<void()> wake_masters;
    /// Called with the fires whose results a callback batch applied (after the commit), so that
    /// a trigger node in the same process drops the `running` records it still holds for them
    /// (TriggerNode::ResultsApplied). Must return at once and never throw. Empty: nothing is
    /// called. Not a YAML key: the process sets it.
    std::function<void(const std::vector<std::int64_t>&)> results_applied;

    /// Reads the keys above from `node`, starting from `defaults`. Throws ConfigError naming the
    /// key (an empty token is an error: a web module without one refuses to start).
    static WebOptions FromYaml(const ConfigNode& node, const WebOptions& defaults);
    static WebOptions FromYaml(const ConfigNode& node) { return FromYaml(node, WebOptions()); }
};

/// One route as added: what the OpenAPI consistency test compares with the document.
struct RouteInfo {
    http::Method method;
    std::string pattern;
    Permission permission;
    /// The query parameters it takes (any other is a 400 naming it); `any_query`: a static file
    /// route that ignores the query string.
    std::vector<std::string> query;
    bool any_query = false;
};

/// Adds every route above (the SDK and lock routes only with options.executor_api, the UI only with
/// options.ui) to `router` and returns them. The handlers share state they own, so nothing here
/// needs to outlive the router except `db_pool` and what `database` refers to. `database` may
/// return nullptr until the database is open (those requests get 503). Throws
/// std::invalid_argument for an empty options.token, and whatever Router::Add throws (a route
/// that is already there). `metrics` (optional, must outlive the router): the process's
/// registry, where the callback route counts sched_fire_outcomes_total and
/// sched_fire_duration_seconds.
std::vector<RouteInfo> AddWebRoutes(http::Router& router, const WebOptions& options, DatabaseProvider database,
                                    net::thread_pool& db_pool, MetricsRegistry* metrics = nullptr);

}  // namespace sched::web
