#include "sched/store/alert.hpp"

#include <algorithm>
#include <array>

#include "impl/query.hpp"
#include "sched/common/name_table.hpp"

namespace sched::store {

namespace {

constexpr auto kEventNames =
    MakeNameTable<AlertEvent>({"failed", "timeout", "lost", "misfire", "paused", "no_success"});
constexpr auto kDeliveryNames = MakeNameTable<DeliveryStatus>({"pending", "delivered", "failed"});

// Cuts at a UTF-8 character boundary so the stored text stays valid.
std::string Bounded(const std::string& text, std::size_t max) {
    if (text.size() <= max) return text;
    std::size_t end = max;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    return text.substr(0, end);
}

struct RuleRow {
    AlertRule r;
    impl::NullableInt64 job_id;
    impl::NullableInt64 no_success_within;
    impl::NullableString managed_by;
    std::string events;
    int enabled = 1;
    AlertRule Finish() {
        r.job_id = job_id.get();
        r.managed_by = managed_by.get();
        r.no_success_within_ms = no_success_within.get();
        r.events = ParseAlertEvents(events);
        r.enabled = enabled != 0;
        return r;
    }
    void BindInto(soci::statement& st) {
        impl::IntoColumns(st, r.id, r.name, job_id, events, r.consecutive_failures, no_success_within, r.url, r.secret,
                          enabled, r.created_at, r.version, managed_by);
    }
};
constexpr const char* kRuleColumns =
    "SELECT id, name, job_id, events, consecutive_failures, no_success_within_ms, url, secret, enabled, created_at, "
    "version, managed_by FROM alert_rule ";

struct DeliveryRow {
    AlertDelivery d;
    std::string event;
    std::string status;
    impl::NullableString last_error;
    impl::NullableInt64 delivered_at;
    AlertDelivery Finish() {
        d.event = ParseAlertEvent(event).value_or(AlertEvent::kFailed);
        d.status = ParseDeliveryStatus(status).value_or(DeliveryStatus::kFailed);
        d.last_error = last_error.get();
        d.delivered_at = delivered_at.get();
        return d;
    }
    void BindInto(soci::statement& st) {
        impl::IntoColumns(st, d.id, d.rule_id, d.job_id, d.fire_id, event, d.payload, status, d.attempts,
                          d.next_attempt_at, last_error, d.created_at, delivered_at);
    }
};
constexpr const char* kDeliveryColumns =
    "SELECT id, rule_id, job_id, fire_id, event, payload, status, attempts, next_attempt_at, last_error, created_at, "
    "delivered_at FROM alert_delivery ";

struct FireRow {
    AlertableFire f;
    impl::NullableString name;
    impl::NullableString app;
    impl::NullableString reason;
    impl::NullableInt64 code;
    impl::NullableString message;
    impl::NullableInt64 pause_after;
    AlertableFire Finish() {
        f.pause_after_failures = static_cast<int>(pause_after.get().value_or(0));
        f.job_name = name.get().value_or("");
        f.app = app.get().value_or("");
        f.reason = reason.get();
        const auto c = code.get();
        f.result_code = c ? std::optional<int>(static_cast<int>(*c)) : std::nullopt;
        f.result_message = message.get();
        return f;
    }
    void BindInto(soci::statement& st) {
        impl::IntoColumns(st, f.id, f.job_id, name, app, f.scheduled_time, f.attempt, f.status, reason, f.finished_at,
                          code, message, pause_after);
    }
};

}  // namespace

std::string_view AlertEventName(AlertEvent e) {
    return kEventNames.Name(e);
}

std::optional<AlertEvent> ParseAlertEvent(std::string_view name) {
    return kEventNames.Parse(name);
}

std::string AlertEventsText(const std::vector<AlertEvent>& events) {
    std::string out;
    for (const auto e : events) out += (out.empty() ? "" : ",") + std::string(AlertEventName(e));
    return out;
}

std::vector<AlertEvent> ParseAlertEvents(std::string_view text) {
    std::vector<AlertEvent> out;
    while (!text.empty()) {
        const auto comma = text.find(',');
        if (auto e = ParseAlertEvent(text.substr(0, comma))) out.push_back(*e);
        text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    }
    return out;
}

std::string_view DeliveryStatusName(DeliveryStatus s) {
    return kDeliveryNames.Name(s);
}

std::optional<DeliveryStatus> ParseDeliveryStatus(std::string_view name) {
    return kDeliveryNames.Parse(name);
}

namespace {

// What a rule's create and its edit both bind: the nullable columns and the text forms.
struct RuleValues {
    explicit RuleValues(const AlertRule& rule)
        : job_id(rule.job_id),
          within(rule.no_success_within_ms),
          managed_by(rule.managed_by),
          events(AlertEventsText(rule.events)),
          enabled(rule.enabled ? 1 : 0) {}
    impl::NullableInt64 job_id;
    impl::NullableInt64 within;
    impl::NullableString managed_by;
    std::string events;
    int enabled;
};

}  // namespace

Result<AlertRule> AlertRepository::CreateRule(const AlertRule& rule) {
    auto id = db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<std::int64_t> {
        RuleValues v(rule);  // soci binds the indicators by reference
        s << "INSERT INTO alert_rule (name, job_id, events, consecutive_failures, no_success_within_ms, url, secret, "
             "enabled, managed_by, created_at) VALUES (:name, :job, :events, :n, :within, :url, :secret, :enabled, "
             ":managed_by, " +
                 std::string(db_.dialect().NowMs()) + ")",
            soci::use(rule.name, "name"), impl::Use(v.job_id, "job"), soci::use(v.events, "events"),
            soci::use(rule.consecutive_failures, "n"), impl::Use(v.within, "within"), soci::use(rule.url, "url"),
            soci::use(rule.secret, "secret"), soci::use(v.enabled, "enabled"), impl::Use(v.managed_by, "managed_by");
        long long new_id = 0;
        if (!s.get_last_insert_id("alert_rule", new_id)) return Internal("no id for the new alert rule");
        return static_cast<std::int64_t>(new_id);
    });
    if (!id.ok()) return id.status();
    return GetRule(*id);
}

