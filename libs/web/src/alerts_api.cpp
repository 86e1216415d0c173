// Alert rules and their deliveries: /api/v1/alert-rules, /api/v1/alert-deliveries (admin).
// The webhook secret goes in and never comes out (`has_secret`).

#include <algorithm>
#include <array>
#include <set>
#include <variant>

#include <spdlog/spdlog.h>

#include "impl/audit.hpp"
#include "impl/context.hpp"
#include "impl/job_input.hpp"
#include "impl/list_query.hpp"
#include "impl/resource_routes.hpp"
#include "sched/api/alerts.hpp"
#include "sched/http/address_policy.hpp"
#include "sched/http/json.hpp"
#include "sched/http/url.hpp"
#include "sched/store/alert.hpp"
#include "sched/store/job.hpp"

namespace sched::web::impl {

namespace {

using http::Method;
using http::Request;
using http::Response;

constexpr std::size_t kMaxNameChars = 191;
constexpr std::size_t kMaxUrlBytes = 2048;
constexpr std::size_t kMinSecretBytes = 16;
constexpr std::size_t kMaxSecretBytes = 255;
constexpr std::int64_t kMaxConsecutiveFailures = 1000;
constexpr std::int64_t kMinNoSuccessMs = 60'000;
constexpr std::int64_t kMaxNoSuccessMs = 366LL * 24 * 3600 * 1000;
constexpr std::array<std::string_view, 10> kRuleFields = {
    "name",    "job_id",  "events",    "consecutive_failures", "no_success_within_ms", "url", "secret",
    "enabled", "version", "managed_by"};
constexpr std::array<std::string_view, 3> kRuleReadOnly = {"id", "created_at_ms", "has_secret"};

nlohmann::json RuleView(const store::AlertRule& r) {
    api::AlertRuleView v{.id = r.id,
                         .name = r.name,
                         .job_id = r.job_id,
                         .consecutive_failures = r.consecutive_failures,
                         .no_success_within_ms = r.no_success_within_ms,
                         .url = r.url,
                         .has_secret = !r.secret.empty(),
                         .enabled = r.enabled,
                         .created_at_ms = r.created_at,
                         .version = r.version,
                         .managed_by = r.managed_by};
    for (const auto e : r.events) v.events.emplace_back(store::AlertEventName(e));
    return api::ToJson(v);
}

nlohmann::json DeliveryView(const store::AlertDelivery& d) {
    nlohmann::json payload = nlohmann::json::parse(d.payload, nullptr, false);
    return api::ToJson(
        api::AlertDeliveryView{.id = d.id,
                               .rule_id = d.rule_id,
                               .job_id = d.job_id,
                               .fire_id = d.fire_id,
                               .event = std::string(store::AlertEventName(d.event)),
                               .status = std::string(store::DeliveryStatusName(d.status)),
                               .attempts = d.attempts,
                               .next_attempt_at_ms = d.next_attempt_at,
                               .last_error = d.last_error,
                               .created_at_ms = d.created_at,
                               .delivered_at_ms = d.delivered_at,
                               .test = d.fire_id < 0,
                               .payload = payload.is_discarded() ? nlohmann::json() : std::move(payload)});
}

// An element of `events` as an error message shows it: strings cut to 32 bytes, nothing else
// serialised (it may be anything the body limit allows).
std::string Shown(const nlohmann::json& e) {
    if (!e.is_string()) return std::string("a JSON ") + e.type_name();
    const auto& text = e.get_ref<const std::string&>();
    std::size_t end = std::min<std::size_t>(text.size(), 32);
    while (end < text.size() && end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    return "\"" + text.substr(0, end) + (end < text.size() ? "...\"" : "\"");
}

// The rule in a POST body (current null) or a PUT body over `current` (version set to the one
// the body carries), or the 400 naming the first bad field. A PUT without `secret` keeps the
// current one: the API never returns it, so a client editing other fields cannot send it back.
// managed_by, as a job's: left out of a PUT it keeps the current value, null clears it.
std::variant<store::AlertRule, Response> ParseRule(const nlohmann::json& body, const http::AddressPolicy& addresses,
                                                   const store::AlertRule* current = nullptr) {
    if (auto unknown = RejectUnknownFields(body, kRuleFields, kRuleReadOnly)) return *unknown;
    http::JsonFields f(body);
    store::AlertRule r;
    if (current) {
        r.id = current->id;
        r.version = f.Int("version", {.min = 1, .max = kMaxId});
        if (!f.ok()) return Response::Error(*f.error());
    } else if (body.contains("version")) {
        return BadRequest("version", "version: set by the server; leave it out when creating");
    }
    r.name = f.String("name");
    const std::int64_t job_id = f.Int("job_id", 0, {.min = 1, .max = kMaxId});
    if (job_id > 0) r.job_id = job_id;
    r.consecutive_failures =
        static_cast<int>(f.Int("consecutive_failures", 1, {.min = 1, .max = kMaxConsecutiveFailures}));
    const std::int64_t within = f.Int("no_success_within_ms", 0, {.min = kMinNoSuccessMs, .max = kMaxNoSuccessMs});
    if (within > 0) r.no_success_within_ms = within;
    r.url = f.String("url");
    r.secret = current && !body.contains("secret") ? current->secret : f.String("secret");
    r.enabled = f.Bool("enabled", true);
    if (!f.ok()) return Response::Error(*f.error());
    if (current) r.managed_by = current->managed_by;
    if (auto invalid = impl::ReadManagedBy(body, r.managed_by)) return Response::Error(*invalid);
    // events: checked by hand so that a hostile array is bounded before anything is read.
    const auto events = body.find("events");
    if (events == body.end() || !events->is_array() || events->empty() || events->size() > 6) {
        return BadRequest("events",
                          "events: expected an array of 1 to 6 of failed, timeout, lost, misfire, paused, no_success");
    }
    std::set<store::AlertEvent> seen;
    for (const auto& e : *events) {
        const auto parsed = e.is_string() ? store::ParseAlertEvent(e.get<std::string>()) : std::nullopt;
        if (!parsed) {
            return BadRequest("events",
                              "events: expected failed, timeout, lost, misfire, paused or no_success, got " + Shown(e));
        }
        if (!seen.insert(*parsed).second) return BadRequest("events", "events: " + Shown(e) + " appears twice");
        r.events.push_back(*parsed);
    }
    // The threshold is the parameter of the no_success event: one without the other is a mistake
    // the caller would only find out about when an alert never comes.
    const bool wants_no_success = seen.count(store::AlertEvent::kNoSuccess) > 0;
    if (wants_no_success && !r.no_success_within_ms) {
        return BadRequest("no_success_within_ms",
                          "no_success_within_ms: required (60000 to 31622400000) when events has no_success");
    }
    if (!wants_no_success && r.no_success_within_ms) {
        return BadRequest("no_success_within_ms", "no_success_within_ms: only with the event no_success in events");
    }
    if (CodePoints(r.name) > kMaxNameChars) return BadRequest("name", "name: at most 191 characters");
    if (r.url.size() > kMaxUrlBytes) return BadRequest("url", "url: at most 2048 bytes");
    if (!r.url.starts_with("http://") && !r.url.starts_with("https://")) {
        return BadRequest("url", "url: expected an http:// or https:// URL");
    }
    auto parsed = http::Url::Parse(r.url);
    if (!parsed.ok()) return BadRequest("url", "url: " + parsed.status().message());
    for (const char c : r.url) {
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return BadRequest("url", "url: no spaces or controls");
    }
    // The master checks again each address a name resolves to when it delivers; this refuses
    // what is known now (literal addresses in any form, loopback names, the lists).
    if (Status allowed = addresses.CheckHost(parsed->host); !allowed.ok()) {
        return BadRequest("url", "url: " + allowed.message());
    }
    if (r.secret.size() < kMinSecretBytes || r.secret.size() > kMaxSecretBytes) {
        return BadRequest("secret", "secret: 16 to 255 bytes");
    }
    return r;
}

}  // namespace

void AddAlertRoutes(Routes& routes) {
    auto ctx = routes.context();
    routes.Add(Method::kPost, "/api/v1/alert-rules", Permission::kAdmin,
               [ctx](Request& req, const Principal& who) -> net::awaitable<Response> {
                   auto body = req.Json();
                   if (!body.ok()) co_return Response::Error(body.status(), "body");
                   auto parsed = ParseRule(*body, ctx->options.alert_addresses);
                   if (auto* bad = std::get_if<Response>(&parsed)) co_return std::move(*bad);
                   const store::AlertRule rule = std::get<store::AlertRule>(std::move(parsed));
                   auto work = [rule, &who](db::Database& db) -> Result<store::AlertRule> {
                       if (rule.job_id) {
                           auto job = store::JobRepository(db).Get(*rule.job_id);
                           if (!job.ok()) return job.status();
                       }
                       auto created = store::AlertRepository(db).CreateRule(rule);
                       if (created.ok()) {
                           RecordAudit(db, who,
                                       {"create", "alert-rule", std::to_string(created->id), created->name,
                                        std::nullopt, RuleView(*created)});
                       }
                       return created;
                   };
                   auto created = co_await WithDb(*ctx, work);
                   if (!created.ok()) {
                       if (created.status().code() == Code::kNotFound) {
                           co_return BadRequest("job_id", "job_id: " + created.status().message());
                       }
                       co_return Response::Error(created.status());
                   }
                   spdlog::info("web: alert rule {} ({}) created by {}", created->id, created->name, who.name);
                   Response response = Response::Json(RuleView(*created), 201);
                   response.headers.Set("Location", "/api/v1/alert-rules/" + std::to_string(created->id));
                   co_return response;
               });
    routes.Add(Method::kGet, "/api/v1/alert-rules", Permission::kAdmin, {{"limit", "cursor"}},
               [ctx](Request& req, const Principal&) -> net::awaitable<Response> {
                   std::optional<Response> error;
                   const auto page = ReadPageRequest(req, {}, error);
                   if (!page) co_return *error;
                   const std::int64_t after = page->cursor;
                   const int limit = page->limit;
                   auto work = [after, limit](db::Database& db) {
                       return store::AlertRepository(db).ListRules(after, limit);
                   };
                   auto rules = co_await WithDb(*ctx, work);
                   if (!rules.ok()) co_return Response::Error(rules.status());
                   nlohmann::json items = nlohmann::json::array();
                   for (const auto& r : *rules) items.push_back(RuleView(r));
                   nlohmann::json out = {{"items", std::move(items)}};
                   out["next_cursor"] =
                       static_cast<int>(rules->size()) == limit ? nlohmann::json(rules->back().id) : nlohmann::json();
                   co_return Response::Json(out);
               });
    routes.Add(Method::kGet, "/api/v1/alert-rules/{id}", Permission::kAdmin,
               GetHandler(
                   ctx, [](const Status& s) { return Response::Error(s, "id"); },
                   [](db::Database& db, std::int64_t id) -> Result<nlohmann::json> {
                       auto rule = store::AlertRepository(db).GetRule(id);
                       if (!rule.ok()) return rule.status();
                       return RuleView(*rule);
                   }));
    routes.Add(Method::kPut, "/api/v1/alert-rules/{id}", Permission::kAdmin,
               [ctx](Request& req, const Principal& who) -> net::awaitable<Response> {
                   std::optional<Response> error;
                   const auto id = PathId(req, error);
                   if (error) co_return *error;
                   auto body = ReadBodyFields(req, error, kRuleFields, kRuleReadOnly);
                   if (!body) co_return *error;
                   // Parsed on the pool against the stored rule (its secret is kept when the body
                   // has none); `invalid` is the 400 to answer before any error of the call.
                   std::optional<Response> invalid;
                   const http::AddressPolicy& addresses = ctx->options.alert_addresses;
                   auto work = [&body, &invalid, &addresses, &who,
                                id = *id](db::Database& db) -> Result<store::AlertRule> {
                       store::AlertRepository alerts(db);
                       auto before = alerts.GetRule(id);
                       if (!before.ok()) return before.status();
                       auto parsed = ParseRule(*body, addresses, &*before);
                       if (auto* bad = std::get_if<Response>(&parsed)) {
                           invalid = std::move(*bad);
                           return InvalidArgument("invalid alert rule");
                       }
                       const store::AlertRule rule = std::get<store::AlertRule>(std::move(parsed));
                       if (rule.job_id) {
                           auto job = store::JobRepository(db).Get(*rule.job_id);
                           if (!job.ok()) {
                               if (job.status().code() == Code::kNotFound) {
                                   invalid = BadRequest("job_id", "job_id: " + job.status().message());
                               }
                               return job.status();
                           }
                       }
                       auto updated = alerts.UpdateRule(rule, rule.version);
                       if (updated.ok()) {
                           RecordAudit(db, who,
                                       {"update", "alert-rule", std::to_string(id), updated->name, RuleView(*before),
                                        RuleView(*updated)});
                       }
                       return updated;
                   };
                   auto updated = co_await WithDb(*ctx, work);
                   if (invalid) co_return std::move(*invalid);
                   if (!updated.ok())
                       co_return Response::Error(updated.status(), RepositoryErrorField(updated.status()));
                   spdlog::info("web: alert rule {} ({}) updated to version {} by {}", updated->id, updated->name,
                                updated->version, who.name);
                   co_return Response::Json(RuleView(*updated));
               });
    routes.Add(Method::kPost, "/api/v1/alert-rules/{id}/test", Permission::kAdmin,
               ActionHandler([ctx](Request&, std::int64_t id, const Principal& who) -> net::awaitable<Response> {
                   // Queued, not sent: the master's alerter sends it like any delivery (signed,
                   // retried, bounded per receiver), so this request never waits on a receiver
                   // and a test proves the path real alerts take.
                   auto work = [&who, id](db::Database& db) -> Result<store::AlertDelivery> {
                       store::AlertRepository alerts(db);
                       auto rule = alerts.GetRule(id);
                       if (!rule.ok()) return rule.status();
                       if (!rule->enabled) {
                           return FailedPrecondition("alert rule " + std::to_string(id) +
                                                     " is disabled: its deliveries wait until it is enabled");
                       }
                       const store::AlertEvent event =
                           rule->events.empty() ? store::AlertEvent::kFailed : rule->events.front();
                       const nlohmann::json payload = {
                           {"test", true},
                           {"event", store::AlertEventName(event)},
                           {"rule_id", rule->id},
                           {"rule_name", rule->name},
                           {"job_id", rule->job_id ? nlohmann::json(*rule->job_id) : nlohmann::json()},
                           {"message", "a test delivery, sent on request of " + who.name}};
                       auto queued = alerts.QueueTestDelivery(id, rule->job_id.value_or(0), event, payload.dump());
                       if (queued.ok()) {
                           RecordAudit(db, who,
                                       {"test", "alert-rule", std::to_string(id), rule->name, std::nullopt,
                                        DeliveryView(*queued)});
                       }
                       return queued;
                   };
                   auto queued = co_await WithDb(*ctx, work);
                   if (!queued.ok()) {
                       const Code code = queued.status().code();
                       co_return Response::Error(queued.status(), code == Code::kNotFound             ? "id"
                                                                  : code == Code::kFailedPrecondition ? "enabled"
                                                                                                      : "");
                   }
                   spdlog::info("web: test delivery {} of alert rule {} queued by {}", queued->id, id, who.name);
                   co_return Response::Json(DeliveryView(*queued), 202);
               }));
    routes.Add(Method::kDelete, "/api/v1/alert-rules/{id}", Permission::kAdmin,
               DeleteHandler(ctx, {.remove = [](db::Database& db, std::int64_t id, const Principal& who) -> Status {
                                       store::AlertRepository alerts(db);
                                       auto before = alerts.GetRule(id);
                                       if (!before.ok()) return before.status();
                                       Status deleted = alerts.DeleteRule(id);
                                       if (deleted.ok()) {
                                           RecordAudit(db, who,
                                                       {"delete", "alert-rule", std::to_string(id), before->name,
                                                        RuleView(*before), std::nullopt});
                                       }
                                       return deleted;
                                   },
                                   .error = [](const Status& s) { return Response::Error(s, "id"); },
                                   .log =
                                       [](std::int64_t id, const Principal& who) {
                                           spdlog::info("web: alert rule {} deleted by {}", id, who.name);
                                       }}));
    routes.Add(Method::kGet, "/api/v1/alert-deliveries", Permission::kAdmin, {{"limit", "rule_id", "status"}},
               [ctx](Request& req, const Principal&) -> net::awaitable<Response> {
                   std::optional<Response> error;
                   const auto page = ReadPageRequest(req, {"rule_id", "status"}, error, {.cursor = false});
                   if (!page) co_return *error;
                   store::DeliveryFilter filter;
                   filter.rule_id = QueryInt(req, "rule_id", 1, kMaxId, error);
                   filter.limit = page->limit;
                   if (error) co_return *error;
                   if (auto status = req.Query("status"); status && !status->empty()) {
                       filter.status = store::ParseDeliveryStatus(*status);
                       if (!filter.status) {
                           co_return BadRequest(
                               "status", "status: expected one of pending, delivered, failed, got \"" + *status + "\"");
                       }
                   }
                   auto work = [filter](db::Database& db) {
                       return store::AlertRepository(db).ListDeliveries(filter);
                   };
                   auto deliveries = co_await WithDb(*ctx, work);
                   if (!deliveries.ok()) co_return Response::Error(deliveries.status());
                   nlohmann::json items = nlohmann::json::array();
                   for (const auto& d : *deliveries) items.push_back(DeliveryView(d));
                   co_return Response::Json({{"items", std::move(items)}});
               });
}

}  // namespace sched::web::impl
