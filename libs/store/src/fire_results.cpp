#include "sched/store/fire_results.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "impl/followup.hpp"
#include "impl/query.hpp"
#include "sched/store/fire_log.hpp"

namespace sched::store {

using model::FireStatus;
using model::FireStatusName;
using model::ParseFireStatus;

namespace {

constexpr std::size_t kSelectChunk = 500;
// SQLite refuses a compound SELECT of more than 500 terms (SQLITE_MAX_COMPOUND_SELECT).
constexpr std::size_t kPairChunk = 250;
constexpr std::size_t kUpdateChunk = 64;
// Bound text per UPDATE: messages are up to 64 KiB each, and MySQL refuses a statement larger
// than max_allowed_packet (16 MiB by default; escaping can double the bytes).
constexpr std::size_t kUpdateTextBudget = std::size_t{4} << 20;
constexpr int kBatchRounds = 3;
constexpr const char* kSavepoint = "SAVEPOINT fire_results";
constexpr const char* kRollbackToSavepoint = "ROLLBACK TO SAVEPOINT fire_results";

// What ApplyResult's checks read of a fire and its job.
struct FireState {
    std::int64_t id = 0;
    std::int64_t job_id = 0;
    int attempt = 0;
    FireStatus status = FireStatus::kPending;
    std::optional<std::int64_t> dispatch_epoch;
    std::optional<std::string> executor_address;
    bool has_started_at = false;
    std::optional<std::string> app;  ///< nullopt: the job is gone
    std::int64_t scheduled_time = 0;
    std::int64_t created_at = 0;
    std::optional<std::string> trace_parent;
    std::optional<std::int64_t> finished_at;
    std::optional<std::int64_t> result_code;
    /// Whether the batch's address (LoadFires) is a registered instance of the fire's app; read
    /// only while the fire is dispatching and its job exists.
    bool address_registered = false;
    /// Whether a success, skip or kill of it leaves no follow-up (impl::NothingFollowsSql, as the
    /// UPDATE will judge it).
    bool nothing_follows = false;
};

struct FireStateRow {
    FireState state;
    std::string status;
    impl::NullableInt64 dispatch_epoch;
    impl::NullableString executor_address;
    impl::NullableInt64 started_at;
    impl::NullableString app;
    impl::NullableString trace_parent;
    impl::NullableInt64 finished_at;
    impl::NullableInt64 result_code;
    int registered = 0;
    int nothing_follows = 0;

