#include "sched/store/backfill.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "impl/query.hpp"
#include "sched/common/name_table.hpp"

namespace sched::store {

using model::FireKind;
using model::FireStatus;
using model::IsFinal;
using model::ParseFireKind;
using model::ParseFireStatus;

namespace {

constexpr auto kOverlapNames = MakeNameTable<BackfillOverlap>({"serial", "parallel"});
constexpr auto kStateNames = MakeNameTable<BackfillState>({"running", "completed", "cancelled"});

struct BackfillRow {
    Backfill b;
    std::string overlap;
    std::string state;
    impl::NullableInt64 finished_at;
    Backfill Finish() {
        auto o = ParseBackfillOverlap(overlap);
        auto st = ParseBackfillState(state);
        if (!o || !st) throw std::runtime_error("backfill " + std::to_string(b.id) + ": bad overlap/state in database");
        b.overlap = *o;
        b.state = *st;
        b.finished_at = finished_at.get();
        return b;
    }
    void BindInto(soci::statement& st) {
        impl::IntoColumns(st, b.id, b.job_id, b.range_from, b.range_to, overlap, b.max_parallel, state, b.cursor_ms,
                          b.planned, b.existing, b.created, b.created_by, b.created_at, b.updated_at, finished_at);
    }
};
constexpr const char* kSelect =
    "SELECT id, job_id, range_from, range_to, overlap, max_parallel, state, cursor_ms, planned, existing, created, "
    "created_by, created_at, updated_at, finished_at FROM job_backfill ";

}  // namespace

std::string_view BackfillOverlapName(BackfillOverlap o) {
    return kOverlapNames.Name(o);
}

std::optional<BackfillOverlap> ParseBackfillOverlap(std::string_view name) {
    return kOverlapNames.Parse(name);
}

std::string_view BackfillStateName(BackfillState s) {
    return kStateNames.Name(s);
}

std::optional<BackfillState> ParseBackfillState(std::string_view name) {
    return kStateNames.Parse(name);
}

Result<Backfill> BackfillRepository::Get(std::int64_t id) {
    return impl::GetById(db_, "backfill", id, Find);
}

Result<std::vector<Backfill>> BackfillRepository::ListForJob(std::int64_t job_id, std::int64_t before_id, int limit) {
    return impl::SelectChildrenBefore<BackfillRow>(db_, kSelect, "job_id", job_id, before_id, limit);
}

Result<Backfill> BackfillRepository::Cancel(std::int64_t id) {
    return db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<Backfill> {
        auto found = Find(s, id);
        if (!found) return NotFound("backfill " + std::to_string(id) + " not found");
        if (found->state != BackfillState::kRunning) {
            return FailedPrecondition("backfill " + std::to_string(id) + " is " +
                                      std::string(BackfillStateName(found->state)) + ", not running");
        }
        const std::string cancelled(BackfillStateName(BackfillState::kCancelled));
        s << "UPDATE job_backfill SET state = :state, updated_at = " + std::string(db_.dialect().NowMs()) +
                 ", finished_at = " + std::string(db_.dialect().NowMs()) + " WHERE id = :id AND state = 'running'",
            soci::use(cancelled, "state"), soci::use(id, "id");
        return *Find(s, id);
    });
}

Result<BackfillFireCounts> BackfillRepository::Counts(const Backfill& backfill) {
    return db_.Run([&](soci::session& s) -> Result<BackfillFireCounts> {
        return CountFires(s, backfill.job_id, backfill.range_from, backfill.range_to);
    });
}

std::int64_t BackfillRepository::Insert(soci::session& s, const Backfill& b) {
    const std::string overlap(BackfillOverlapName(b.overlap));
    const std::string state(BackfillStateName(b.state));
    impl::NullableInt64 finished(b.finished_at);
    s << "INSERT INTO job_backfill (job_id, range_from, range_to, overlap, max_parallel, state, cursor_ms, planned, "
         "existing, created, created_by, created_at, updated_at, finished_at) VALUES (:job, :rfrom, :rto, :overlap, "
         ":maxp, :state, :cursor, :planned, :existing, :created, :by, :cat, :uat, :fin)",
        soci::use(b.job_id, "job"), soci::use(b.range_from, "rfrom"), soci::use(b.range_to, "rto"),
        soci::use(overlap, "overlap"), soci::use(b.max_parallel, "maxp"), soci::use(state, "state"),
        soci::use(b.cursor_ms, "cursor"), soci::use(b.planned, "planned"), soci::use(b.existing, "existing"),
        soci::use(b.created, "created"), soci::use(b.created_by, "by"), soci::use(b.created_at, "cat"),
        soci::use(b.updated_at, "uat"), impl::Use(finished, "fin");
    long long id = 0;
    if (!s.get_last_insert_id("job_backfill", id)) throw std::runtime_error("no id for the new backfill");
    return id;
}

std::optional<Backfill> BackfillRepository::Find(soci::session& s, std::int64_t id) {
    auto rows = impl::SelectRows<BackfillRow>(s, std::string(kSelect) + "WHERE id = :id",
                                              [&](soci::statement& st) { st.exchange(soci::use(id, "id")); });
    if (rows.empty()) return std::nullopt;
    return rows.front();
}

