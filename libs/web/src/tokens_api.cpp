// API tokens: /api/v1/tokens (admin only). The secret is returned once, at creation; only its
// SHA-256 is stored.

#include <array>

#include <spdlog/spdlog.h>

#include "impl/context.hpp"
#include "impl/views.hpp"
#include "sched/http/json.hpp"
#include "sched/store/token.hpp"
#include "sched/web/sha256.hpp"

namespace sched::web::impl {

namespace {

using rest::Method;
using rest::Request;
using rest::Response;

constexpr std::array<std::string_view, 2> kTokenFields = {"name", "role"};
constexpr std::size_t kMaxTokenName = 128;

}  // namespace

void AddTokenRoutes(Routes& routes) {
    auto ctx = routes.context();

    routes.Add(Method::kGet, "/api/v1/tokens", Permission::kAdmin,
               [ctx](Request&, const Principal&) -> net::awaitable<Response> {
                   auto work = [](db::Database& db) {
                       return store::TokenRepository(db).List();
                   };
                   auto tokens = co_await WithDb(*ctx, work);
                   if (!tokens.ok()) co_return Response::Error(tokens.status());
                   nlohmann::json items = nlohmann::json::array();
                   for (const auto& t : *tokens) items.push_back(TokenJson(t));
                   co_return Response::Json({{"items", std::move(items)}});
               });

    routes.Add(Method::kPost, "/api/v1/tokens", Permission::kAdmin,
               [ctx](Request& req, const Principal& who) -> net::awaitable<Response> {
                   auto body = req.Json();
                   if (!body.ok()) co_return Response::Error(body.status(), "body");
                   if (auto unknown = RejectUnknownFields(*body, kTokenFields)) co_return *unknown;
                   rest::JsonFields f(*body);
                   const std::string name = f.String("name");
                   if (f.ok() && (!body->contains("role") || (*body)["role"].is_null())) f.Fail("role", "required");
                   const std::string role_name = f.Enum("role", "", {"admin", "operator", "viewer", "executor"});
                   if (f.error()) co_return Response::Error(*f.error());
                   if (CodePoints(name) > kMaxTokenName) {
                       co_return BadRequest("name", "name: at most " + std::to_string(kMaxTokenName) + " characters");
                   }
                   const auto role = *store::ParseRole(role_name);
                   // 256 random bits: a hash lookup without salt or stretching is then enough.
                   const std::string secret = "sched_" + NewSecret(32);
                   const std::string hash = Sha256Hex(secret);
                   auto work = [&](db::Database& db) {
                       return store::TokenRepository(db).Create(name, role, hash);
                   };
                   auto created = co_await WithDb(*ctx, work);
                   if (!created.ok()) co_return Response::Error(created.status());
                   spdlog::info("web: token {} \"{}\" ({}) created by {}", created->id, created->name, role_name,
                                who.name);
                   nlohmann::json out = TokenJson(*created);
                   out["token"] = secret;
                   co_return Response::Json(out, 201);
               });

    routes.Add(Method::kDelete, "/api/v1/tokens/{id}", Permission::kAdmin,
               [ctx](Request& req, const Principal& who) -> net::awaitable<Response> {
                   std::optional<Response> error;
                   const auto id = PathId(req, error);
                   if (!id) co_return *error;
                   auto work = [id = *id](db::Database& db) {
                       return store::TokenRepository(db).Revoke(id);
                   };
                   Status revoked = co_await WithDb(*ctx, work);
                   if (!revoked.ok()) co_return Response::Error(revoked, "id");
                   ctx->auth.Forget(*id);
                   spdlog::info("web: token {} revoked by {}", *id, who.name);
                   co_return Response::NoContent();
               });
}

}  // namespace sched::web::impl
