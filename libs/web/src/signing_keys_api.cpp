// Signing keys: the admin's view and rotation (the keys themselves are in libs/store).

#include <spdlog/spdlog.h>

#include "impl/audit.hpp"
#include "impl/context.hpp"
#include "impl/signing_keys.hpp"
#include "sched/http/json.hpp"

namespace sched::web::impl {

namespace {

constexpr std::int64_t kDefaultGraceMs = 30'000;
constexpr std::int64_t kMaxGraceMs = 24LL * 3600 * 1000;

// No secrets here: the admin API shows which keys exist and which one signs.
nlohmann::json KeysView(const std::string& app, const store::AppSigningKeys& keys) {
    const store::SigningKey* signing = keys.SigningAt(keys.db_now_ms);
    nlohmann::json items = nlohmann::json::array();
    for (const auto& k : keys.keys) {
        std::string state = "previous";
        if (signing != nullptr && k.generation == signing->generation) {
            state = "signing";
        } else if (k.active_from_ms > keys.db_now_ms) {
            state = "next";
        }
        items.push_back({{"id", k.key_id},
                         {"generation", k.generation},
                         {"state", state},
                         {"active_from_ms", k.active_from_ms},
                         {"created_at_ms", k.created_at_ms}});
    }
    return {{"app", app}, {"keys", std::move(items)}, {"server_time_ms", keys.db_now_ms}};
}

std::optional<http::Response> BadApp(const std::string& app) {
    if (app.empty() || app.size() > 128) return BadRequest("app", "app: 1 to 128 characters");
    return std::nullopt;
}

}  // namespace

protocol::KeyDelivery KeyDeliveryOf(const store::AppSigningKeys& keys) {
    protocol::KeyDelivery out{.keys = {}, .server_time_ms = keys.db_now_ms};
    for (const auto& k : keys.keys) {
        out.keys.push_back({.id = k.key_id, .secret = k.secret, .active_from_ms = k.active_from_ms});
    }
    return out;
}

void AddSigningKeyRoutes(Routes& routes) {
    auto ctx = routes.context();
    routes.Add(http::Method::kGet, "/api/v1/apps/{app}/signing-keys", Permission::kAdmin,
               [ctx](http::Request& req, const Principal&) -> net::awaitable<http::Response> {
                   const std::string app(req.PathParam("app"));
                   if (auto bad = BadApp(app)) co_return *bad;
                   auto work = [app](db::Database& db) {
                       return store::SigningKeyRepository(db).List(app);
                   };
                   auto keys = co_await WithDb(*ctx, work);
                   if (!keys.ok()) co_return http::Response::Error(keys.status());
                   co_return http::Response::Json(KeysView(app, *keys));
               });
    routes.Add(http::Method::kPost, "/api/v1/apps/{app}/signing-keys/rotate", Permission::kAdmin,
               [ctx](http::Request& req, const Principal& who) -> net::awaitable<http::Response> {
                   const std::string app(req.PathParam("app"));
                   if (auto bad = BadApp(app)) co_return *bad;
                   std::int64_t grace_ms = kDefaultGraceMs;
                   if (!req.body.empty()) {
                       auto body = req.Json();
                       if (!body.ok()) co_return http::Response::Error(body.status(), "body");
                       http::JsonFields f(*body);
                       grace_ms = f.Int("grace_ms", kDefaultGraceMs, {.min = 0, .max = kMaxGraceMs});
                       if (f.error()) co_return http::Response::Error(*f.error());
                   }
                   auto work = [app, grace_ms, &who](db::Database& db) -> Result<store::AppSigningKeys> {
                       store::SigningKeyRepository keys(db);
                       auto before = keys.List(app);
                       auto rotated = keys.Rotate(app, grace_ms);
                       // KeysView: ids, generations and times, never a key's secret.
                       if (rotated.ok()) {
                           std::optional<nlohmann::json> before_json;
                           if (before.ok()) before_json = KeysView(app, *before);
                           nlohmann::json after = KeysView(app, *rotated);
                           after["grace_ms"] = grace_ms;
                           RecordAudit(db, who, {"rotate", "signing-key", app, app, before_json, after});
                       }
                       return rotated;
                   };
                   auto keys = co_await WithDb(*ctx, work);
                   if (!keys.ok()) co_return http::Response::Error(keys.status(), "app");
                   spdlog::info("web: signing key of app {} rotated by {} (grace {} ms)", app, who.name, grace_ms);
                   co_return http::Response::Json(KeysView(app, *keys));
               });
}

}  // namespace sched::web::impl
