#include "sched/store/fire.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <tuple>

#include "impl/fire_columns.hpp"
#include "impl/followup.hpp"
#include "impl/query.hpp"
#include "sched/common/job_vocabulary.hpp"
#include "sched/common/name_table.hpp"
#include "sched/store/fire_log.hpp"

namespace sched::store {

using model::Fire;
using model::FireKind;
using model::FireKindName;
using model::FireReason;
using model::FireReasonName;
using model::FireStatus;
using model::FireStatusName;
using model::IsFinal;
using model::ParseFireKind;
using model::ParseFireReason;
using model::StoredDueAt;

namespace {

constexpr auto kOutcomeNames = MakeNameTable<ResultOutcome>(
    {"applied", "duplicate", "conflict", "not_found", "forbidden", "stale_attempt", "stale_epoch", "wrong_executor"});

constexpr const char* kColumns =
    "id, job_id, scheduled_time, kind, attempt, shard_index, shard_total, epoch, assigned_node, executor_address, "
    "status, due_at, followup, created_at, dispatched_at, started_at, finished_at, result_code, result_message, "
    "dispatch_epoch, reason, skipped_until, skipped_count, workflow_run_id, workflow_step, trace_parent, trace_state";

struct FireRow {
    Fire fire;
    std::string kind;
    std::string status;
    int followup = 0;
    impl::NullableString assigned_node;
    impl::NullableString executor_address;
    impl::NullableInt64 dispatched_at;
    impl::NullableInt64 started_at;
    impl::NullableInt64 finished_at;
    impl::NullableInt64 result_code;
    impl::NullableString result_message;
    impl::NullableInt64 dispatch_epoch;
    impl::NullableString reason;
    impl::NullableInt64 skipped_until;
    impl::NullableInt64 skipped_count;
    impl::NullableInt64 workflow_run_id;
    impl::NullableString workflow_step;
    impl::NullableString trace_parent;
    impl::NullableString trace_state;

