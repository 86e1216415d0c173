#pragma once

/// The slave's group operations on `job_fire` (docs/architecture/slave.md): a group of due
/// fires is claimed with one UPDATE, which also reads the lease epoch it stamps, and the fires
/// won are learnt with their jobs by one SELECT by claim token; the fires accepted by one
/// executor instance are recorded `running` with one UPDATE.
///
/// Planned fires: the master writes most scheduled fires already claimed for their node
/// (`dispatching`, the epoch stamped, claim_token NULL), so that a fire's row changes twice, at
/// its plan and at its end. Nothing in such a row says whether it was sent; the node's
/// `trigger_node.sent_through` does, by a due time: the node sends a planned fire only when the
/// fire is due at or before a value of it the node has committed (raised by the claim, before
/// the claim reads its fires). A planned fire due after it was never sent, so a dead node's are
/// handed back (ReleaseUnsent) and the others judged lost; a restarted node judges its own the
/// same way (LoseSentBefore), and a stopping one hands back those it has not sent (HandBack).
/// All of them are session-level: the caller owns the transaction.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "sched/db/dialect.hpp"
#include "sched/model/fire.hpp"
#include "sched/model/job.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"

namespace sched::store {

/// A fire an executor instance accepted, and when (its 202).
struct StartedFire {
    std::int64_t id = 0;
    std::int64_t started_at = 0;
};

/// What admitting a claim's fires to their jobs' concurrency limits decided (FireClaims::Admit).
struct Admission {
    /// To send: the fires that took a seat of their job's limit, or need none (allow-all, a
    /// sibling shard of a run that holds one), in the claim's order.
    std::vector<model::Fire> admitted;
    /// Back to `pending` (reason concurrency), to be claimed again later: the limit is reached
    /// and the policy buffers (buffer-one, buffer-all, cancel-other).
    std::vector<std::int64_t> held;
    /// Of `held`, the first in line: the earliest fire of its job waiting for a seat (the next
    /// to take one; claim it again soon, the others later).
    std::set<std::int64_t> first_in_line;
    /// Ended `skipped` (reason blocked): the limit is reached and the policy drops them (skip, a
    /// second waiting fire of buffer-one).
    std::vector<std::int64_t> skipped;
    /// Ended `skipped` (reason misfire) before they could take a seat: late, and their job's
    /// misfire policy does not run them (the claim's LateJudge).
    std::vector<std::int64_t> late;
    /// Running fires of those jobs to stop with a kill (cancel-other; terminate-other, whose
    /// fires are already ended `killed` here).
    std::vector<model::Fire> stop;
};

/// Whether a claimed fire is a misfire its job's policy does not run (the reason text), given the
/// fires claimed with it; judged before it may take or wait for a seat.
using LateJudge = std::function<std::optional<std::string>(const model::Fire& fire, const model::Job& job,
                                                           const std::vector<model::Fire>& claimed)>;

/// The lease rows whose epochs a claim stamps, summed: the row named `name` and every row whose
/// namespace is LIKE `pattern` (the election's lease and its shards' rows, ShardLeasePattern).
/// The same sum as lock::ReadEpochSum; 0 without any row.
struct LeaseRows {
    std::string name;
    std::string pattern;
};

/// What a claim knows of its fires before it reads them (FireClaims::Claim).
struct ClaimOptions {
    /// Raise the node's sent_through to this first, when higher.
    std::optional<std::int64_t> raise_sent_through;
    /// Every fire was noticed as planned: no UPDATE of pending ones (one that is pending after
    /// all is not won, and found again by the slave's poll).
    bool only_planned = false;
};

/// What a claim won: the fires and their jobs.
struct ClaimedFires {
    /// Dispatching under the claim's token, or planned for the node (below), in due order.
    std::vector<model::Fire> fires;
    /// The jobs of those fires that still exist, by id (a deleted job's fire has none).
    std::map<std::int64_t, model::Job> jobs;
    /// Of `fires`, those the master planned already claimed for the node (no claim token).
    std::set<std::int64_t> planned;
    /// The node's committed sent_through as the claim's read saw it (nullopt: none): a planned
    /// fire due after it must not be sent.
    std::optional<std::int64_t> sent_through;
};

class FireClaims {
  public:
    /// Moves the fires among `ids` that are still `pending` and assigned to `node` to
    /// `dispatching`, stamping claim_token = `token`, dispatch_epoch = the sum of the epochs of
    /// the `lease` rows, read by the same UPDATE (so it is the epoch in force when the fires left
    /// pending), and dispatched_at = `now_ms` (the claim time: before the due time for a fire
    /// claimed ahead), and returns the
    /// fires that carry `token` and are still `dispatching`: those this claim won, and those an
    /// earlier try of the same claim (same token) won before its commit was lost; with their
    /// jobs, read by the same SELECT (a join; a second read only when a fire's job is gone). A
    /// fire another slave claimed first, or that is no longer pending, is not returned.
    ///
    /// Planned fires among `ids` (dispatching, no token, assigned to `node`) are returned as well,
    /// in `planned`, without a write. Before they are read, the node's sent_through is raised to
    /// `options.raise_sent_through` when given and higher (one row; its lock orders the claim
    /// after a master's ReleaseUnsent of this node, so the read sees what that handed back).
    static ClaimedFires Claim(soci::session& s, const std::string& node, const std::vector<std::int64_t>& ids,
                              std::int64_t token, const LeaseRows& lease, std::int64_t now_ms,
                              const ClaimOptions& options = {});

