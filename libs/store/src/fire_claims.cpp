#include "sched/store/fire_claims.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <tuple>

#include "impl/fire_columns.hpp"
#include "impl/job_row.hpp"
#include "impl/query.hpp"
#include "sched/store/concurrency_key.hpp"

namespace sched::store {

using model::Fire;
using model::FireKind;
using model::FireReason;
using model::FireStatus;
using model::Job;
using model::ParseFireKind;
using model::ParseFireReason;
using model::ParseFireStatus;

namespace {

// The columns the slave needs to dispatch a fire.
constexpr const char* kClaimColumns =
    "id, job_id, scheduled_time, kind, attempt, shard_index, shard_total, epoch, assigned_node, status, due_at, "
    "dispatch_epoch, dispatched_at, created_at, workflow_run_id, reason, trace_parent, trace_state, claim_token";

struct ClaimRow {
    Fire fire;
    std::string kind;
    std::string status;
    impl::NullableString assigned_node;
    impl::NullableInt64 dispatch_epoch;
    impl::NullableInt64 dispatched_at;
    impl::NullableInt64 workflow_run_id;  // a workflow step's run: its params may replace the job's
    impl::NullableString reason;          // concurrency: a fire that waited for a seat
    impl::NullableString trace_parent;    // a manual trigger's caller context: its runs carry it
    impl::NullableString trace_state;     // and forward its tracestate
    impl::NullableInt64 claim_token;      // NULL: planned for its node by the master