    void BindInto(soci::statement& st, impl::IntColumns& ints) {
        impl::IntoFireHead(st, ints, fire, kind, assigned_node);
        st.exchange(soci::into(executor_address.value, executor_address.ind));
        st.exchange(soci::into(status));
        ints.Into(st, fire.due_at);
        ints.Into(st, followup);
        ints.Into(st, fire.created_at);
        ints.Into(st, dispatched_at);
        ints.Into(st, started_at);
        ints.Into(st, finished_at);
        ints.Into(st, result_code);
        st.exchange(soci::into(result_message.value, result_message.ind));
        ints.Into(st, dispatch_epoch);
        st.exchange(soci::into(reason.value, reason.ind));
        ints.Into(st, skipped_until);
        ints.Into(st, skipped_count);
        ints.Into(st, workflow_run_id);
        st.exchange(soci::into(workflow_step.value, workflow_step.ind));
        st.exchange(soci::into(trace_parent.value, trace_parent.ind));
        st.exchange(soci::into(trace_state.value, trace_state.ind));
    }
    Fire Finish() {
        impl::FinishFireHead(fire, kind, status, assigned_node);
        fire.followup = followup != 0;
        fire.executor_address = executor_address.get();
        fire.dispatched_at = dispatched_at.get();
        fire.started_at = started_at.get();
        fire.finished_at = finished_at.get();
        fire.result_code = result_code.get() ? std::optional<int>(static_cast<int>(*result_code.get())) : std::nullopt;
        fire.result_message = result_message.get();
        fire.dispatch_epoch = dispatch_epoch.get();
        // A reason this build does not know (written by a newer one) reads as none. Assigned
        // for every row: `fire` is reused across the rows of one SELECT.
        const auto stored_reason = reason.get();
        fire.reason = stored_reason ? ParseFireReason(*stored_reason) : std::nullopt;
        fire.skipped_until = skipped_until.get();
        fire.skipped_count = skipped_count.get();
        fire.workflow_run_id = workflow_run_id.get();
        fire.workflow_step = workflow_step.get();
        fire.trace_parent = trace_parent.get();
        fire.trace_state = trace_state.get();
        return fire;
    }
};

// Tables whose rows belong to one fire (column `fire_id`): DeleteMany removes their rows with
// the fire's. One line per table; a table added by a migration must be added here, or its rows
// outlive their fires (the stored fire log, `job_fire_log`, migration 006).
const std::vector<std::string_view> kFireChildTables = {"job_fire_log"};

std::string StatusList(std::initializer_list<FireStatus> statuses) {
    // Names come from kStatusNames, never from input, so inlining them is safe.
    std::string out;
    for (FireStatus s : statuses) out += (out.empty() ? "'" : ", '") + std::string(FireStatusName(s)) + "'";
    return out;
}

}  // namespace

std::string_view ResultOutcomeName(ResultOutcome outcome) {
    return kOutcomeNames.Name(outcome);
}

namespace {

bool IsRegisteredInstance(soci::session& s, const std::string& app, const std::string& address) {
    int registered = 0;
    s << "SELECT COUNT(*) FROM executor_instance WHERE app = :app AND address = :address", soci::use(app, "app"),
        soci::use(address, "address"), soci::into(registered);
    return registered > 0;
}

// The address check of a result for `fire` (its attempt and epoch checked before): the instance
// the fire was dispatched to, or, when none was recorded (a result beating the slave's record
// of the 202, a fire lost while dispatching), a registered instance of its app.
bool FromItsInstance(soci::session& s, const ExecutorResult& r, const Fire& fire,
                     const std::optional<std::string>& app) {
    if (!r.address) return true;  // not checked (callers that are not app-scoped)
    if (fire.executor_address) return *fire.executor_address == *r.address;
    return app && IsRegisteredInstance(s, *app, *r.address);
}

// A result not applied that still answers the fire's dispatch keeps its log, when the fire has
// ended and has none yet: the cluster recorded the end itself (the API's kill, the slave's
// timeout, the sweep), and the executor's report of that same run came second.
void KeepLogOfRefused(soci::session& s, const ExecutorResult& r, const Fire& fire,
                      const std::optional<std::string>& app) {
    // A fire never dispatched has no run whose log this could be.
    if (!r.log || !IsFinal(fire.status) || !fire.dispatched_at) return;
    if (r.epoch && fire.dispatch_epoch && *r.epoch != *fire.dispatch_epoch) return;
    if (!FromItsInstance(s, r, fire, app)) return;
    int stored = 0;
    s << "SELECT COUNT(*) FROM job_fire_log WHERE fire_id = :id", soci::use(fire.id, "id"), soci::into(stored);
    if (stored == 0) FireLogs::StoreMany(s, {&r});
}

// A success for a fire recorded lost (FireRepository::ApplyResult): the outcome, or nullopt when
// the fire changed between the read and the write.
std::optional<ResultOutcome> ApplyLateSuccess(soci::session& s, const ExecutorResult& r, const Fire& fire,
                                              const std::optional<std::string>& app) {
    // Only a result tied to the very dispatch that was lost: without both epochs it could answer
    // an earlier dispatch of the same attempt.
    if (!r.epoch || !fire.dispatch_epoch) return ResultOutcome::kConflict;
    if (*r.epoch != *fire.dispatch_epoch) return ResultOutcome::kStaleEpoch;
    if (!FromItsInstance(s, r, fire, app)) return ResultOutcome::kWrongExecutor;

    const std::string lost_for(fire.reason ? FireReasonName(*fire.reason) : std::string_view("lost"));
    const std::string message = "succeeded after it was recorded lost (" + lost_for + ")" +
                                (r.result_message.empty() ? std::string() : ": " + r.result_message);
    const std::string succeeded(FireStatusName(FireStatus::kSucceeded));
    const std::string late(FireReasonName(FireReason::kSucceededLate));
    const bool set_started = r.started_ms > 0 && !fire.started_at;
    const bool record_address = r.address && !fire.executor_address;
    // followup stays as it is: a follow-up not yet done now sees a success (no retry), one done
    // already planned a retry, ended below, and must not plan the next one twice.
    std::string sql =
        "UPDATE job_fire SET status = :to_status, reason = :reason, finished_at = :finished_at, "
        "result_code = :result_code, result_message = :result_message";
    if (set_started) sql += ", started_at = :started_at";
    if (record_address) sql += ", executor_address = :address";
    sql += " WHERE id = :id AND attempt = :attempt AND status = 'lost' AND dispatch_epoch = :epoch";
    if (r.address) sql += fire.executor_address ? " AND executor_address = :address" : " AND executor_address IS NULL";
    soci::statement st(s);
    st.exchange(soci::use(succeeded, "to_status"));
    st.exchange(soci::use(late, "reason"));
    st.exchange(soci::use(r.finished_ms, "finished_at"));
    st.exchange(soci::use(r.result_code, "result_code"));
    st.exchange(soci::use(message, "result_message"));
    if (set_started) st.exchange(soci::use(r.started_ms, "started_at"));
    if (r.address) st.exchange(soci::use(*r.address, "address"));
    st.exchange(soci::use(r.fire_id, "id"));
    st.exchange(soci::use(r.attempt, "attempt"));
    st.exchange(soci::use(*r.epoch, "epoch"));
    st.alloc();
    st.prepare(sql);
    st.define_and_bind();
    if (impl::ExecuteAffected(st) != 1) return std::nullopt;
    FireLogs::StoreMany(s, {&r});

    // The retry the loss owed an at-least-once job, while no slave has claimed it: the run it
    // retries succeeded. A claimed one runs; both runs are then on record.
    const std::string skipped(FireStatusName(FireStatus::kSkipped));
    const std::string retry_kind(FireKindName(FireKind::kRetry));
    const std::string why = "not run: attempt " + std::to_string(fire.attempt) + " (fire " + std::to_string(fire.id) +
                            ") succeeded after it was recorded lost";
    const int next_attempt = fire.attempt + 1;
    const db::Dialect dialect = impl::SessionDialect(s);
    // followup = 1 as for every skip: the master clears it, or advances a fixed-delay job from it.
    s << "UPDATE job_fire SET status = :skipped, reason = :reason, finished_at = " + std::string(dialect.NowMs()) +
             ", result_message = :why, followup = 1 WHERE job_id = :job AND scheduled_time = :t AND kind = :kind "
             "AND attempt = :attempt AND shard_index = :shard AND status = 'pending'",
        soci::use(skipped, "skipped"), soci::use(late, "reason"), soci::use(why, "why"), soci::use(fire.job_id, "job"),
        soci::use(fire.scheduled_time, "t"), soci::use(retry_kind, "kind"), soci::use(next_attempt, "attempt"),
        soci::use(fire.shard_index, "shard");
    return ResultOutcome::kApplied;
}

// One round of ApplyResult: the outcome, or nullopt when the fire changed between the read and
// the write (the CAS matched no row).
std::optional<ResultOutcome> ApplyResultOnce(soci::session& s, const ExecutorResult& r,
                                             const std::function<bool(const std::string& app)>& app_allowed) {
    const auto fire = FireRepository::Find(s, r.fire_id);
    if (!fire) return ResultOutcome::kNotFound;
    std::string app;
    soci::indicator app_ind = soci::i_null;
    s << "SELECT app FROM job WHERE id = :id", soci::use(fire->job_id, "id"), soci::into(app, app_ind);
    const bool job_exists = s.got_data() && app_ind == soci::i_ok;
    const std::optional<std::string> job_app = job_exists ? std::optional<std::string>(app) : std::nullopt;
    if (!app_allowed(job_exists ? app : std::string())) return ResultOutcome::kForbidden;
    if (fire->attempt != r.attempt) return ResultOutcome::kStaleAttempt;
    if (fire->status == r.status) {
        KeepLogOfRefused(s, r, *fire, job_app);
        return ResultOutcome::kDuplicate;
    }
    if (fire->status == FireStatus::kLost && r.status == FireStatus::kSucceeded && fire->kind != FireKind::kWorkflow) {
        return ApplyLateSuccess(s, r, *fire, job_app);
    }
    if (fire->status != FireStatus::kDispatching && fire->status != FireStatus::kRunning) {
        KeepLogOfRefused(s, r, *fire, job_app);
        return ResultOutcome::kConflict;
    }
    if (r.epoch && fire->dispatch_epoch && *r.epoch != *fire->dispatch_epoch) return ResultOutcome::kStaleEpoch;
    if (r.address) {
        if (fire->status == FireStatus::kRunning) {
            if (fire->executor_address != r.address) return ResultOutcome::kWrongExecutor;
        } else if (!job_exists || !IsRegisteredInstance(s, app, *r.address)) {
            // Still dispatching: the slave has not recorded which instance took it, so the
            // address must at least be an instance of this fire's app.
            return ResultOutcome::kWrongExecutor;
        }
    }

    // Every check again in the write itself: the row may have changed since it was read
    // (READ COMMITTED reads do not lock), e.g. the slave recorded `running` on another address.
    const std::string to(FireStatusName(r.status));
    // A success of a cron job needs nothing from the master: flagging it would cost one more
    // write of the row (and of idx_fire_followup) when the master clears the flag.
    std::string sql =
        "UPDATE job_fire SET status = :to_status, finished_at = :finished_at, result_code = :result_code, "
        "result_message = :result_message, followup = " +
        (impl::MayEndWithoutFollowup(r.status) ? "CASE WHEN " + impl::NothingFollowsSql() + " THEN 0 ELSE 1 END"
                                               : std::string("1"));
    if (r.started_ms > 0 && !fire->started_at) sql += ", started_at = :started_at";
    const bool record_address = r.address && fire->status == FireStatus::kDispatching;
    if (record_address) sql += ", executor_address = :address";
    sql += " WHERE id = :id AND attempt = :attempt";
    if (fire->status == FireStatus::kRunning) {
        sql += " AND status = 'running'";
        if (r.address) sql += " AND executor_address = :address";
    } else {
        sql += " AND status = 'dispatching'";
    }
    if (r.epoch && fire->dispatch_epoch) sql += " AND dispatch_epoch = :epoch";
    soci::statement st(s);
    st.exchange(soci::use(to, "to_status"));
    st.exchange(soci::use(r.finished_ms, "finished_at"));
    st.exchange(soci::use(r.result_code, "result_code"));
    st.exchange(soci::use(r.result_message, "result_message"));
    if (r.started_ms > 0 && !fire->started_at) st.exchange(soci::use(r.started_ms, "started_at"));
    if (r.address) st.exchange(soci::use(*r.address, "address"));
    st.exchange(soci::use(r.fire_id, "id"));
    st.exchange(soci::use(r.attempt, "attempt"));
    if (r.epoch && fire->dispatch_epoch) st.exchange(soci::use(*r.epoch, "epoch"));
    st.alloc();
    st.prepare(sql);
    st.define_and_bind();
    if (impl::ExecuteAffected(st) != 1) return std::nullopt;
    // Only now, in the same transaction: a refused or lost result never stores its log.
    FireLogs::StoreMany(s, {&r});
    return ResultOutcome::kApplied;
}

}  // namespace

ResultOutcome FireRepository::ApplyResult(soci::session& s, const ExecutorResult& r,
                                          const std::function<bool(const std::string& app)>& app_allowed) {
    // A fire only moves forward (dispatching -> running -> final) and a lost CAS means it moved:
    // the usual case is a fast handler's result racing the slave's record of the 202 (on MySQL
    // the read does not lock). The second round judges the fire as it is now, so that result is
    // applied to the running fire rather than dropped; a third loss is a real conflict.
    for (int round = 0; round < 3; ++round) {
        if (auto outcome = ApplyResultOnce(s, r, app_allowed)) return *outcome;
    }
    return ResultOutcome::kConflict;
}

std::optional<Fire> FireRepository::Find(soci::session& s, std::int64_t id) {
    auto fires = impl::SelectRows<FireRow>(s, std::string("SELECT ") + kColumns + " FROM job_fire WHERE id = :id",
                                           [&](soci::statement& st) { st.exchange(soci::use(id, "id")); });
    if (fires.empty()) return std::nullopt;
    return fires.front();
}

Result<Fire> FireRepository::Get(std::int64_t id) {
    return impl::GetById(db_, "fire", id, Find);
}

Result<std::vector<Fire>> FireRepository::List(const FireFilter& f) {
    return db_.Run([&](soci::session& s) {
        std::string sql = std::string("SELECT ") + kColumns + " FROM job_fire WHERE 1 = 1";
        const std::int64_t job_id = f.job_id.value_or(0);
        const std::string status(f.status ? FireStatusName(*f.status) : "");
        const std::string reason(f.reason ? FireReasonName(*f.reason) : "");
        const std::int64_t from = f.scheduled_from.value_or(0);
        const std::int64_t to = f.scheduled_to.value_or(0);
        if (f.job_id) sql += " AND job_id = :job_id";
        if (f.status) sql += " AND status = :status";
        if (f.reason) sql += " AND reason = :reason";
        if (f.scheduled_from) sql += " AND scheduled_time >= :from_ms";
        if (f.scheduled_to) sql += " AND scheduled_time < :to_ms";
        if (f.before_id > 0) sql += " AND id < :before_id";
        sql += " ORDER BY id DESC LIMIT " + std::to_string(std::clamp(f.limit, 1, 1000));
        return impl::SelectRows<FireRow>(s, sql, [&](soci::statement& st) {
            if (f.job_id) st.exchange(soci::use(job_id, "job_id"));
            if (f.status) st.exchange(soci::use(status, "status"));
            if (f.reason) st.exchange(soci::use(reason, "reason"));
            if (f.scheduled_from) st.exchange(soci::use(from, "from_ms"));
            if (f.scheduled_to) st.exchange(soci::use(to, "to_ms"));
            if (f.before_id > 0) st.exchange(soci::use(f.before_id, "before_id"));
        });
    });
}

std::optional<std::int64_t> FireRepository::InsertIfAbsent(soci::session& s, const db::Dialect& dialect,
                                                           const Fire& fire) {
    const std::string kind(FireKindName(fire.kind));
    const std::string status(FireStatusName(fire.status));
    impl::NullableString node(fire.assigned_node);
    impl::NullableInt64 run(fire.workflow_run_id);
    impl::NullableString step(fire.workflow_step);
    impl::NullableString trace_parent(fire.trace_parent);
    impl::NullableString trace_state(fire.trace_state);
    const std::int64_t due_at = StoredDueAt(fire);
    soci::statement st =
        (s.prepare << dialect.InsertIfAbsent(
             "job_fire (job_id, scheduled_time, kind, attempt, shard_index, shard_total, epoch, "
             "assigned_node, status, due_at, workflow_run_id, workflow_step, trace_parent, trace_state, created_at) "
             "VALUES (:job_id, :scheduled_time, :kind, :attempt, :shard_index, :shard_total, :epoch, :node, :status, "
             ":due_at, :run, :step, :trace_parent, :trace_state, " +
             std::string(dialect.NowMs()) + ")"),
         soci::use(fire.job_id, "job_id"), soci::use(fire.scheduled_time, "scheduled_time"), soci::use(kind, "kind"),
         soci::use(fire.attempt, "attempt"), soci::use(fire.shard_index, "shard_index"),
         soci::use(fire.shard_total, "shard_total"), soci::use(fire.epoch, "epoch"), impl::Use(node, "node"),
         soci::use(status, "status"), soci::use(due_at, "due_at"), impl::Use(run, "run"), impl::Use(step, "step"),
         impl::Use(trace_parent, "trace_parent"), impl::Use(trace_state, "trace_state"));
    if (db::ExecuteInsertIfAbsent(st) == 0) return std::nullopt;
    long long id = 0;
    if (!s.get_last_insert_id("job_fire", id)) throw std::runtime_error("no id for the new fire");
    return static_cast<std::int64_t>(id);
}

namespace {

// A planned fire's row as stored: its id and what tells whether it is the row the planner wrote.
struct KeyRow {
    std::int64_t id = 0;
    std::int64_t job_id = 0;
    std::int64_t scheduled_time = 0;
    std::string kind;
    int attempt = 0;
    int shard_index = 0;
    std::int64_t epoch = 0;
    impl::NullableString assigned_node;
    std::string status;
    void BindInto(soci::statement& st, impl::IntColumns& ints) {
        ints.Into(st, id);
        ints.Into(st, job_id);
        ints.Into(st, scheduled_time);
        st.exchange(soci::into(kind));
        ints.Into(st, attempt);
        ints.Into(st, shard_index);
        ints.Into(st, epoch);
        st.exchange(soci::into(assigned_node.value, assigned_node.ind));
        st.exchange(soci::into(status));
    }
    KeyRow Finish() const { return *this; }
};

// An optional integer as SQL: formatted here, never text from outside (a planned fire's epoch
// and plan time cost no bound value).
std::string Inlined(const std::optional<std::int64_t>& value) {
    return value ? std::to_string(*value) : std::string("NULL");
}

constexpr const char* kKeyRowColumns =
    "id, job_id, scheduled_time, kind, attempt, shard_index, epoch, assigned_node, status";

}  // namespace

std::vector<std::optional<StoredFire>> FireRepository::InsertManyIfAbsent(soci::session& s, const db::Dialect& dialect,
                                                                          const std::vector<Fire>& fires) {
    // 200 rows bind at most 1,800 values; kind and status are inlined (names from the tables above,
    // never from input).
    constexpr std::size_t kInsertRows = 200;
    const std::string now_ms(dialect.NowMs());
    using Key = std::tuple<std::int64_t, std::int64_t, int, int, int>;  // the unique key uk_fire_once
    std::map<Key, std::vector<std::size_t>> wanted;
    for (std::size_t i = 0; i < fires.size(); ++i) {
        const Fire& f = fires[i];
        wanted[{f.job_id, f.scheduled_time, static_cast<int>(f.kind), f.attempt, f.shard_index}].push_back(i);
    }
    std::vector<std::optional<StoredFire>> out(fires.size());
    const auto found = [&](const KeyRow& row) {
        const auto kind = ParseFireKind(row.kind);
        if (!kind) return;
        const auto it =
            wanted.find({row.job_id, row.scheduled_time, static_cast<int>(*kind), row.attempt, row.shard_index});
        if (it == wanted.end()) return;
        for (std::size_t i : it->second) {
            const Fire& f = fires[i];
            out[i] = StoredFire{.id = row.id,
                                .as_written = row.epoch == f.epoch && row.assigned_node.get() == f.assigned_node &&
                                              row.status == FireStatusName(f.status)};
        }
    };
    impl::ForEachChunk(fires, kInsertRows, [&](std::span<const Fire> chunk) {
        impl::BoundValues values;
        std::string rows;
        for (const Fire& f : chunk) {
            const std::int64_t due_at = StoredDueAt(f);
            rows += std::string(rows.empty() ? "(" : ", (") + values.Add(f.job_id) + ", " +
                    values.Add(f.scheduled_time) + ", '" + std::string(FireKindName(f.kind)) + "', " +
                    values.Add(f.attempt) + ", " + values.Add(f.shard_index) + ", " + values.Add(f.shard_total) + ", " +
                    values.Add(f.epoch) + ", " + values.Add(f.assigned_node) + ", '" +
                    std::string(FireStatusName(f.status)) + "', " + values.Add(due_at) + ", " +
                    (f.workflow_run_id ? values.Add(*f.workflow_run_id) : std::string("NULL")) + ", " +
                    values.Add(f.workflow_step) + ", " + now_ms + ", " + Inlined(f.dispatch_epoch) + ", " +
                    Inlined(f.dispatched_at) + ")";
        }
        const std::string insert = dialect.InsertRowsIfAbsent(
            "job_fire (job_id, scheduled_time, kind, attempt, shard_index, shard_total, epoch, assigned_node, status, "
            "due_at, workflow_run_id, workflow_step, created_at, dispatch_epoch, dispatched_at) VALUES " +
                rows,
            "id");
        if (!dialect.rows_returned()) {
            impl::ExecuteBound(s, insert, values);
            return;
        }
        // The rows come back with the insert (MariaDB: the inserted ones and the existing ones
        // alike), so the read-back below has nothing left to read: at 3,000 fires/s it was 5 % of
        // MariaDB's statement time.
        for (const auto& row : impl::SelectRows<KeyRow>(s, insert + " RETURNING " + kKeyRowColumns,
                                                        [&](soci::statement& st) { values.Bind(st); })) {
            found(row);
        }
    });
    std::vector<std::size_t> missing;
    for (std::size_t i = 0; i < fires.size(); ++i) {
        if (!out[i]) missing.push_back(i);
    }
    if (missing.empty()) return out;

    // Read back by key. Fires due together are read with one range term per group of jobs whose
    // times lie within 5 s of each other: a term per fire (an OR of 5-column equalities) cost
    // MariaDB 80% of its CPU on a 500-job scan. A term reads some rows that are not wanted
    // (other shards, attempts, times of the same jobs); they are dropped by the key lookup.
    constexpr std::int64_t kSpanMs = 5000;
    constexpr std::size_t kJobsPerTerm = 500;
    constexpr std::size_t kValuesPerSelect = 1000;
    std::set<std::string_view> kinds;
    std::vector<std::size_t> by_time = missing;
    for (std::size_t i : missing) kinds.insert(FireKindName(fires[i].kind));
    std::sort(by_time.begin(), by_time.end(),
              [&](std::size_t a, std::size_t b) { return fires[a].scheduled_time < fires[b].scheduled_time; });
    struct Term {
        std::set<std::int64_t> jobs;
        std::int64_t from = 0;
        std::int64_t to = 0;
    };
    std::vector<Term> terms;
    for (std::size_t i : by_time) {
        const Fire& f = fires[i];
        if (terms.empty() || f.scheduled_time > terms.back().from + kSpanMs ||
            (terms.back().jobs.size() >= kJobsPerTerm && !terms.back().jobs.contains(f.job_id))) {
            terms.push_back({{}, f.scheduled_time, f.scheduled_time});
        }
        terms.back().jobs.insert(f.job_id);
        terms.back().to = f.scheduled_time;
    }
    std::string kind_list;
    for (auto k : kinds) kind_list += (kind_list.empty() ? "'" : ", '") + std::string(k) + "'";

    std::size_t next_term = 0;
    while (next_term < terms.size()) {
        impl::BoundValues values;
        std::string where;
        while (next_term < terms.size() &&
               (where.empty() || values.size() + terms[next_term].jobs.size() + 2 <= kValuesPerSelect)) {
            const Term& term = terms[next_term++];
            std::string ids;
            for (std::int64_t job : term.jobs) ids += (ids.empty() ? "" : ", ") + values.Add(job);
            where += std::string(where.empty() ? "(" : " OR (") + "job_id IN (" + ids +
                     ") AND scheduled_time BETWEEN " + values.Add(term.from) + " AND " + values.Add(term.to) + ")";
        }
        const auto rows = impl::SelectRows<KeyRow>(s,
                                                   std::string("SELECT ") + kKeyRowColumns + " FROM job_fire WHERE (" +
                                                       where + ") AND kind IN (" + kind_list + ")",
                                                   [&](soci::statement& st) { values.Bind(st); });
        for (const auto& row : rows) found(row);
    }
    return out;
}

int FireRepository::InsertLedgerRows(soci::session& s, const db::Dialect& dialect, const std::vector<Fire>& rows) {
    // Rows that are final from the start (a run of scheduled times the misfire policy skipped):
    // no slave ever sees them, so no node, no follow-up. 100 rows bind at most 1,300 values; kind,
    // status and reason are inlined (names from the tables above, never from input).
    constexpr std::size_t kInsertRows = 100;
    const std::string now_ms(dialect.NowMs());
    int written = 0;
    impl::ForEachChunk(rows, kInsertRows, [&](std::span<const Fire> chunk) {
        impl::BoundValues values;
        std::string sql_rows;
        for (const Fire& f : chunk) {
            if (!IsFinal(f.status) || !f.reason) {
                throw std::logic_error("a ledger row is final and has a reason (fire of job " +
                                       std::to_string(f.job_id) + ")");
            }
            sql_rows += std::string(sql_rows.empty() ? "(" : ", (") + values.Add(f.job_id) + ", " +
                        values.Add(f.scheduled_time) + ", '" + std::string(FireKindName(f.kind)) + "', " +
                        values.Add(std::int64_t{f.attempt}) + ", " + values.Add(std::int64_t{f.shard_index}) + ", " +
                        values.Add(std::int64_t{f.shard_total}) + ", " + values.Add(f.epoch) + ", '" +
                        std::string(FireStatusName(f.status)) + "', " + values.Add(f.scheduled_time) + ", 0, " +
                        now_ms + ", " + values.Add(f.finished_at.value_or(0)) + ", " + values.Add(f.result_message) +
                        ", '" + std::string(FireReasonName(*f.reason)) + "', " +
                        values.Add(f.skipped_until.value_or(f.scheduled_time)) + ", " +
                        values.Add(f.skipped_count.value_or(1)) + ", " +
                        (f.workflow_run_id ? values.Add(*f.workflow_run_id) : std::string("NULL")) + ", " +
                        values.Add(f.workflow_step) + ")";
        }
        written += static_cast<int>(impl::ExecuteBound(
            s,
            dialect.InsertRowsIfAbsent("job_fire (job_id, scheduled_time, kind, attempt, shard_index, shard_total, "
                                       "epoch, status, due_at, followup, created_at, finished_at, result_message, "
                                       "reason, skipped_until, skipped_count, workflow_run_id, workflow_step) VALUES " +
                                           sql_rows,
                                       "id"),
            values));
    });
    return written;
}

int FireRepository::Transition(soci::session& s, std::int64_t id, std::initializer_list<FireStatus> from, FireStatus to,
                               const FireUpdate& u) {
    for (const FireStatus f : from) {
        if (!model::MayMove(f, to)) {
            throw std::logic_error("fire " + std::to_string(id) + ": " + std::string(FireStatusName(f)) + " -> " +
                                   std::string(FireStatusName(to)) + " is not a move of the fire state machine");
        }
    }
    const std::string to_name(FireStatusName(to));
    std::string sql = "UPDATE job_fire SET status = :to_status";
    if (u.assigned_node) sql += ", assigned_node = :assigned_node";
    if (u.dispatch_epoch) sql += ", dispatch_epoch = :dispatch_epoch";
    if (u.executor_address) sql += ", executor_address = :executor_address";
    if (u.dispatched_at) sql += ", dispatched_at = :dispatched_at";
    if (u.started_at) sql += ", started_at = :started_at";
    if (u.finished_at) sql += ", finished_at = :finished_at";
    if (u.result_code) sql += ", result_code = :result_code";
    if (u.result_message) sql += ", result_message = :result_message";
    // Inlined: names from kReasonNames, never from input.
    if (u.reason) sql += ", reason = '" + std::string(FireReasonName(*u.reason)) + "'";
    const int followup = u.followup.value_or(false) ? 1 : 0;
    if (u.followup) sql += ", followup = :followup";
    sql += " WHERE id = :id AND status IN (" + StatusList(from) + ")";
    soci::statement st(s);
    st.exchange(soci::use(to_name, "to_status"));
    if (u.assigned_node) st.exchange(soci::use(*u.assigned_node, "assigned_node"));
    if (u.dispatch_epoch) st.exchange(soci::use(*u.dispatch_epoch, "dispatch_epoch"));
    if (u.executor_address) st.exchange(soci::use(*u.executor_address, "executor_address"));
    if (u.dispatched_at) st.exchange(soci::use(*u.dispatched_at, "dispatched_at"));
    if (u.started_at) st.exchange(soci::use(*u.started_at, "started_at"));
    if (u.finished_at) st.exchange(soci::use(*u.finished_at, "finished_at"));
    if (u.result_code) st.exchange(soci::use(*u.result_code, "result_code"));
    if (u.result_message) st.exchange(soci::use(*u.result_message, "result_message"));
    if (u.followup) st.exchange(soci::use(followup, "followup"));
    st.exchange(soci::use(id, "id"));
    st.alloc();
    st.prepare(sql);
    st.define_and_bind();
    return static_cast<int>(impl::ExecuteAffected(st));
}

Status FireRepository::Transition(std::int64_t id, std::initializer_list<FireStatus> from, FireStatus to,
                                  const FireUpdate& update) {
    return db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Status {
        if (Transition(s, id, from, to, update) == 1) return Status::Ok();
        std::string current;
        s << "SELECT status FROM job_fire WHERE id = :id", soci::use(id), soci::into(current);
        if (!s.got_data()) return NotFound("fire " + std::to_string(id) + " not found");
        return Aborted("fire " + std::to_string(id) + " is " + current + ", cannot become " +
                       std::string(FireStatusName(to)));
    });
}