    void BindInto(soci::statement& st, impl::IntColumns& ints) {
        ints.Into(st, state.id);
        ints.Into(st, state.job_id);
        ints.Into(st, state.attempt);
        st.exchange(soci::into(status));
        ints.Into(st, dispatch_epoch);
        st.exchange(soci::into(executor_address.value, executor_address.ind));
        ints.Into(st, started_at);
        st.exchange(soci::into(app.value, app.ind));
        ints.Into(st, state.scheduled_time);
        ints.Into(st, state.created_at);
        st.exchange(soci::into(trace_parent.value, trace_parent.ind));
        ints.Into(st, finished_at);
        ints.Into(st, result_code);
        ints.Into(st, registered);
        ints.Into(st, nothing_follows);
    }
    FireState Finish() {
        auto parsed = ParseFireStatus(status);
        if (!parsed) throw std::runtime_error("fire " + std::to_string(state.id) + ": bad status in database");
        state.status = *parsed;
        state.dispatch_epoch = dispatch_epoch.get();
        state.executor_address = executor_address.get();
        state.has_started_at = started_at.get().has_value();
        state.app = app.get();
        state.trace_parent = trace_parent.get();
        state.finished_at = finished_at.get();
        state.result_code = result_code.get();
        state.address_registered = registered != 0;
        state.nothing_follows = nothing_follows != 0;
        return state;
    }
};

struct IndexRow {
    int index = 0;
    void BindInto(soci::statement& st) { st.exchange(soci::into(index)); }
    int Finish() const { return index; }
};

// `address`: the address most of the batch's items name (one SDK instance posts its own
// results): whether it is a registered instance of each dispatching fire's app is read by the
// same SELECT, so the usual batch needs no read of the registrations of its own. Compared in
// SQL, as ApplyResult does, so that the column's collation decides exactly as it does there.
std::unordered_map<std::int64_t, FireState> LoadFires(soci::session& s, std::vector<std::int64_t> ids,
                                                      const std::string& address) {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::unordered_map<std::int64_t, FireState> fires;
    impl::ForEachChunk(ids, kSelectChunk, [&](std::span<const std::int64_t> chunk) {
        // LEFT JOIN: a fire whose job is gone is still found (and then judged with no app).
        const auto rows = impl::SelectRows<FireStateRow>(
            s,
            "SELECT f.id, f.job_id, f.attempt, f.status, f.dispatch_epoch, f.executor_address, f.started_at, j.app, "
            "f.scheduled_time, f.created_at, f.trace_parent, f.finished_at, f.result_code, CASE WHEN f.status = "
            "'dispatching' AND j.app IS NOT "
            "NULL AND EXISTS (SELECT 1 FROM executor_instance WHERE app = j.app AND address = :address) THEN 1 "
            "ELSE 0 END, CASE WHEN " +
                impl::NothingFollowsJoinedSql() +
                " THEN 1 ELSE 0 END FROM job_fire f LEFT JOIN job j ON j.id = f.job_id WHERE f.id IN (" +
                impl::IdList(chunk) + ")",
            [&address](soci::statement& st) { st.exchange(soci::use(address, "address")); });
        for (const auto& row : rows) fires.emplace(row.id, row);
    });
    return fires;
}

// The address named by the most items (the first of them on a tie); "" when none names one.
std::string CommonAddress(const std::vector<ExecutorResult>& results, const std::vector<std::size_t>& pending) {
    std::map<std::string_view, std::size_t> counts;
    std::string_view best;
    std::size_t best_count = 0;
    for (std::size_t i : pending) {
        if (!results[i].address) continue;
        const std::size_t n = ++counts[*results[i].address];
        if (n > best_count) {
            best = *results[i].address;
            best_count = n;
        }
    }
    return std::string(best);
}

using AppAddress = std::pair<std::string, std::string>;

// The pairs of `wanted` that are registered executor instances. Compared in SQL, as ApplyResult
// does, so that the column's collation decides exactly as it does there.
std::set<AppAddress> RegisteredPairs(soci::session& s, const std::set<AppAddress>& wanted) {
    const std::vector<AppAddress> pairs(wanted.begin(), wanted.end());
    std::set<AppAddress> found;
    for (std::size_t from = 0; from < pairs.size(); from += kPairChunk) {
        const std::size_t to = std::min(pairs.size(), from + kPairChunk);
        std::string sql;
        for (std::size_t i = from; i < to; ++i) {
            const std::string n = std::to_string(i - from);
            if (i > from) sql += " UNION ALL ";
            sql += "SELECT " + n + " FROM executor_instance WHERE app = :p" + n + " AND address = :q" + n;
        }
        const auto hits = impl::SelectRows<IndexRow>(s, sql, [&](soci::statement& st) {
            for (std::size_t i = from; i < to; ++i) {
                const std::string n = std::to_string(i - from);
                st.exchange(soci::use(pairs[i].first, "p" + n));
                st.exchange(soci::use(pairs[i].second, "q" + n));
            }
        });
        for (int hit : hits) found.insert(pairs[from + static_cast<std::size_t>(hit)]);
    }
    return found;
}

// An item that passed every check, and what its UPDATE must repeat.
struct Write {
    std::size_t index = 0;
    FireStatus from = FireStatus::kRunning;
    bool set_started = false;
    bool record_address = false;
    bool check_address = false;
    bool check_epoch = false;
};

// ApplyResult's checks up to (not including) the registration of a dispatching fire's address,
// in its order; nullopt: they all passed.
std::optional<ResultOutcome> CheckBeforeRegistration(const ExecutorResult& r, const FireState* fire,
                                                     const std::function<bool(const std::string&)>& app_allowed) {
    if (fire == nullptr) return ResultOutcome::kNotFound;
    if (!app_allowed(fire->app.value_or(std::string()))) return ResultOutcome::kForbidden;
    if (fire->attempt != r.attempt) return ResultOutcome::kStaleAttempt;
    if (fire->status == r.status) return ResultOutcome::kDuplicate;
    if (fire->status != FireStatus::kDispatching && fire->status != FireStatus::kRunning) {
        return ResultOutcome::kConflict;
    }
    if (r.epoch && fire->dispatch_epoch && *r.epoch != *fire->dispatch_epoch) return ResultOutcome::kStaleEpoch;
    if (r.address && fire->status == FireStatus::kRunning && fire->executor_address != r.address) {
        return ResultOutcome::kWrongExecutor;
    }
    return std::nullopt;
}

// Whether ApplyResult may do more than refuse an item the checks above refuse: apply a success
// to a lost fire, or keep the log of a result that answers the fire's dispatch. Rare (a slave
// or executor taken for dead, a fire the cluster ended itself): such items go through
// ApplyResult one by one rather than making the batch's statements richer.
bool MayDoMoreThanRefuse(const ExecutorResult& r, const FireState& fire, ResultOutcome refused) {
    if (refused != ResultOutcome::kDuplicate && refused != ResultOutcome::kConflict) return false;
    return r.log || (fire.status == FireStatus::kLost && r.status == FireStatus::kSucceeded);
}

// One round over `pending` (indices into `results`): sets the outcome of every refused item,
// adds to `deferred` the items ApplyResult must judge (MayDoMoreThanRefuse), and returns the
// items to write.
std::vector<Write> Judge(soci::session& s, const std::vector<ExecutorResult>& results,
                         const std::vector<std::size_t>& pending,
                         const std::function<bool(const std::string&)>& app_allowed,
                         std::vector<std::optional<ResultOutcome>>& out,
                         std::unordered_map<std::int64_t, FireJob>& jobs, std::vector<std::size_t>& deferred,
                         std::unordered_map<std::int64_t, bool>& quiet_ends) {
    std::vector<std::int64_t> ids;
    ids.reserve(pending.size());
    for (std::size_t i : pending) ids.push_back(results[i].fire_id);
    const std::string address = CommonAddress(results, pending);
    const auto fires = LoadFires(s, ids, address);
    for (const auto& [id, fire] : fires) {
        // A late success of a lost fire (ApplyResult) keeps the flag as it was: it raises none.
        quiet_ends[id] = fire.nothing_follows || fire.status == FireStatus::kLost;
        if (fire.app) {
            jobs[id] = FireJob{.fire_id = id,
                               .job_id = fire.job_id,
                               .app = *fire.app,
                               .scheduled_time = fire.scheduled_time,
                               .created_at = fire.created_at,
                               .trace_parent = fire.trace_parent};
        }
    }

    std::vector<Write> passed;
    std::set<AppAddress> wanted;
    for (std::size_t i : pending) {
        const ExecutorResult& r = results[i];
        const auto it = fires.find(r.fire_id);
        const FireState* fire = it == fires.end() ? nullptr : &it->second;
        if (auto refused = CheckBeforeRegistration(r, fire, app_allowed)) {
            if (fire != nullptr && MayDoMoreThanRefuse(r, *fire, *refused)) {
                deferred.push_back(i);
            } else {
                out[i] = *refused;
            }
            continue;
        }
        Write w;
        w.index = i;
        w.from = fire->status;
        w.set_started = r.started_ms > 0 && !fire->has_started_at;
        w.record_address = r.address && fire->status == FireStatus::kDispatching;
        w.check_address = r.address && fire->status == FireStatus::kRunning;
        w.check_epoch = r.epoch && fire->dispatch_epoch;
        // Still dispatching: the slave has not recorded which instance took it, so the address
        // must at least be an instance of this fire's app (none when the job is gone). The
        // SELECT answered that for the batch's common address.
        if (w.record_address && fire->app && *r.address != address) wanted.emplace(*fire->app, *r.address);
        passed.push_back(w);
    }
    const auto registered = wanted.empty() ? std::set<AppAddress>() : RegisteredPairs(s, wanted);

    std::vector<Write> writes;
    for (const Write& w : passed) {
        if (w.record_address) {
            const FireState& fire = fires.at(results[w.index].fire_id);
            const std::string& named = *results[w.index].address;
            if (!fire.app || !(named == address ? fire.address_registered : registered.count({*fire.app, named}) > 0)) {
                out[w.index] = ResultOutcome::kWrongExecutor;
                continue;
            }
        }
        writes.push_back(w);
    }
    return writes;
}

// The ids of an UPDATE grouped by the value (SQL) one column takes for them, or by the condition
// they must pass. A batch's results mostly share a status, a code, a message, an instance and a
// condition: one CASE arm per distinct value, with the IN list of its ids, which MariaDB tests by
// binary search, instead of a `CASE id WHEN` arm per fire, which it scans row after row (the
// results' UPDATE was the costliest statement of a fire: a third less MariaDB time this way).
class IdsByValue {
  public:
    void Add(std::int64_t id, const std::string& value_sql) {
        std::string& ids = groups_[value_sql];
        ids += (ids.empty() ? "" : ", ") + std::to_string(id);
    }
    bool empty() const { return groups_.empty(); }
    /// The value as SQL: the one value itself when there is one and `otherwise` is empty (every
    /// row the UPDATE reaches was added), else a CASE with `otherwise` for rows not added.
    std::string Sql(const std::string& otherwise = "") const {
        if (groups_.size() == 1 && otherwise.empty()) return groups_.begin()->first;
        std::string sql = "CASE";
        for (const auto& [value, ids] : groups_) sql += " WHEN id IN (" + ids + ") THEN " + value;
        return sql + (otherwise.empty() ? "" : " ELSE " + otherwise) + " END";
    }