Result<AlertRule> AlertRepository::GetRule(std::int64_t id) {
    auto rows = db_.Run([&](soci::session& s) {
        return impl::SelectRows<RuleRow>(s, std::string(kRuleColumns) + "WHERE id = :id",
                                         [&](soci::statement& st) { st.exchange(soci::use(id, "id")); });
    });
    if (!rows.ok()) return rows.status();
    if (rows->empty()) return NotFound("alert rule " + std::to_string(id) + " not found");
    return rows->front();
}

Result<std::vector<AlertRule>> AlertRepository::ListRules(std::int64_t after_id, int limit) {
    return db_.Run([&](soci::session& s) {
        return impl::SelectRows<RuleRow>(
            s, std::string(kRuleColumns) + "WHERE id > :after ORDER BY id LIMIT " + std::to_string(limit),
            [&](soci::statement& st) { st.exchange(soci::use(after_id, "after")); });
    });
}

Result<AlertRule> AlertRepository::UpdateRule(const AlertRule& rule, std::int64_t expected_version) {
    Status updated = db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Status {
        RuleValues v(rule);  // soci binds the indicators by reference
        const std::int64_t id = rule.id;
        soci::statement st =
            (s.prepare << "UPDATE alert_rule SET name = :name, job_id = :job, events = :events, consecutive_failures = "
                          ":n, no_success_within_ms = :within, url = :url, secret = :secret, enabled = :enabled, "
                          "managed_by = :managed_by, version = version + 1 WHERE id = :id AND version = :expected",
             soci::use(rule.name, "name"), impl::Use(v.job_id, "job"), soci::use(v.events, "events"),
             soci::use(rule.consecutive_failures, "n"), impl::Use(v.within, "within"), soci::use(rule.url, "url"),
             soci::use(rule.secret, "secret"), soci::use(v.enabled, "enabled"), impl::Use(v.managed_by, "managed_by"),
             soci::use(id, "id"), soci::use(expected_version, "expected"));
        if (impl::ExecuteAffected(st) == 1) return Status::Ok();
        std::int64_t current = 0;
        s << "SELECT version FROM alert_rule WHERE id = :id", soci::use(id, "id"), soci::into(current);
        if (!s.got_data()) return NotFound("alert rule " + std::to_string(id) + " not found");
        return Aborted("alert rule " + std::to_string(id) + " is at version " + std::to_string(current) + ", not " +
                       std::to_string(expected_version) + " (changed since it was read)");
    });
    if (!updated.ok()) return updated;
    return GetRule(rule.id);
}