std::vector<Fire> FireRepository::ListAssigned(soci::session& s, const std::string& node,
                                               std::initializer_list<FireStatus> statuses, int limit) {
    return impl::SelectRows<FireRow>(
        s,
        std::string("SELECT ") + kColumns + " FROM job_fire WHERE assigned_node = :node AND status IN (" +
            StatusList(statuses) + ") ORDER BY due_at, id LIMIT " + std::to_string(std::max(1, limit)),
        [&](soci::statement& st) { st.exchange(soci::use(node, "node")); });
}

std::vector<Fire> FireRepository::ListOrphans(soci::session& s, const std::vector<std::string>& live_nodes,
                                              std::initializer_list<FireStatus> statuses, int limit) {
    std::string sql =
        std::string("SELECT ") + kColumns + " FROM job_fire WHERE status IN (" + StatusList(statuses) + ")";
    // With no live node every assignment is stale; otherwise NOT IN needs the NULL case spelled
    // out (NULL NOT IN (...) is unknown, not true).
    if (!live_nodes.empty()) {
        sql += " AND (assigned_node IS NULL OR assigned_node NOT IN (";
        for (std::size_t i = 0; i < live_nodes.size(); ++i) sql += (i ? ", :n" : ":n") + std::to_string(i);
        sql += "))";
    }
    sql += " ORDER BY due_at, id LIMIT " + std::to_string(std::max(1, limit));
    return impl::SelectRows<FireRow>(s, sql, [&](soci::statement& st) {
        for (std::size_t i = 0; i < live_nodes.size(); ++i) {
            st.exchange(soci::use(live_nodes[i], "n" + std::to_string(i)));
        }
    });
}