  private:
    std::map<std::string, std::string> groups_;  // value SQL -> its ids, comma-separated
};

// Named parameters for bound text, one per distinct value (a name may then stand more than
// once in the statement: both backends bind every occurrence of a name).
class TextParams {
  public:
    explicit TextParams(std::string prefix) : prefix_(std::move(prefix)) {}
    /// The parameter (":<prefix><n>") bound to `value`, which must outlive the statement.
    std::string For(const std::string& value) {
        auto [it, added] = names_.try_emplace(std::string_view(value), prefix_ + std::to_string(names_.size()));
        if (added) uses_.emplace_back(&value, it->second);
        return ":" + it->second;
    }
    /// Each distinct value and its parameter's name, to bind.
    const std::vector<std::pair<const std::string*, std::string>>& uses() const { return uses_; }

  private:
    std::string prefix_;
    std::map<std::string_view, std::string> names_;  // each distinct value -> its parameter
    std::vector<std::pair<const std::string*, std::string>> uses_;
};

// One UPDATE for writes[from, to): per column the ids grouped by value, and each item's
// conditions the same way. Returns the rows it moved.
long long UpdateChunk(soci::session& s, const std::vector<ExecutorResult>& results, const std::vector<Write>& writes,
                      std::size_t from, std::size_t to) {
    IdsByValue status, finished, code, message, started, address, where;
    TextParams messages("m"), addresses("a"), where_addresses("w");
    std::string ids;
    std::string quiet;  // the fires whose end may need no follow-up
    for (std::size_t k = from; k < to; ++k) {
        const Write& w = writes[k];
        const ExecutorResult& r = results[w.index];
        const std::int64_t id = r.fire_id;
        // Status names come from the enum's table and numbers are formatted here; text is bound.
        status.Add(id, "'" + std::string(FireStatusName(r.status)) + "'");
        finished.Add(id, std::to_string(r.finished_ms));
        code.Add(id, std::to_string(r.result_code));
        message.Add(id, messages.For(r.result_message));
        if (w.set_started) started.Add(id, std::to_string(r.started_ms));
        if (w.record_address) address.Add(id, addresses.For(*r.address));
        ids += (k == from ? "" : ", ") + std::to_string(id);
        if (impl::MayEndWithoutFollowup(r.status)) quiet += (quiet.empty() ? "" : ", ") + std::to_string(id);
        std::string condition = "(attempt = " + std::to_string(r.attempt);
        if (w.from == FireStatus::kRunning) {
            condition += " AND status = 'running'";
            if (w.check_address) condition += " AND executor_address = " + where_addresses.For(*r.address);
        } else if (r.address) {
            // Judged while dispatching: the slave may record it `running` (by this very
            // instance) before this UPDATE; that is the same fire in the same hands, so it
            // must not cost a rollback and another round.
            condition += " AND (status = 'dispatching' OR (status = 'running' AND executor_address = " +
                         where_addresses.For(*r.address) + "))";
        } else {
            condition += " AND status IN ('dispatching', 'running')";
        }
        if (w.check_epoch) condition += " AND dispatch_epoch = " + std::to_string(*r.epoch);
        where.Add(id, condition + ")");
    }
    std::string sql =
        "UPDATE job_fire SET status = " + status.Sql() + ", finished_at = " + finished.Sql() +
        ", result_code = " + code.Sql() + ", result_message = " + message.Sql() + ", followup = " +
        // Successes of cron jobs need nothing from the master: no flag, so no second
        // write of the row when the master would clear it (ApplyResult does the same).
        (quiet.empty() ? std::string("1")
                       : "CASE WHEN id IN (" + quiet + ") AND " + impl::NothingFollowsSql() + " THEN 0 ELSE 1 END");
    if (!started.empty()) sql += ", started_at = " + started.Sql("started_at");
    if (!address.empty()) sql += ", executor_address = " + address.Sql("executor_address");
    // The IN list lets both databases find the rows by primary key before the per-item test;
    // the test is a CASE on the id, not an OR of (id = .. AND ..) terms, which MariaDB's range
    // optimizer turned into a tree per term (a quarter of its CPU at 2,000 fires/s), and a CASE
    // even with one condition, which the optimizer then cannot weigh against the status index.
    sql += " WHERE id IN (" + ids + ") AND " + where.Sql("0");
    soci::statement st(s);
    for (const TextParams* params : {&messages, &addresses, &where_addresses}) {
        for (const auto& [value, name] : params->uses()) st.exchange(soci::use(*value, name));
    }
    st.alloc();
    st.prepare(sql);
    st.define_and_bind();
    return impl::ExecuteAffected(st);
}

// Whether every write moved its row. Each fire appears once, so the count says exactly that.
bool Update(soci::session& s, const std::vector<ExecutorResult>& results, const std::vector<Write>& writes) {
    long long moved = 0;
    std::size_t from = 0;
    while (from < writes.size()) {
        std::size_t to = from;
        std::size_t text = 0;
        while (to < writes.size() && to - from < kUpdateChunk && (to == from || text < kUpdateTextBudget)) {
            const ExecutorResult& r = results[writes[to].index];
            text += r.result_message.size() + 2 * (r.address ? r.address->size() : 0);
            ++to;
        }
        moved += UpdateChunk(s, results, writes, from, to);
        from = to;
    }
    return moved == static_cast<long long>(writes.size());
}

}  // namespace

namespace {

// Who undoes a round whose UPDATE lost a CAS: a savepoint set before it, or the caller, who
// rolls the whole transaction back (TryApplyMany) and is told so by nullopt.
enum class Undo { kSavepoint, kCaller };

// Whether any applied item raised its fire's follow-up flag, by the rule the writes apply
// (impl/followup.hpp) and what the rounds read of each fire (`quiet_ends`; a fire not read
// counts as raising one).
bool RaisedFollowup(const std::vector<ExecutorResult>& results, const std::vector<std::optional<ResultOutcome>>& out,
                    const std::unordered_map<std::int64_t, bool>& quiet_ends) {
    for (std::size_t i = 0; i < results.size(); ++i) {
        if (out[i] != ResultOutcome::kApplied) continue;
        if (!impl::MayEndWithoutFollowup(results[i].status)) return true;
        const auto it = quiet_ends.find(results[i].fire_id);
        if (it == quiet_ends.end() || !it->second) return true;
    }
    return false;
}

std::optional<std::vector<ResultOutcome>> Apply(soci::session& s, const std::vector<ExecutorResult>& results,
                                                const std::function<bool(const std::string& app)>& app_allowed,
                                                std::vector<FireJob>* applied_jobs, bool* raised_followup, Undo undo) {
    std::vector<std::optional<ResultOutcome>> out(results.size());
    // The job and app of every fire a round read: what the metrics need of the applied ones,
    // without a SELECT of their own.
    std::unordered_map<std::int64_t, FireJob> jobs;
    std::unordered_map<std::int64_t, bool> quiet_ends;
    std::vector<std::size_t> pending;
    std::vector<std::size_t> deferred;  // judged by ApplyResult (MayDoMoreThanRefuse)
    std::vector<std::size_t> repeats;
    std::unordered_set<std::int64_t> seen;
    for (std::size_t i = 0; i < results.size(); ++i) {
        (seen.insert(results[i].fire_id).second ? pending : repeats).push_back(i);
    }

    // A lost CAS cannot say which row it missed: the savepoint undoes the whole UPDATE, and the
    // items it named are judged again on the fires as they are now (as ApplyResult's rounds do).
    for (int round = 0; round < kBatchRounds && !pending.empty(); ++round) {
        const auto writes = Judge(s, results, pending, app_allowed, out, jobs, deferred, quiet_ends);
        pending.clear();
        if (writes.empty()) break;
        if (undo == Undo::kSavepoint) s << kSavepoint;
        if (Update(s, results, writes)) {
            // Every write moved its row: their logs go in with them (one REPLACE per 4 MiB).
            std::vector<const ExecutorResult*> applied;
            applied.reserve(writes.size());
            for (const Write& w : writes) {
                out[w.index] = ResultOutcome::kApplied;
                applied.push_back(&results[w.index]);
            }
            FireLogs::StoreMany(s, applied);
            break;
        }
        if (undo == Undo::kCaller) return std::nullopt;
        s << kRollbackToSavepoint;
        for (const Write& w : writes) pending.push_back(w.index);
    }
    // First items of distinct fires, in input order; a fire's later items come after them.
    pending.insert(pending.end(), deferred.begin(), deferred.end());
    std::sort(pending.begin(), pending.end());
    for (std::size_t i : pending) out[i] = FireRepository::ApplyResult(s, results[i], app_allowed);
    // Later items of a fire see what the earlier one did, as they would one by one.
    for (std::size_t i : repeats) out[i] = FireRepository::ApplyResult(s, results[i], app_allowed);

    if (raised_followup && RaisedFollowup(results, out, quiet_ends)) *raised_followup = true;
    std::vector<ResultOutcome> outcomes;
    outcomes.reserve(out.size());
    for (const auto& o : out) outcomes.push_back(*o);
    if (applied_jobs) {
        // Every item was read by a round (the first takes them all, repeats' fires included);
        // a fire whose job is gone has no app and is left out, as an inner join would.
        for (std::size_t i = 0; i < results.size(); ++i) {
            if (outcomes[i] != ResultOutcome::kApplied) continue;
            if (const auto it = jobs.find(results[i].fire_id); it != jobs.end()) applied_jobs->push_back(it->second);
        }
    }
    return outcomes;
}

}  // namespace

std::vector<ResultOutcome> FireResults::ApplyMany(soci::session& s, const std::vector<ExecutorResult>& results,
                                                  const std::function<bool(const std::string& app)>& app_allowed,
                                                  std::vector<FireJob>* applied_jobs, bool* raised_followup) {
    return *Apply(s, results, app_allowed, applied_jobs, raised_followup, Undo::kSavepoint);
}

std::optional<std::vector<ResultOutcome>> FireResults::TryApplyMany(
    soci::session& s, const std::vector<ExecutorResult>& results,
    const std::function<bool(const std::string& app)>& app_allowed, std::vector<FireJob>* applied_jobs,
    bool* raised_followup) {
    // The savepoint is a statement of its own in every batch for a loss that is rare (the slave's
    // `running` record of the same instance is no loss, see UpdateChunk): a transaction holding
    // nothing else can be undone whole instead.
    return Apply(s, results, app_allowed, applied_jobs, raised_followup, Undo::kCaller);
}

std::vector<std::optional<ResultOutcome>> FireResults::ApplyManyAutocommit(
    soci::session& s, const std::vector<ExecutorResult>& results,
    const std::function<bool(const std::string& app)>& app_allowed, std::vector<FireJob>* applied_jobs,
    bool* raised_followup) {
    std::vector<std::optional<ResultOutcome>> out(results.size());
    if (s.get_backend_name() != "mysql" || results.empty() || results.size() > kUpdateChunk) return out;
    std::unordered_set<std::int64_t> seen;
    for (const auto& r : results) {
        if (r.log || !seen.insert(r.fire_id).second) return out;
    }
    std::vector<std::size_t> pending(results.size());
    for (std::size_t i = 0; i < results.size(); ++i) pending[i] = i;
    std::unordered_map<std::int64_t, FireJob> jobs;
    std::unordered_map<std::int64_t, bool> quiet_ends;
    std::vector<std::size_t> deferred;  // left undecided: ApplyMany judges them in the transaction
    const auto writes = Judge(s, results, pending, app_allowed, out, jobs, deferred, quiet_ends);
    std::vector<std::size_t> applied;
    if (!writes.empty()) {
        // One UPDATE (at most kUpdateChunk writes), atomic on its own: every row it moved passed
        // exactly the conditions the item was judged by, as in a transaction.
        if (Update(s, results, writes)) {
            for (const Write& w : writes) applied.push_back(w.index);
        } else {
            // A lost CAS, with no savepoint to undo the rows it did move: those rows now hold
            // their item's end (nobody else writes that end: only an identical result delivered
            // twice at once would look the same, and it is applied either way); the rest stay
            // undecided, for ApplyMany to judge on the fires as they are now.
            std::vector<std::int64_t> ids;
            ids.reserve(writes.size());
            for (const Write& w : writes) ids.push_back(results[w.index].fire_id);
            const auto now = LoadFires(s, ids, std::string());
            for (const Write& w : writes) {
                const ExecutorResult& r = results[w.index];
                const auto it = now.find(r.fire_id);
                if (it != now.end() && it->second.status == r.status && it->second.attempt == r.attempt &&
                    it->second.finished_at == r.finished_ms && it->second.result_code == r.result_code) {
                    applied.push_back(w.index);
                }
            }
        }
    }
    std::sort(applied.begin(), applied.end());
    for (std::size_t i : applied) {
        out[i] = ResultOutcome::kApplied;
        if (!applied_jobs) continue;
        if (const auto it = jobs.find(results[i].fire_id); it != jobs.end()) applied_jobs->push_back(it->second);
    }
    if (raised_followup && RaisedFollowup(results, out, quiet_ends)) *raised_followup = true;
    return out;
}

}  // namespace sched::store
