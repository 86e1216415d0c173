#include "sched/store/job.hpp"

#include <algorithm>
#include <iterator>
#include <map>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "impl/job_row.hpp"
#include "impl/query.hpp"
#include "impl/stored_name.hpp"
#include "sched/store/workflow.hpp"

namespace sched::store {

using model::Job;
using model::JobPause;

namespace {

constexpr const char* kColumns =
    "id, name, app, handler, params, schedule_type, schedule_expr, time_zone, misfire_policy, routing, "
    "block_strategy, concurrency_limit, timeout_ms, retry_max, retry_backoff_ms, shard_total, at_least_once, "
    "enabled, next_fire_time, last_fire_time, version, created_at, updated_at, description, pause_after_failures, "
    "jitter_ms, dst_gap, dst_overlap, "
    "paused_by, paused_at, pause_note, "
    "calendar, start_at, end_at, max_runs, planned_runs, completed_at, completed_reason, concurrency_key, managed_by";

// A stored name as the warning about an unknown one shows it: JSON-quoted, bytes that are not
// UTF-8 replaced.
std::string JsonQuoted(std::string_view stored) {
    return nlohmann::json(stored).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

// Binds every column of kColumns, in order, as outputs of `st`; Finish() copies the nullable and
// boolean columns into `job` after each fetch.
struct JobRow {
    Job job;
    std::string schedule_type;
    std::string misfire_policy;
    std::string routing;
    std::string block_strategy;
    int at_least_once = 0;
    int enabled = 0;
    impl::NullableInt64 next_fire;
    impl::NullableInt64 last_fire;
    impl::NullableString paused_by;
    impl::NullableInt64 paused_at;
    impl::NullableString pause_note;
    impl::NullableInt64 start_at;
    impl::NullableInt64 end_at;
    impl::NullableInt64 max_runs;
    impl::NullableInt64 completed_at;
    impl::NullableString managed_by;

    void BindInto(soci::statement& st, impl::IntColumns& ints) {
        ints.Into(st, job.id);
        impl::IntoColumns(st, job.name, job.app, job.handler, job.params, schedule_type, job.schedule_expr,
                          job.time_zone, misfire_policy, routing, block_strategy);
        ints.Into(st, job.concurrency_limit);
        ints.Into(st, job.timeout_ms);
        ints.Into(st, job.retry_max);
        ints.Into(st, job.retry_backoff_ms);
        ints.Into(st, job.shard_total);
        ints.Into(st, at_least_once);
        ints.Into(st, enabled);
        ints.Into(st, next_fire);
        ints.Into(st, last_fire);
        ints.Into(st, job.version);
        ints.Into(st, job.created_at);
        ints.Into(st, job.updated_at);
        st.exchange(soci::into(job.description));
        ints.Into(st, job.pause_after_failures);
        ints.Into(st, job.jitter_ms);
        st.exchange(soci::into(job.dst_gap));
        st.exchange(soci::into(job.dst_overlap));
        st.exchange(soci::into(paused_by.value, paused_by.ind));
        ints.Into(st, paused_at);
        st.exchange(soci::into(pause_note.value, pause_note.ind));
        st.exchange(soci::into(job.calendar));
        ints.Into(st, start_at);
        ints.Into(st, end_at);
        ints.Into(st, max_runs);
        ints.Into(st, job.planned_runs);
        ints.Into(st, completed_at);
        impl::IntoColumns(st, job.completed_reason, job.concurrency_key, managed_by);
    }
    Job Finish() {
        // The edge where the stored names become the vocabulary's enums (sched/store/job.hpp).
        job.schedule_type = impl::StoredName(kScheduleTypeNames, schedule_type, ScheduleType::kManual, "job", job.id,
                                             "schedule_type", JsonQuoted);
        job.misfire_policy = impl::StoredName(kMisfirePolicyNames, misfire_policy, MisfirePolicy::kFireOnceNow, "job",
                                              job.id, "misfire_policy", JsonQuoted);
        job.routing =
            impl::StoredName(kRoutingNames, routing, Routing::kRoundRobin, "job", job.id, "routing", JsonQuoted);
        job.block_strategy = impl::StoredName(kBlockStrategyNames, block_strategy, BlockStrategy::kSerial, "job",
                                              job.id, "block_strategy", JsonQuoted);
        job.start_at = start_at.get();
        job.end_at = end_at.get();
        job.max_runs = max_runs.get();
        job.completed_at = completed_at.get();
        job.managed_by = managed_by.get();
        job.at_least_once = at_least_once != 0;
        job.enabled = enabled != 0;
        job.next_fire_time = next_fire.get();
        job.last_fire_time = last_fire.get();
        job.paused.reset();
        if (auto at = paused_at.get()) {
            job.paused = JobPause{paused_by.get().value_or(""), *at, pause_note.get().value_or("")};
        }
        return job;
    }
};

// Runs a SELECT of kColumns with the given bound inputs and collects every row.

// The user-editable columns, bound by name, shared by Create and Update.
struct EditableFields {
    explicit EditableFields(const Job& j)
        : job(j),
          schedule_type(ScheduleTypeName(j.schedule_type)),
          misfire_policy(MisfirePolicyName(j.misfire_policy)),
          routing(RoutingName(j.routing)),
          block_strategy(BlockStrategyName(j.block_strategy)),
          at_least_once(j.at_least_once ? 1 : 0),
          enabled(j.enabled ? 1 : 0),
          next_fire(j.next_fire_time),
          start_at(j.start_at),
          end_at(j.end_at),
          max_runs(j.max_runs),
          completed_at(j.completed_at),
          managed_by(j.managed_by) {}
    void BindUse(soci::statement& st) {
        st.exchange(soci::use(job.name, "name"));
        st.exchange(soci::use(job.app, "app"));
        st.exchange(soci::use(job.handler, "handler"));
        st.exchange(soci::use(job.params, "params"));
        st.exchange(soci::use(schedule_type, "schedule_type"));
        st.exchange(soci::use(job.schedule_expr, "schedule_expr"));
        st.exchange(soci::use(job.time_zone, "time_zone"));
        st.exchange(soci::use(misfire_policy, "misfire_policy"));
        st.exchange(soci::use(routing, "routing"));
        st.exchange(soci::use(block_strategy, "block_strategy"));
        st.exchange(soci::use(job.concurrency_limit, "concurrency_limit"));
        st.exchange(soci::use(job.timeout_ms, "timeout_ms"));
        st.exchange(soci::use(job.retry_max, "retry_max"));
        st.exchange(soci::use(job.retry_backoff_ms, "retry_backoff_ms"));
        st.exchange(soci::use(job.shard_total, "shard_total"));
        st.exchange(soci::use(at_least_once, "at_least_once"));
        st.exchange(soci::use(enabled, "enabled"));
        st.exchange(impl::Use(next_fire, "next_fire_time"));
        st.exchange(soci::use(job.description, "description"));
        st.exchange(soci::use(job.pause_after_failures, "pause_after_failures"));
        st.exchange(soci::use(job.jitter_ms, "jitter_ms"));
        st.exchange(soci::use(job.dst_gap, "dst_gap"));
        st.exchange(soci::use(job.dst_overlap, "dst_overlap"));
        st.exchange(soci::use(job.calendar, "calendar"));
        st.exchange(impl::Use(start_at, "start_at"));
        st.exchange(impl::Use(end_at, "end_at"));
        st.exchange(impl::Use(max_runs, "max_runs"));
        st.exchange(soci::use(job.planned_runs, "planned_runs"));
        st.exchange(impl::Use(completed_at, "completed_at"));
        st.exchange(soci::use(job.completed_reason, "completed_reason"));
        st.exchange(soci::use(job.concurrency_key, "concurrency_key"));
        st.exchange(impl::Use(managed_by, "managed_by"));
    }
    Job job;
    std::string schedule_type;
    std::string misfire_policy;
    std::string routing;
    std::string block_strategy;
    int at_least_once;
    int enabled;
    impl::NullableInt64 next_fire;
    impl::NullableInt64 start_at;
    impl::NullableInt64 end_at;
    impl::NullableInt64 max_runs;
    impl::NullableInt64 completed_at;
    impl::NullableString managed_by;
};

}  // namespace

Result<Job> JobRepository::Create(const Job& job) {
    auto id = db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<std::int64_t> {
        EditableFields fields(job);
        soci::statement st(s);
        fields.BindUse(st);
        st.alloc();
        const std::string now(db_.dialect().NowMs());
        st.prepare(
            "INSERT INTO job (name, app, handler, params, schedule_type, schedule_expr, time_zone, misfire_policy, "
            "routing, block_strategy, concurrency_limit, timeout_ms, retry_max, retry_backoff_ms, shard_total, "
            "at_least_once, enabled, next_fire_time, description, pause_after_failures, jitter_ms, dst_gap, "
            "dst_overlap, calendar, start_at, end_at, max_runs, planned_runs, completed_at, completed_reason, "
            "concurrency_key, managed_by, version, created_at, updated_at) VALUES (:name, "
            ":app, :handler, :params, :schedule_type, :schedule_expr, :time_zone, :misfire_policy, :routing, "
            ":block_strategy, :concurrency_limit, :timeout_ms, :retry_max, :retry_backoff_ms, :shard_total, "
            ":at_least_once, :enabled, :next_fire_time, :description, :pause_after_failures, :jitter_ms, :dst_gap, "
            ":dst_overlap, :calendar, :start_at, :end_at, :max_runs, :planned_runs, :completed_at, "
            ":completed_reason, :concurrency_key, :managed_by, 1, " +
            now + ", " + now + ")");
        st.define_and_bind();
        st.execute(true);
        long long new_id = 0;
        if (!s.get_last_insert_id("job", new_id)) return Internal("no id for the new job");
        return static_cast<std::int64_t>(new_id);
    });
    if (!id.ok()) {
        if (id.status().code() == Code::kAlreadyExists) {
            return AlreadyExists("app \"" + job.app + "\" already has a job named \"" + job.name + "\"");
        }
        return id.status();
    }
    return Get(*id);
}

Result<Job> JobRepository::Get(std::int64_t id) {
    return impl::GetById(db_, "job", id, Find);
}

Result<std::vector<Job>> JobRepository::List(const JobFilter& filter) {
    return db_.Run([&](soci::session& s) {
        std::string sql = std::string("SELECT ") + kColumns + " FROM job WHERE id > :after_id";
        const std::string app = filter.app.value_or("");
        const int enabled = filter.enabled.value_or(false) ? 1 : 0;
        // LIKE with an escape character: a user searching for "50%" means the characters.
        std::string pattern = "%";
        for (char c : filter.name_contains) {
            if (c == '%' || c == '_' || c == '!') pattern += '!';
            pattern += c;
        }
        pattern += "%";
        if (filter.app) sql += " AND app = :app";
        if (filter.enabled) sql += " AND enabled = :enabled";
        if (!filter.name_contains.empty()) sql += " AND name LIKE :pattern ESCAPE '!'";
        const int limit = std::clamp(filter.limit, 1, 1000);
        sql += " ORDER BY id LIMIT " + std::to_string(limit);
        return impl::SelectRows<JobRow>(s, sql, [&](soci::statement& st) {
            st.exchange(soci::use(filter.after_id, "after_id"));
            if (filter.app) st.exchange(soci::use(app, "app"));
            if (filter.enabled) st.exchange(soci::use(enabled, "enabled"));
            if (!filter.name_contains.empty()) st.exchange(soci::use(pattern, "pattern"));
        });
    });
}

Result<Job> JobRepository::Update(const Job& job, std::int64_t expected_version) {
    Status updated = db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Status {
        EditableFields fields(job);
        soci::statement st(s);
        fields.BindUse(st);
        const std::int64_t id = job.id;
        st.exchange(soci::use(id, "id"));
        st.exchange(soci::use(expected_version, "expected_version"));
        st.alloc();
        st.prepare(
            "UPDATE job SET name = :name, app = :app, handler = :handler, params = :params, schedule_type = "
            ":schedule_type, schedule_expr = :schedule_expr, time_zone = :time_zone, misfire_policy = "
            ":misfire_policy, routing = :routing, block_strategy = :block_strategy, concurrency_limit = "
            ":concurrency_limit, timeout_ms = :timeout_ms, retry_max = :retry_max, retry_backoff_ms = "
            ":retry_backoff_ms, shard_total = :shard_total, at_least_once = :at_least_once, enabled = :enabled, "
            "next_fire_time = :next_fire_time, description = :description, pause_after_failures = "
            ":pause_after_failures, jitter_ms = :jitter_ms, dst_gap = :dst_gap, dst_overlap = :dst_overlap, "
            "calendar = :calendar, start_at = :start_at, end_at = :end_at, max_runs = "
            ":max_runs, "
            "planned_runs = :planned_runs, completed_at = :completed_at, completed_reason = :completed_reason, "
            "concurrency_key = :concurrency_key, managed_by = :managed_by, version = version + 1, updated_at = " +
            std::string(db_.dialect().NowMs()) + " WHERE id = :id AND version = :expected_version");
        st.define_and_bind();
        if (impl::ExecuteAffected(st) == 1) return Status::Ok();
        std::int64_t current = 0;
        soci::indicator ind = soci::i_null;
        s << "SELECT version FROM job WHERE id = :id", soci::use(id), soci::into(current, ind);
        if (!s.got_data()) return NotFound("job " + std::to_string(id) + " not found");
        return Aborted("job " + std::to_string(id) + " is at version " + std::to_string(current) + ", not " +
                       std::to_string(expected_version) + " (changed by someone else)");
    });
    if (!updated.ok()) {
        if (updated.code() == Code::kAlreadyExists) {
            return AlreadyExists("app \"" + job.app + "\" already has a job named \"" + job.name + "\"");
        }
        return updated;
    }
    return Get(job.id);
}