bool FireRepository::Reassign(soci::session& s, std::int64_t id, std::initializer_list<FireStatus> from,
                              const std::string& node) {
    soci::statement st = (s.prepare << "UPDATE job_fire SET assigned_node = :node WHERE id = :id AND status IN (" +
                                           StatusList(from) + ")",
                          soci::use(node, "node"), soci::use(id, "id"));
    return impl::ExecuteAffected(st) == 1;
}

std::vector<std::int64_t> FireRepository::ReassignMany(soci::session& s, const std::vector<std::int64_t>& ids,
                                                       std::initializer_list<FireStatus> from,
                                                       const std::string& node) {
    constexpr std::size_t kChunk = 500;
    std::vector<std::int64_t> moved;
    impl::ForEachChunk(ids, kChunk, [&](std::span<const std::int64_t> chunk) {
        const std::string list = impl::IdList(chunk);
        impl::BoundValues values;
        const std::string node_value = values.Add(std::optional<std::string>(node));
        const long long matched =
            impl::ExecuteBound(s,
                               "UPDATE job_fire SET assigned_node = " + node_value + " WHERE id IN (" + list +
                                   ") AND status IN (" + StatusList(from) + ")",
                               values);
        if (matched == static_cast<long long>(chunk.size())) {
            moved.insert(moved.end(), chunk.begin(), chunk.end());
            return;
        }
        if (matched == 0) return;
        impl::BoundValues select_values;
        const std::string select_node = select_values.Add(std::optional<std::string>(node));
        for (std::int64_t id : impl::SelectRows<impl::IdRow>(s,
                                                             "SELECT id FROM job_fire WHERE id IN (" + list +
                                                                 ") AND assigned_node = " + select_node +
                                                                 " AND status IN (" + StatusList(from) + ")",
                                                             [&](soci::statement& st) { select_values.Bind(st); })) {
            moved.push_back(id);
        }
    });
    return moved;
}

