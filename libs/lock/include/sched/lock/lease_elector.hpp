#pragma once

/// Leader election by a lease on one `scheduler_lock` row: at most one node at a time leads the
/// namespace (default "master").
///
/// A version-CAS take-over and a renew every tick, with these rules:
///  - expiry is judged only by the database clock, inside the CAS statements, in microseconds;
///    a renew in the same second as the previous one is an ordinary successful renew;
///  - `epoch` increases on every change of owner and is the fencing token (see fenced.hpp);
///  - a leader stops leading on its own monotonic clock at
///        (steady time at the start of its last successful renew) + ttl - margin,
///    when no renew has succeeded since. The database's lease runs at least until
///    (that start) + ttl, so the leader has stopped at least `margin` before any other node can
///    take the row over. `margin` must cover the drift between the two clocks and the time
///    master code needs to notice (see CurrentLeadership);
///  - a leadership term, once ended, is never resumed: a renew that succeeds after the deadline
///    still ends the term, and the node gives the row back so that a new term (new epoch) starts;
///  - on shutdown the leader stops leading first and then releases the row (owner and epoch
///    checked), so a planned restart hands over within one tick instead of one TTL;
///  - a row left by a clock that has since moved back (its last write more than `margin`, or its
///    expiry more than ttl + margin, ahead of the database clock: ClockStepGuard) is expired: a
///    node takes it over at its next round (a CAS, new epoch), logs the clock anomaly once with
///    the amount and counts it (ElectionCounters::clock_anomalies). Without this, a clock stepped
///    back by an hour while the leader was down locks the cluster out for that hour.
///
/// YAML (section `election`), durations as strings:
///   tick: 1s      # how often each node runs one round (renew, or try to acquire)
///   ttl: 3s       # lease length written to the database on every acquire and renew
///   margin: 1s    # how much earlier than the lease's end a leader stops on its own clock
/// Start-up checks (ConfigError naming the key): every value positive; tick < ttl / 2 (a leader
/// gets at least two renew attempts per lease); tick + margin < ttl (a healthy leader renews
/// before its own deadline). Keep every database timeout of the election's pool below `margin`
/// (ElectionDbUrl does that).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "sched/common/clock.hpp"
#include "sched/common/config.hpp"
#include "sched/common/duration.hpp"
#include "sched/db/db_url.hpp"
#include "sched/lock/lock_store.hpp"

namespace sched::lock {

struct ElectionConfig {
    Micros tick = std::chrono::seconds(1);
    Micros ttl = std::chrono::seconds(3);
    Micros margin = std::chrono::seconds(1);
    /// The lock row's name. Not a YAML key: the cluster has one master lease.
    std::string name = "master";