Status JobRepository::Delete(std::int64_t id) {
    return db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Status {
        // Checked in the write transaction, as a calendar's users are: a workflow naming this
        // job as a step either committed before (and is seen here) or checks the job after.
        if (auto step = WorkflowRepository::StepUsingJob(s, id)) {
            return FailedPrecondition("job " + std::to_string(id) + " is the step " + *step +
                                      " (workflow/step); remove the step first");
        }
        soci::statement st = (s.prepare << "DELETE FROM job WHERE id = :id", soci::use(id));
        if (impl::ExecuteAffected(st) == 0) return NotFound("job " + std::to_string(id) + " not found");
        // Its last success goes with it (the gauge reads only jobs that exist; a success being
        // recorded at this moment may leave a row no read joins).
        s << "DELETE FROM job_last_success WHERE job_id = :id", soci::use(id);
        return Status::Ok();
    });
}

std::vector<Job> JobRepository::SelectDue(soci::session& s, std::int64_t until_ms, int limit, const JobShard& shard) {
    // Served by idx_job_due (enabled, next_fire_time): the cost depends on the due jobs, not on
    // how many jobs the table holds.
    return impl::SelectRows<JobRow>(
        s,
        std::string("SELECT ") + kColumns + " FROM job WHERE enabled = 1 AND next_fire_time <= :until" +
            shard.JobFilter("id") + " ORDER BY next_fire_time, id LIMIT " + std::to_string(std::max(1, limit)),
        [&](soci::statement& st) { st.exchange(soci::use(until_ms, "until")); });
}

