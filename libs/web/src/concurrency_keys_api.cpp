// Concurrency keys (/api/v1/concurrency-keys...): limits shared by the jobs that name them.

#include <array>

#include <spdlog/spdlog.h>

#include "impl/audit.hpp"
#include "impl/context.hpp"
#include "impl/list_query.hpp"
#include "sched/api/concurrency_keys.hpp"
#include "sched/api/page.hpp"
#include "sched/http/json.hpp"
#include "sched/store/concurrency_key.hpp"

namespace sched::web::impl {

namespace {

using http::Method;
using http::Request;
using http::Response;

constexpr std::array<std::string_view, 3> kKeyFields = {"max_running", "rate_starts", "rate_window_ms"};
constexpr std::array<std::string_view, 3> kKeyReadOnly = {"name", "created_at", "updated_at"};
// Every key is read by the claims of its jobs' fires; the list is one page.
constexpr std::int64_t kMaxKeys = 1000;
constexpr std::int64_t kMaxRunning = 100'000;
constexpr std::int64_t kMaxRateStarts = 10'000;
constexpr std::int64_t kMinRateWindowMs = 1'000;
constexpr std::int64_t kMaxRateWindowMs = 24LL * 3600 * 1000;

api::ConcurrencyKeyView KeyView(const store::ConcurrencyKey& k) {
    return {.name = k.name,
            .max_running = k.max_running,
            .rate_starts = k.rate_starts,
            .rate_window_ms = k.rate_window_ms,
            .created_at = k.created_at,
            .updated_at = k.updated_at};
}

nlohmann::json KeyJson(const store::ConcurrencyKey& k) {
    return api::ToJson(KeyView(k));
}

std::optional<Response> BadName(const std::string& name) {
    if (!store::ValidConcurrencyKeyName(name)) {
        return BadRequest("name", "name: 1 to 64 letters, digits, '.', '_' or '-'");
    }
    return std::nullopt;
}

// A PUT body: max_running required, the rate limit both or neither.
std::optional<http::ApiError> ReadKey(const nlohmann::json& body, store::ConcurrencyKey& key) {
    http::JsonFields f(body);
    key.max_running = static_cast<int>(f.Int("max_running", {.min = 1, .max = kMaxRunning}));
    key.rate_starts = static_cast<int>(f.Int("rate_starts", 0, {.min = 0, .max = kMaxRateStarts}));
    key.rate_window_ms = f.Int("rate_window_ms", 0, {.min = 0, .max = kMaxRateWindowMs});
    if (f.error()) return *f.error();
    if ((key.rate_starts == 0) != (key.rate_window_ms == 0)) {
        return http::ApiError{Code::kInvalidArgument,
                              "rate_window_ms: a rate limit needs both rate_starts and rate_window_ms (or neither)",
                              key.rate_starts == 0 ? "rate_starts" : "rate_window_ms"};
    }
    if (key.rate_window_ms != 0 && key.rate_window_ms < kMinRateWindowMs) {
        return http::ApiError{Code::kInvalidArgument,
                              "rate_window_ms: at least " + std::to_string(kMinRateWindowMs) + " (or 0: no rate limit)",
                              "rate_window_ms"};
    }
    return std::nullopt;
}

}  // namespace

void AddConcurrencyKeyRoutes(Routes& routes) {
    auto ctx = routes.context();

    routes.Add(Method::kGet, "/api/v1/concurrency-keys", Permission::kViewer,
               [ctx](Request& req, const Principal&) -> net::awaitable<Response> {
                   if (auto bad = RejectUnknownQuery(req, {})) co_return *bad;
                   auto work = [](db::Database& db) {
                       return store::ConcurrencyKeyRepository(db).List("", kMaxKeys);
                   };
                   auto listed = co_await WithDb(*ctx, work);
                   if (!listed.ok()) co_return Response::Error(listed.status());
                   api::Page<api::ConcurrencyKeyView> page;  // every key: next_cursor stays null
                   for (const auto& key : *listed) page.items.push_back(KeyView(key));
                   co_return Response::Json(api::ToJson(page));
               });

    routes.Add(Method::kGet, "/api/v1/concurrency-keys/{name}", Permission::kViewer,
               [ctx](Request& req, const Principal&) -> net::awaitable<Response> {
                   const std::string name(req.PathParam("name"));
                   if (auto bad = BadName(name)) co_return *bad;
                   if (auto bad = RejectUnknownQuery(req, {})) co_return *bad;
                   auto work = [name](db::Database& db) {
                       return store::ConcurrencyKeyRepository(db).Get(name);
                   };
                   auto found = co_await WithDb(*ctx, work);
                   if (!found.ok()) co_return Response::Error(found.status(), "name");
                   co_return Response::Json(KeyJson(*found));
               });

    // Create or replace: a key has no version; the body is its whole definition.
    routes.Add(Method::kPut, "/api/v1/concurrency-keys/{name}", Permission::kOperator,
               [ctx](Request& req, const Principal& who) -> net::awaitable<Response> {
                   const std::string name(req.PathParam("name"));
                   if (auto bad = BadName(name)) co_return *bad;
                   if (auto bad = RejectUnknownQuery(req, {})) co_return *bad;
                   std::optional<Response> error;
                   auto body = ReadBodyFields(req, error, kKeyFields, kKeyReadOnly);
                   if (!body) co_return *error;
                   store::ConcurrencyKey key{.name = name};
                   if (auto invalid = ReadKey(*body, key)) co_return Response::Error(*invalid);
                   auto work = [key, &who](db::Database& db) -> Result<store::ConcurrencyKey> {
                       store::ConcurrencyKeyRepository keys(db);
                       auto before = keys.Get(key.name);
                       if (!before.ok() && before.status().code() != Code::kNotFound) return before.status();
                       if (!before.ok()) {
                           auto count = keys.Count();
                           if (!count.ok()) return count.status();
                           if (*count >= kMaxKeys) {
                               return Status(Code::kResourceExhausted,
                                             "at most " + std::to_string(kMaxKeys) + " concurrency keys");
                           }
                       }
                       auto put = keys.Put(key);
                       if (put.ok()) {
                           RecordAudit(db, who,
                                       {before.ok() ? "update" : "create", "concurrency-key", key.name, key.name,
                                        before.ok() ? std::optional(KeyJson(*before)) : std::nullopt, KeyJson(*put)});
                       }
                       return put;
                   };
                   auto put = co_await WithDb(*ctx, work);
                   if (!put.ok()) co_return Response::Error(put.status(), "name");
                   spdlog::info("web: concurrency key \"{}\" set to {} running, {} starts per {} ms by {}", name,
                                put->max_running, put->rate_starts, put->rate_window_ms, who.name);
                   co_return Response::Json(KeyJson(*put));
               });

    routes.Add(
        Method::kDelete, "/api/v1/concurrency-keys/{name}", Permission::kOperator,
        [ctx](Request& req, const Principal& who) -> net::awaitable<Response> {
            const std::string name(req.PathParam("name"));
            if (auto bad = BadName(name)) co_return *bad;
            if (auto bad = RejectUnknownQuery(req, {})) co_return *bad;
            if (auto bad = RejectAnyBody(req)) co_return *bad;
            auto work = [name, &who](db::Database& db) -> Status {
                store::ConcurrencyKeyRepository keys(db);
                auto before = keys.Get(name);
                Status deleted = keys.Delete(name);
                if (deleted.ok() && before.ok()) {
                    RecordAudit(db, who, {"delete", "concurrency-key", name, name, KeyJson(*before), std::nullopt});
                }
                return deleted;
            };
            Status deleted = co_await WithDb(*ctx, work);
            // A key still named by jobs: 409 naming `concurrency_key`.
            if (!deleted.ok()) {
                co_return Response::Error(deleted,
                                          deleted.code() == Code::kFailedPrecondition ? "concurrency_key" : "name");
            }
            spdlog::info("web: concurrency key \"{}\" deleted by {}", name, who.name);
            co_return Response::NoContent();
        });
}

}  // namespace sched::web::impl