    /// Reads `tick`, `ttl` and `margin` from `node` (the `election` section) and validates them.
    /// Throws ConfigError naming the key ("election.tick: must be less than ttl / 2 ...").
    static ElectionConfig FromYaml(const ConfigNode& node);
    /// Throws ConfigError, with keys under `path`, when the values break the rules above.
    void Validate(const std::string& path = "election") const;
};

/// `base` tuned for the election's own pool: 2 sessions, and every wait that could block a renew
/// (session acquire, MariaDB max_statement_time, SQLite busy timeout) at margin / 2, so a renew
/// returns, successful or not, before its leader's deadline. On SQLite the pool has priority (DbUrl::priority):
/// while a renew runs, the process's other calls on the file wait to start, so a steady stream
/// of fire writes cannot keep the single write lock from it for its whole busy timeout. MySQL's lock-wait, connect and
/// network read/write timeouts are whole seconds (1 s minimum; the client library may retry a
/// read up to three times): max_statement_time is what keeps a slow server inside the margin,
/// and CurrentLeadership() stays exact even while a statement hangs.
db::DbUrl ElectionDbUrl(db::DbUrl base, const ElectionConfig& config);

/// Why a leadership term ended.
enum class StopReason {
    kResigned,     ///< Resign() or the end of Run(): a planned stop
    kLost,         ///< a renew found the row expired, taken over or released by the database's judgement
    kSelfDemoted,  ///< no renew succeeded before the local deadline (start of last renew + ttl - margin)
};
std::string_view StopReasonName(StopReason reason);  // "resigned", "lost", "self-demoted"

/// A current leadership term.
struct Leadership {
    std::int64_t epoch = 0;  ///< the fencing token of this term
    /// The term ends at this steady instant unless a renew succeeds before; master code that
    /// starts a unit of work can use it as that work's deadline.
    std::chrono::steady_clock::time_point valid_until;
};

/// How a term ended.
struct LeadershipEnd {
    std::int64_t epoch = 0;
    StopReason reason = StopReason::kResigned;
    /// The steady instant the term ended: when CurrentLeadership() stopped returning it. For
    /// kSelfDemoted that is the deadline itself, which may lie before the notification.
    std::chrono::steady_clock::time_point ended_at;
    std::string detail;  ///< human-readable cause (the failed renew's error, ...)
};

/// Observers run on the thread that drives the elector (Tick/Run/Resign), one at a time, without
/// the elector's lock held. They must return promptly: the next renew waits for them.
/// OnStoppedLeading should stop master work (and wait for it, boundedly) before it returns: on
/// Resign the row is released only afterwards.
class ElectionObserver {
  public:
    virtual ~ElectionObserver() = default;
    virtual void OnStartedLeading(std::int64_t /*epoch*/) {}
    virtual void OnStoppedLeading(const LeadershipEnd& /*end*/) {}
    /// The node seen holding the lease changed (another node, or this one when it starts
    /// leading), with that holder's epoch. Not called while nobody holds it.
    virtual void OnNewLeader(const std::string& /*node_id*/, std::int64_t /*epoch*/) {}
};

/// A policy that spreads several leases over nodes (one elector per lease, all consulting the same
/// gate): it may hold back an acquisition and ask a leader to give its lease back. Called on the
/// elector's driver thread; must return promptly and never block on the database.
class AcquireGate {
  public:
    virtual ~AcquireGate() = default;
    /// The lease `name` is free (released, expired or absent) and this node could take it now.
    /// `free_since` is the start of the first round of this elector that found it free (the
    /// current one or an earlier one, with no round finding it held in between).
    virtual bool MayAcquire(std::string_view name, std::chrono::steady_clock::time_point free_since) = 0;
    /// This node leads `name`: whether it should resign it now, for another node to take.
    virtual bool ShouldYield(std::string_view name) = 0;
};

/// Monotonic counts since construction (exported as metrics by the trigger module).
struct ElectionCounters {
    std::uint64_t ticks = 0;
    std::uint64_t started_leading = 0;  ///< transitions to leader
    std::uint64_t stopped_leading = 0;  ///< transitions from leader, any reason
    std::uint64_t renews = 0;           ///< successful renews
    std::uint64_t renew_failures = 0;   ///< renews that errored or found the lease gone
    std::uint64_t self_demotions = 0;   ///< terms ended by the local deadline (kSelfDemoted)
    std::uint64_t acquire_errors = 0;   ///< acquisition rounds that failed with a database error
    std::uint64_t clock_anomalies = 0;  ///< leases taken over because the clock had moved back
};

/// The election state machine plus an optional driver loop.
///
/// Threading: Tick(), Run() and Resign() are called by one driver thread (or strand) at a time.
/// CurrentLeadership(), IsLeading(), LeaderSeen() and Counters() are cheap (a mutex and a clock
/// read) and safe from any thread. The store and observers must outlive the elector.
class LeaseElector {
  public:
    /// Validates `config` (throws ConfigError). `node_id` is this node's owner string in the row
    /// (MakeNodeId()); `clock` supplies the steady time for self-demotion.
    LeaseElector(LockStore& store, std::string node_id, ElectionConfig config,
                 const Clock& clock = SystemClock::Instance());
    ~LeaseElector();
    LeaseElector(const LeaseElector&) = delete;
    LeaseElector& operator=(const LeaseElector&) = delete;

    /// Adds an observer (not owned). Call before the first Tick.
    void AddObserver(ElectionObserver& observer);
    /// Consults `gate` (not owned) before every acquisition, and in Run() after every round
    /// while leading (a yield is a Resign: observers first, then the row released). Call before
    /// the first Tick. Without a gate the elector takes any free lease at once.
    void SetGate(AcquireGate& gate) { gate_ = &gate; }

