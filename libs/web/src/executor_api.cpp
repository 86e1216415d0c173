#include "sched/web/executor_api.hpp"

#include <optional>

#include <nlohmann/json.hpp>

#include "impl/context.hpp"
#include "impl/executor_handlers.hpp"
#include "impl/lock_handlers.hpp"
#include "impl/on_pool.hpp"
#include "impl/signing_keys.hpp"
#include "sched/http/json.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/registry.hpp"

namespace sched::web {

namespace impl {

namespace {

struct CallbackItem {
    std::int64_t fire_id = 0;
    int attempt = 0;
    store::FireStatus status = store::FireStatus::kSucceeded;
    std::string code;
    std::string message;
    std::int64_t started_ms = 0;
    std::int64_t finished_ms = 0;
};

int CodeNumber(const std::string& name) {
    for (int c = 0; c <= static_cast<int>(Code::kUnauthenticated); ++c) {
        if (CodeName(static_cast<Code>(c)) == name) return c;
    }
    return static_cast<int>(Code::kInternal);  // a code this build does not know
}

std::string Outcome(soci::session& s, const CallbackItem& item) {
    const auto fire = store::FireRepository::Find(s, item.fire_id);
    if (!fire) return "not_found";
    if (fire->attempt != item.attempt) return "conflict";
    if (fire->status == item.status) return "duplicate";
    store::FireUpdate update{.finished_at = item.finished_ms,
                             .result_code = CodeNumber(item.code),
                             .result_message = item.message,
                             .followup = true};
    if (item.started_ms > 0 && !fire->started_at) update.started_at = item.started_ms;
    // From dispatching too: a fast handler's result can arrive before the slave has recorded
    // the 202 that started it.
    const int moved = store::FireRepository::Transition(
        s, item.fire_id, {store::FireStatus::kDispatching, store::FireStatus::kRunning}, item.status, update);
    return moved == 1 ? "applied" : "conflict";
}

}  // namespace

net::awaitable<rest::Response> HandleHeartbeat(rest::Request& req, db::Database& db, net::thread_pool& db_pool) {
    auto body = req.Json();
    if (!body.ok()) co_return rest::Response::Error(body.status(), "body");
    rest::JsonFields f(*body);
    store::ExecutorInstance e;
    e.app = f.String("app");
    e.address = f.String("address");
    e.handlers = f.StringList("handlers");
    e.capacity = static_cast<int>(f.Int("capacity", 0, {.min = 0, .max = 1'000'000}));
    e.running = static_cast<int>(f.Int("running", 0, {.min = 0, .max = 1'000'000}));
    if (f.ok() && e.app.size() > 128) f.Fail("app", "at most 128 characters");
    if (f.ok() && e.address.size() > 255) f.Fail("address", "at most 255 characters");
    if (f.error()) co_return rest::Response::Error(*f.error());
    auto work = [&] {
        return store::ExecutorRepository(db).Heartbeat(e);
    };
    Status s = co_await OnPool(db_pool, work);
    if (!s.ok()) co_return rest::Response::Error(s);
    // The app's signing keys (its first is created here) and the DB clock: the SDK verifies
    // the nodes' calls with them (docs/protocol.md "Key delivery").
    auto keys_work = [&] {
        return store::SigningKeyRepository(db).EnsureForApp(e.app);
    };
    auto keys = co_await OnPool(db_pool, keys_work);
    if (!keys.ok()) co_return rest::Response::Error(keys.status());
    co_return rest::Response::Json({{"registered", true}, {"signing", SigningJson(*keys)}});
}

net::awaitable<rest::Response> HandleDeregister(rest::Request& req, db::Database& db, net::thread_pool& db_pool) {
    auto body = req.Json();
    if (!body.ok()) co_return rest::Response::Error(body.status(), "body");
    rest::JsonFields f(*body);
    const std::string app = f.String("app");
    const std::string address = f.String("address");
    if (f.error()) co_return rest::Response::Error(*f.error());
    auto work = [&] {
        return store::ExecutorRepository(db).Deregister(app, address);
    };
    Status s = co_await OnPool(db_pool, work);
    if (!s.ok()) co_return rest::Response::Error(s, s.code() == Code::kNotFound ? "address" : "");
    co_return rest::Response::Json({{"deregistered", true}});
}

net::awaitable<rest::Response> HandleCallback(rest::Request& req, db::Database& db, net::thread_pool& db_pool) {
    auto body = req.Json();
    if (!body.ok()) co_return rest::Response::Error(body.status(), "body");
    if (!body->is_array()) {
        co_return rest::Response::Error(InvalidArgument("body: expected an array of results"), "body");
    }
    if (body->size() > 1000) {
        co_return rest::Response::Error(InvalidArgument("body: at most 1000 results per call"), "body");
    }
    std::vector<CallbackItem> items;
    for (std::size_t i = 0; i < body->size(); ++i) {
        rest::JsonFields f((*body)[i], "[" + std::to_string(i) + "]");
        CallbackItem item;
        item.fire_id = f.Int("fire_id", {.min = 1});
        item.attempt = static_cast<int>(f.Int("attempt", {.min = 0, .max = 1'000'000}));
        const std::string status = f.Enum("status", "", {"succeeded", "failed", "timeout", "killed"});
        item.code = f.String("code", "");
        item.message = f.String("message", "");
        item.started_ms = f.Int("started_ms", 0, {.min = 0});
        item.finished_ms = f.Int("finished_ms", 0, {.min = 0});
        if (f.ok() && status.empty()) f.Fail("status", "required");
        if (f.error()) co_return rest::Response::Error(*f.error());
        item.status = *store::ParseFireStatus(status);
        if (item.message.size() > 65535) item.message.resize(65535);
        items.push_back(std::move(item));
    }
    auto work = [&] {
        return db.InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
            nlohmann::json results = nlohmann::json::array();
            for (const auto& item : items) {
                results.push_back({{"fire_id", item.fire_id}, {"outcome", Outcome(s, item)}});
            }
            return results;
        });
    };
    auto outcomes = co_await OnPool(db_pool, work);
    if (!outcomes.ok()) co_return rest::Response::Error(outcomes.status());
    co_return rest::Response::Json({{"results", *outcomes}});
}

