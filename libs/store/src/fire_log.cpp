#include "sched/store/fire_log.hpp"

#include <algorithm>

#include "impl/query.hpp"
#include "sched/common/utf8.hpp"
#include "sched/db/dialect.hpp"

namespace sched::store {

namespace {

// Log text per REPLACE: far below MySQL's max_allowed_packet (16 MiB by default) even if
// escaping doubles every byte.
constexpr std::size_t kStoreTextBudget = std::size_t{4} << 20;
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

struct LogRow {
    StoredFireLog log;
    void BindInto(soci::statement& st) {
        impl::IntoColumns(st, log.fire_id, log.log, log.truncated_bytes, log.stored_at_ms);
    }
    StoredFireLog Finish() const { return log; }
};

}  // namespace

void FireLogs::Bound(std::string& log, std::int64_t& truncated_bytes, std::size_t max_bytes) {
    // Bytes that do not make text (NUL, invalid UTF-8) would make MySQL refuse the statement,
    // and with it the result: they become U+FFFD.
    bool clean = true;
    for (std::size_t i = 0; i < log.size() && clean;) {
        const std::size_t n = Utf8CharLength(std::string_view(log).substr(i));
        clean = n > 0 && log[i] != '\0';
        i += std::max<std::size_t>(n, 1);
    }
    if (!clean) {
        std::string out;
        out.reserve(log.size());
        for (std::size_t i = 0; i < log.size();) {
            const std::size_t n = Utf8CharLength(std::string_view(log).substr(i));
            if (n == 0 || log[i] == '\0') {
                out += kReplacement;
                ++i;
            } else {
                out.append(log, i, n);
                i += n;
            }
        }
        log = std::move(out);
    }
    if (log.size() <= max_bytes) return;
    std::size_t start = log.size() - max_bytes;
    while (start < log.size() && (static_cast<unsigned char>(log[start]) & 0xC0) == 0x80) ++start;
    log.erase(0, start);
    truncated_bytes += static_cast<std::int64_t>(start);
}

void FireLogs::StoreMany(soci::session& s, const std::vector<const ExecutorResult*>& results) {
    std::vector<const ExecutorResult*> with_log;
    for (const ExecutorResult* r : results) {
        if (r->log) with_log.push_back(r);
    }
    if (with_log.empty()) return;
    const db::Dialect dialect = impl::SessionDialect(s);
    // REPLACE: the same statement on both backends (SQLite reads it as INSERT OR REPLACE); a
    // retry of the fire is another attempt of the same row, and its log replaces the last one.
    const std::string head = "REPLACE INTO job_fire_log (fire_id, log, truncated_bytes, stored_at) VALUES ";
    const std::string now(dialect.NowMs());
    std::size_t from = 0;
    while (from < with_log.size()) {
        impl::BoundValues values;
        std::string sql = head;
        std::size_t text = 0;
        std::size_t to = from;
        for (; to < with_log.size() && (to == from || text < kStoreTextBudget); ++to) {
            const ExecutorResult& r = *with_log[to];
            std::string log = *r.log;
            std::int64_t truncated = std::max<std::int64_t>(r.log_truncated_bytes, 0);
            Bound(log, truncated);
            text += log.size();
            sql += std::string(to == from ? "" : ", ") + "(" + std::to_string(r.fire_id) + ", " +
                   values.Add(std::optional<std::string>(std::move(log))) + ", " + std::to_string(truncated) + ", " +
                   now + ")";
        }
        impl::ExecuteBound(s, sql, values);
        from = to;
    }
}

std::optional<StoredFireLog> FireLogs::Find(soci::session& s, std::int64_t fire_id) {
    auto rows = impl::SelectRows<LogRow>(
        s, "SELECT fire_id, log, truncated_bytes, stored_at FROM job_fire_log WHERE fire_id = :id",
        [&](soci::statement& st) { st.exchange(soci::use(fire_id, "id")); });
    if (rows.empty()) return std::nullopt;
    return std::move(rows.front());
}

}  // namespace sched::store
