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

#include <nlohmann/json.hpp>

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

/// GET <collection>/{id}: `find(db, id)` on the DB pool answers the resource's JSON; its error
/// goes through `error`.
template <typename Find>
ApiHandler GetHandler(std::shared_ptr<Context> ctx, ErrorAnswer error_answer, Find find) {
    return [ctx = std::move(ctx), error_answer = std::move(error_answer), find = std::move(find)](
               http::Request& req, const Principal&) -> net::awaitable<http::Response> {
        std::optional<http::Response> error;
        const auto id = PathId(req, error);
        if (!id) co_return *error;
        auto work = [&find, id = *id](db::Database& db) -> Result<nlohmann::json> {
            return find(db, id);
        };
        auto found = co_await WithDb(*ctx, work);
        if (!found.ok()) co_return error_answer(found.status());
        co_return http::Response::Json(*found);
    };
}

/// POST <collection>: the body (a 400 naming `body` when it is not JSON), its fields (`fields`),
/// `read(body, input)` (its 400), then `create(db, input, who)` on the DB pool (its error through
/// `error`); 201 with `view(row)` and `Location: <collection>/<id>`, after `log(row, who)` (and
/// WakeMasters when `wakes_masters`).
template <typename Input, typename Row>
struct CreateRoute {
    std::string collection;  ///< "/api/v1/calendars"
    BodyFields fields;
    std::function<std::optional<http::ApiError>(const nlohmann::json& body, Input& input)> read;
    std::function<Result<Row>(db::Database& db, Input& input, const Principal& who)> create;
    ErrorAnswer error;
    std::function<nlohmann::json(const Row& row)> view;
    std::function<void(const Row& row, const Principal& who)> log;
    /// The row gives a master work (a job, a workflow, a backfill): wake the masters once stored.
    bool wakes_masters = false;
};

template <typename Input, typename Row>
ApiHandler CreateHandler(std::shared_ptr<Context> ctx, CreateRoute<Input, Row> route) {
    return [ctx = std::move(ctx), route = std::make_shared<const CreateRoute<Input, Row>>(std::move(route))](
               http::Request& req, const Principal& who) -> net::awaitable<http::Response> {
        auto body = req.Json();
        if (!body.ok()) co_return http::Response::Error(body.status(), "body");
        if (auto unknown = RejectUnknownFields(*body, route->fields.fields, route->fields.read_only)) {
            co_return *unknown;
        }
        Input input{};
        if (auto invalid = route->read(*body, input)) co_return http::Response::Error(*invalid);
        auto work = [&route, &input, &who](db::Database& db) -> Result<Row> {
            return route->create(db, input, who);
        };
        auto created = co_await WithDb(*ctx, work);
        if (!created.ok()) co_return route->error(created.status());
        if (route->wakes_masters) WakeMasters(*ctx);
        route->log(*created, who);
        http::Response response = http::Response::Json(route->view(*created), 201);
        response.headers.Set("Location", route->collection + "/" + std::to_string(created->id));
        co_return response;
    };
}

/// PUT <collection>/{id}: the path id, the body and its fields as for create, then `update(db, id,
/// body, who, invalid)` on the DB pool, which reads the current row, validates the body against
/// it (setting `invalid`: answered as is, before any error of the call) and stores it with the
/// version the body carries; 200 with `view(row)` after `log(row, who)` (and WakeMasters when
/// `wakes_masters`).
template <typename Row>
struct UpdateRoute {
    BodyFields fields;
    std::function<Result<Row>(db::Database& db, std::int64_t id, const nlohmann::json& body, const Principal& who,
                              std::optional<http::ApiError>& invalid)>
        update;
    ErrorAnswer error;
    std::function<nlohmann::json(const Row& row)> view;
    std::function<void(const Row& row, const Principal& who)> log;
    /// The row gives a master work (its schedule may have changed): wake the masters once stored.
    bool wakes_masters = false;
};

template <typename Row>
ApiHandler UpdateHandler(std::shared_ptr<Context> ctx, UpdateRoute<Row> route) {
    return [ctx = std::move(ctx), route = std::make_shared<const UpdateRoute<Row>>(std::move(route))](
               http::Request& req, const Principal& who) -> net::awaitable<http::Response> {
        std::optional<http::Response> error;
        const auto id = PathId(req, error);
        if (!id) co_return *error;
        auto body = req.Json();
        if (!body.ok()) co_return http::Response::Error(body.status(), "body");
        if (auto unknown = RejectUnknownFields(*body, route->fields.fields, route->fields.read_only)) {
            co_return *unknown;
        }
        std::optional<http::ApiError> invalid;
        auto work = [&route, &invalid, &body, &who, id = *id](db::Database& db) -> Result<Row> {
            return route->update(db, id, *body, who, invalid);
        };
        auto updated = co_await WithDb(*ctx, work);
        if (invalid) co_return http::Response::Error(*invalid);
        if (!updated.ok()) co_return route->error(updated.status());
        if (route->wakes_masters) WakeMasters(*ctx);
        route->log(*updated, who);
        co_return http::Response::Json(route->view(*updated));
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

}  // namespace sched::web::impl
