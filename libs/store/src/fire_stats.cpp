#include "sched/store/fire_stats.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "impl/query.hpp"
#include "sched/db/dialect.hpp"

namespace sched::store {

using model::FireStatus;
using model::ParseFireStatus;

namespace {

std::size_t Index(FireStatus s) {
    return static_cast<std::size_t>(s);
}

// An unknown stored status (a newer version's) is counted nowhere rather than failing the view.
std::optional<FireStatus> StatusOf(const std::string& name) {
    return ParseFireStatus(name);
}

struct BucketRow {
    std::int64_t start = 0;
    std::string status;
    // SUM is DECIMAL on MySQL; its text form parses into a 64-bit integer all the same.
    std::int64_t times = 0;
    void BindInto(soci::statement& st) { impl::IntoColumns(st, start, status, times); }
    BucketRow Finish() const { return *this; }
};

struct JobStatusRow {
    std::int64_t job_id = 0;
    std::string status;
    std::int64_t times = 0;
    std::int64_t dispatched = 0;
    std::int64_t lag_sum = 0;
    impl::NullableInt64 lag_max;
    impl::NullableInt64 last_finished;
    void BindInto(soci::statement& st) {
        impl::IntoColumns(st, job_id, status, times, dispatched, lag_sum, lag_max, last_finished);
    }
    JobStatusRow Finish() const { return *this; }
};

struct LiveRow {
    std::string status;
    std::int64_t count = 0;
    std::int64_t overdue = 0;
    void BindInto(soci::statement& st) { impl::IntoColumns(st, status, count, overdue); }
    LiveRow Finish() const { return *this; }
};

struct ActiveRow {
    ActiveFire fire;
    std::string status;
    impl::NullableString node;
    impl::NullableString executor;
    impl::NullableInt64 started;
    void BindInto(soci::statement& st) {
        impl::IntoColumns(st, fire.id, fire.job_id, fire.job_name, fire.scheduled_time, fire.due_at, status, node,
                          executor, started);
    }
    ActiveFire Finish() const {
        ActiveFire out = fire;
        out.status = StatusOf(status).value_or(FireStatus::kPending);
        out.assigned_node = node.get();
        out.executor_address = executor.get();
        out.started_at = started.get();
        return out;
    }
};

struct JobNameRow {
    std::int64_t id = 0;
    std::string name;
    std::string app;
    void BindInto(soci::statement& st) { impl::IntoColumns(st, id, name, app); }
    JobNameRow Finish() const { return *this; }
};

constexpr std::string_view kActiveColumns =
    "SELECT f.id, f.job_id, COALESCE(j.name, ''), f.scheduled_time, f.due_at, f.status, f.assigned_node, "
    "f.executor_address, f.started_at FROM job_fire f LEFT JOIN job j ON j.id = f.job_id ";

}  // namespace

Result<FireActivity> FireStats::Activity(const ActivityQuery& q) {
    if (q.window_ms <= 0 || q.bucket_ms <= 0 || q.window_ms / q.bucket_ms > kMaxBuckets || q.overdue_after_ms < 0) {
        throw std::invalid_argument("FireStats::Activity: window, bucket or overdue threshold out of bounds");
    }
    return db_.Run([&](soci::session& s) -> Result<FireActivity> {
        FireActivity out;
        out.bucket_ms = q.bucket_ms;
        s << "SELECT " + std::string(db_.dialect().NowMs()), soci::into(out.now_ms);
        // Buckets aligned to the bucket size, so that two reads a few seconds apart agree on them.
        out.from_ms = (out.now_ms - q.window_ms) - ((out.now_ms - q.window_ms) % q.bucket_ms);
        const std::int64_t from = out.from_ms;
        const std::int64_t now = out.now_ms;
        const std::int64_t bucket = q.bucket_ms;
        // A range over idx_fire_time (scheduled_time), and the binding of its bounds.
        const std::string in_window = " WHERE f.scheduled_time >= :from AND f.scheduled_time <= :now ";
        const auto bind_window = [&](soci::statement& st) {
            st.exchange(soci::use(from, "from"));
            st.exchange(soci::use(now, "now"));
        };

        for (std::int64_t start = from; start <= now; start += bucket) out.buckets.push_back({.start_ms = start});
        const auto buckets = impl::SelectRows<BucketRow>(
            s,
            "SELECT f.scheduled_time - ((f.scheduled_time - :origin) % :bucket) AS b, f.status, "
            "SUM(COALESCE(f.skipped_count, 1)) FROM job_fire f" +
                in_window + "GROUP BY b, f.status",
            [&](soci::statement& st) {
                // A name used twice in one statement is not portable across soci backends.
                st.exchange(soci::use(from, "origin"));
                st.exchange(soci::use(bucket, "bucket"));
                bind_window(st);
            });
        for (const auto& row : buckets) {
            const auto status = StatusOf(row.status);
            const auto at = static_cast<std::size_t>((row.start - from) / bucket);
            if (!status || at >= out.buckets.size()) continue;
            out.buckets[at].times[Index(*status)] += row.times;
        }

        const auto per_status = impl::SelectRows<JobStatusRow>(
            s,
            "SELECT f.job_id, f.status, SUM(COALESCE(f.skipped_count, 1)), COUNT(f.dispatched_at), "
            // A fire claimed ahead (slave.claim-ahead) has dispatched_at before due_at: lag 0.
            "COALESCE(SUM(CASE WHEN f.dispatched_at > f.due_at THEN f.dispatched_at - f.due_at ELSE 0 END), 0), "
            "MAX(CASE WHEN f.dispatched_at > f.due_at THEN f.dispatched_at - f.due_at ELSE 0 END), MAX(f.finished_at) "
            "FROM job_fire f" +
                in_window + "GROUP BY f.job_id, f.status",
            bind_window);
        std::map<std::int64_t, JobActivity> jobs;
        for (const auto& row : per_status) {
            const auto status = StatusOf(row.status);
            if (!status) continue;
            auto& job = jobs[row.job_id];
            job.job_id = row.job_id;
            switch (*status) {
                case FireStatus::kSucceeded:
                    job.succeeded += row.times;
                    if (auto t = row.last_finished.get()) {
                        job.last_success_ms = std::max(job.last_success_ms.value_or(*t), *t);
                    }
                    break;
                case FireStatus::kFailed:
                case FireStatus::kTimeout:
                case FireStatus::kKilled:
                case FireStatus::kLost:
                    job.failed += row.times;
                    break;
                case FireStatus::kSkipped:
                    job.skipped += row.times;
                    break;
                case FireStatus::kPending:
                case FireStatus::kDispatching:
                case FireStatus::kRunning:
                    job.active += row.times;
                    break;
            }
            job.dispatched += row.dispatched;
            job.lag_sum_ms += row.lag_sum;
            if (auto m = row.lag_max.get()) job.lag_max_ms = std::max(job.lag_max_ms, *m);
        }
        out.jobs_total = static_cast<std::int64_t>(jobs.size());
        for (auto& [id, job] : jobs) out.jobs.push_back(std::move(job));
        std::sort(out.jobs.begin(), out.jobs.end(), [](const JobActivity& a, const JobActivity& b) {
            if (a.failed != b.failed) return a.failed > b.failed;
            const auto fires_a = a.Ended() + a.skipped + a.active;
            const auto fires_b = b.Ended() + b.skipped + b.active;
            if (fires_a != fires_b) return fires_a > fires_b;
            return a.job_id < b.job_id;
        });
        if (out.jobs.size() > q.max_jobs) out.jobs.resize(q.max_jobs);
        if (!out.jobs.empty()) {
            std::string ids;
            for (const auto& job : out.jobs) ids += (ids.empty() ? "" : ",") + std::to_string(job.job_id);
            const auto names = impl::SelectRows<JobNameRow>(
                s, "SELECT id, name, app FROM job WHERE id IN (" + ids + ")", [](soci::statement&) {});
            std::map<std::int64_t, const JobNameRow*> by_id;
            for (const auto& n : names) by_id[n.id] = &n;
            for (auto& job : out.jobs) {
                if (auto it = by_id.find(job.job_id); it != by_id.end()) {
                    job.name = it->second->name;
                    job.app = it->second->app;
                }
            }
        }

        const std::int64_t overdue_before = now - q.overdue_after_ms;
        // A fire planned already claimed (dispatching, no claim token) and not due yet is waiting,
        // not in flight: counted pending, and left out of the fires in flight.
        const std::string planned =
            "(status = 'dispatching' AND claim_token IS NULL AND due_at > " + std::to_string(now) + ")";
        const auto live = impl::SelectRows<LiveRow>(
            s,
            "SELECT CASE WHEN " + planned +
                " THEN 'pending' ELSE status END AS state, COUNT(*), SUM(CASE WHEN due_at < :before THEN 1 ELSE 0 "
                "END) FROM job_fire WHERE status IN ('pending', 'dispatching', 'running') GROUP BY state",
            [&](soci::statement& st) { st.exchange(soci::use(overdue_before, "before")); });
        for (const auto& row : live) {
            if (row.status == "pending") {
                out.pending = row.count;
                out.overdue = row.overdue;
            } else {
                out.running += row.count;
            }
        }
        const std::string limit = " LIMIT " + std::to_string(std::max<std::size_t>(q.max_fires, 1));
        if (out.running > 0) {
            out.running_fires = impl::SelectRows<ActiveRow>(
                s,
                std::string(kActiveColumns) +
                    "WHERE f.status IN ('dispatching', 'running') AND NOT (f.status = 'dispatching' AND "
                    "f.claim_token IS NULL AND f.due_at > " +
                    std::to_string(now) + ") ORDER BY f.scheduled_time, f.id" + limit,
                [](soci::statement&) {});
        }
        if (out.overdue > 0) {
            out.overdue_fires = impl::SelectRows<ActiveRow>(
                s,
                std::string(kActiveColumns) +
                    "WHERE f.status = 'pending' AND f.due_at < :before ORDER BY f.due_at, f.id" + limit,
                [&](soci::statement& st) { st.exchange(soci::use(overdue_before, "before")); });
        }
        return out;
    });
}

}  // namespace sched::store