bool JobRepository::AdvanceSchedule(soci::session& s, std::int64_t id, std::int64_t expected_version,
                                    std::optional<std::int64_t> expected_next,
                                    std::optional<std::int64_t> next_fire_time,
                                    std::optional<std::int64_t> last_fire_time) {
    impl::NullableInt64 next(next_fire_time);
    impl::NullableInt64 last(last_fire_time);
    impl::NullableInt64 expected(expected_next);
    const int expected_null = expected_next ? 0 : 1;
    // NULL never equals NULL in SQL, hence the explicit IS NULL branch for a job with no next time.
    soci::statement st =
        (s.prepare << "UPDATE job SET next_fire_time = :next, last_fire_time = COALESCE(:last, last_fire_time) "
                      "WHERE id = :id AND version = :version AND "
                      "((:expected_null = 1 AND next_fire_time IS NULL) OR next_fire_time = :expected)",
         impl::Use(next, "next"), impl::Use(last, "last"), soci::use(id, "id"), soci::use(expected_version, "version"),
         soci::use(expected_null, "expected_null"), soci::use(expected.value, "expected"));
    return impl::ExecuteAffected(st) == 1;
}

std::vector<bool> JobRepository::AdvanceMany(soci::session& s, const std::vector<ScheduleAdvance>& advances) {
    // 64 jobs per statement: MariaDB evaluates each row's CASE arms in turn, so a statement of
    // n jobs costs n^2 comparisons (docs/architecture/callbacks.md). A batch of up to 120 is
    // one statement all the same (a planning scan at 100 fires/s: one statement, not two); at 8
    // values a job that stays under the 999 parameters older SQLite builds accept.
    constexpr std::size_t kChunk = 64;
    constexpr std::size_t kOneStatement = 120;
    const std::size_t chunk = advances.size() <= kOneStatement ? advances.size() : kChunk;
    std::vector<bool> advanced(advances.size(), false);
    for (std::size_t begin = 0; begin < advances.size(); begin += chunk) {
        const std::size_t end = std::min(advances.size(), begin + chunk);
        impl::BoundValues values;
        std::string ids;
        std::string set_next;
        std::string set_last;
        std::string cas;
        for (std::size_t i = begin; i < end; ++i) {
            const auto& a = advances[i];
            ids += (ids.empty() ? "" : ", ") + values.Add(a.id);
            set_next +=
                " WHEN " + values.Add(a.id) + " THEN " + (a.next_fire_time ? values.Add(*a.next_fire_time) : "NULL");
            if (a.last_fire_time) set_last += " WHEN " + values.Add(a.id) + " THEN " + values.Add(*a.last_fire_time);
            // NULL never equals NULL in SQL, hence IS NULL for a job with no next time.
            cas += " WHEN " + values.Add(a.id) + " THEN (version = " + values.Add(a.expected_version) +
                   " AND next_fire_time " +
                   (a.expected_next ? "= " + values.Add(*a.expected_next) : std::string("IS NULL")) + ")";
        }
        // The id IN list makes the statement a primary-key range access; each job's CAS is a
        // CASE on its id, not an OR of (id = .. AND ..) terms: MariaDB's range optimizer built a
        // tree from every term of such an OR, a quarter of its CPU at 2,000 fires/s.
        std::string sql = "UPDATE job SET next_fire_time = CASE id" + set_next + " ELSE next_fire_time END";
        if (!set_last.empty()) sql += ", last_fire_time = CASE id" + set_last + " ELSE last_fire_time END";
        sql += " WHERE id IN (" + ids + ") AND CASE id" + cas + " ELSE 0 END";
        const long long matched = impl::ExecuteBound(s, sql, values);
        if (matched == static_cast<long long>(end - begin)) {
            std::fill(advanced.begin() + static_cast<std::ptrdiff_t>(begin),
                      advanced.begin() + static_cast<std::ptrdiff_t>(end), true);
            continue;
        }
        if (matched == 0) continue;
        // Some CAS lost: a job won if it now holds the new values under the expected version.
        // A job that lost could look the same only if someone else had written that very
        // next_fire_time without an edit (which bumps the version); only the master writes
        // schedules that way, and it works under the fence (one master at a time).
        struct Row {
            std::int64_t id = 0;
            std::int64_t version = 0;
            impl::NullableInt64 next;
            impl::NullableInt64 last;
            void BindInto(soci::statement& st) { impl::IntoColumns(st, id, version, next, last); }
            Row Finish() const { return *this; }
        };
        impl::BoundValues select_values;
        std::string select_ids;
        for (std::size_t i = begin; i < end; ++i) {
            select_ids += (select_ids.empty() ? "" : ", ") + select_values.Add(advances[i].id);
        }
        std::map<std::int64_t, Row> rows;
        for (const auto& row : impl::SelectRows<Row>(
                 s, "SELECT id, version, next_fire_time, last_fire_time FROM job WHERE id IN (" + select_ids + ")",
                 [&](soci::statement& st) { select_values.Bind(st); })) {
            rows.emplace(row.id, row);
        }
        for (std::size_t i = begin; i < end; ++i) {
            const auto& a = advances[i];
            const auto it = rows.find(a.id);
            advanced[i] = it != rows.end() && it->second.version == a.expected_version &&
                          it->second.next.get() == a.next_fire_time &&
                          (!a.last_fire_time || it->second.last.get() == a.last_fire_time);
        }
    }
    return advanced;
}

