// The audit log: the recording helper every mutating route calls, and GET /api/v1/audit.

#include <algorithm>
#include <array>
#include <cctype>

#include <spdlog/spdlog.h>

#include "impl/audit.hpp"
#include "impl/context.hpp"
#include "impl/list_query.hpp"
#include "sched/api/audit.hpp"
#include "sched/http/json.hpp"

namespace sched::web::impl {

namespace {

using http::Method;
using http::Request;
using http::Response;

constexpr std::size_t kMaxFilterText = 191;  // the VARCHAR(191) columns filtered on
// Nested deeper than this, values are kept as they are: a job's params are user JSON, and the
// walk must stay bounded whatever their shape.
constexpr int kMaxRedactDepth = 4;

bool IsSecretKey(const std::string& key) {
    static const std::array<std::string_view, 9> kSecretKeys = {
        "token", "token_hash", "secret", "secrets", "password", "passwd", "api_key", "private_key", "authorization"};
    std::string lower = key;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return std::find(kSecretKeys.begin(), kSecretKeys.end(), lower) != kSecretKeys.end();
}

void Redact(nlohmann::json& j, int depth) {
    if (j.is_string()) {
        auto& text = j.get_ref<std::string&>();
        if (text.size() > kMaxAuditStringBytes) {
            // Cut on a character boundary: never in the middle of a UTF-8 sequence.
            std::size_t cut = kMaxAuditStringBytes;
            while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
            text = text.substr(0, cut) + "\u2026";
        }
        return;
    }
    if (depth >= kMaxRedactDepth) return;
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it) {
            if (IsSecretKey(it.key()) && !it.value().is_null()) {
                it.value() = "[redacted]";
            } else {
                Redact(it.value(), depth + 1);
            }
        }
    } else if (j.is_array()) {
        for (auto& v : j) Redact(v, depth + 1);
    }
}

std::string Cut(const std::string& text, std::size_t max) {
    if (text.size() <= max) return text;
    std::size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    return text.substr(0, cut);
}

nlohmann::json SideJson(const std::optional<std::string>& text) {
    if (!text) return nullptr;
    auto parsed = http::ParseJson(*text);
    if (!parsed.ok()) return *text;
    return std::move(*parsed);
}

nlohmann::json EntryJson(const store::AuditEntry& e) {
    return api::ToJson(
        api::AuditEntryView{.id = e.id,
                            .at = e.at_ms,
                            .actor = {.name = e.actor, .role = e.actor_role, .token_id = e.actor_token_id},
                            .action = e.action,
                            .target = {.kind = e.target_kind, .id = e.target_id, .name = e.target_name},
                            .before = SideJson(e.before_json),
                            .after = SideJson(e.after_json)});
}

}  // namespace

std::string AuditJson(const nlohmann::json& target) {
    nlohmann::json copy = target;
    Redact(copy, 0);
    if (auto text = http::DumpWithin(copy, kMaxAuditJsonBytes)) return *text;
    return nlohmann::json{{"truncated", true}, {"max_bytes", kMaxAuditJsonBytes}}.dump();
}

store::AuditEntry MakeAuditEntry(const Principal& who, const AuditChange& change) {
    store::AuditEntry e;
    e.actor = Cut(who.name, 191);
    e.actor_role = std::string(store::RoleName(who.role));
    e.actor_token_id = who.token_id;
    e.action = Cut(change.action, 32);
    e.target_kind = Cut(change.target_kind, 32);
    e.target_id = Cut(change.target_id, 191);
    e.target_name = Cut(change.target_name, 191);
    if (change.before) e.before_json = AuditJson(*change.before);
    if (change.after) e.after_json = AuditJson(*change.after);
    return e;
}

void RecordAudit(soci::session& s, const db::Dialect& dialect, const Principal& who, const AuditChange& change) {
    store::AuditRepository::Record(s, dialect, MakeAuditEntry(who, change));
}

void RecordAudit(db::Database& db, const Principal& who, const AuditChange& change) {
    auto recorded = store::AuditRepository(db).Record(MakeAuditEntry(who, change));
    if (!recorded.ok()) {
        spdlog::error("web: audit entry for {} {} {} by {} not recorded: {}", change.action, change.target_kind,
                      change.target_id, who.name, recorded.status().ToString());
    }
}

void AddAuditRoutes(Routes& routes) {
    auto ctx = routes.context();
    // Viewers read it too: it holds no secrets (AuditJson), and people need to see who paused
    // a job and why without an admin token.
    routes.Add(Method::kGet, "/api/v1/audit", Permission::kViewer,
               {{"limit", "cursor", "target_kind", "target_id", "actor", "action", "since", "until"}},
               [ctx](Request& req, const Principal&) -> net::awaitable<Response> {
                   std::optional<Response> error;
                   const auto paging =
                       ReadPageRequest(req, {"target_kind", "target_id", "actor", "action", "since", "until"}, error,
                                       {.min_cursor = 1});
                   if (!paging) co_return *error;
                   store::AuditFilter filter;
                   const int page = paging->limit;
                   filter.before_id = paging->cursor;
                   filter.since_ms = QueryInt(req, "since", 0, INT64_MAX, error);
                   filter.until_ms = QueryInt(req, "until", 0, INT64_MAX, error);
                   if (error) co_return *error;
                   for (const auto& [name, field] :
                        {std::pair<const char*, std::optional<std::string>*>{"target_kind", &filter.target_kind},
                         {"target_id", &filter.target_id},
                         {"actor", &filter.actor},
                         {"action", &filter.action}}) {
                       auto value = req.Query(name);
                       if (!value || value->empty()) continue;
                       if (value->size() > kMaxFilterText) {
                           co_return BadRequest(
                               name, std::string(name) + ": at most " + std::to_string(kMaxFilterText) + " bytes");
                       }
                       *field = *value;
                   }
                   filter.limit = page + 1;  // one more tells whether there is a next page
                   auto work = [filter, page](db::Database& db) -> Result<nlohmann::json> {
                       return CursorPage(store::AuditRepository(db).List(filter), page,
                                         [&](const auto& e) { return EntryJson(e); });
                   };
                   auto listed = co_await WithDb(*ctx, work);
                   if (!listed.ok()) co_return Response::Error(listed.status());
                   co_return Response::Json(*listed);
               });
}

}  // namespace sched::web::impl
