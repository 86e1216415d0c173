// Fires: /api/v1/fires..., including kill and the log relayed from the executor that ran it.

#include <algorithm>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "impl/audit.hpp"
#include "impl/context.hpp"
#include "impl/list_query.hpp"
#include "impl/views.hpp"
#include "sched/dispatch/executor_client.hpp"
#include "sched/http/client.hpp"
#include "sched/protocol/log_page.hpp"
#include "sched/protocol/run.hpp"
#include "sched/protocol/run_answer.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/fire_log.hpp"
#include "sched/store/job.hpp"

namespace sched::web::impl {

namespace {

using http::Method;
using http::Request;
using http::Response;

http::CallOptions ExecutorCall(const Context& ctx) {
    http::CallOptions call;
    call.timeout = ctx.options.executor_timeout;
    return call;
}

// The app whose signing key a call about this fire's job is signed with ("" when the job is
// gone: the call then fails as unsigned, which a deleted job's executor may well do).
net::awaitable<std::string> JobApp(Context& ctx, std::int64_t job_id) {
    auto work = [job_id](db::Database& db) {
        return store::JobRepository(db).Get(job_id);
    };
    auto job = co_await WithDb(ctx, work);
    co_return job.ok() ? job->app : std::string();
}

// The relay's view of a log page: the executor's page plus where it came from.
api::FireLogView LogView(const protocol::LogPage& page, const model::Fire& fire, std::string_view source) {
    return {.fire_id = page.fire_id,
            .from_line = page.from_line,
            .to_line = page.to_line,
            .lines = page.lines,
            .finished = page.finished,
            .fire_status = std::string(model::FireStatusName(fire.status)),
            .source = std::string(source),
            .executor_address = fire.executor_address};
}

// The stored log in the live log's shape, a page of at most kMaxLogPageLines lines from
// `from_line` on.
api::FireLogView StoredLogPage(const store::StoredFireLog& stored, const model::Fire& fire, std::int64_t from_line) {
    std::vector<std::string> all;
    for (std::size_t at = 0; at <= stored.log.size();) {
        const auto end = std::min(stored.log.find('\n', at), stored.log.size());
        all.emplace_back(stored.log, at, end - at);
        at = end + 1;
    }
    if (stored.log.empty()) all.clear();
    const auto size = static_cast<std::int64_t>(all.size());
    const auto from = std::clamp<std::int64_t>(from_line, 0, size);
    const auto to = std::min<std::int64_t>(size, from + static_cast<std::int64_t>(protocol::kMaxLogPageLines));
    const protocol::LogPage page{.fire_id = stored.fire_id,
                                 .from_line = from,
                                 .to_line = to,
                                 .lines = std::vector<std::string>(all.begin() + from, all.begin() + to),
                                 .finished = to == size};
    api::FireLogView log = LogView(page, fire, "stored");
    log.truncated_bytes = stored.truncated_bytes;
    log.stored_at_ms = stored.stored_at_ms;
    return log;
}

}  // namespace

void AddFireRoutes(Routes& routes) {
    auto ctx = routes.context();
    // Kill and log calls to executors go through the same signed client as the slave's runs
    // (dispatch::ExecutorClient, signed with the app's key: docs/protocol.md).
    auto signer = std::make_shared<dispatch::ExecutorSigner>(ctx->database, ctx->db_pool);

    routes.Add(
        Method::kGet, "/api/v1/fires", Permission::kViewer,
        {{"limit", "cursor", "job_id", "status", "reason", "from", "to"}},
        [ctx](Request& req, const Principal&) -> net::awaitable<Response> {
            std::optional<Response> error;
            const auto paging = ReadPageRequest(req, {"job_id", "status", "reason", "from", "to"}, error);
            if (!paging) co_return *error;
            store::FireFilter filter;
            filter.job_id = QueryInt(req, "job_id", 1, kMaxId, error);
            filter.scheduled_from = QueryInt(req, "from", 0, kMaxId, error);
            filter.scheduled_to = QueryInt(req, "to", 0, kMaxId, error);
            filter.before_id = paging->cursor;
            const int page = paging->limit;
            if (error) co_return *error;
            if (auto status = req.Query("status"); status && !status->empty()) {
                filter.status = model::ParseFireStatus(*status);
                if (!filter.status) {
                    co_return BadRequest("status", "status: expected one of " + model::kFireStatusNames.Expected(", ") +
                                                       ", got \"" + *status + "\"");
                }
            }
            if (auto reason = req.Query("reason"); reason && !reason->empty()) {
                filter.reason = model::ParseFireReason(*reason);
                if (!filter.reason) {
                    co_return BadRequest("reason", "reason: expected one of " + model::kFireReasonNames.Expected(", ") +
                                                       ", got \"" + *reason + "\"");
                }
            }
            filter.limit = page + 1;
            auto work = [filter, page](db::Database& db) -> Result<nlohmann::json> {
                return CursorPage(store::FireRepository(db).List(filter), page,
                                  [&](const auto& f) { return FireJson(f); });
            };
            filter.limit = page + 1;  // one more tells whether there is a next page
            auto listed = co_await WithDb(*ctx, work);
            if (!listed.ok()) co_return Response::Error(listed.status());
            co_return Response::Json(*listed);
        });

    routes.Add(Method::kGet, "/api/v1/fires/{id}", Permission::kViewer,
               [ctx](Request& req, const Principal&) -> net::awaitable<Response> {
                   std::optional<Response> error;
                   const auto id = PathId(req, error);
                   if (!id) co_return *error;
                   auto work = [id = *id](db::Database& db) {
                       return store::FireRepository(db).Get(id);
                   };
                   auto fire = co_await WithDb(*ctx, work);
                   if (!fire.ok()) co_return Response::Error(fire.status(), "id");
                   co_return Response::Json(FireJson(*fire));
               });

    routes.Add(
        Method::kPost, "/api/v1/fires/{id}/kill", Permission::kOperator,
        ActionHandler([ctx, signer](Request&, std::int64_t id, const Principal& who) -> net::awaitable<Response> {
            const std::string message = "killed through the API by " + who.name;
            // The CAS comes first: it decides, once, whether this kill wins over the fire's own
            // end. The executor's later "killed" callback is then a duplicate; a result it had
            // already sent is a conflict and changes nothing.
            auto work = [id, &message, &who](db::Database& db) -> Result<model::Fire> {
                store::FireRepository fires(db);
                auto before = fires.Get(id);
                if (!before.ok()) return before.status();
                auto now = DbNowMs(db);
                if (!now.ok()) return now.status();
                Status moved = fires.Transition(id, {model::FireStatus::kRunning}, model::FireStatus::kKilled,
                                                {.finished_at = *now,
                                                 .result_code = static_cast<int>(Code::kCancelled),
                                                 .result_message = message,
                                                 .followup = true});
                if (!moved.ok()) {
                    if (moved.code() == Code::kAborted) {
                        return FailedPrecondition(moved.message() + " (only running fires can be killed)");
                    }
                    return moved;
                }
                auto after = fires.Get(id);
                if (after.ok()) {
                    RecordAudit(db, who,
                                {"kill", "fire", std::to_string(id), "job " + std::to_string(after->job_id),
                                 FireJson(*before), FireJson(*after)});
                }
                return after;
            };
            auto killed = co_await WithDb(*ctx, work);
            if (!killed.ok()) co_return Response::Error(killed.status(), "id");
            // The kill raised the fire's follow-up (a workflow step's end, a fixed-delay job's
            // next time, the fires held behind it).
            WakeMasters(*ctx);
            spdlog::info("web: fire {} killed by {}", id, who.name);
            nlohmann::json executor = {{"address", nullptr}, {"delivered", false}, {"status", nullptr}};
            if (killed->executor_address) {
                executor["address"] = *killed->executor_address;
                const auto executor_io = co_await net::this_coro::executor;
                http::HttpClient client(executor_io, http::ClientOptions{.tls = ctx->options.http_client_tls});
                dispatch::SignedExecutorClient executors(client, signer);
                const std::string url = client.PeerUrl(*killed->executor_address, protocol::kKillPath);
                const std::string body = protocol::ToJson(protocol::KillRequest{.fire_id = id}).dump();
                const http::CallOptions call = ExecutorCall(*ctx);
                const std::string app = co_await JobApp(*ctx, killed->job_id);
                auto answer = co_await executors.Send(app, Method::kPost, url, body, call);
                if (answer.ok()) {
                    executor["status"] = answer->status;
                    executor["delivered"] = answer->ok();
                    if (auto j = answer->Json(); j.ok() && j->is_object()) executor["answer"] = *j;
                } else {
                    executor["error"] = answer.status().ToString();
                    spdlog::warn("web: kill of fire {} not delivered to {}: {}", id, url, answer.status().ToString());
                }
            }
            co_return Response::Json({{"fire", FireJson(*killed)}, {"executor", std::move(executor)}}, 202);
        }));

    routes.Add(
        Method::kGet, "/api/v1/fires/{id}/log", Permission::kViewer, {{"from_line"}},
        [ctx, signer](Request& req, const Principal&) -> net::awaitable<Response> {
            std::optional<Response> error;
            const auto id = PathId(req, error);
            if (!id) co_return *error;
            const auto from_line = QueryInt(req, "from_line", 0, kMaxId, error).value_or(0);
            if (error) co_return *error;
            auto work = [id = *id](db::Database& db) {
                return store::FireRepository(db).Get(id);
            };
            auto fire = co_await WithDb(*ctx, work);
            if (!fire.ok()) co_return Response::Error(fire.status(), "id");
            // Ended: the executor sent the log's tail with its result, and that is what we serve
            // (it stays when the executor restarts or goes). A fire without one (an older SDK, a
            // result that never came) falls back to asking the executor.
            if (model::IsFinal(fire->status)) {
                auto find_log = [id = *id](db::Database& db) {
                    return db.Run([id](soci::session& s) { return store::FireLogs::Find(s, id); });
                };
                auto stored = co_await WithDb(*ctx, find_log);
                if (!stored.ok()) co_return Response::Error(stored.status());
                if (*stored) co_return Response::Json(api::ToJson(StoredLogPage(**stored, *fire, from_line)));
            }
            if (!fire->executor_address) {
                const Status none =
                    FailedPrecondition("fire " + std::to_string(*id) + " has not reached an executor (" +
                                       std::string(model::FireStatusName(fire->status)) + "): no log");
                co_return Response::Error(none, "id");
            }
            const std::string address = *fire->executor_address;
            const auto executor_io = co_await net::this_coro::executor;
            // A page is bounded in lines (ReadLogPage) and bytes (here).
            http::ClientOptions client_options;
            client_options.body_limit = protocol::kMaxLogPageBytes;
            client_options.tls = ctx->options.http_client_tls;
            http::HttpClient client(executor_io, client_options);
            dispatch::SignedExecutorClient executors(client, signer);
            const std::string url = client.PeerUrl(address, protocol::kLogPath) + "?fire_id=" + std::to_string(*id) +
                                    "&from_line=" + std::to_string(from_line);
            const http::CallOptions call = ExecutorCall(*ctx);
            const std::string app = co_await JobApp(*ctx, fire->job_id);
            const std::string no_body;
            auto answer = co_await executors.Send(app, Method::kGet, url, no_body, call);
            if (!answer.ok()) {
                const Status down =
                    Unavailable("executor " + address + " did not answer: " + answer.status().message());
                co_return Response::Error(down);
            }
            if (answer->status == 404) {
                const Status gone = NotFound("executor " + address + " has no log for fire " + std::to_string(*id) +
                                             " (it keeps the most recent fires only, and none across a restart)");
                co_return Response::Error(gone, "id");
            }
            auto log = answer->Json();
            const auto page = log.ok() ? protocol::ReadLogPage(*log) : protocol::Parsed<protocol::LogPage>{};
            if (answer->status != 200 || !log.ok() || !page.ok() || page.value.fire_id != *id) {
                std::string why = "answered " + std::to_string(answer->status);
                if (answer->status == 200 && log.ok() && !page.ok()) why += " a bad page (" + page.error->message + ")";
                if (answer->status == 200 && page.ok() && page.value.fire_id != *id) {
                    why += " fire " + std::to_string(page.value.fire_id) + "'s log";
                }
                const Status bad = Unavailable("executor " + address + " " + why + " to " + url);
                co_return Response::Error(bad);
            }
            co_return Response::Json(api::ToJson(LogView(page.value, *fire, "live")));
        });
}

}  // namespace sched::web::impl