std::optional<Job> JobRepository::Find(soci::session& s, std::int64_t id) {
    auto jobs = impl::SelectRows<JobRow>(s, std::string("SELECT ") + kColumns + " FROM job WHERE id = :id",
                                         [&](soci::statement& st) { st.exchange(soci::use(id, "id")); });
    if (jobs.empty()) return std::nullopt;
    return jobs.front();
}

std::optional<std::int64_t> JobRepository::EarliestDue(soci::session& s, const JobShard& shard) {
    std::int64_t t = 0;
    soci::indicator ind = soci::i_null;
    s << "SELECT MIN(next_fire_time) FROM job WHERE enabled = 1" + shard.JobFilter("id"), soci::into(t, ind);
    return ind == soci::i_ok ? std::optional<std::int64_t>(t) : std::nullopt;
}

std::optional<std::int64_t> JobRepository::EarliestDueAfter(soci::session& s, std::int64_t after_ms,
                                                            const JobShard& shard) {
    std::int64_t t = 0;
    soci::indicator ind = soci::i_null;
    s << "SELECT MIN(next_fire_time) FROM job WHERE enabled = 1 AND next_fire_time > :after" + shard.JobFilter("id"),
        soci::use(after_ms, "after"), soci::into(t, ind);
    return ind == soci::i_ok ? std::optional<std::int64_t>(t) : std::nullopt;
}