Result<AlertDelivery> AlertRepository::QueueTestDelivery(std::int64_t rule_id, std::int64_t job_id, AlertEvent event,
                                                         const std::string& payload) {
    auto id = db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<std::int64_t> {
        std::int64_t exists = 0;
        s << "SELECT COUNT(*) FROM alert_rule WHERE id = :id", soci::use(rule_id, "id"), soci::into(exists);
        if (exists == 0) return NotFound("alert rule " + std::to_string(rule_id) + " not found");
        // Tests wait for the master like any delivery; a caller repeating the request faster
        // than they are sent (a disabled master, an unreachable receiver retried with backoff)
        // would otherwise queue without end.
        std::int64_t pending = 0;
        const std::string pending_name(DeliveryStatusName(DeliveryStatus::kPending));
        s << "SELECT COUNT(*) FROM alert_delivery WHERE rule_id = :id AND fire_id < 0 AND status = :status",
            soci::use(rule_id, "id"), soci::use(pending_name, "status"), soci::into(pending);
        if (pending >= kMaxPendingTests) {
            return Status(Code::kResourceExhausted, "alert rule " + std::to_string(rule_id) + " already has " +
                                                        std::to_string(kMaxPendingTests) +
                                                        " test deliveries pending; send another once they are sent");
        }
        // Tests number down from -1 per rule, so that they never meet a fire's id (or a
        // no_success episode key, >= 0) in the unique key; the rule's deliveries are that key's
        // prefix, so this reads one index range.
        std::int64_t lowest = 0;
        soci::indicator ind = soci::i_null;
        s << "SELECT MIN(fire_id) FROM alert_delivery WHERE rule_id = :id AND fire_id < 0", soci::use(rule_id, "id"),
            soci::into(lowest, ind);
        AlertDelivery d{.rule_id = rule_id,
                        .job_id = job_id,
                        .fire_id = std::min<std::int64_t>(ind == soci::i_ok ? lowest : 0, 0) - 1,
                        .event = event,
                        .payload = payload};
        if (!InsertDeliveryIfAbsent(s, db_.dialect(), d)) {
            return Aborted("another test delivery of alert rule " + std::to_string(rule_id) +
                           " was queued at the same moment; send again");
        }
        const std::string event_name(AlertEventName(event));
        std::int64_t new_id = 0;
        s << "SELECT id FROM alert_delivery WHERE rule_id = :rule AND event = :event AND job_id = :job AND fire_id = "
             ":fire",
            soci::use(rule_id, "rule"), soci::use(event_name, "event"), soci::use(job_id, "job"),
            soci::use(d.fire_id, "fire"), soci::into(new_id);
        return new_id;
    });
    if (!id.ok()) return id.status();
    return GetDelivery(*id);
}

Status AlertRepository::DeleteRule(std::int64_t id) {
    auto deleted = db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<long long> {
        s << "DELETE FROM alert_delivery WHERE rule_id = :id", soci::use(id, "id");
        soci::statement st = (s.prepare << "DELETE FROM alert_rule WHERE id = :id", soci::use(id, "id"));
        return impl::ExecuteAffected(st);
    });
    if (!deleted.ok()) return deleted.status();
    if (*deleted == 0) return NotFound("alert rule " + std::to_string(id) + " not found");
    return Status::Ok();
}

Result<std::vector<AlertDelivery>> AlertRepository::ListDeliveries(const DeliveryFilter& filter) {
    return db_.Run([&](soci::session& s) {
        std::string where = "WHERE 1 = 1";
        if (filter.rule_id) where += " AND rule_id = :rule";
        if (filter.status) where += " AND status = :status";
        const std::string status = filter.status ? std::string(DeliveryStatusName(*filter.status)) : "";
        const std::int64_t rule = filter.rule_id.value_or(0);
        return impl::SelectRows<DeliveryRow>(
            s, std::string(kDeliveryColumns) + where + " ORDER BY id DESC LIMIT " + std::to_string(filter.limit),
            [&](soci::statement& st) {
                if (filter.rule_id) st.exchange(soci::use(rule, "rule"));
                if (filter.status) st.exchange(soci::use(status, "status"));
            });
    });
}

Result<AlertDelivery> AlertRepository::GetDelivery(std::int64_t id) {
    auto rows = db_.Run([&](soci::session& s) {
        return impl::SelectRows<DeliveryRow>(s, std::string(kDeliveryColumns) + "WHERE id = :id",
                                             [&](soci::statement& st) { st.exchange(soci::use(id, "id")); });
    });
    if (!rows.ok()) return rows.status();
    if (rows->empty()) return NotFound("alert delivery " + std::to_string(id) + " not found");
    return rows->front();
}