    /// One round: ends the term if its deadline has passed; a leader renews; a follower reads the
    /// row and acquires it when it is released or expired (database clock), or gives back a row
    /// still held in its own name from a term that ended. Database errors are counted and logged,
    /// never thrown; the next round retries.
    void Tick();

    /// When the driver should call Tick next: `tick` after the start of the last round, or the
    /// term's deadline if that is sooner (so that OnStoppedLeading fires on time).
    std::chrono::steady_clock::time_point NextTickAt() const;

    /// Drives Tick() on the calling thread until `stop` is requested, then Resign()s. Sleeps on
    /// the real steady clock between rounds (an injected FakeClock is for Tick()-driven tests).
    void Run(const std::stop_token& stop);

    /// Makes Run() start its next round now instead of at NextTickAt(): a node whose leader just
    /// released the lease (a planned stop) is nudged so the takeover does not wait for a tick.
    /// Safe from any thread; harmless while leading (the round renews early).
    void Nudge();

    /// Stops leading (observers first), then releases the row with owner and epoch checked.
    /// OK when not leading or released; LeaseLost when the row was no longer ours (nothing was
    /// changed); database errors otherwise (the row then expires after the TTL).
    Status Resign();

    /// The current term, or nullopt when not leading. Exact at every instant: the term's deadline
    /// is checked here against the steady clock, so it turns false on time even while the driver
    /// thread is blocked in a statement.
    std::optional<Leadership> CurrentLeadership() const;
    bool IsLeading() const { return CurrentLeadership().has_value(); }
    /// True while leading in term `epoch` (master loops pass the epoch they started with).
    bool IsLeading(std::int64_t epoch) const;

    /// The holder last seen (this node while leading), with its epoch.
    std::optional<std::pair<std::string, std::int64_t>> LeaderSeen() const;
    /// The latest steady instant at which some node is known to have held the lease and written
    /// it: this node's own acquisition or renew, or another holder's last write as a round read it
    /// (round start - the row's age by the database clock). nullopt before any such sighting.
    /// A holder that died leaves its row looking valid for up to a ttl, but its row stops aging
    /// from here: readiness checks (the trigger node's /readyz) compare this with ttl + tick.
    /// A row from a clock that moved back is no sighting (it is taken over instead).
    std::optional<std::chrono::steady_clock::time_point> LastLeaderActivity() const;
    /// The clock-step rule this elector applies to the lease row: tolerance margin, expiry at
    /// most ttl + margin ahead.
    ClockStepGuard clock_step_guard() const {
        return {.tolerance = config_.margin, .max_lease_ahead = config_.ttl + config_.margin};
    }
    ElectionCounters Counters() const;
    const std::string& node_id() const { return node_id_; }
    const ElectionConfig& config() const { return config_; }

  private:
    using SteadyTime = std::chrono::steady_clock::time_point;

    void RenewRound();
    void AcquireRound();
    void Promote(const Holding& holding, SteadyTime renew_start);
    void Demote(StopReason reason, SteadyTime ended_at, std::string detail);
    void SeeLeader(const std::string& node, std::int64_t epoch);
    void SeeLeaderActivity(SteadyTime at);
    /// A round found the row held by another owner (or by this node's ended term).
    void SeeHolder(const LockRow& seen, SteadyTime round_start);
    /// With a gate: whether this round may try to take the row (false also after a read error).
    bool GateAllows(SteadyTime round_start, const ClockStepGuard& guard);

    LockStore& store_;
    const std::string node_id_;
    const ElectionConfig config_;
    const Clock& clock_;
    std::vector<ElectionObserver*> observers_;
    AcquireGate* gate_ = nullptr;
    std::optional<SteadyTime> free_since_;  // driver thread only

    // Written by the driver thread under mu_; read by anyone under mu_.
    mutable std::mutex mu_;
    bool leading_ = false;
    Holding holding_;
    SteadyTime valid_until_{};
    SteadyTime last_round_start_{};
    std::optional<std::pair<std::string, std::int64_t>> leader_seen_;
    std::optional<SteadyTime> leader_activity_;
    ElectionCounters counters_;

    std::mutex wait_mu_;
    std::condition_variable_any wait_cv_;
    bool nudged_ = false;  // guarded by wait_mu_
};

}  // namespace sched::lock
