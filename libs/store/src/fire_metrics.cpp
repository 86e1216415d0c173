#include "sched/store/fire_metrics.hpp"

#include <algorithm>
#include <map>

#include <soci/soci.h>

#include "impl/query.hpp"

namespace sched::store {

using model::FireStatus;
using model::FireStatusName;

namespace {
constexpr std::size_t kIdsPerSelect = 500;

// Aggregates and joined ids come back as int, long long or text depending on the backend and
// the expression (SQLite has no declared type for COUNT(*) or MAX()).
std::int64_t Int(const soci::row& r, std::size_t i) {
    if (r.get_indicator(i) == soci::i_null) return 0;
    switch (r.get_properties(i).get_data_type()) {
        case soci::dt_integer:
            return r.get<int>(i);
        case soci::dt_long_long:
            return r.get<long long>(i);
        case soci::dt_unsigned_long_long:
            return static_cast<std::int64_t>(r.get<unsigned long long>(i));
        case soci::dt_double:
            return static_cast<std::int64_t>(r.get<double>(i));
        case soci::dt_string:
            return std::stoll(r.get<std::string>(i));
        default:
            return 0;
    }
}
}  // namespace

FireOutcomeMetrics::FireOutcomeMetrics(MetricsRegistry& registry)
    : outcomes_(registry.Counter("sched_fire_outcomes_total", "Fires ended, by app, job id and final status.",
                                 {"app", "job_id", "status"})),
      duration_(registry.Histogram("sched_fire_duration_seconds",
                                   "Run time (finished - started) of fires ended by an executor's result.", {"app"},
                                   {0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600})) {}

void FireOutcomeMetrics::Ended(const std::string& app, std::int64_t job_id, FireStatus status,
                               std::optional<double> duration_s) {
    outcomes_.Labels({app, std::to_string(job_id), std::string(FireStatusName(status))}).Inc();
    if (duration_s && *duration_s >= 0) duration_.Labels({app}).Observe(*duration_s);
}

std::vector<FireJob> JobsOfFires(soci::session& s, const std::vector<std::int64_t>& fire_ids) {
    std::vector<FireJob> out;
    for (std::size_t from = 0; from < fire_ids.size(); from += kIdsPerSelect) {
        std::string ids;
        for (std::size_t i = from; i < fire_ids.size() && i < from + kIdsPerSelect; ++i) {
            ids += (i == from ? "" : ", ") + std::to_string(fire_ids[i]);
        }
        soci::rowset<soci::row> rows =
            (s.prepare << "SELECT f.id, f.job_id, j.app FROM job_fire f JOIN job j ON j.id = f.job_id WHERE f.id IN (" +
                              ids + ")");
        for (const auto& r : rows) {
            out.push_back({Int(r, 0), Int(r, 1), r.get<std::string>(2)});
        }
    }
    return out;
}

void LastSuccessTracker::Refresh(soci::session& s) {
    const db::Dialect dialect = impl::SessionDialect(s);
    long long now_ms = 0;
    s << "SELECT " + std::string(dialect.NowMs()), soci::into(now_ms);
    Refresh(s, now_ms);
}

void LastSuccessTracker::Refresh(soci::session& s, std::int64_t now_ms) {
    if (!read_at_ms_) {
        // The whole retained history once: every job's latest success, with its name.
        soci::rowset<soci::row> rows =
            (s.prepare << "SELECT j.app, j.id, j.name, MAX(f.finished_at) FROM job_fire f JOIN job j ON j.id = "
                          "f.job_id WHERE f.status = 'succeeded' AND f.finished_at IS NOT NULL GROUP BY j.app, "
                          "j.id, j.name");
        for (const auto& r : rows) {
            const std::int64_t id = Int(r, 1);
            by_job_[id] = {r.get<std::string>(0), id, r.get<std::string>(2), Int(r, 3)};
        }
        read_at_ms_ = now_ms;
        deep_read_at_ms_ = now_ms;
        return;
    }
    // Only what finished since the previous read (less the recent overlap): a range of
    // idx_fire_finished, so a read costs the last seconds' fires. The unary pluses (the same
    // values; MariaDB ignores them) keep SQLite, which has no statistics, off idx_fire_state
    // (every success ever, as `status = ?` looks selective to it) and off a walk of idx_fire_job
    // in GROUP BY order. Reading the whole overlap at
    // every read cost every fire of the last ten minutes each 5 s (600,000 rows at 1,000
    // fires/s); the deep read does that once per overlap. A result applied at C with a finish
    // time F >= C - overlap is seen by the first deep read D after C: the deep read before it
    // ran at D' <= C, and reads from D' - overlap <= F.
    const bool deep = now_ms - *deep_read_at_ms_ >= overlap_ms_;
    const std::int64_t since = deep ? *deep_read_at_ms_ - overlap_ms_ : *read_at_ms_ - recent_overlap_ms_;
    std::map<std::int64_t, std::int64_t> latest;
    {
        soci::rowset<soci::row> rows =
            (s.prepare << "SELECT job_id, MAX(finished_at) FROM job_fire WHERE finished_at > :since AND +status = "
                          "'succeeded' GROUP BY +job_id",
             soci::use(since, "since"));
        for (const auto& r : rows) latest[Int(r, 0)] = Int(r, 1);
    }
    for (const auto& [id, at] : latest) {
        auto& job = by_job_[id];
        job.job_id = id;
        job.finished_ms = std::max(job.finished_ms, at);
    }
    // Names and existence: of every tracked job at a deep read, else of the jobs just read (a
    // rename or a delete of another job shows at the next deep read). Reading every tracked
    // job's name at each read cost every job that ever succeeded: a million rows each 5 s with a
    // million hourly jobs. A few hundred ids per statement.
    std::vector<std::int64_t> ids;
    if (deep) {
        ids.reserve(by_job_.size());
        for (const auto& [id, job] : by_job_) ids.push_back(id);
    } else {
        ids.reserve(latest.size());
        for (const auto& [id, at] : latest) ids.push_back(id);
    }
    std::map<std::int64_t, std::pair<std::string, std::string>> known;
    impl::ForEachChunk(ids, kIdsPerSelect, [&](std::span<const std::int64_t> chunk) {
        soci::rowset<soci::row> rows =
            (s.prepare << "SELECT id, app, name FROM job WHERE id IN (" + impl::IdList(chunk) + ")");
        for (const auto& r : rows) known[Int(r, 0)] = {r.get<std::string>(1), r.get<std::string>(2)};
    });
    for (auto it = by_job_.begin(); it != by_job_.end();) {
        if (!deep && !latest.contains(it->first)) {
            ++it;
            continue;
        }
        const auto found = known.find(it->first);
        if (found == known.end()) {
            it = by_job_.erase(it);  // deleted
            continue;
        }
        it->second.app = found->second.first;
        it->second.name = found->second.second;
        ++it;
    }
    read_at_ms_ = now_ms;
    if (deep) deep_read_at_ms_ = now_ms;
}

std::vector<LastSuccessTracker::Job> LastSuccessTracker::Jobs() const {
    std::vector<Job> out;
    out.reserve(by_job_.size());
    for (const auto& [id, job] : by_job_) out.push_back(job);
    return out;
}

Result<ClusterGauges> ReadClusterGauges(db::Database& db, std::int64_t misfire_threshold_ms,
                                        std::int64_t executor_ttl_ms, LastSuccessTracker& last_success,
                                        bool refresh_last_success) {
    return db.InTransaction(db::TxMode::kRead, [&](soci::session& s) {
        ClusterGauges g;
        const std::string now(db.dialect().NowMs());
        {
            soci::rowset<soci::row> rows =
                (s.prepare << "SELECT status, COUNT(*) FROM job_fire WHERE status IN ('pending', 'dispatching', "
                              "'running') GROUP BY status");
            for (const auto& r : rows) {
                const auto status = r.get<std::string>(0);
                const auto n = Int(r, 1);
                (status == "running" ? g.running : g.pending) += n;
            }
        }
        long long overdue = 0;
        s << "SELECT COUNT(*) FROM job_fire WHERE status = 'pending' AND due_at < " + now + " - :threshold",
            soci::use(misfire_threshold_ms, "threshold"), soci::into(overdue);
        g.overdue = overdue;
        // Apps with an enabled job are listed at 0 when no instance is live: the alert's case.
        // The apps come from uk_job_app_name one per app, each asked for one enabled job: a read
        // per app, not per job (a DISTINCT over the enabled jobs read every job row every round:
        // 352 ms on SQLite with 1,000,000 jobs, ~1,000,000 index rows a round on MariaDB).
        // MariaDB skips through the index for a GROUP BY ("Using index for group-by") but not for
        // a correlated MIN(app) > previous (a full index scan per app); SQLite the other way round.
        // SQLite would also answer the EXISTS from idx_job_due (all enabled jobs, for an app that
        // has none); `+enabled` keeps it on the app's own rows.
        std::map<std::string, std::int64_t> live;
        {
            const bool mysql = s.get_backend_name() == "mysql";
            const std::string enabled = std::string(" WHERE EXISTS (SELECT 1 FROM job j WHERE j.app = a.app AND ") +
                                        (mysql ? "j.enabled = 1)" : "+j.enabled = 1)");
            const std::string sql =
                mysql ? "SELECT a.app FROM (SELECT app FROM job GROUP BY app) a" + enabled
                      : "WITH RECURSIVE a (app) AS (SELECT MIN(app) FROM job UNION ALL SELECT (SELECT MIN(n.app) FROM "
                        "job n WHERE n.app > a.app) FROM a WHERE a.app IS NOT NULL) SELECT a.app FROM a" +
                            enabled + " AND a.app IS NOT NULL";
            soci::rowset<std::string> apps = (s.prepare << sql);
            for (const auto& app : apps) live[app] = 0;
        }
        {
            soci::rowset<soci::row> rows =
                (s.prepare << "SELECT app, COUNT(*) FROM executor_instance WHERE last_heartbeat_ms > " + now +
                                  " - :ttl GROUP BY app",
                 soci::use(executor_ttl_ms, "ttl"));
            for (const auto& r : rows) live[r.get<std::string>(0)] = Int(r, 1);
        }
        g.executors_live.assign(live.begin(), live.end());
        if (refresh_last_success || last_success.first_read()) last_success.Refresh(s);
        g.last_success = last_success.Jobs();
        return g;
    });
}

}  // namespace sched::store