    /// Admits the fires a claim won (`claimed`, dispatching under `token`, in due order) to their
    /// jobs' concurrency limits, cluster-wide: a job whose policy is not allow-all has
    /// `concurrency_limit` seats (table concurrency_slot, scope "job:<id>"); a seat is free when
    /// its holder is no longer dispatching or running (one lost while dispatching keeps it for
    /// its job's timeout, or 60 s without one: its run may still be going). A fire that finds a
    /// free seat takes it; otherwise its job's policy (OverlapPolicy) decides: skip ends it skipped; buffer-all holds
    /// it back; buffer-one holds one and skips the others; cancel-other holds it and asks for the running fires to
    /// stop; terminate-other ends the running fires killed and takes their seat. Before that, a fire `late` judges a
    /// misfire (one not held before) ends skipped, reason misfire, without a seat: a wait for a seat would otherwise
    /// hide its lateness. Held fires go back to `pending` with reason concurrency; a held fire admitted later has that
    /// reason cleared (and keeps it in `admitted`, so the slave does not judge its wait a misfire). Seats go in order:
    /// the earliest waiting fire of a job is first in line (scope "wait:job:<id>"; buffer-one's one waiting fire), and
    /// no later fire takes a seat before it. The seats read are locked until commit (MySQL FOR UPDATE) and the seats
    /// taken are written, so two claims of one seat never both commit (on a Galera cluster, by certification).
    /// A job that names a concurrency key (ConcurrencyKeyRepository) also needs a free seat of the
    /// key's max_running (scope "key:<name>") and, with a rate limit, a start whose window passed
    /// (scope "rate:<name>"); a fire the key holds back is skipped under skip and held otherwise.
    static Admission Admit(soci::session& s, const db::Dialect& dialect, std::vector<model::Fire> claimed,
                           const std::map<std::int64_t, model::Job>& jobs, std::int64_t token, std::int64_t now_ms,
                           const LateJudge& late = {});

    /// Sets the dispatch epoch of fire `id` to `epoch` if it is `dispatching` under `token` (or
    /// planned, without a token); whether it did.
    static bool Restamp(soci::session& s, std::int64_t id, std::int64_t token, std::int64_t epoch);

    /// Records `running` (executor_address, each fire's own started_at) for the fires among
    /// `fires` still `dispatching`: the fires one executor instance accepted, in one UPDATE
    /// (started_at is a CASE over the distinct start times, usually one per batch of runs). A
    /// fast handler's callback may have ended a fire already; that fire is left as it is.
    /// Returns how many moved.
    static int MarkRunning(soci::session& s, const std::vector<StartedFire>& fires, const std::string& address);

    /// The ids of the fires `pending` or `dispatching` (planned or claimed) and assigned to
    /// `node`, each kind earliest scheduled first, at most `limit` of each (the slave's poll,
    /// read from idx_fire_state alone; FindPending keeps the pending and planned ones).
    static std::vector<std::int64_t> ListPendingIds(soci::session& s, const std::string& node, int limit);

    /// The fires among `ids` that are `pending` or planned and assigned to `node` (a
    /// notification's ids, the poll's unknown ones).
    static std::vector<model::Fire> FindPending(soci::session& s, const std::string& node,
                                                const std::vector<std::int64_t>& ids);

    /// The ids of the fires `node` claimed (a claim token) before `started_ms` and still
    /// dispatching, at most `limit`: those of an earlier process under the node id.
    static std::vector<std::int64_t> ClaimedBefore(soci::session& s, const std::string& node, std::int64_t started_ms,
                                                   int limit);

    /// The node's committed sent_through, set to 0 first when it is NULL (the node takes planned
    /// fires from now on); nullopt without a trigger_node row (no heartbeat yet).
    static std::optional<std::int64_t> TakePlanned(soci::session& s, const std::string& node);

    /// A restarted node's first step: its planned fires due at or before `sent_through` (the
    /// value its previous process committed) may have been sent by that process: `lost`, reason
    /// slave-restarted. Returns how many.
    static int LoseSentBefore(soci::session& s, const std::string& node, std::int64_t sent_through,
                              std::int64_t now_ms);

    /// A stopping node gives back its pending fires and, with `sent`, the planned ones it has not
    /// sent (every one not in `sent`): `pending`, no node, for the master to reassign. Call it
    /// with `sent` only once the node claims no more. Returns how many.
    static int HandBack(soci::session& s, const std::string& node, const std::optional<std::set<std::int64_t>>& sent);

    /// The nodes that take planned fires (a sent_through), are not among `live` and hold
    /// dispatching fires: a read of trigger_node with one probe of idx_fire_state per such node,
    /// so its cost does not grow with the fires planned ahead.
    static std::vector<std::string> SilentDispatching(soci::session& s, const std::vector<std::string>& live);

    /// For a node that gets no new fires (the master's orphan step): its planned fires due after its
    /// sent_through were never sent and go back to `pending` with no node. The sent_through is
    /// moved by a CAS (one more millisecond), so this waits for, or fails against, a claim of the
    /// node raising it meanwhile (also across Galera servers, by certification); the fires at
    /// or before it are left for the orphan step to judge lost. Returns how many went back.
    static int ReleaseUnsent(soci::session& s, const std::string& node);
};

}  // namespace sched::store