    void BindInto(soci::statement& st, impl::IntColumns& ints) {
        impl::IntoFireHead(st, ints, fire, kind, assigned_node);
        st.exchange(soci::into(status));
        ints.Into(st, fire.due_at);
        ints.Into(st, dispatch_epoch);
        ints.Into(st, dispatched_at);
        ints.Into(st, fire.created_at);
        ints.Into(st, workflow_run_id);
        st.exchange(soci::into(reason.value, reason.ind));
        st.exchange(soci::into(trace_parent.value, trace_parent.ind));
        st.exchange(soci::into(trace_state.value, trace_state.ind));
        ints.Into(st, claim_token);
    }
    bool Planned() const { return !claim_token.get() && status == "dispatching"; }
    Fire Finish() {
        impl::FinishFireHead(fire, kind, status, assigned_node);
        fire.dispatch_epoch = dispatch_epoch.get();
        fire.dispatched_at = dispatched_at.get();
        fire.workflow_run_id = workflow_run_id.get();
        fire.reason = reason.get() ? ParseFireReason(*reason.get()) : std::nullopt;
        fire.trace_parent = trace_parent.get();
        fire.trace_state = trace_state.get();
        return fire;
    }
};

// A fire and whether it is planned (ClaimRow::Planned).
struct PlannedRow {
    ClaimRow row;
    void BindInto(soci::statement& st, impl::IntColumns& ints) { row.BindInto(st, ints); }
    std::pair<Fire, bool> Finish() {
        const bool planned = row.Planned();
        return {row.Finish(), planned};
    }
};

// A node id (SilentDispatching).
struct NodeIdRow {
    std::string node_id;
    void BindInto(soci::statement& st) { st.exchange(soci::into(node_id)); }
    std::string Finish() const { return node_id; }
};

// A fire the claim won, its job, how many fires the claim holds (the join's check) and the
// node's sent_through.
struct ClaimJobRow {
    ClaimRow fire;
    impl::JoinedJobRow job;
    std::int64_t holds = 0;
    impl::NullableInt64 sent_through;
    std::int64_t epoch = 0;
    void BindInto(soci::statement& st, impl::IntColumns& ints) {
        fire.BindInto(st, ints);
        job.BindInto(st, ints);
        ints.Into(st, holds);
        ints.Into(st, sent_through);
        ints.Into(st, epoch);
    }
    struct Read {
        Fire fire;
        bool planned;
        Job job;
        std::int64_t holds;
        std::optional<std::int64_t> sent_through;
        std::int64_t epoch;
    };
    Read Finish() {
        const bool planned = fire.Planned();
        return {fire.Finish(), planned, job.Finish(), holds, sent_through.get(), epoch};
    }
};

// The fires a claim with `token` holds among the listed ones (the alias `f.` or none): its own,
// and those planned for the node (bound as `:<param>`; soci binds a name once, so each use of the
// node in one statement has its own).
std::string HeldBy(const std::string& alias, std::int64_t token, const std::string& param) {
    return alias + "status = 'dispatching' AND (" + alias + "claim_token = " + std::to_string(token) + " OR (" + alias +
           "claim_token IS NULL AND " + alias + "assigned_node = :" + param + "))";
}

// The lease rows' epochs summed (lock::ReadEpochSum's WHERE), as a scalar subquery binding
// :lease and :pattern.
constexpr const char* kEpochSum =
    "(SELECT COALESCE(SUM(epoch), 0) FROM scheduler_lock WHERE namespace = :lease OR namespace LIKE :pattern)";

// Planned fires carry the epoch of their plan; a group is sent under one epoch, and a result is
// applied only under the epoch its fire carries. So a claim stamps the epoch in force now on
// the planned fires it holds whose plan was under another one (after a failover or a shard's
// take-over: the only time this writes them), as a claim of pending fires stamps every one.
void StampPlanned(soci::session& s, ClaimedFires& out, std::int64_t epoch) {
    std::vector<std::int64_t> stale;
    for (auto& f : out.fires) {
        if (!out.planned.contains(f.id) || f.dispatch_epoch == epoch) continue;
        stale.push_back(f.id);
        f.dispatch_epoch = epoch;
    }
    if (stale.empty()) return;
    soci::statement st = (s.prepare << "UPDATE job_fire SET dispatch_epoch = :epoch WHERE id IN (" +
                                           impl::IdList(stale) + ") AND status = 'dispatching' AND claim_token IS NULL",
                          soci::use(epoch, "epoch"));
    impl::ExecuteAffected(st);
}

std::optional<std::int64_t> SentThrough(soci::session& s, const std::string& node) {
    impl::NullableInt64 value;
    s << "SELECT sent_through FROM trigger_node WHERE node_id = :node", soci::use(node, "node"),
        soci::into(value.value, value.ind);
    return s.got_data() ? value.get() : std::nullopt;
}

// ---- concurrency seats (Admit) ----

std::string JobScope(std::int64_t job_id) {
    return "job:" + std::to_string(job_id);
}
// buffer-one's one waiting fire.
std::string WaitScope(std::int64_t job_id) {
    return "wait:job:" + std::to_string(job_id);
}

// A concurrency key's seats (its max_running), and the times of its last starts (its rate limit).
std::string KeyScope(const std::string& key) {
    return "key:" + key;
}
std::string RateScope(const std::string& key) {
    return "rate:" + key;
}

// A seat, and its holder's status (a scalar subquery: NULL without a holder or row).
struct SeatRow {
    std::string scope;
    int slot = 0;
    impl::NullableInt64 fire_id;
    std::int64_t taken_at = 0;
    impl::NullableString holder_status;
    void BindInto(soci::statement& st, impl::IntColumns& ints) {
        st.exchange(soci::into(scope));
        ints.Into(st, slot);
        ints.Into(st, fire_id);
        ints.Into(st, taken_at);
        st.exchange(soci::into(holder_status.value, holder_status.ind));
    }
    SeatRow Finish() const { return *this; }
};

// Whether a holder seen in `status` by the seats' read has ended for good: a final status other
// than `lost` (which a late success may still leave) is never left, however old the read.
bool EndedForGood(const std::optional<std::string>& status) {
    const auto parsed = status ? ParseFireStatus(*status) : std::nullopt;
    return parsed && model::IsFinal(*parsed) && *parsed != FireStatus::kLost;
}

// A seat's holder: enough to tell whether it still holds it, whether it is a shard of the same
// run, and where to send its kill.
struct HolderRow {
    Fire fire;
    std::string kind;
    std::string status;
    impl::NullableString executor_address;
    impl::NullableInt64 finished_at;
    impl::NullableString reason;
    void BindInto(soci::statement& st, impl::IntColumns& ints) {
        ints.Into(st, fire.id);
        ints.Into(st, fire.job_id);
        ints.Into(st, fire.scheduled_time);
        st.exchange(soci::into(kind));
        ints.Into(st, fire.attempt);
        st.exchange(soci::into(status));
        st.exchange(soci::into(executor_address.value, executor_address.ind));
        ints.Into(st, finished_at);
        st.exchange(soci::into(reason.value, reason.ind));
    }
    Fire Finish() {
        Fire f = fire;
        f.kind = ParseFireKind(kind).value_or(FireKind::kSchedule);
        f.status = ParseFireStatus(status).value_or(FireStatus::kSkipped);  // unknown: holds nothing
        f.executor_address = executor_address.get();
        f.finished_at = finished_at.get();
        f.reason = reason.get() ? ParseFireReason(*reason.get()) : std::nullopt;
        return f;
    }
};

// How long a fire lost while dispatching keeps its seat when its job has no timeout.
constexpr std::int64_t kLostRunGraceMs = 60'000;
// The "seat" of a fire whose job has no limit of its own (allow-all with a concurrency key).
constexpr int kNoJobSeat = std::numeric_limits<int>::max();

bool SameRun(const Fire& a, const Fire& b) {
    return a.job_id == b.job_id && a.scheduled_time == b.scheduled_time && a.kind == b.kind && a.attempt == b.attempt;
}

std::string Quoted(const std::string& text) {
    return "'" + text + "'";  // scopes are built here from integers: no quote inside
}

// The policies whose fires wait for a seat (in line, first come first served).
bool Waits(BlockStrategy policy) {
    return policy == BlockStrategy::kBufferOne || policy == BlockStrategy::kBufferAll ||
           policy == BlockStrategy::kCancelOther;
}

bool Earlier(const Fire& a, const Fire& b) {
    return std::pair(a.scheduled_time, a.id) < std::pair(b.scheduled_time, b.id);
}

// One multi-row upsert for the seats a claim writes (holder 0: the seat is emptied).
void WriteSeats(soci::session& s, const std::map<std::pair<std::string, int>, std::int64_t>& seats,
                std::int64_t now_ms) {
    if (seats.empty()) return;
    std::string rows;
    for (const auto& [seat, fire] : seats) {
        rows += (rows.empty() ? "(" : ", (") + Quoted(seat.first) + ", " + std::to_string(seat.second) + ", " +
                (fire == 0 ? std::string("NULL") : std::to_string(fire)) + ", " + std::to_string(now_ms) + ")";
    }
    s << "INSERT INTO concurrency_slot (scope, slot, fire_id, taken_at) VALUES " + rows +
             (s.get_backend_name() == "mysql"
                  ? " ON DUPLICATE KEY UPDATE fire_id = VALUES(fire_id), taken_at = VALUES(taken_at)"
                  : " ON CONFLICT (scope, slot) DO UPDATE SET fire_id = excluded.fire_id, taken_at = "
                    "excluded.taken_at");
}

// Ids are integers formatted here, never text from outside, so they are inlined into the
// statement: one statement per group instead of one bound placeholder per fire. A group is
// bounded by the slave (max-group), so the list is too.
std::string IdList(const std::vector<std::int64_t>& ids) {
    std::string out;
    for (auto id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
    return out;
}

// The table of an UPDATE that finds its rows by an `id IN (...)` list and then tests their
// status. SQLite has no statistics here and costs `status = 'pending'` on a status index as a
// handful of rows, so it walked EVERY pending fire (every dispatching one for MarkRunning)
// instead of the list's primary keys: under overload the backlog grows, each claim holds the
// file's single write lock longer, the backlog grows faster, and the node's other writers
// (heartbeat, renew, purge, alerts) wait out their busy timeout (at 3,000 fires/s nothing was
// delivered in 10 s). NOT INDEXED still looks rows up by rowid (id). MariaDB chooses
// by its statistics and finds them by primary key.
std::string ByIdTable(soci::session& s) {
    return s.get_backend_name() == "sqlite3" ? "job_fire NOT INDEXED" : "job_fire";
}

}  // namespace

ClaimedFires FireClaims::Claim(soci::session& s, const std::string& node, const std::vector<std::int64_t>& ids,
                               std::int64_t token, const LeaseRows& lease, std::int64_t now_ms,
                               const ClaimOptions& options) {
    if (ids.empty()) return {};
    const std::string list = IdList(ids);
    // First, so that a master's ReleaseUnsent of this node is either committed before the read
    // below (which then sees the fires it handed back) or waits for this transaction (and then
    // judges by the raised value). A claim that raises nothing sends only fires at or below
    // the value the release reads, which it never hands back.
    if (const auto& raise_to = options.raise_sent_through) {
        soci::statement raise = (s.prepare << "UPDATE trigger_node SET sent_through = :to WHERE node_id = :node AND "
                                              "sent_through IS NOT NULL AND sent_through < :below",
                                 soci::use(*raise_to, "to"), soci::use(node, "node"), soci::use(*raise_to, "below"));
        impl::ExecuteAffected(raise);
    }
    // The ids come from the master's notice, unread here (the slave queues them by the notice's
    // due times): the node test keeps a slave to its own fires whatever a notice names.
    // The epoch is a scalar subquery of the UPDATE, not a SELECT before it: one statement less
    // per group, and the epoch stamped is the one read by the statement that moves the fires
    // (under READ COMMITTED a plain read of the lease rows, no lock: a renew or take-over does
    // not wait for claims). Its WHERE is lock::ReadEpochSum's.
    if (!options.only_planned) {
        soci::statement claim =
            (s.prepare << "UPDATE " + ByIdTable(s) +
                              " SET status = 'dispatching', claim_token = :token, dispatch_epoch = (SELECT "
                              "COALESCE(SUM(epoch), 0) FROM scheduler_lock WHERE namespace = :lease OR namespace LIKE "
                              ":pattern), dispatched_at = :now_ms WHERE id IN (" +
                              list + ") AND status = 'pending' AND assigned_node = :node",
             soci::use(token, "token"), soci::use(lease.name, "lease"), soci::use(lease.pattern, "pattern"),
             soci::use(now_ms, "now_ms"), soci::use(node, "node"));
        impl::ExecuteAffected(claim);
    }
    // The fires won and their jobs in one SELECT. The join drops a fire whose job was deleted, so
    // the row carries how many fires the claim holds: fewer rows (or none) and the fires and jobs
    // are read apart, the fire without a job then ended by the slave. The token is an integer
    // formatted here, inlined as the ids are.
    const bool sqlite = s.get_backend_name() == "sqlite3";  // NOT INDEXED, as ByIdTable
    const auto won = [&](const std::string& param) {
        return "FROM " + ByIdTable(s) + " WHERE id IN (" + list + ") AND " + HeldBy("", token, param);
    };
    ClaimedFires out;
    std::size_t holds = 0;
    std::int64_t epoch = 0;
    for (auto& row :
         impl::SelectRows<ClaimJobRow>(s,
                                       "SELECT " + impl::QualifiedColumns(kClaimColumns, "f") + ", " +
                                           impl::JobColumns("j") + ", (SELECT COUNT(*) " + won("node") +
                                           "), (SELECT sent_through FROM trigger_node WHERE node_id = :node2), " +
                                           kEpochSum + " FROM job_fire AS f" + (sqlite ? " NOT INDEXED" : "") +
                                           " JOIN job AS j ON j.id = f.job_id WHERE f.id IN (" + list + ") AND " +
                                           HeldBy("f.", token, "node3") + " ORDER BY f.due_at, f.id",
                                       [&node, &lease](soci::statement& st) {
                                           st.exchange(soci::use(node, "node"));
                                           st.exchange(soci::use(node, "node2"));
                                           st.exchange(soci::use(node, "node3"));
                                           st.exchange(soci::use(lease.name, "lease"));
                                           st.exchange(soci::use(lease.pattern, "pattern"));
                                       })) {
        holds = static_cast<std::size_t>(row.holds);
        out.sent_through = row.sent_through;
        epoch = row.epoch;
        if (row.planned) out.planned.insert(row.fire.id);
        out.fires.push_back(std::move(row.fire));
        const std::int64_t id = row.job.id;
        out.jobs.insert_or_assign(id, std::move(row.job));
    }
    if (!out.fires.empty() && out.fires.size() == holds) {
        StampPlanned(s, out, epoch);
        return out;
    }
    out.fires.clear();
    out.planned.clear();
    for (auto& [fire, planned] : impl::SelectRows<PlannedRow>(
             s, std::string("SELECT ") + kClaimColumns + " " + won("node") + " ORDER BY due_at, id",
             [&node](soci::statement& st) { st.exchange(soci::use(node, "node")); })) {
        if (planned) out.planned.insert(fire.id);
        out.fires.push_back(std::move(fire));
    }
    out.sent_through = out.planned.empty() ? std::nullopt : SentThrough(s, node);
    if (!out.planned.empty()) {
        const std::string read_epoch = std::string("SELECT ") + kEpochSum;
        s << read_epoch, soci::use(lease.name, "lease"), soci::use(lease.pattern, "pattern"), soci::into(epoch);
        StampPlanned(s, out, epoch);
    }
    std::set<std::int64_t> job_ids;
    for (const auto& f : out.fires) job_ids.insert(f.job_id);
    out.jobs.clear();
    if (job_ids.empty()) return out;
    for (auto& job : JobRepository::FindMany(s, std::vector<std::int64_t>(job_ids.begin(), job_ids.end()))) {
        const std::int64_t id = job.id;
        out.jobs.insert_or_assign(id, std::move(job));
    }
    return out;
}

// Why seats and not a count of the job's running fires: a count is read, and two claims on
// different nodes (or Galera nodes) can both read "one free" and both commit. A seat is a row
// both would write, so one waits for (or is certified against) the other. Freed lazily (a seat
// whose holder ended is free) so that none of the many places a fire ends has to know of them.
Admission FireClaims::Admit(soci::session& s, const db::Dialect& dialect, std::vector<Fire> claimed,
                            const std::map<std::int64_t, Job>& jobs, std::int64_t token, std::int64_t now_ms,
                            const LateJudge& late) {
    Admission out;
    std::set<std::string> key_names;
    for (const auto& [id, job] : jobs) {
        if (!job.concurrency_key.empty()) key_names.insert(job.concurrency_key);
    }
    // Keys a job names but that do not exist (a row written around the API) limit nothing.
    const std::map<std::string, ConcurrencyKey> keys =
        key_names.empty() ? std::map<std::string, ConcurrencyKey>{} : ConcurrencyKeyRepository::Find(s, key_names);
    const auto key_of = [&jobs, &keys](const Fire& f) -> const ConcurrencyKey* {
        const auto job = jobs.find(f.job_id);
        if (job == jobs.end() || job->second.concurrency_key.empty()) return nullptr;
        const auto key = keys.find(job->second.concurrency_key);
        return key == keys.end() ? nullptr : &key->second;
    };
    // The job's own policy; allow-all (no limit of the job's own) as kAllowAll.
    const auto policy_of = [&jobs, &key_of](const Fire& f) -> std::optional<BlockStrategy> {
        const auto it = jobs.find(f.job_id);
        if (it == jobs.end()) return std::nullopt;  // deleted: the slave ends it
        const BlockStrategy policy = OverlapPolicy(it->second.block_strategy);
        if (policy == BlockStrategy::kAllowAll && key_of(f) == nullptr) return std::nullopt;
        return policy;
    };
    std::set<std::string> scopes;
    for (const auto& f : claimed) {
        const auto policy = policy_of(f);
        if (!policy) continue;
        if (*policy != BlockStrategy::kAllowAll) scopes.insert(JobScope(f.job_id));
        if (Waits(*policy)) scopes.insert(WaitScope(f.job_id));
        if (const ConcurrencyKey* key = key_of(f)) {
            scopes.insert(KeyScope(key->name));
            if (key->rate_starts > 0) scopes.insert(RateScope(key->name));
        }
    }
    if (scopes.empty()) {
        out.admitted = std::move(claimed);
        return out;
    }
    std::string scope_list;
    for (const auto& scope : scopes) scope_list += (scope_list.empty() ? "" : ", ") + Quoted(scope);
    std::map<std::string, std::map<int, std::int64_t>> seats;   // scope -> slot -> holder (0: none)
    std::map<std::string, std::map<int, std::int64_t>> starts;  // rate scope -> slot -> start time
    std::set<std::int64_t> holder_ids;
    // The holders' statuses come with the seats, by a scalar subquery, which a locking read does
    // not lock on MariaDB (a join would lock the holders' rows too: the wait seat's holder is a
    // pending fire another node's claim may hold, a deadlock). That subquery is a consistent
    // read which may predate a seat row the locking read waited for: a seat another claim just
    // gave to a fire the subquery sees `pending`, or not at all. So only a holder it sees ended
    // for good is taken as ended; every other one is read again, whole, by the holders' SELECT
    // below, a statement of its own and so a newer read. The usual seat, held by its job's last
    // fire, long ended, costs no read of its own.
    for (const auto& seat : impl::SelectRows<SeatRow>(
             s,
             "SELECT scope, slot, fire_id, taken_at, (SELECT status FROM job_fire WHERE job_fire.id = "
             "concurrency_slot.fire_id) FROM concurrency_slot" +
                 std::string(dialect.ByPrimaryKey()) + " WHERE scope IN (" + scope_list + ")" +
                 std::string(dialect.ForUpdate()),
             [](soci::statement&) {})) {
        if (seat.scope.starts_with("rate:")) {
            starts[seat.scope][seat.slot] = seat.taken_at;
            continue;
        }
        const std::int64_t holder = seat.fire_id.get().value_or(0);
        seats[seat.scope][seat.slot] = holder;
        if (holder != 0 && !EndedForGood(seat.holder_status.get())) holder_ids.insert(holder);
    }
    std::map<std::int64_t, Fire> holders;
    if (!holder_ids.empty()) {
        for (auto& f : impl::SelectRows<HolderRow>(
                 s,
                 "SELECT id, job_id, scheduled_time, kind, attempt, status, executor_address, finished_at, reason "
                 "FROM job_fire WHERE id IN (" +
                     IdList(std::vector<std::int64_t>(holder_ids.begin(), holder_ids.end())) + ")",
                 [](soci::statement&) {})) {
            const std::int64_t id = f.id;
            holders.emplace(id, std::move(f));
        }
    }
    const auto holding = [&holders](std::int64_t holder, std::initializer_list<FireStatus> statuses) -> const Fire* {
        const auto it = holders.find(holder);
        if (it == holders.end()) return nullptr;
        return std::find(statuses.begin(), statuses.end(), it->second.status) != statuses.end() ? &it->second : nullptr;
    };
    // A holder keeps its seat while it is dispatching or running; and, lost while dispatching (its
    // node died), for as long as its run may still be going on its executor: the job's timeout,
    // or kLostRunGraceMs without one (a result that arrives later ends it, freeing the seat).
    const auto active = [&](std::int64_t holder) -> const Fire* {
        const Fire* f = holding(holder, {FireStatus::kDispatching, FireStatus::kRunning, FireStatus::kLost});
        if (!f || f->status != FireStatus::kLost) return f;
        if (f->reason != FireReason::kSlaveDied && f->reason != FireReason::kSlaveRestarted) return nullptr;
        const auto job = jobs.find(f->job_id);
        const std::int64_t grace =
            job != jobs.end() && job->second.timeout_ms > 0 ? job->second.timeout_ms : kLostRunGraceMs;
        return now_ms < f->finished_at.value_or(0) + grace ? f : nullptr;
    };

    std::map<std::pair<std::string, int>, std::int64_t> taken;  // seats to write: (scope, slot) -> fire (0: none)
    std::map<std::int64_t, std::int64_t> succeeded_heads;       // job -> scheduled time of its admitted first in line
    std::map<std::string, std::vector<std::int64_t>> held;      // by message
    std::vector<std::pair<std::int64_t, std::string>> skipped;
    std::vector<std::pair<std::int64_t, std::string>> misfired;
    std::set<std::int64_t> stopping;
    std::set<std::string> key_heads;     // keys whose first held fire of this claim is marked first in line
    std::vector<std::int64_t> released;  // admitted after waiting: their reason is cleared
    // Copied, not moved: `late` reads the claimed fires around each one.
    const auto admit = [&](const Fire& f) {
        if (f.reason == FireReason::kConcurrency) released.push_back(f.id);
        out.admitted.push_back(f);
    };
    const auto stop = [&](const Fire& holder) {
        if (stopping.insert(holder.id).second) out.stop.push_back(holder);
    };
    for (auto& f : claimed) {
        const auto policy = policy_of(f);
        if (!policy) {
            admit(f);
            continue;
        }
        const Job& job = jobs.at(f.job_id);
        const bool job_limited = *policy != BlockStrategy::kAllowAll;  // else only its key limits it
        const ConcurrencyKey* key = key_of(f);
        const int limit = std::max(1, job.concurrency_limit);
        const std::string scope = JobScope(job.id);
        auto& mine = seats[scope];
        // Its own seat already (an earlier try of this claim committed unseen), or its run's:
        // the shards of one run count once.
        const auto seated_in = [&](const std::map<int, std::int64_t>& taken_seats) {
            return std::any_of(taken_seats.begin(), taken_seats.end(), [&](const auto& seat) {
                const Fire* holder = active(seat.second);
                return seat.second == f.id || (holder && SameRun(*holder, f));
            });
        };
        const bool seated = job_limited ? seated_in(mine) : seated_in(seats[KeyScope(key->name)]);
        if (seated) {
            admit(f);
            continue;
        }
        if (late && f.reason != FireReason::kConcurrency) {
            if (auto why = late(f, job, claimed)) {
                misfired.emplace_back(f.id, std::move(*why));
                continue;
            }
        }
        const auto free_seat = [&]() -> int {
            for (int slot = 0; slot < limit; ++slot) {
                const auto it = mine.find(slot);
                if (it == mine.end() || !active(it->second)) return slot;
            }
            return -1;
        };
        // Seats go in order: while an earlier fire of the job waits (the first in line, in the
        // job's wait seat), a later one does not take a seat that frees up.
        const bool waits = Waits(*policy);
        const std::string wait_scope = WaitScope(job.id);
        const Fire* head = nullptr;
        if (waits && seats[wait_scope].contains(0)) head = holding(seats[wait_scope][0], {FireStatus::kPending});
        const bool behind = head && head->id != f.id && Earlier(*head, f);
        int slot = behind ? -1 : (job_limited ? free_seat() : kNoJobSeat);
        // The key's limits, shared with other jobs: a free seat of its max_running and, with a
        // rate limit, a start whose window has passed. They hold the fire whatever the job's
        // policy: its own running fires are not the only ones in the way.
        int key_slot = -1;
        int rate_slot = -1;
        std::string key_full;
        if (key != nullptr) {
            auto& key_seats = seats[KeyScope(key->name)];
            for (int k = 0; k < key->max_running && key_slot < 0; ++k) {
                const auto it = key_seats.find(k);
                if (it == key_seats.end() || !active(it->second)) key_slot = k;
            }
            if (key_slot < 0) {
                key_full = "concurrency key \"" + key->name + "\" has " + std::to_string(key->max_running) + " of " +
                           std::to_string(key->max_running) + " runs going (max_running)";
            } else if (key->rate_starts > 0) {
                auto& times = starts[RateScope(key->name)];
                for (int k = 0; k < key->rate_starts && rate_slot < 0; ++k) {
                    const auto it = times.find(k);
                    if (it == times.end() || it->second <= now_ms - key->rate_window_ms) rate_slot = k;
                }
                if (rate_slot < 0) {
                    key_full = "concurrency key \"" + key->name + "\" started " + std::to_string(key->rate_starts) +
                               " runs in the last " + std::to_string(key->rate_window_ms) + " ms (its rate limit)";
                }
            }
        }
        if (slot < 0 && key_full.empty() && *policy == BlockStrategy::kTerminateOther) {
            for (int k = 0; k < limit; ++k) {
                const Fire* holder = active(mine[k]);
                if (!holder) continue;
                const int moved = FireRepository::Transition(
                    s, holder->id, {FireStatus::kDispatching, FireStatus::kRunning}, FireStatus::kKilled,
                    {.finished_at = now_ms,
                     .result_message = "terminated: fire " + std::to_string(f.id) +
                                       " of the job started (overlap policy terminate-other)",
                     .followup = true});
                if (moved == 1) {
                    stop(*holder);
                    holders[holder->id].status = FireStatus::kKilled;
                }
            }
            slot = free_seat();
        }
        if (slot >= 0 && key_full.empty()) {
            if (slot != kNoJobSeat) {
                mine[slot] = f.id;
                taken[{scope, slot}] = f.id;
            }
            if (key != nullptr) {
                seats[KeyScope(key->name)][key_slot] = f.id;
                taken[{KeyScope(key->name), key_slot}] = f.id;
                if (rate_slot >= 0) {
                    starts[RateScope(key->name)][rate_slot] = now_ms;
                    taken[{RateScope(key->name), rate_slot}] = f.id;
                }
            }
            f.status = FireStatus::kDispatching;
            holders[f.id] = f;
            if (head && head->id == f.id) succeeded_heads[job.id] = f.scheduled_time;  // the line moves on
            admit(f);
            continue;
        }
        std::string full = !key_full.empty()
                               ? key_full
                               : "job " + std::to_string(job.id) + " has " + std::to_string(limit) + " of " +
                                     std::to_string(limit) + " runs going (concurrency_limit " + std::to_string(limit) +
                                     ", overlap policy " + std::string(BlockStrategyName(job.block_strategy)) + ")";
        if (behind) full += "; fire " + std::to_string(head->id) + " waits before it";
        if (*policy == BlockStrategy::kSkip) {
            skipped.emplace_back(f.id, "skipped: " + full);
            continue;
        }
        if (*policy == BlockStrategy::kBufferOne && head && head->id != f.id) {
            skipped.emplace_back(f.id,
                                 "skipped: " + full + "; fire " + std::to_string(head->id) + " is already waiting");
            continue;
        }
        std::string why = "waiting: " + full;
        if (*policy == BlockStrategy::kCancelOther && key_full.empty()) {
            for (const auto& seat : mine) {
                if (const Fire* holder = active(seat.second)) stop(*holder);
            }
            why = "waiting for the running fires to stop: " + full;
        }
        held[why].push_back(f.id);
        // Held by its key alone: the earliest of the claim for that key is asked again soon.
        if (key != nullptr && !key_full.empty() && key_heads.insert(key->name).second) out.first_in_line.insert(f.id);
        if (!job_limited) continue;  // allow-all: no line of the job's own
        if (!head || (head->id != f.id && Earlier(f, *head))) {
            seats[wait_scope][0] = f.id;
            f.status = FireStatus::kPending;
            holders[f.id] = f;
            taken[{wait_scope, 0}] = f.id;
        }
        if (seats[wait_scope][0] == f.id) out.first_in_line.insert(f.id);
    }

    WriteSeats(s, taken, now_ms);
    for (const auto& [message, ids] : held) {
        soci::statement st = (s.prepare << "UPDATE job_fire SET status = 'pending', claim_token = NULL, "
                                           "dispatch_epoch = NULL, dispatched_at = NULL, reason = 'concurrency', "
                                           "result_message = :message WHERE id IN (" +
                                               IdList(ids) +
                                               ") AND (claim_token = :token OR claim_token IS NULL) AND "
                                               "status = 'dispatching'",
                              soci::use(message, "message"), soci::use(token, "token"));
        impl::ExecuteAffected(st);
        out.held.insert(out.held.end(), ids.begin(), ids.end());
    }
    const auto end_skipped = [&](const std::vector<std::pair<std::int64_t, std::string>>& fires, FireReason reason,
                                 std::vector<std::int64_t>& ended) {
        for (const auto& [id, message] : fires) {
            if (FireRepository::Transition(
                    s, id, {FireStatus::kDispatching}, FireStatus::kSkipped,
                    {.finished_at = now_ms, .result_message = message, .reason = reason, .followup = true}) == 1) {
                ended.push_back(id);
            }
        }
    };
    end_skipped(skipped, FireReason::kBlocked, out.skipped);
    end_skipped(misfired, FireReason::kMisfire, out.late);
    if (!released.empty()) {
        s << "UPDATE job_fire SET reason = NULL, result_message = NULL WHERE id IN (" + IdList(released) + ")";
    }
    // The first in line took a seat: the next earliest waiting fire (held now or before; none
    // earlier than it can wait) becomes first.
    std::map<std::pair<std::string, int>, std::int64_t> next_heads;
    for (const auto& [job_id, after] : succeeded_heads) {
        const auto next = impl::SelectRows<impl::IdRow>(
            s,
            "SELECT id FROM job_fire WHERE job_id = " + std::to_string(job_id) +
                " AND scheduled_time >= " + std::to_string(after) +
                " AND status = 'pending' AND reason = 'concurrency' ORDER BY scheduled_time, id LIMIT 1",
            [](soci::statement&) {});
        next_heads[{WaitScope(job_id), 0}] = next.empty() ? 0 : next.front();
        if (!next.empty() && std::find(out.held.begin(), out.held.end(), next.front()) != out.held.end()) {
            out.first_in_line.insert(next.front());
        }
    }
    WriteSeats(s, next_heads, now_ms);
    return out;
}

bool FireClaims::Restamp(soci::session& s, std::int64_t id, std::int64_t token, std::int64_t epoch) {
    soci::statement st = (s.prepare << "UPDATE job_fire SET dispatch_epoch = :epoch WHERE id = :id AND (claim_token = "
                                       ":token OR claim_token IS NULL) AND status = 'dispatching'",
                          soci::use(epoch, "epoch"), soci::use(id, "id"), soci::use(token, "token"));
    return impl::ExecuteAffected(st) == 1;
}

int FireClaims::MarkRunning(soci::session& s, const std::vector<StartedFire>& fires, const std::string& address) {
    if (fires.empty()) return 0;
    // The fires of one window share a handful of start times (one per batch of runs): a CASE
    // over those, each with an IN list, not a WHEN per fire (CASE lists cost MariaDB a scan per
    // row, see FireResults).
    std::map<std::int64_t, std::vector<std::int64_t>> by_start;
    std::vector<std::int64_t> ids;
    ids.reserve(fires.size());
    for (const auto& f : fires) {
        by_start[f.started_at].push_back(f.id);
        ids.push_back(f.id);
    }
    std::string started;
    if (by_start.size() == 1) {
        started = std::to_string(by_start.begin()->first);
    } else {
        started = "CASE";
        for (const auto& [at, group] : by_start) {
            started += " WHEN id IN (" + IdList(group) + ") THEN " + std::to_string(at);
        }
        started += " ELSE started_at END";
    }
    soci::statement st = (s.prepare << "UPDATE " + ByIdTable(s) +
                                           " SET status = 'running', executor_address = :address, "
                                           "started_at = " +
                                           started + " WHERE id IN (" + IdList(ids) + ") AND status = 'dispatching'",
                          soci::use(address, "address"));
    return static_cast<int>(impl::ExecuteAffected(st));
}

std::vector<std::int64_t> FireClaims::ListPendingIds(soci::session& s, const std::string& node, int limit) {
    // Ids only, each branch in the index's own order: idx_fire_state (status, assigned_node,
    // scheduled_time) holds the primary key, so neither reads a row or sorts. The second lists
    // every dispatching fire of the node, planned or claimed: the slave leaves out those it
    // knows or sent and reads the rest by FindPending, which keeps the planned ones (reading each
    // row's claim token here read every planned fire of the node, 2-3 s of them, every poll). A poll read every
    // pending row of the node whole, sorted by due_at, once a second per node; at 5,000 fires/s
    // on 3 nodes MariaDB ran that as a scan of the whole table (EXPLAIN: type ALL, filesort; 153
    // ms for one poll of 2,400 rows), to learn that the slave already knew every one of them
    // from the master's notifications. Each branch is a derived table: SQLite allows an ORDER
    // BY and LIMIT only on a whole compound SELECT.
    const std::string cap = std::to_string(std::max(1, limit));
    return impl::SelectRows<impl::IdRow>(
        s,
        "SELECT id FROM (SELECT id FROM job_fire WHERE status = 'pending' AND assigned_node = :node ORDER BY "
        "scheduled_time, id LIMIT " +
            cap +
            ") AS pending_fires UNION ALL SELECT id FROM (SELECT id FROM job_fire WHERE status = 'dispatching' AND "
            "assigned_node = :node2 ORDER BY scheduled_time, id LIMIT " +
            cap + ") AS dispatching_fires",
        [&](soci::statement& st) {
            st.exchange(soci::use(node, "node"));
            st.exchange(soci::use(node, "node2"));
        });
}

std::vector<Fire> FireClaims::FindPending(soci::session& s, const std::string& node,
                                          const std::vector<std::int64_t>& ids) {
    if (ids.empty()) return {};
    return impl::SelectRows<ClaimRow>(s,
                                      std::string("SELECT ") + kClaimColumns + " FROM job_fire WHERE id IN (" +
                                          IdList(ids) +
                                          ") AND assigned_node = :node AND (status = 'pending' OR (status = "
                                          "'dispatching' AND claim_token IS NULL)) ORDER BY due_at, id",
                                      [&](soci::statement& st) { st.exchange(soci::use(node, "node")); });
}

std::vector<std::int64_t> FireClaims::ClaimedBefore(soci::session& s, const std::string& node, std::int64_t started_ms,
                                                    int limit) {
    return impl::SelectRows<impl::IdRow>(
        s,
        "SELECT id FROM job_fire WHERE status = 'dispatching' AND assigned_node = :node AND claim_token IS NOT NULL "
        "AND dispatched_at < :started ORDER BY due_at, id LIMIT " +
            std::to_string(std::max(1, limit)),
        [&](soci::statement& st) {
            st.exchange(soci::use(node, "node"));
            st.exchange(soci::use(started_ms, "started"));
        });
}

std::optional<std::int64_t> FireClaims::TakePlanned(soci::session& s, const std::string& node) {
    soci::statement st = (s.prepare << "UPDATE trigger_node SET sent_through = 0 WHERE node_id = :node AND "
                                       "sent_through IS NULL",
                          soci::use(node, "node"));
    impl::ExecuteAffected(st);
    return SentThrough(s, node);
}

int FireClaims::LoseSentBefore(soci::session& s, const std::string& node, std::int64_t sent_through,
                               std::int64_t now_ms) {
    const auto ids = impl::SelectRows<impl::IdRow>(
        s,
        "SELECT id FROM job_fire WHERE status = 'dispatching' AND assigned_node = :node AND claim_token IS NULL AND "
        "due_at <= :through",
        [&](soci::statement& st) {
            st.exchange(soci::use(node, "node"));
            st.exchange(soci::use(sent_through, "through"));
        });
    int lost = 0;
    const std::string message = "slave " + node + " restarted; its previous process may have sent the fire";
    for (const std::int64_t id : ids) {
        lost += FireRepository::Transition(s, id, {FireStatus::kDispatching}, FireStatus::kLost,
                                           {.finished_at = now_ms,
                                            .result_message = message,
                                            .reason = FireReason::kSlaveRestarted,
                                            .followup = true});
    }
    return lost;
}

int FireClaims::HandBack(soci::session& s, const std::string& node, const std::optional<std::set<std::int64_t>>& sent) {
    soci::statement pending =
        (s.prepare << "UPDATE job_fire SET assigned_node = NULL WHERE assigned_node = :node AND status = 'pending'",
         soci::use(node, "node"));
    long long handed = impl::ExecuteAffected(pending);
    if (!sent) return static_cast<int>(handed);
    const std::string keep =
        sent->empty() ? std::string() : " AND id NOT IN (" + IdList({sent->begin(), sent->end()}) + ")";
    soci::statement planned = (s.prepare << "UPDATE job_fire SET status = 'pending', assigned_node = NULL, "
                                            "dispatch_epoch = NULL, dispatched_at = NULL WHERE assigned_node = :node "
                                            "AND status = 'dispatching' AND claim_token IS NULL" +
                                                keep,
                               soci::use(node, "node"));
    handed += impl::ExecuteAffected(planned);
    return static_cast<int>(handed);
}

std::vector<std::string> FireClaims::SilentDispatching(soci::session& s, const std::vector<std::string>& live) {
    // From the nodes, not from the fires: MariaDB ran a DISTINCT over the dispatching fires by
    // reading every one of them (no skip through idx_fire_state by node), and with fires planned
    // seconds ahead that was 11,540 index entries per scan at 5,000 fires/s, 54 % of the rows it
    // examined. Each node's EXISTS is a probe of idx_fire_state (status, assigned_node).
    std::string sql =
        "SELECT node_id FROM trigger_node WHERE sent_through IS NOT NULL AND EXISTS (SELECT 1 FROM job_fire WHERE "
        "job_fire.status = 'dispatching' AND job_fire.assigned_node = trigger_node.node_id)";
    if (!live.empty()) {
        sql += " AND node_id NOT IN (";
        for (std::size_t i = 0; i < live.size(); ++i) sql += (i ? ", :n" : ":n") + std::to_string(i);
        sql += ")";
    }
    sql += " ORDER BY node_id";
    return impl::SelectRows<NodeIdRow>(s, sql, [&](soci::statement& st) {
        for (std::size_t i = 0; i < live.size(); ++i) st.exchange(soci::use(live[i], "n" + std::to_string(i)));
    });
}

int FireClaims::ReleaseUnsent(soci::session& s, const std::string& node) {
    const auto through = SentThrough(s, node);
    if (!through) return 0;  // a node that never took planned fires
    // The CAS writes the row a raising claim writes: under MariaDB's row lock one waits for the
    // other (and one that raised meanwhile fails it); between Galera servers certification
    // aborts one of them. Released or not, the fires at or before the value are the orphan
    // step's to judge lost.
    const std::int64_t judged = *through + 1;
    soci::statement cas = (s.prepare << "UPDATE trigger_node SET sent_through = :judged WHERE node_id = :node AND "
                                        "sent_through = :through",
                           soci::use(judged, "judged"), soci::use(node, "node"), soci::use(*through, "through"));
    if (impl::ExecuteAffected(cas) != 1) return 0;  // raised meanwhile: the next scan looks again
    soci::statement release =
        (s.prepare << "UPDATE job_fire SET status = 'pending', assigned_node = NULL, dispatch_epoch = NULL, "
                      "dispatched_at = NULL WHERE assigned_node = :node AND status = 'dispatching' AND claim_token IS "
                      "NULL AND due_at > :judged",
         soci::use(node, "node"), soci::use(judged, "judged"));
    return static_cast<int>(impl::ExecuteAffected(release));
}

}  // namespace sched::store