int JobRepository::CountDueAt(soci::session& s, std::int64_t at_ms, int cap, const JobShard& shard) {
    long long n = 0;
    s << "SELECT COUNT(*) FROM (SELECT id FROM job WHERE enabled = 1 AND next_fire_time = :at" + shard.JobFilter("id") +
             " LIMIT " + std::to_string(std::max(1, cap)) + ") capped",
        soci::use(at_ms, "at"), soci::into(n);
    return static_cast<int>(n);
}

std::vector<Job> JobRepository::SelectDueAt(soci::session& s, std::int64_t at_ms, int limit, const JobShard& shard) {
    return impl::SelectRows<JobRow>(s,
                                    std::string("SELECT ") + kColumns +
                                        " FROM job WHERE enabled = 1 AND next_fire_time = :at" + shard.JobFilter("id") +
                                        " ORDER BY id LIMIT " + std::to_string(std::max(1, limit)),
                                    [&](soci::statement& st) { st.exchange(soci::use(at_ms, "at")); });
}

std::vector<Job> JobRepository::FindMany(soci::session& s, const std::vector<std::int64_t>& ids) {
    // Ids are integers formatted here, never text from outside, so they are inlined: one
    // statement per chunk instead of one bound placeholder each.
    constexpr std::size_t kChunk = 500;
    return impl::SelectByIds<JobRow>(s, ids, kChunk, [](const std::string& list) {
        return std::string("SELECT ") + kColumns + " FROM job WHERE id IN (" + list + ")";
    });
}