std::vector<Fire> FireRepository::ListRunning(soci::session& s, std::int64_t after_scheduled, std::int64_t after_id,
                                              int limit) {
    // Row-value comparison spelled out: (a, b) > (x, y) is not index-served everywhere.
    return impl::SelectRows<FireRow>(
        s,
        std::string("SELECT ") + kColumns +
            " FROM job_fire WHERE status = 'running' AND (scheduled_time > :t OR (scheduled_time = :t2 AND id > :id))"
            " ORDER BY scheduled_time, id LIMIT " +
            std::to_string(std::max(1, limit)),
        [&](soci::statement& st) {
            st.exchange(soci::use(after_scheduled, "t"));
            st.exchange(soci::use(after_scheduled, "t2"));
            st.exchange(soci::use(after_id, "id"));
        });
}

int FireRepository::ClearTrivialFollowups(soci::session& s, const JobShard& shard) {
    // Ends written without an executor's result (the slave's skips, the sweep, the API's kill)
    // raise the flag whatever the job, so that they need not know it; those after which nothing
    // follows are cleared here, one statement per scan. The result writes (ApplyResult,
    // ApplyMany) apply the same rule (impl/followup.hpp) and never raise it for them. Served by
    // idx_fire_followup, one job primary-key lookup per flagged row (correlated, so a
    // million-job table is never scanned).
    soci::statement st =
        (s.prepare << "UPDATE job_fire SET followup = 0 WHERE followup = 1 AND status IN ('succeeded', 'skipped', "
                      "'killed')" +
                          shard.FollowupFilter() + " AND " + impl::NothingFollowsSql());
    return static_cast<int>(impl::ExecuteAffected(st));
}

