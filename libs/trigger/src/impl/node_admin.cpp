#include "impl/node_admin.hpp"

#include <optional>
#include <utility>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "sched/protocol/fires_notice.hpp"

namespace sched::trigger::impl {

namespace {

http::Response BadField(const std::string& field, std::string message) {
    return http::Response::Error(http::ApiError{Code::kInvalidArgument, std::move(message), field});
}

// A field name from the request, as an error names it: bounded, so a hostile key cannot make
// the answer (or a log line) as large as the body.
std::string ShownField(const std::string& key) {
    constexpr std::size_t kMax = 64;
    return key.size() <= kMax ? key : key.substr(0, kMax) + "...";
}

}  // namespace

NodeAdmin::NodeAdmin(Hooks hooks) : hooks_(std::move(hooks)) {}

void NodeAdmin::AddRoutes(http::Router& r) {
    r.Add(
        http::Method::kGet, "/healthz", [this](http::Request& req) { return Healthz(req); }, http::Access::kPublic);
    r.Add(
        http::Method::kGet, "/readyz", [this](http::Request& req) { return Readyz(req); }, http::Access::kPublic);
    r.Add(
        http::Method::kGet, "/metrics", [this](http::Request& req) { return MetricsText(req); }, http::Access::kPublic);
    r.Add(
        http::Method::kGet, "/status", [this](http::Request& req) { return Status(req); }, http::Access::kPublic);
    r.Add(http::Method::kPost, "/internal/v1/election/nudge", [this](http::Request& req) { return Nudge(req); });
    r.Add(http::Method::kPost, protocol::kFiresNoticePath, [this](http::Request& req) { return Fires(req); });
    r.Add(http::Method::kPost, protocol::kMasterWakePath, [this](http::Request& req) { return WakeMasters(req); });
    r.Add(http::Method::kPost, protocol::kRunsEndedPath, [this](http::Request& req) { return RunsEnded(req); });
}

http::Response NodeAdmin::Healthz(const http::Request& /*req*/) const {
    return http::Response::Text("ok\n");
}

http::Response NodeAdmin::Readyz(const http::Request& /*req*/) const {
    const std::string why = hooks_.not_ready_reason ? hooks_.not_ready_reason() : "";
    return why.empty() ? http::Response::Text("ready\n", 200) : http::Response::Text("not ready: " + why + "\n", 503);
}

http::Response NodeAdmin::MetricsText(const http::Request& /*req*/) const {
    return http::Response::Text(hooks_.metrics ? hooks_.metrics() : "", 200,
                                "text/plain; version=0.0.4; charset=utf-8");
}

http::Response NodeAdmin::Status(const http::Request& /*req*/) const {
    return http::Response::Text(hooks_.status_json ? hooks_.status_json() : "{}", 200, "application/json");
}

namespace {

// No body, or `{}` (what the senders send): anything else is a caller's bug worth a 400.
std::optional<http::Response> NotEmpty(const http::Request& req) {
    if (req.body.empty()) return std::nullopt;
    auto body = req.Json();
    if (!body.ok()) return BadField("body", "body: expected no body or {}: " + body.status().message());
    if (!body->is_object()) return BadField("body", "body: expected no body or {}");
    if (!body->empty()) {
        const std::string field = ShownField(body->begin().key());
        return BadField(field, field + ": unknown field");
    }
    return std::nullopt;
}

// The request's body read by `parse` (a protocol reader); a body that is not JSON is refused as
// the reader refuses a malformed one, naming the field "body".
template <typename Parse>
auto ParseBody(const http::Request& req, Parse parse) -> decltype(parse(std::declval<const nlohmann::json&>())) {
    auto body = req.Json();
    if (!body.ok()) {
        return {.error = http::ApiError{Code::kInvalidArgument, "body: " + body.status().message(), "body"}};
    }
    return parse(*body);
}

}  // namespace

http::Response NodeAdmin::Nudge(const http::Request& req) {
    if (auto refused = NotEmpty(req)) return std::move(*refused);
    if (hooks_.nudge) hooks_.nudge();
    return http::Response::Json({{"nudged", true}});
}

http::Response NodeAdmin::WakeMasters(const http::Request& req) {
    if (auto refused = NotEmpty(req)) return std::move(*refused);
    const int woken = hooks_.wake_masters ? hooks_.wake_masters() : 0;
    return http::Response::Json({{"woken", woken}}, 202);
}

http::Response NodeAdmin::Fires(const http::Request& req) {
    auto notice = ParseBody(req, protocol::ParseFiresNotice);
    if (!notice.ok()) return http::Response::Error(*notice.error);
    // Fencing: a notice from a term older than one this node has seen comes from a deposed
    // master (its scan may have been overtaken); the poll, which reads committed rows, is the
    // slave's source of truth, so the notice is refused and wakes nothing.
    const auto observed = hooks_.observed_epoch ? hooks_.observed_epoch(notice.value.shard) : std::nullopt;
    if (observed && notice.value.epoch < *observed) {
        const auto n = ++stale_notices_;
        // Bounded: the first stale notice at info, the rest at debug (a deposed master sends
        // one per scan until it notices).
        spdlog::log(n == 1 ? spdlog::level::info : spdlog::level::debug,
                    "peer notification refused: epoch {} is older than the observed epoch {} ({} refused so far)",
                    notice.value.epoch, *observed, n);
        return http::Response::Error(http::ApiError{Code::kAborted,
                                                    "epoch: " + std::to_string(notice.value.epoch) +
                                                        " is older than the observed lease epoch " +
                                                        std::to_string(*observed) + " (a deposed master)",
                                                    "epoch"});
    }
    if (hooks_.wake_slave) hooks_.wake_slave(std::move(notice.value));
    return http::Response::Json({{"accepted", true}}, 202);
}

http::Response NodeAdmin::RunsEnded(const http::Request& req) {
    auto ended = ParseBody(req, protocol::ParseRunsEnded);
    if (!ended.ok()) return http::Response::Error(*ended.error);
    // No epoch to check: dropping a record of an ended fire is right whoever says so (a record
    // dropped wrongly only leaves the fire `dispatching` until its result or the sweep).
    const std::size_t withdrawn = hooks_.runs_ended ? hooks_.runs_ended(ended.value.fire_ids) : 0;
    return http::Response::Json({{"withdrawn", withdrawn}}, 202);
}

}  // namespace sched::trigger::impl