namespace impl {

std::string QualifiedColumns(std::string_view columns, std::string_view alias) {
    std::string out;
    std::string_view rest = columns;
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        std::string_view column = rest.substr(0, comma);
        while (column.starts_with(' ')) column.remove_prefix(1);
        out.append(out.empty() ? "" : ", ").append(alias).append(".").append(column);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
    return out;
}

std::string JobColumns(std::string_view alias) {
    return QualifiedColumns(kColumns, alias);
}

struct JoinedJobRow::Row {
    JobRow row;
};

JoinedJobRow::JoinedJobRow() : row_(std::make_unique<Row>()) {}
JoinedJobRow::~JoinedJobRow() = default;
JoinedJobRow::JoinedJobRow(JoinedJobRow&&) noexcept = default;
JoinedJobRow& JoinedJobRow::operator=(JoinedJobRow&&) noexcept = default;

void JoinedJobRow::BindInto(soci::statement& st, IntColumns& ints) {
    row_->row.BindInto(st, ints);
}

model::Job JoinedJobRow::Finish() {
    return row_->row.Finish();
}

}  // namespace impl

std::vector<std::int64_t> JobRepository::ListIdsAfter(soci::session& s, std::int64_t after_id, int limit) {
    return impl::SelectRows<impl::IdRow>(
        s, "SELECT id FROM job WHERE id > :a ORDER BY id LIMIT " + std::to_string(std::max(1, limit)),
        [&](soci::statement& st) { st.exchange(soci::use(after_id, "a")); });
}