std::vector<Fire> FireRepository::ListFollowups(soci::session& s, int limit, const JobShard& shard) {
    // Served by idx_fire_followup: only flagged rows are read, however long the history. Locked
    // on MySQL (SQLite's write transaction excludes every other writer anyway): the master plans
    // a lost fire's retry from this read, and a plain read could miss a late success committed
    // right after it, which then would find no retry to end (ApplyResult).
    const db::Dialect dialect = impl::SessionDialect(s);
    return impl::SelectRows<FireRow>(s,
                                     std::string("SELECT ") + kColumns + " FROM job_fire WHERE followup = 1" +
                                         shard.FollowupFilter() + " ORDER BY id LIMIT " +
                                         std::to_string(std::max(1, limit)) + std::string(dialect.ForUpdate()),
                                     [](soci::statement&) {});
}

std::vector<Fire> FireRepository::ListForWorkflowRuns(soci::session& s, const std::vector<std::int64_t>& run_ids) {
    constexpr std::size_t kChunk = 500;
    return impl::SelectByIds<FireRow>(s, run_ids, kChunk, [](const std::string& list) {
        return std::string("SELECT ") + kColumns + " FROM job_fire WHERE workflow_run_id IN (" + list + ") ORDER BY id";
    });
}

std::map<std::int64_t, Fire> FireRepository::NewestOfJobs(soci::session& s, const std::vector<std::int64_t>& job_ids) {
    struct NewestRow {
        std::int64_t job_id = 0;
        impl::NullableInt64 fire_id;
        void BindInto(soci::statement& st) {
            st.exchange(soci::into(job_id));
            st.exchange(soci::into(fire_id.value, fire_id.ind));
        }
        std::optional<std::int64_t> Finish() const { return fire_id.get(); }
    };
    constexpr std::size_t kChunk = 500;
    std::map<std::int64_t, Fire> out;
    for (const auto& ids : impl::IdListChunks(job_ids, kChunk)) {
        // A scalar subquery per job, as CapBoundaries: (job_id, scheduled_time) ends with the row
        // id on both databases, so the order is the index's and the read stops at its first row.
        // `ORDER BY id DESC` instead read the job's whole history, or the table's newest rows
        // until one of the job's turned up.
        const auto newest = impl::SelectRows<NewestRow>(
            s,
            "SELECT j.id, (SELECT f.id FROM job_fire f WHERE f.job_id = j.id ORDER BY f.scheduled_time DESC, f.id "
            "DESC LIMIT 1) FROM job j WHERE j.id IN (" +
                ids + ")",
            [](soci::statement&) {});
        std::string fire_ids;
        for (const auto& id : newest) {
            if (id) fire_ids += (fire_ids.empty() ? "" : ", ") + std::to_string(*id);
        }
        if (fire_ids.empty()) continue;
        for (auto& fire : impl::SelectRows<FireRow>(
                 s, std::string("SELECT ") + kColumns + " FROM job_fire WHERE id IN (" + fire_ids + ")",
                 [](soci::statement&) {})) {
            const std::int64_t job_id = fire.job_id;
            out.insert_or_assign(job_id, std::move(fire));
        }
    }
    return out;
}

