#include "sched/store/web_session.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "impl/query.hpp"

namespace sched::store {

namespace {

constexpr const char* kColumns =
    "SELECT id_hash, subject, issuer, name, role, created_ms, last_seen_ms, expires_ms FROM web_session";

// At most this many live sessions are ended by one Create to fit under `total` (a cap lowered
// in the config shrinks the table over several sign-ins, not in one long transaction).
constexpr std::int64_t kMaxEvictedAtOnce = 1000;

struct SessionRow {
    WebSession w;
    std::string role;

    void BindInto(soci::statement& st, impl::IntColumns& ints) {
        impl::IntoColumns(st, w.id_hash, w.subject, w.issuer, w.name, role);
        ints.Into(st, w.created_ms);
        ints.Into(st, w.last_seen_ms);
        ints.Into(st, w.expires_ms);
    }
    WebSession Finish() {
        // Stored roles come only from this code; an unknown one means a corrupted row.
        auto r = ParseRole(role);
        if (!r) throw std::runtime_error("web_session: unknown role in database");
        WebSession out = w;
        out.role = *r;
        return out;
    }
};

struct HashRow {
    std::string id_hash;
    void BindInto(soci::statement& st) { st.exchange(soci::into(id_hash)); }
    std::string Finish() const { return id_hash; }
};

int DeleteHashes(soci::session& s, const std::vector<std::string>& hashes) {
    if (hashes.empty()) return 0;
    impl::BoundValues values;
    std::string in;
    for (const auto& h : hashes) in += (in.empty() ? "" : ", ") + values.Add(std::optional<std::string>(h));
    return static_cast<int>(impl::ExecuteBound(s, "DELETE FROM web_session WHERE id_hash IN (" + in + ")", values));
}

// Ids first, then one DELETE by id: SQLite has no DELETE ... LIMIT by default, MySQL none with a
// subquery on the same table.
int PurgeEndedIn(soci::session& s, std::int64_t now_ms, std::int64_t idle_ms, int limit) {
    // Idle 0 means "never idle": a cut-off no last_seen_ms is below.
    const std::int64_t idle_cut = idle_ms > 0 ? now_ms - idle_ms : INT64_MIN;
    const auto ended = impl::SelectRows<HashRow>(
        s,
        "SELECT id_hash FROM web_session WHERE expires_ms <= :now OR last_seen_ms < :cut ORDER BY expires_ms LIMIT " +
            std::to_string(std::max(1, limit)),
        [&](soci::statement& st) {
            st.exchange(soci::use(now_ms, "now"));
            st.exchange(soci::use(idle_cut, "cut"));
        });
    return DeleteHashes(s, ended);
}

}  // namespace

Result<int> WebSessionRepository::Create(const WebSession& session, const WebSessionLimits& limits,
                                         std::int64_t now_ms) {
    return db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<int> {
        PurgeEndedIn(s, now_ms, limits.idle_ms, limits.purge_batch);
        int evicted = 0;
        // The person's oldest sessions first: a forgotten browser ends before the one in use.
        auto own = impl::SelectRows<HashRow>(
            s, "SELECT id_hash FROM web_session WHERE subject = :subject ORDER BY created_ms, id_hash",
            [&](soci::statement& st) { st.exchange(soci::use(session.subject, "subject")); });
        const auto per_subject = static_cast<std::size_t>(std::max(1, limits.per_subject));
        if (own.size() >= per_subject) {
            own.resize(own.size() - per_subject + 1);
            evicted += DeleteHashes(s, own);
        }
        long long total = 0;
        s << "SELECT COUNT(*) FROM web_session", soci::into(total);
        const std::int64_t over = static_cast<std::int64_t>(total) - std::max(1, limits.total) + 1;
        if (over > 0) {
            const auto lru =
                impl::SelectRows<HashRow>(s,
                                          "SELECT id_hash FROM web_session ORDER BY last_seen_ms, id_hash LIMIT " +
                                              std::to_string(std::min(over, kMaxEvictedAtOnce)),
                                          [](soci::statement&) {});
            evicted += DeleteHashes(s, lru);
        }
        const std::string role(RoleName(session.role));
        s << "INSERT INTO web_session (id_hash, subject, issuer, name, role, created_ms, last_seen_ms, expires_ms) "
             "VALUES (:h, :subject, :issuer, :name, :role, :created, :seen, :expires)",
            soci::use(session.id_hash, "h"), soci::use(session.subject, "subject"), soci::use(session.issuer, "issuer"),
            soci::use(session.name, "name"), soci::use(role, "role"), soci::use(session.created_ms, "created"),
            soci::use(session.last_seen_ms, "seen"), soci::use(session.expires_ms, "expires");
        return evicted;
    });
}

Result<WebSession> WebSessionRepository::Find(const std::string& id_hash) {
    return db_.Run([&](soci::session& s) -> Result<WebSession> {
        auto rows = impl::SelectRows<SessionRow>(s, std::string(kColumns) + " WHERE id_hash = :h",
                                                 [&](soci::statement& st) { st.exchange(soci::use(id_hash, "h")); });
        if (rows.empty()) return NotFound("no such session");
        return rows.front();
    });
}

Result<bool> WebSessionRepository::Touch(const std::string& id_hash, std::int64_t now_ms,
                                         std::int64_t min_interval_ms) {
    return db_.Run([&](soci::session& s) -> Result<bool> {
        const std::int64_t before = now_ms - min_interval_ms;
        soci::statement st = (s.prepare << "UPDATE web_session SET last_seen_ms = :now WHERE id_hash = :h AND "
                                           "last_seen_ms <= :before",
                              soci::use(now_ms, "now"), soci::use(id_hash, "h"), soci::use(before, "before"));
        return impl::ExecuteAffected(st) > 0;
    });
}

Result<bool> WebSessionRepository::Delete(const std::string& id_hash) {
    return db_.Run([&](soci::session& s) -> Result<bool> {
        soci::statement st = (s.prepare << "DELETE FROM web_session WHERE id_hash = :h", soci::use(id_hash, "h"));
        return impl::ExecuteAffected(st) > 0;
    });
}

Result<int> WebSessionRepository::PurgeEnded(std::int64_t now_ms, std::int64_t idle_ms, int limit) {
    return db_.InTransaction(db::TxMode::kWrite,
                             [&](soci::session& s) -> Result<int> { return PurgeEndedIn(s, now_ms, idle_ms, limit); });
}

Result<int> WebSessionRepository::CountForSubject(const std::string& subject) {
    return db_.Run([&](soci::session& s) -> Result<int> {
        int n = 0;
        s << "SELECT COUNT(*) FROM web_session WHERE subject = :subject", soci::use(subject, "subject"), soci::into(n);
        return n;
    });
}

}  // namespace sched::store