std::vector<AlertRule> AlertRepository::EnabledRules(soci::session& s, int limit) {
    return impl::SelectRows<RuleRow>(
        s, std::string(kRuleColumns) + "WHERE enabled = 1 ORDER BY id LIMIT " + std::to_string(limit),
        [](soci::statement&) {});
}

std::vector<AlertableFire> AlertRepository::ListEndedAfter(soci::session& s, std::int64_t after_ms,
                                                           std::int64_t after_id, std::int64_t until_ms, int limit) {
    // The keyset condition is spelled out (no row-value comparison on every backend); the
    // first term keeps the range scan on idx_fire_finished, and the unary pluses (the same
    // values; MariaDB ignores them) keep SQLite, which has no statistics, from reading every
    // failure ever from idx_fire_state instead.
    return impl::SelectRows<FireRow>(
        s,
        "SELECT f.id, f.job_id, j.name, j.app, f.scheduled_time, f.attempt, f.status, f.reason, f.finished_at, "
        "f.result_code, f.result_message, j.pause_after_failures FROM job_fire f LEFT JOIN job j ON j.id = f.job_id "
        "WHERE f.finished_at >= :after AND f.finished_at <= :until AND (f.finished_at > :after2 OR f.id > :after_id) "
        "AND (+f.status IN ('failed', 'timeout', 'lost') OR (+f.status = 'skipped' AND f.reason = 'misfire')) "
        "ORDER BY f.finished_at, f.id LIMIT " +
            std::to_string(limit),
        [&](soci::statement& st) {
            st.exchange(soci::use(after_ms, "after"));
            st.exchange(soci::use(until_ms, "until"));
            st.exchange(soci::use(after_ms, "after2"));
            st.exchange(soci::use(after_id, "after_id"));
        });
}

int AlertRepository::FailureStreak(soci::session& s, std::int64_t job_id, std::int64_t scheduled_time,
                                   std::int64_t fire_id, int max) {
    struct StatusRow {
        std::string status;
        std::string Finish() { return status; }
        void BindInto(soci::statement& st) { st.exchange(soci::into(status)); }
    };
    const auto statuses = impl::SelectRows<StatusRow>(
        s,
        "SELECT status FROM job_fire WHERE job_id = :job AND (scheduled_time < :t OR (scheduled_time = :t2 AND id <= "
        ":id)) AND status IN ('succeeded', 'failed', 'timeout', 'lost', 'killed') "
        "ORDER BY scheduled_time DESC, id DESC LIMIT " +
            std::to_string(max),
        [&](soci::statement& st) {
            st.exchange(soci::use(job_id, "job"));
            st.exchange(soci::use(scheduled_time, "t"));
            st.exchange(soci::use(scheduled_time, "t2"));
            st.exchange(soci::use(fire_id, "id"));
        });
    int streak = 0;
    for (const auto& status : statuses) {
        if (status != "failed" && status != "timeout" && status != "lost") break;
        ++streak;
    }
    return streak;
}

std::vector<JobLastSuccess> AlertRepository::LastSuccesses(soci::session& s, std::optional<std::int64_t> job_id,
                                                           std::int64_t after_job_id, int limit) {
    struct Read {
        JobLastSuccess job;
        bool stale = false;  // its finish moved without its fire (an older build's writer)
    };
    struct Row {
        JobLastSuccess j;
        impl::NullableInt64 at;
        impl::NullableInt64 fire;
        impl::NullableInt64 fire_finished;
        Read Finish() {
            Read r{.job = j};
            r.job.last_success_at = at.get();
            if (fire.get().value_or(0) > 0) r.job.last_success_fire_id = fire.get();
            r.stale = at.get() && fire_finished.get() != at.get();
            return r;
        }
        void BindInto(soci::statement& st) {
            impl::IntoColumns(st, j.job_id, j.job_name, j.app, j.created_at, at, fire, fire_finished);
        }
    };
    // The jobs by primary key, each with its job_last_success row by primary key: the cost is
    // the `limit` jobs, not their history.
    const std::int64_t only = job_id.value_or(0);
    auto read = impl::SelectRows<Row>(
        s,
        "SELECT j.id, j.name, j.app, j.created_at, l.finished_at, l.fire_id, l.fire_finished_at FROM job j "
        "LEFT JOIN job_last_success l ON l.job_id = j.id WHERE j.enabled = 1 AND j.id > :after" +
            std::string(job_id ? " AND j.id = :only" : "") + " ORDER BY j.id LIMIT " + std::to_string(limit),
        [&](soci::statement& st) {
            st.exchange(soci::use(after_job_id, "after"));
            if (job_id) st.exchange(soci::use(only, "only"));
        });
    std::vector<JobLastSuccess> out;
    out.reserve(read.size());
    for (auto& r : read) {
        if (r.stale) {
            // Rare (a rolling upgrade), and then one job's history: the aggregate the row replaced.
            impl::NullableInt64 at;
            impl::NullableInt64 fire;
            s << "SELECT MAX(finished_at), MAX(id) FROM job_fire WHERE job_id = :job AND status = 'succeeded'",
                soci::use(r.job.job_id, "job"), soci::into(at.value, at.ind), soci::into(fire.value, fire.ind);
            // The row's finish stands when it is later (that fire purged meanwhile).
            if (at.get() > r.job.last_success_at) r.job.last_success_at = at.get();
            if (fire.get()) r.job.last_success_fire_id = fire.get();
        }
        out.push_back(std::move(r.job));
    }
    return out;
}

