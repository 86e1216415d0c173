#include "sched/store/audit.hpp"

#include <algorithm>
#include <stdexcept>

#include "impl/query.hpp"

namespace sched::store {

namespace {

struct AuditRow {
    AuditEntry e;
    impl::NullableString before;
    impl::NullableString after;

    void BindInto(soci::statement& st) {
        impl::IntoColumns(st, e.id, e.at_ms, e.actor, e.actor_role, e.actor_token_id, e.action, e.target_kind,
                          e.target_id, e.target_name, before, after);
    }
    AuditEntry Finish() {
        AuditEntry out = e;
        out.before_json = before.get();
        out.after_json = after.get();
        return out;
    }
};

}  // namespace

std::int64_t AuditRepository::Record(soci::session& s, const db::Dialect& dialect, const AuditEntry& entry) {
    impl::NullableString before(entry.before_json);
    impl::NullableString after(entry.after_json);
    s << "INSERT INTO audit_log (at_ms, actor, actor_role, actor_token_id, action, target_kind, target_id, "
         "target_name, before_json, after_json) VALUES (" +
             std::string(dialect.NowMs()) +
             ", :actor, :role, :token_id, :action, :kind, :target_id, :target_name, :before, :after)",
        soci::use(entry.actor, "actor"), soci::use(entry.actor_role, "role"),
        soci::use(entry.actor_token_id, "token_id"), soci::use(entry.action, "action"),
        soci::use(entry.target_kind, "kind"), soci::use(entry.target_id, "target_id"),
        soci::use(entry.target_name, "target_name"), impl::Use(before, "before"), impl::Use(after, "after");
    long long id = 0;
    if (!s.get_last_insert_id("audit_log", id)) throw std::runtime_error("no id for the new audit entry");
    return static_cast<std::int64_t>(id);
}

Result<std::int64_t> AuditRepository::Record(const AuditEntry& entry) {
    return db_.Run([&](soci::session& s) -> Result<std::int64_t> { return Record(s, db_.dialect(), entry); });
}

Result<std::vector<AuditEntry>> AuditRepository::List(const AuditFilter& filter) {
    return db_.Run([&](soci::session& s) -> Result<std::vector<AuditEntry>> {
        impl::BoundValues values;
        std::string sql =
            "SELECT id, at_ms, actor, actor_role, actor_token_id, action, target_kind, target_id, target_name, "
            "before_json, after_json FROM audit_log WHERE 1 = 1";
        const auto text = [&](const char* column, const std::optional<std::string>& v) {
            if (v) sql += std::string(" AND ") + column + " = " + values.Add(v);
        };
        text("target_kind", filter.target_kind);
        text("target_id", filter.target_id);
        text("actor", filter.actor);
        text("action", filter.action);
        if (filter.since_ms) sql += " AND at_ms >= " + values.Add(*filter.since_ms);
        if (filter.until_ms) sql += " AND at_ms < " + values.Add(*filter.until_ms);
        if (filter.before_id > 0) sql += " AND id < " + values.Add(filter.before_id);
        sql += " ORDER BY id DESC LIMIT " + std::to_string(std::max(1, filter.limit));
        return impl::SelectRows<AuditRow>(s, sql, [&](soci::statement& st) { values.Bind(st); });
    });
}

int AuditRepository::PurgeBefore(soci::session& s, std::int64_t cutoff_ms, int limit) {
    return impl::DeleteOldest(s, "audit_log", "at_ms < :cutoff", "at_ms, id", cutoff_ms, limit);
}

}  // namespace sched::store