void FireRepository::ClearFollowup(soci::session& s, std::int64_t id) {
    s << "UPDATE job_fire SET followup = 0 WHERE id = :id", soci::use(id);
}

void FireRepository::ClearFollowups(soci::session& s, const std::vector<std::int64_t>& ids) {
    constexpr std::size_t kChunk = 500;
    impl::ForEachChunk(ids, kChunk, [&](std::span<const std::int64_t> chunk) {
        impl::BoundValues values;  // none: the ids are literals
        impl::ExecuteBound(s, "UPDATE job_fire SET followup = 0 WHERE id IN (" + impl::IdList(chunk) + ")", values);
    });
}

namespace {

constexpr std::initializer_list<FireStatus> kFinalStatuses = {FireStatus::kSucceeded, FireStatus::kFailed,
                                                              FireStatus::kTimeout,   FireStatus::kKilled,
                                                              FireStatus::kLost,      FireStatus::kSkipped};

}  // namespace

// In the purge's queries a unary plus (the same value; MariaDB ignores it) keeps SQLite's planner,
// which has no statistics, off an index that would read the whole table once the backlog is
// gone: `+followup = 0` off idx_fire_followup (nearly every row has followup = 0), `+status IN`
// off idx_fire_state (nearly every row is final). With them SQLite, like MariaDB, ranges over
// idx_fire_time / the (job_id, scheduled_time) index (EXPLAIN checked on both).
std::vector<std::int64_t> FireRepository::ListExpired(soci::session& s, std::int64_t cutoff_ms, int limit) {
    return impl::SelectRows<impl::IdRow>(
        s,
        "SELECT id FROM job_fire WHERE +status IN (" + StatusList(kFinalStatuses) +
            ") AND scheduled_time < :c AND +followup = 0 AND COALESCE(finished_at, scheduled_time) < :c2 LIMIT " +
            std::to_string(std::max(1, limit)),
        [&](soci::statement& st) {
            st.exchange(soci::use(cutoff_ms, "c"));
            st.exchange(soci::use(cutoff_ms, "c2"));
        });
}