void AddSdkRoutes(Routes& routes) {
    auto ctx = routes.context();
    using Fn = net::awaitable<rest::Response> (*)(rest::Request&, db::Database&, net::thread_pool&);
    const std::pair<const char*, Fn> sdk_routes[] = {{"/api/v1/registry/heartbeat", &HandleHeartbeat},
                                                     {"/api/v1/registry/deregister", &HandleDeregister},
                                                     {"/api/v1/callback", &HandleCallback}};
    for (const auto& [pattern, fn] : sdk_routes) {
        routes.Add(rest::Method::kPost, pattern, Permission::kExecutor,
                   [ctx, fn](rest::Request& req, const Principal&) -> net::awaitable<rest::Response> {
                       auto db = ctx->database();
                       if (!db) co_return rest::Response::Error(Unavailable("the database is not open yet"));
                       rest::Response response = co_await fn(req, *db, ctx->db_pool);
                       co_return response;
                   });
    }
    AddLockRoutes(routes);
}

void AddLockRoutes(Routes& routes) {
    auto ctx = routes.context();
    auto api = std::make_shared<LockApi>(ctx->options.locks, ctx->database, ctx->db_pool);
    using Fn = net::awaitable<rest::Response> (LockApi::*)(rest::Request&);
    const std::tuple<rest::Method, const char*, Permission, Fn> lock_routes[] = {
        {rest::Method::kPost, "/api/v1/locks/{key}/acquire", Permission::kLockHolder, &LockApi::Acquire},
        {rest::Method::kPost, "/api/v1/locks/{key}/extend", Permission::kLockHolder, &LockApi::Extend},
        {rest::Method::kPost, "/api/v1/locks/{key}/release", Permission::kLockHolder, &LockApi::Release},
        {rest::Method::kGet, "/api/v1/locks/{key}", Permission::kLockViewer, &LockApi::Inspect}};
    for (const auto& [method, pattern, permission, fn] : lock_routes) {
        routes.Add(method, pattern, permission,
                   [api, fn](rest::Request& req, const Principal&) -> net::awaitable<rest::Response> {
                       rest::Response response = co_await (api.get()->*fn)(req);
                       co_return response;
                   });
    }
}

}  // namespace impl

void AddExecutorRoutes(rest::Router& router, std::shared_ptr<db::Database> db, net::thread_pool& db_pool,
                       LockApiOptions locks) {
    router.Add(rest::Method::kPost, "/api/v1/registry/heartbeat",
               [db, &db_pool](rest::Request& req) { return impl::HandleHeartbeat(req, *db, db_pool); });
    router.Add(rest::Method::kPost, "/api/v1/registry/deregister",
               [db, &db_pool](rest::Request& req) { return impl::HandleDeregister(req, *db, db_pool); });
    router.Add(rest::Method::kPost, "/api/v1/callback",
               [db, &db_pool](rest::Request& req) { return impl::HandleCallback(req, *db, db_pool); });
    auto api = std::make_shared<impl::LockApi>(
        std::move(locks), [db] { return db; }, db_pool);
    router.Add(rest::Method::kPost, "/api/v1/locks/{key}/acquire",
               [api](rest::Request& req) { return api->Acquire(req); });
    router.Add(rest::Method::kPost, "/api/v1/locks/{key}/extend",
               [api](rest::Request& req) { return api->Extend(req); });
    router.Add(rest::Method::kPost, "/api/v1/locks/{key}/release",
               [api](rest::Request& req) { return api->Release(req); });
    router.Add(rest::Method::kGet, "/api/v1/locks/{key}", [api](rest::Request& req) { return api->Inspect(req); });
}

}  // namespace sched::web