bool AlertRepository::InsertDeliveryIfAbsent(soci::session& s, const db::Dialect& dialect, const AlertDelivery& d) {
    const std::string event(AlertEventName(d.event));
    const std::string status(DeliveryStatusName(DeliveryStatus::kPending));
    soci::statement st =
        (s.prepare << dialect.InsertIfAbsent(
             "alert_delivery (rule_id, job_id, fire_id, event, payload, status, attempts, next_attempt_at, "
             "created_at) VALUES (:rule, :job, :fire, :event, :payload, :status, 0, :next, " +
             std::string(dialect.NowMs()) + ")"),
         soci::use(d.rule_id, "rule"), soci::use(d.job_id, "job"), soci::use(d.fire_id, "fire"),
         soci::use(event, "event"), soci::use(d.payload, "payload"), soci::use(status, "status"),
         soci::use(d.next_attempt_at, "next"));
    return db::ExecuteInsertIfAbsent(st) == 1;
}

std::vector<AlertDelivery> AlertRepository::ListDue(soci::session& s, std::int64_t now_ms, int limit,
                                                    const std::vector<std::int64_t>& skip_ids,
                                                    const std::vector<std::int64_t>& skip_rules) {
    // Integers only, so spelling them into the statement is safe; their count is bounded by the
    // alerter's in-flight limit and rule count.
    const auto not_in = [](const char* column, const std::vector<std::int64_t>& ids) {
        if (ids.empty()) return std::string();
        return std::string(" AND ") + column + " NOT IN (" + impl::IdList(ids) + ")";
    };
    return impl::SelectRows<DeliveryRow>(s,
                                         std::string(kDeliveryColumns) +
                                             "WHERE status = 'pending' AND next_attempt_at <= :now" +
                                             not_in("id", skip_ids) + not_in("rule_id", skip_rules) +
                                             " ORDER BY next_attempt_at, id LIMIT " + std::to_string(limit),
                                         [&](soci::statement& st) { st.exchange(soci::use(now_ms, "now")); });
}

bool AlertRepository::RecordAttempt(soci::session& s, const AlertDelivery& d) {
    const std::string status(DeliveryStatusName(d.status));
    impl::NullableString error(d.last_error ? std::optional<std::string>(Bounded(*d.last_error, kMaxErrorBytes))
                                            : std::nullopt);
    impl::NullableInt64 delivered(d.delivered_at);
    soci::statement st =
        (s.prepare << "UPDATE alert_delivery SET status = :status, attempts = :attempts, next_attempt_at = :next, "
                      "last_error = :error, delivered_at = :delivered WHERE id = :id AND status = 'pending'",
         soci::use(status, "status"), soci::use(d.attempts, "attempts"), soci::use(d.next_attempt_at, "next"),
         impl::Use(error, "error"), impl::Use(delivered, "delivered"), soci::use(d.id, "id"));
    return impl::ExecuteAffected(st) == 1;
}

int AlertRepository::PurgeEndedBefore(soci::session& s, std::int64_t cutoff_ms, int limit) {
    // By id, which follows created_at (both only grow): the oldest rows come first, so the scan
    // stops after `limit` matches instead of needing an index on created_at.
    const std::string ended =
        "created_at < :cutoff AND status <> '" + std::string(DeliveryStatusName(DeliveryStatus::kPending)) + "'";
    return impl::DeleteOldest(s, "alert_delivery", ended, "id", cutoff_ms, limit);
}

}  // namespace sched::store
