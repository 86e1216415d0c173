#pragma once

// The handlers every stored resource of the API has (jobs, calendars, workflows, backfills, ...):
// list a page, get one by id, create, update with the version read, delete. Each route says only
// what differs: how a body is read, what the repository call is, how its error is answered, and
// what is logged; the order of the checks (path id, body, unknown fields, the body's values, the
// database) and the answers are the same for all of them.

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "impl/audit.hpp"
#include "impl/context.hpp"
#include "impl/list_query.hpp"

namespace sched::web::impl {

/// How a route answers a failed repository call (the field a 4xx names differs per resource).
using ErrorAnswer = std::function<http::Response(const Status&)>;

/// Answers `Response::Error(s, RepositoryErrorField(s))`: name, version or id.
inline http::Response RepositoryError(const Status& s) {
    return http::Response::Error(s, RepositoryErrorField(s));
}

/// What a body of a resource may carry: `fields` are read, `read_only` (the answer's own fields,
/// which a client may echo back) are refused by name; anything else is an unknown field.
struct BodyFields {
    std::span<const std::string_view> fields;
    std::span<const std::string_view> read_only = {};
};

/// GET of a list: the query read by ReadPageRequest (no filters), then `page(db, request)` on the
/// DB pool answers the page (CursorPage). For a list under a parent (`/jobs/{id}/backfills`),
/// `page(db, id, request)`, the path id read first.
template <typename Page>
ApiHandler PageHandler(std::shared_ptr<Context> ctx, Page page) {
    return [ctx = std::move(ctx), page = std::move(page)](http::Request& req,
                                                          const Principal&) -> net::awaitable<http::Response> {
        std::optional<http::Response> error;
        const auto request = ReadPageRequest(req, {}, error);
        if (!request) co_return *error;
        auto work = [&page, request = *request](db::Database& db) -> Result<nlohmann::json> {
            return page(db, request);
        };
        auto listed = co_await WithDb(*ctx, work);
        if (!listed.ok()) co_return http::Response::Error(listed.status());
        co_return http::Response::Json(*listed);
    };
}

template <typename Page>
ApiHandler ChildPageHandler(std::shared_ptr<Context> ctx, Page page) {
    return [ctx = std::move(ctx), page = std::move(page)](http::Request& req,
                                                          const Principal&) -> net::awaitable<http::Response> {
        std::optional<http::Response> error;
        const auto id = PathId(req, error);
        if (!id) co_return *error;
        const auto request = ReadPageRequest(req, {}, error);
        if (!request) co_return *error;
        auto work = [&page, id = *id, request = *request](db::Database& db) -> Result<nlohmann::json> {
            return page(db, id, request);
        };
        auto listed = co_await WithDb(*ctx, work);
        if (!listed.ok()) co_return http::Response::Error(listed.status());
        co_return http::Response::Json(*listed);
    };
}

/// The integer query parameter of a view of one resource (`/jobs/{id}/next?count=`): in [min,
/// max] (QueryInt), `fallback` when absent.
struct IntQuery {
    std::string_view name;
    std::int64_t min = 1;
    std::int64_t max = 1;
    std::int64_t fallback = 1;
};

/// GET <collection>/{id}, or a view of it with `query` (`/jobs/{id}/next?count=`): the path id,
/// then the query read; `find(db, id, value)` on the DB pool answers the JSON (value 0 without
/// a query); its error goes through `error`.
template <typename Find>
ApiHandler GetHandler(std::shared_ptr<Context> ctx, std::optional<IntQuery> query, ErrorAnswer error_answer,
                      Find find) {
    return [ctx = std::move(ctx), query, error_answer = std::move(error_answer), find = std::move(find)](
               http::Request& req, const Principal&) -> net::awaitable<http::Response> {
        std::optional<http::Response> error;
        const auto id = PathId(req, error);
        if (!id) co_return *error;
        std::int64_t value = 0;
        if (query) {
            value = QueryInt(req, query->name, query->min, query->max, error).value_or(query->fallback);
            if (error) co_return *error;
        }
        auto work = [&find, id = *id, value](db::Database& db) -> Result<nlohmann::json> {
            return find(db, id, value);
        };
        auto found = co_await WithDb(*ctx, work);
        if (!found.ok()) co_return error_answer(found.status());
        co_return http::Response::Json(*found);
    };
}

/// GET <collection>/{id}: `find(db, id)` on the DB pool answers the resource's JSON; its error
/// goes through `error`.
template <typename Find>
ApiHandler GetHandler(std::shared_ptr<Context> ctx, ErrorAnswer error_answer, Find find) {
    return GetHandler(
        std::move(ctx), std::nullopt, std::move(error_answer),
        [find = std::move(find)](db::Database& db, std::int64_t id, std::int64_t) { return find(db, id); });
}

/// What the routes of one stored resource with a name and a version share (calendars,
/// workflows, jobs): where it is, the kind its audit entries and log lines name, the fields of
/// its body and how they are read, how one is found by id, its JSON, and how a failed repository
/// call is answered.
template <typename Input, typename Row>
struct Resource {
    std::string collection;  ///< "/api/v1/calendars"
    std::string kind;        ///< "calendar": the target kind of its audit entries, the noun of its log lines
    BodyFields fields;
    /// Reads a body into `input`: for a create (`current` null) or over the row stored (an
    /// update); the 400 to answer, if any.
    std::function<std::optional<http::ApiError>(const nlohmann::json& body, const Row* current, Input& input)> read;
    std::function<Result<Row>(db::Database& db, std::int64_t id)> find;
    std::function<nlohmann::json(const Row& row)> view;
    ErrorAnswer error = RepositoryError;
};

/// GET <collection>/{id}: the resource's `find`, answered with its `view`.
template <typename Input, typename Row>
ApiHandler GetHandler(std::shared_ptr<Context> ctx, const Resource<Input, Row>& resource) {
    return GetHandler(
        ctx, resource.error,
        [find = resource.find, view = resource.view](db::Database& db, std::int64_t id) -> Result<nlohmann::json> {
            auto found = find(db, id);
            if (!found.ok()) return found.status();
            return view(*found);
        });
}

/// GET <collection>: a page of `Repository(db).List(cursor, limit)` (PageHandler), each row in
/// the resource's view.
template <typename Repository, typename Input, typename Row>
ApiHandler ListHandler(std::shared_ptr<Context> ctx, const Resource<Input, Row>& resource) {
    return PageHandler(std::move(ctx), [view = resource.view](db::Database& db, const PageRequest& page) {
        return CursorPage(Repository(db).List(page.cursor, page.limit + 1), page.limit, view);
    });
}

/// How a create (POST <collection>) or an update (PUT <collection>/{id}) of a resource stores
/// the input read: `store(db, current, input, who)` on the DB pool, `current` null on a create
/// and the row as read on an update (which stores with the version the body carries); then
/// `log` (unset: the resource's standard line) and, when `wakes_masters`, WakeMasters.
template <typename Input, typename Row>
struct StoreRoute {
    std::function<Result<Row>(db::Database& db, const Row* current, Input& input, const Principal& who)> store;
    std::function<void(const Row& row, const Principal& who)> log = {};
    /// The row gives a master work (a new job or workflow, a changed schedule): wake the masters
    /// once stored.
    bool wakes_masters = false;
};

/// POST <collection>: the body (a 400 naming `body` when it is not JSON), its fields, the
/// resource's `read` (its 400), then `store` (its error through the resource's `error`) with
/// the "create" audit entry; 201 with the row's view and `Location: <collection>/<id>`. The
/// standard log line: "web: <kind> <id> "<name>" created by <who>".
template <typename Input, typename Row>
ApiHandler CreateHandler(std::shared_ptr<Context> ctx, const Resource<Input, Row>& resource,
                         StoreRoute<Input, Row> route) {
    return [ctx = std::move(ctx), resource = std::make_shared<const Resource<Input, Row>>(resource),
            route = std::make_shared<const StoreRoute<Input, Row>>(std::move(route))](
               http::Request& req, const Principal& who) -> net::awaitable<http::Response> {
        std::optional<http::Response> error;
        auto body = ReadBodyFields(req, error, resource->fields.fields, resource->fields.read_only);
        if (!body) co_return *error;
        Input input{};
        if (auto invalid = resource->read(*body, nullptr, input)) co_return http::Response::Error(*invalid);
        auto work = [&resource, &route, &input, &who](db::Database& db) -> Result<Row> {
            auto created = route->store(db, nullptr, input, who);
            if (created.ok()) {
                RecordAudit(db, who,
                            {"create", resource->kind, std::to_string(created->id), created->name, std::nullopt,
                             resource->view(*created)});
            }
            return created;
        };
        auto created = co_await WithDb(*ctx, work);
        if (!created.ok()) co_return resource->error(created.status());
        if (route->wakes_masters) WakeMasters(*ctx);
        if (route->log) {
            route->log(*created, who);
        } else {
            spdlog::info("web: {} {} \"{}\" created by {}", resource->kind, created->id, created->name, who.name);
        }
        http::Response response = http::Response::Json(resource->view(*created), 201);
        response.headers.Set("Location", resource->collection + "/" + std::to_string(created->id));
        co_return response;
    };
}

/// PUT <collection>/{id}: the path id, the body and its fields as for create, then on the DB
/// pool the row stored (the resource's `find`), the body read over it (the resource's `read`:
/// its 400 is answered as is, before any error of the call) and `store`, with the "update"
/// audit entry; 200 with the row's view. The standard log line: "web: <kind> <id> updated to
/// version <version> by <who>".
template <typename Input, typename Row>
ApiHandler UpdateHandler(std::shared_ptr<Context> ctx, const Resource<Input, Row>& resource,
                         StoreRoute<Input, Row> route) {
    return [ctx = std::move(ctx), resource = std::make_shared<const Resource<Input, Row>>(resource),
            route = std::make_shared<const StoreRoute<Input, Row>>(std::move(route))](
               http::Request& req, const Principal& who) -> net::awaitable<http::Response> {
        std::optional<http::Response> error;
        const auto id = PathId(req, error);
        if (!id) co_return *error;
        auto body = ReadBodyFields(req, error, resource->fields.fields, resource->fields.read_only);
        if (!body) co_return *error;
        std::optional<http::ApiError> invalid;
        auto work = [&resource, &route, &invalid, &body, &who, id = *id](db::Database& db) -> Result<Row> {
            auto current = resource->find(db, id);
            if (!current.ok()) return current.status();
            Input input{};
            invalid = resource->read(*body, &*current, input);
            if (invalid) return InvalidArgument(invalid->message);
            auto updated = route->store(db, &*current, input, who);
            if (updated.ok()) {
                RecordAudit(db, who,
                            {"update", resource->kind, std::to_string(id), updated->name, resource->view(*current),
                             resource->view(*updated)});
            }
            return updated;
        };
        auto updated = co_await WithDb(*ctx, work);
        if (invalid) co_return http::Response::Error(*invalid);
        if (!updated.ok()) co_return resource->error(updated.status());
        if (route->wakes_masters) WakeMasters(*ctx);
        if (route->log) {
            route->log(*updated, who);
        } else {
            spdlog::info("web: {} {} updated to version {} by {}", resource->kind, updated->id, updated->version,
                         who.name);
        }
        co_return http::Response::Json(resource->view(*updated));
    };
}

/// DELETE <collection>/{id}: `remove(db, id, who)` on the DB pool (its error through `error`);
/// 204 after `log(id, who)`.
struct DeleteRoute {
    std::function<Status(db::Database& db, std::int64_t id, const Principal& who)> remove;
    ErrorAnswer error;
    std::function<void(std::int64_t id, const Principal& who)> log;
};

inline ApiHandler DeleteHandler(std::shared_ptr<Context> ctx, DeleteRoute route) {
    return [ctx = std::move(ctx), route = std::make_shared<const DeleteRoute>(std::move(route))](
               http::Request& req, const Principal& who) -> net::awaitable<http::Response> {
        std::optional<http::Response> error;
        const auto id = PathId(req, error);
        if (!id) co_return *error;
        auto work = [&route, &who, id = *id](db::Database& db) -> Status {
            return route->remove(db, id, who);
        };
        Status deleted = co_await WithDb(*ctx, work);
        if (!deleted.ok()) co_return route->error(deleted);
        route->log(*id, who);
        co_return http::Response::NoContent();
    };
}

/// DELETE <collection>/{id} of a resource: the row as it was (the resource's `find`; its error
/// answered when it cannot be read), `remove(db, id)`, and the "delete" audit entry with the
/// row's view; 204 after "web: <kind> <id> deleted by <who>". `error` answers the failures
/// (unset: the resource's).
template <typename Input, typename Row>
ApiHandler DeleteHandler(std::shared_ptr<Context> ctx, const Resource<Input, Row>& resource,
                         std::function<Status(db::Database& db, std::int64_t id)> remove, ErrorAnswer error = {}) {
    const auto kind = resource.kind;
    return DeleteHandler(
        std::move(ctx),
        {.remove = [kind, find = resource.find, view = resource.view, remove = std::move(remove)](
                       db::Database& db, std::int64_t id, const Principal& who) -> Status {
             auto before = find(db, id);
             if (!before.ok()) return before.status();
             Status deleted = remove(db, id);
             if (deleted.ok()) {
                 RecordAudit(db, who, {"delete", kind, std::to_string(id), before->name, view(*before), std::nullopt});
             }
             return deleted;
         },
         .error = error ? std::move(error) : resource.error,
         .log =
             [kind](std::int64_t id, const Principal& who) {
                 spdlog::info("web: {} {} deleted by {}", kind, id, who.name);
             }});
}

}  // namespace sched::web::impl