std::vector<Backfill> BackfillRepository::ListRunning(soci::session& s, std::int64_t after_id, int limit,
                                                      const JobShard& shard) {
    return impl::SelectRows<BackfillRow>(s,
                                         std::string(kSelect) + "WHERE state = 'running' AND id > :after" +
                                             shard.JobFilter("job_id") + " ORDER BY id LIMIT " +
                                             std::to_string(std::max(1, limit)),
                                         [&](soci::statement& st) { st.exchange(soci::use(after_id, "after")); });
}

int BackfillRepository::CountRunning(soci::session& s, std::int64_t job_id) {
    long long n = 0;
    s << "SELECT COUNT(*) FROM job_backfill WHERE job_id = :job AND state = 'running'", soci::use(job_id, "job"),
        soci::into(n);
    return static_cast<int>(n);
}

bool BackfillRepository::SaveProgress(soci::session& s, const Backfill& b, std::int64_t now_ms) {
    const std::string state(BackfillStateName(b.state));
    impl::NullableInt64 finished(b.finished_at);
    soci::statement st =
        (s.prepare << "UPDATE job_backfill SET cursor_ms = :cursor, existing = :existing, created = :created, "
                      "state = :state, updated_at = :now, finished_at = :fin WHERE id = :id AND state = 'running'",
         soci::use(b.cursor_ms, "cursor"), soci::use(b.existing, "existing"), soci::use(b.created, "created"),
         soci::use(state, "state"), soci::use(now_ms, "now"), impl::Use(finished, "fin"), soci::use(b.id, "id"));
    return impl::ExecuteAffected(st) > 0;
}

int BackfillRepository::CountUnfinished(soci::session& s, std::int64_t job_id, std::int64_t from, std::int64_t to) {
    long long n = 0;
    // The (job_id, scheduled_time) index (idx_fire_job on SQLite, uk_fire_once on MariaDB) narrows
    // to the range; the rest is a filter on it.
    s << "SELECT COUNT(DISTINCT scheduled_time) FROM job_fire WHERE job_id = :job AND scheduled_time >= :rfrom "
         "AND scheduled_time < :rto AND kind = 'backfill' AND status IN ('pending', 'dispatching', 'running')",
        soci::use(job_id, "job"), soci::use(from, "rfrom"), soci::use(to, "rto"), soci::into(n);
    return static_cast<int>(n);
}

std::map<std::int64_t, FireKind> BackfillRepository::ExistingTimes(soci::session& s, std::int64_t job_id,
                                                                   std::int64_t from, std::int64_t to, int limit) {
    struct Row {
        std::int64_t time = 0;
        std::string kind;
        std::pair<std::int64_t, FireKind> Finish() const {
            return {time, ParseFireKind(kind).value_or(FireKind::kSchedule)};
        }
        void BindInto(soci::statement& st) { impl::IntoColumns(st, time, kind); }
    };
    const auto rows = impl::SelectRows<Row>(
        s,
        "SELECT scheduled_time, kind FROM job_fire WHERE job_id = :job AND scheduled_time >= :rfrom AND "
        "scheduled_time < :rto AND kind IN ('schedule', 'manual', 'misfire', 'backfill') AND NOT (status = "
        "'skipped' AND reason IS NOT NULL AND reason = 'misfire') ORDER BY scheduled_time LIMIT " +
            std::to_string(std::max(1, limit)),
        [&](soci::statement& st) {
            st.exchange(soci::use(job_id, "job"));
            st.exchange(soci::use(from, "rfrom"));
            st.exchange(soci::use(to, "rto"));
        });
    std::map<std::int64_t, FireKind> out;
    for (const auto& [time, kind] : rows) {
        auto [it, inserted] = out.emplace(time, kind);
        if (!inserted && it->second == FireKind::kBackfill) it->second = kind;
    }
    return out;
}

BackfillFireCounts BackfillRepository::CountFires(soci::session& s, std::int64_t job_id, std::int64_t from,
                                                  std::int64_t to) {
    struct Row {
        std::string status;
        long long n = 0;
        std::pair<std::string, std::int64_t> Finish() const { return {status, n}; }
        void BindInto(soci::statement& st) { impl::IntoColumns(st, status, n); }
    };
    const auto rows = impl::SelectRows<Row>(
        s,
        "SELECT status, COUNT(*) FROM job_fire WHERE job_id = :job AND scheduled_time >= :rfrom AND "
        "scheduled_time < :rto AND kind = 'backfill' GROUP BY status",
        [&](soci::statement& st) {
            st.exchange(soci::use(job_id, "job"));
            st.exchange(soci::use(from, "rfrom"));
            st.exchange(soci::use(to, "rto"));
        });
    BackfillFireCounts c;
    for (const auto& [status, n] : rows) {
        const auto parsed = ParseFireStatus(status);
        if (!parsed || !IsFinal(*parsed)) {
            c.running += n;
        } else if (*parsed == FireStatus::kSucceeded) {
            c.succeeded += n;
        } else {
            c.failed += n;
        }
    }
    return c;
}

}  // namespace sched::store