std::optional<std::int64_t> FireRepository::CapBoundary(soci::session& s, std::int64_t job_id, int keep) {
    struct TimeRow {
        std::int64_t scheduled_time = 0;
        void BindInto(soci::statement& st) { st.exchange(soci::into(scheduled_time)); }
        std::int64_t Finish() const { return scheduled_time; }
    };
    const auto rows = impl::SelectRows<TimeRow>(
        s,
        "SELECT scheduled_time FROM job_fire WHERE job_id = :j ORDER BY scheduled_time DESC LIMIT 1 OFFSET " +
            std::to_string(std::max(0, keep - 1)),
        [&](soci::statement& st) { st.exchange(soci::use(job_id, "j")); });
    if (rows.empty()) return std::nullopt;
    return rows.front();
}

std::vector<std::pair<std::int64_t, std::int64_t>> FireRepository::CapBoundaries(
    soci::session& s, const std::vector<std::int64_t>& job_ids, int keep) {
    struct BoundaryRow {
        std::int64_t job_id = 0;
        impl::NullableInt64 boundary;
        void BindInto(soci::statement& st) { impl::IntoColumns(st, job_id, boundary); }
        std::pair<std::int64_t, std::optional<std::int64_t>> Finish() const { return {job_id, boundary.get()}; }
    };
    constexpr std::size_t kChunk = 500;
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    for (const auto& ids : impl::IdListChunks(job_ids, kChunk)) {
        // A scalar subquery per job: both databases run it as CapBoundary's ranged index read
        // (LIMIT in a scalar subquery is allowed by both; MariaDB refuses it only in IN/ANY).
        const auto rows = impl::SelectRows<BoundaryRow>(
            s,
            "SELECT j.id, (SELECT f.scheduled_time FROM job_fire f WHERE f.job_id = j.id ORDER BY f.scheduled_time "
            "DESC LIMIT 1 OFFSET " +
                std::to_string(std::max(0, keep - 1)) + ") FROM job j WHERE j.id IN (" + ids + ") ORDER BY j.id",
            [](soci::statement&) {});
        for (const auto& [job, boundary] : rows) {
            if (boundary) out.emplace_back(job, *boundary);
        }
    }
    return out;
}

std::vector<std::int64_t> FireRepository::ListPurgeableBefore(soci::session& s, std::int64_t job_id,
                                                              std::int64_t before_ms, int limit) {
    return impl::SelectRows<impl::IdRow>(s,
                                         "SELECT id FROM job_fire WHERE job_id = :j AND scheduled_time < :t AND status "
                                         "IN (" +
                                             StatusList(kFinalStatuses) + ") AND +followup = 0 LIMIT " +
                                             std::to_string(std::max(1, limit)),
                                         [&](soci::statement& st) {
                                             st.exchange(soci::use(job_id, "j"));
                                             st.exchange(soci::use(before_ms, "t"));
                                         });
}

int FireRepository::DeleteMany(soci::session& s, const std::vector<std::int64_t>& ids) {
    if (ids.empty()) return 0;
    // Integers from our own SELECT, never input: inlined, so a batch is one statement on both
    // backends whatever SQLite's bound-parameter limit. MySQL refuses DELETE ... WHERE id IN
    // (SELECT ... LIMIT) on the same table, hence the ids are selected first.
    const std::string list = impl::IdList(ids);
    for (const std::string_view table : kFireChildTables) {
        soci::statement child = (s.prepare << "DELETE FROM " + std::string(table) + " WHERE fire_id IN (" + list + ")");
        child.execute(true);
    }
    soci::statement st = (s.prepare << "DELETE FROM job_fire WHERE id IN (" + list + ")");
    return static_cast<int>(impl::ExecuteAffected(st));
}

}  // namespace sched::store
