// API tokens: /api/v1/tokens (admin only). The secret is returned once, at creation; only its
// SHA-256 is stored.

#include <algorithm>
#include <array>

#include <spdlog/spdlog.h>

#include "impl/audit.hpp"
#include "impl/context.hpp"
#include "impl/views.hpp"
#include "sched/api/page.hpp"
#include "sched/http/json.hpp"
#include "sched/store/token.hpp"
#include "sched/web/sha256.hpp"

namespace sched::web::impl {

namespace {

using http::Method;
using http::Request;
using http::Response;

constexpr std::array<std::string_view, 3> kTokenFields = {"name", "role", "apps"};
constexpr std::size_t kMaxTokenName = 128;
// A token for a few services of one team, not a way around scoping: past this, use several.
constexpr std::size_t kMaxTokenApps = 32;

// The `apps` of a token request: required (1..kMaxTokenApps distinct valid names) for executor
// tokens, absent or null for the other roles. The error names "apps".
std::optional<Response> ReadAppScope(const nlohmann::json& body, store::Role role, std::vector<std::string>& apps) {
    const bool given = body.contains("apps") && !body["apps"].is_null();
    if (role != store::Role::kExecutor) {
        if (given) return BadRequest("apps", "apps: only executor tokens have an app scope");
        return std::nullopt;
    }
    if (!given) return BadRequest("apps", "apps: required for executor tokens: the app(s) the service runs as");
    const auto& list = body["apps"];
    if (!list.is_array() || list.empty() || list.size() > kMaxTokenApps) {
        return BadRequest("apps", "apps: expected an array of 1.." + std::to_string(kMaxTokenApps) + " app names");
    }
    for (const auto& app : list) {
        if (!app.is_string()) return BadRequest("apps", "apps: expected app names (strings)");
        const auto name = app.get<std::string>();
        if (auto problem = AppNameProblem(name)) return BadRequest("apps", "apps: " + *problem);
        if (std::find(apps.begin(), apps.end(), name) != apps.end()) {
            return BadRequest("apps", "apps: \"" + name + "\" is listed twice");
        }
        apps.push_back(name);
    }
    return std::nullopt;
}

}  // namespace

void AddTokenRoutes(Routes& routes) {
    auto ctx = routes.context();

    // Any token may ask who it is: the UI shows only what the caller's role can do.
    routes.Add(Method::kGet, "/api/v1/whoami", Permission::kAnyToken,
               [](Request&, const Principal& who) -> net::awaitable<Response> {
                   nlohmann::json out = {{"name", who.name},
                                         {"role", store::RoleName(who.role)},
                                         {"cluster_token", who.cluster_token},
                                         {"apps", nullptr}};
                   if (who.role == store::Role::kExecutor) out["apps"] = who.apps;
                   co_return Response::Json(out);
               });

    routes.Add(Method::kGet, "/api/v1/tokens", Permission::kAdmin,
               [ctx](Request&, const Principal&) -> net::awaitable<Response> {
                   auto work = [](db::Database& db) {
                       return store::TokenRepository(db).List();
                   };
                   auto tokens = co_await WithDb(*ctx, work);
                   if (!tokens.ok()) co_return Response::Error(tokens.status());
                   api::ItemList<api::TokenView> listed;
                   for (const auto& t : *tokens) listed.items.push_back(TokenViewOf(t));
                   co_return Response::Json(api::ToJson(listed));
               });

    routes.Add(Method::kPost, "/api/v1/tokens", Permission::kAdmin,
               [ctx](Request& req, const Principal& who) -> net::awaitable<Response> {
                   std::optional<Response> error;
                   auto body = ReadBodyFields(req, error, kTokenFields);
                   if (!body) co_return *error;
                   http::JsonFields f(*body);
                   const std::string name = f.String("name");
                   if (f.ok() && (!body->contains("role") || (*body)["role"].is_null())) f.Fail("role", "required");
                   const std::string role_name = f.Enum("role", "", {"admin", "operator", "viewer", "executor"});
                   if (f.error()) co_return Response::Error(*f.error());
                   if (CodePoints(name) > kMaxTokenName) {
                       co_return BadRequest("name", "name: at most " + std::to_string(kMaxTokenName) + " characters");
                   }
                   const auto role = *store::ParseRole(role_name);
                   std::vector<std::string> apps;
                   if (auto bad = ReadAppScope(*body, role, apps)) co_return *bad;
                   // 256 random bits: a hash lookup without salt or stretching is then enough.
                   const std::string secret = "sched_" + NewSecret(32);
                   const std::string hash = Sha256Hex(secret);
                   auto work = [&](db::Database& db) {
                       auto created = store::TokenRepository(db).Create(name, role, hash, apps, who.name);
                       // TokenJson holds neither the secret nor its hash.
                       if (created.ok()) {
                           RecordAudit(db, who,
                                       {"create", "token", std::to_string(created->id), created->name, std::nullopt,
                                        TokenJson(*created)});
                       }
                       return created;
                   };
                   auto created = co_await WithDb(*ctx, work);
                   if (!created.ok()) co_return Response::Error(created.status());
                   spdlog::info("web: token {} \"{}\" ({}{}) created by {}", created->id, created->name, role_name,
                                apps.empty() ? "" : " for " + nlohmann::json(apps).dump(), who.name);
                   api::NewTokenView out{TokenViewOf(*created)};
                   out.token = secret;
                   Response response = Response::Json(api::ToJson(out), 201);
                   response.headers.Set("Location", "/api/v1/tokens/" + std::to_string(created->id));
                   co_return response;
               });

    routes.Add(Method::kDelete, "/api/v1/tokens/{id}", Permission::kAdmin,
               [ctx](Request& req, const Principal& who) -> net::awaitable<Response> {
                   std::optional<Response> error;
                   const auto id = PathId(req, error);
                   if (!id) co_return *error;
                   auto work = [&who, id = *id](db::Database& db) -> Status {
                       store::TokenRepository tokens(db);
                       // The token's view before and after, for the entry (tokens are few: a list is cheap).
                       const auto find = [&]() -> std::optional<nlohmann::json> {
                           auto all = tokens.List();
                           if (!all.ok()) return std::nullopt;
                           for (const auto& t : *all) {
                               if (t.id == id) return TokenJson(t);
                           }
                           return std::nullopt;
                       };
                       const auto before = find();
                       Status revoked = tokens.Revoke(id);
                       if (revoked.ok()) {
                           const std::string name = before ? before->value("name", "") : "";
                           RecordAudit(db, who, {"revoke", "token", std::to_string(id), name, before, find()});
                       }
                       return revoked;
                   };
                   Status revoked = co_await WithDb(*ctx, work);
                   if (!revoked.ok()) co_return Response::Error(revoked, "id");
                   ctx->auth.Forget(*id);
                   spdlog::info("web: token {} revoked by {}", *id, who.name);
                   co_return Response::NoContent();
               });
}

}  // namespace sched::web::impl
