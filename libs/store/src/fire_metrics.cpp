#include "sched/store/fire_metrics.hpp"

#include <algorithm>
#include <map>
#include <span>
#include <tuple>
#include <utility>

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
    // The first and every deep read take every row (one per job that ever succeeded, not one
    // per fire: the results path keeps them, RecordLastSuccesses); the others only the rows
    // recorded since the previous read less the overlap, by idx_last_success_recorded. Grouping
    // the fires that finished since the previous read instead cost every fire of that window
    // plus a 30 s overlap for executors' clocks (60,000 rows per read at 1,000 fires/s), and
    // the first read of a term every success ever retained.
    const bool deep = !read_at_ms_ || now_ms - *deep_read_at_ms_ >= deep_interval_ms_;
    // MariaDB is told the index: on a table whose statistics lag its writes (every row's
    // recorded_at moves within minutes) it chose a full scan for a range of 3 rows in 300.
    const bool mysql = s.get_backend_name() == "mysql";
    std::string sql = std::string("SELECT s.job_id, j.app, j.name, s.finished_at FROM job_last_success s") +
                      (!deep && mysql ? " FORCE INDEX (idx_last_success_recorded)" : "") +
                      " JOIN job j ON j.id = s.job_id";
    const std::int64_t since = deep ? 0 : *read_at_ms_ - recent_overlap_ms_;
    if (!deep) sql += " WHERE s.recorded_at > :since";
    // Typed columns: SQLite declares these INTEGER, which a soci::row reads as a 32-bit int.
    struct Row {
        Job job;
        void BindInto(soci::statement& st, impl::IntColumns& ints) {
            ints.Into(st, job.job_id);
            impl::IntoColumns(st, job.app, job.name);
            ints.Into(st, job.finished_ms);
        }
        Job Finish() const { return job; }
    };
    std::map<std::int64_t, Job> read;
    for (auto& job : impl::SelectRows<Row>(s, sql, [&](soci::statement& st) {
             if (!deep) st.exchange(soci::use(since, "since"));
         })) {
        read[job.job_id] = std::move(job);
    }
    last_rows_read_ = read.size();
    if (deep) {
        by_job_ = std::move(read);  // a deleted job drops out
        deep_read_at_ms_ = now_ms;
    } else {
        for (auto& [id, job] : read) by_job_[id] = std::move(job);
    }
    read_at_ms_ = now_ms;
}

bool LaterSuccess(const JobSuccess& a, const JobSuccess& b) {
    return std::tie(a.finished_ms, a.fire_id) > std::tie(b.finished_ms, b.fire_id);
}

void RecordLastSuccesses(soci::session& s, const std::vector<JobSuccess>& successes) {
    if (successes.empty()) return;
    std::map<std::int64_t, JobSuccess> latest;  // a job named twice keeps its latest
    for (const auto& j : successes) {
        auto [it, added] = latest.emplace(j.job_id, j);
        if (!added && LaterSuccess(j, it->second)) it->second = j;
    }
    const db::Dialect dialect = impl::SessionDialect(s);
    const std::string now(dialect.NowMs());
    // finished_at last: MySQL evaluates the assignments left to right, so the others compare with
    // the finish time the row had; SQLite's see the old row throughout. Ids and times are numbers
    // from the database and the result's parsed integer, inlined.
    const auto if_later = [&](const char* column) {
        const std::string c(column);
        return dialect.backend() == db::Backend::kMySql
                   ? c + " = IF(VALUES(finished_at) > finished_at, VALUES(" + c + "), " + c + ")"
                   : c + " = CASE WHEN excluded.finished_at > job_last_success.finished_at THEN excluded." + c +
                         " ELSE job_last_success." + c + " END";
    };
    const std::string on_conflict =
        (dialect.backend() == db::Backend::kMySql ? " ON DUPLICATE KEY UPDATE "
                                                  : " ON CONFLICT (job_id) DO UPDATE SET ") +
        if_later("recorded_at") + ", " + if_later("fire_id") + ", " + if_later("fire_finished_at") + ", " +
        (dialect.backend() == db::Backend::kMySql
             ? "finished_at = GREATEST(finished_at, VALUES(finished_at))"
             : "finished_at = MAX(job_last_success.finished_at, excluded.finished_at)");
    // A finish time is the executor's clock, unchecked beyond >= 0: one far ahead (a clock set
    // wrong) would pin a row that only moves forward for good, so it counts as at most a minute
    // ahead of the database's clock; a missing one (0) as the database's clock.
    const std::string latest_allowed = "(" + now + " + 60000)";
    const auto finish_sql = [&](std::int64_t finished) {
        if (finished <= 0) return std::string(now);
        return std::string(dialect.backend() == db::Backend::kMySql ? "LEAST(" : "MIN(") + std::to_string(finished) +
               ", " + latest_allowed + ")";
    };
    std::vector<JobSuccess> rows;
    rows.reserve(latest.size());
    for (const auto& [job, success] : latest) rows.push_back(success);
    impl::ForEachChunk(rows, kIdsPerSelect, [&](std::span<const JobSuccess> chunk) {
        std::string sql =
            "INSERT INTO job_last_success (job_id, finished_at, recorded_at, fire_id, fire_finished_at) VALUES ";
        const char* separator = "(";
        for (const auto& j : chunk) {
            const std::string finish = finish_sql(j.finished_ms);
            sql += separator + std::to_string(j.job_id) + ", " + finish + ", " + now + ", " +
                   std::to_string(j.fire_id) + ", " + finish + ")";
            separator = ", (";
        }
        s << sql + on_conflict;
    });
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
        // A planned fire (dispatching, no claim token) past its time by the threshold was not
        // sent either: its record or end lands well within it.
        s << "SELECT COUNT(*) FROM job_fire WHERE (status = 'pending' OR (status = 'dispatching' AND claim_token IS "
             "NULL)) AND due_at < " +
                 now + " - :threshold",
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