bool JobRepository::Pause(soci::session& s, const db::Dialect& dialect, std::int64_t id,
                          std::int64_t unchanged_since_ms, const std::string& note) {
    const std::string by = "scheduler";
    const std::string now(dialect.NowMs());
    soci::statement st =
        (s.prepare << "UPDATE job SET enabled = 0, next_fire_time = NULL, version = version + 1, updated_at = " + now +
                          ", paused_by = :by, paused_at = " + now +
                          ", pause_note = :note WHERE id = :id AND enabled = 1 AND updated_at <= :since",
         soci::use(by, "by"), soci::use(note, "note"), soci::use(id, "id"), soci::use(unchanged_since_ms, "since"));
    return impl::ExecuteAffected(st) == 1;
}

Status JobRepository::SetPaused(std::int64_t id, const std::optional<JobPause>& pause) {
    return db_.Run([&](soci::session& s) -> Status {
        impl::NullableString by;
        impl::NullableString note;
        if (pause) {
            by.set(pause->by);
            note.set(pause->note);
        }
        const std::string at = pause ? std::string(db_.dialect().NowMs()) : "NULL";
        soci::statement st =
            (s.prepare << "UPDATE job SET paused_by = :by, paused_at = " + at + ", pause_note = :note WHERE id = :id",
             impl::Use(by, "by"), impl::Use(note, "note"), soci::use(id, "id"));
        if (impl::ExecuteAffected(st) == 0) return NotFound("job " + std::to_string(id) + " not found");
        return Status::Ok();
    });
}

void JobRepository::RecordRuns(soci::session& s, const std::vector<JobRunsUpdate>& updates) {
    for (const auto& u : updates) {
        std::int64_t id = u.id;
        std::int64_t runs = u.runs;
        impl::NullableInt64 completed(u.completed_at);
        std::string reason = u.completed_reason;
        const int completed_null = u.completed_at ? 0 : 1;
        const int completed_null2 = completed_null;  // soci: no repeated named parameters
        // A completed job keeps `enabled` (it was not paused) and loses its next time.
        s << "UPDATE job SET planned_runs = planned_runs + :runs, completed_at = COALESCE(:completed_at, "
             "completed_at), completed_reason = CASE WHEN :completed_null = 1 THEN completed_reason ELSE :reason "
             "END, "
             "next_fire_time = CASE WHEN :completed_null2 = 1 THEN next_fire_time ELSE NULL END WHERE id = :id",
            soci::use(runs, "runs"), impl::Use(completed, "completed_at"), soci::use(completed_null, "completed_null"),
            soci::use(reason, "reason"), soci::use(completed_null2, "completed_null2"), soci::use(id, "id");
    }
}

std::vector<std::string> JobRepository::NamesUsingCalendar(soci::session& s, const std::string& calendar, int limit) {
    struct NameRow {
        std::string name;
        void BindInto(soci::statement& st) { st.exchange(soci::into(name)); }
        std::string Finish() const { return name; }
    };
    return impl::SelectRows<NameRow>(
        s, "SELECT name FROM job WHERE calendar = :calendar ORDER BY id LIMIT " + std::to_string(std::max(1, limit)),
        [&](soci::statement& st) { st.exchange(soci::use(calendar, "calendar")); });
}

}  // namespace sched::store
