#pragma once

/// The slave's waiting fires, without I/O or timers: which fires it knows, when each is due,
/// and which of them form the next group to claim.
///
/// A fire is *known* from the moment it is queued (a notice or a poll) until the slave forgets
/// it (its claim lost it, or its send ended); while known it is never queued twice. Queued
/// fires wait by (due time, id). TakeGroup hands out the next group: nothing until the earliest
/// is due within `claim_ahead` of now, then every fire due within twice `claim_ahead` of now,
/// earliest first, at most `max_group` (so fires spread over time are still claimed in groups,
/// each between claim-ahead and twice claim-ahead before its due time). At a low rate such a
/// group is small: one with fewer than `GroupFill::min_fires` also takes the fires due up to
/// `claim_ahead + GroupFill::span_ms` from now until it has that many, so a node claims a few
/// times a second instead of every claim-ahead: only fires admitted with `fill` (their jobs'
/// claims judge nothing by the time, model::MayClaimEarly), not a burst's, not held ones.
///
/// Bursts: a top of the hour puts thousands of fires on one due time, more than one node claims
/// in claim-ahead. A due time with at least `Bursts::min_fires` queued fires is a *burst*; its
/// fires are claimed earlier, from `claim_ahead + lead` before it, lead = its queued fires /
/// `Bursts::claim_rate` (at most `Bursts::max_lead_ms`), a group of its fires at a time, only
/// while no ordinary group is due (those keep their time). As its fires leave the queue the lead
/// shrinks: claims faster than the rate pause until the rest is due to be claimed, so a burst is
/// claimed just in time at the assumed rate, not as early as allowed. One burst at a time, the
/// earliest; fewer than `min_fires` left at its time go as an ordinary group. A burst's lead is
/// at most half the time since the last burst claimed (bursts that recur, every second, fire the
/// same serial jobs: their runs have that long to end first). Held fires (Requeue) never count.
///
/// Bounds: a notice is not read against the database, so what it may queue is bounded in time
/// (AdmitNotice leaves fires due later than kNoticeHorizonMs to the poll, which reads them) and
/// in count (at most kMaxQueued known fires; beyond, a notice's or a poll's further fires wait
/// for a later poll).
///
/// Thread-safe (one mutex): notices and polls admit from I/O threads while the group loop takes.

#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_set>
#include <utility>
#include <vector>

#include "sched/protocol/fires_notice.hpp"

namespace sched::trigger {

/// How FireQueue claims bursts ahead. `min_fires` 0 or `max_lead_ms` 0: not at all.
struct BurstClaims {
    std::size_t min_fires = 0;  ///< queued fires at one due time that make a burst
    double claim_rate = 1;      ///< fires per second the node's claims are assumed to keep up
    std::int64_t max_lead_ms = 0;
};

/// How FireQueue fills a small group. `min_fires` 0 or `span_ms` 0: not at all.
struct GroupFill {
    std::size_t min_fires = 0;  ///< a group with fewer fires due within twice claim-ahead is filled
    std::int64_t span_ms = 0;   ///< with fires due up to claim-ahead + this from now
};

class FireQueue {
  public:
    /// A notice's fires due later than this (from now) are left to the poll.
    static constexpr std::int64_t kNoticeHorizonMs = 60'000;
    /// Known fires (queued, claimed or being sent) at most.
    static constexpr std::size_t kMaxQueued = 100'000;

    /// How bursts are claimed ahead (above).
    using Bursts = BurstClaims;
    /// How small groups are filled (above).
    using Fill = GroupFill;

    /// `claim_ahead_ms` as documented above; `capacity` bounds the known fires (tests lower it).
    explicit FireQueue(std::int64_t claim_ahead_ms, std::size_t capacity = kMaxQueued, Bursts bursts = {},
                       Fill fill = {});

    /// What admitting fires changed.
    struct Admitted {
        /// A new fire is to be claimed before the group loop's planned wake-up: wake it.
        bool wake = false;
        /// The queue reached its capacity (reported once per fill: log it).
        bool filled = false;
    };
    /// Queues the fires not known yet, up to the capacity. Does nothing once closed.
    Admitted Admit(const std::vector<protocol::NoticedFire>& fires);
    /// Admit for a master's notice: only the fires due by `now_ms + kNoticeHorizonMs`.
    Admitted AdmitNotice(const std::vector<protocol::NoticedFire>& fires, std::int64_t now_ms);

    /// The next group to claim, and how long the group loop may sleep after it.
    struct Group {
        std::vector<std::int64_t> ids;  ///< leave the queue, stay known
        std::int64_t wait_ms = 0;       ///< until the next group is due (at most `idle_wait_ms`)
        /// A burst's group: its due time, and how many of its fires stay queued after this group.
        std::optional<std::int64_t> burst_due_at;
        std::size_t burst_left = 0;
        /// The latest due time among `ids` as queued (a held fire's: its retry time plus
        /// claim-ahead, later than its due time); INT64 min without ids.
        std::int64_t latest_due_ms = std::numeric_limits<std::int64_t>::min();
        /// Every one of `ids` was noticed (or polled) as planned already claimed for this node
        /// and not held back since: the claim need not look for pending ones.
        bool all_planned = false;
    };
    /// As documented above. With no group due, records when the loop will wake (now +
    /// wait_ms), so that Admit reports a fire due sooner; with a group, the loop is awake.
    Group TakeGroup(std::int64_t now_ms, int max_group, std::int64_t idle_wait_ms);

    /// Puts fires taken earlier and held back (their job's concurrency limit was reached) back in
    /// the queue, each to be taken again at its `due_at` read as a retry time (HeldFires), not as
    /// a due time. Fires no longer known (forgotten, closed) are left out.
    Admitted Requeue(const std::vector<protocol::NoticedFire>& fires);

    /// Those of `ids` not known here (the poll reads only these whole).
    std::vector<std::int64_t> Unknown(const std::vector<std::int64_t>& ids) const;
    /// The fire is no longer claimed or being sent here.
    void Forget(std::int64_t id);
    /// Stops admitting and drops the queued fires (they stay pending in the database); fires
    /// claimed or being sent stay known until forgotten.
    void Close();

    /// Fires known here.
    std::size_t Known() const;
    /// Fires queued (not yet claimed).
    std::size_t Queued() const;

  private:
    Admitted AdmitLocked(const std::vector<protocol::NoticedFire>& fires);
    bool BurstsOn() const;
    void Enqueue(std::int64_t due_at, std::int64_t id, bool held, bool fill);
    void Dequeue(std::set<std::pair<std::int64_t, std::int64_t>>::iterator it);
    /// Adds to `group` the fires a small group is filled with (Fill).
    void FillSmallGroup(Group& group, std::int64_t now_ms, int max_group);
    /// The earliest queued burst's due time and when its claims start; nullopt without one.
    struct BurstDue {
        std::int64_t due_at;
        std::int64_t claim_at;
    };
    std::optional<BurstDue> NextBurst() const;
    /// When the next group is to be taken (INT64 max with nothing queued).
    std::int64_t NextClaimAt() const;

    const std::int64_t claim_ahead_ms_;
    const std::size_t capacity_;
    const Bursts bursts_;
    const Fill fill_;
    mutable std::mutex mu_;
    std::set<std::int64_t> known_;
    std::set<std::pair<std::int64_t, std::int64_t>> due_;  // queued, by (due_at, id)
    // With bursts on: queued fires per due time, and the due times that are bursts.
    std::map<std::int64_t, std::size_t> queued_at_;
    std::set<std::int64_t> burst_times_;
    std::set<std::int64_t> held_;                    // queued by Requeue: at a retry time, never part of a burst
    std::set<std::int64_t> fillable_;                // queued fires that may fill a small group
    std::unordered_set<std::int64_t> planned_;       // known fires noticed as planned (NoticedFire::planned)
    std::optional<std::int64_t> last_burst_due_ms_;  // the due time of the last burst claimed
    std::int64_t wake_at_ms_ = std::numeric_limits<std::int64_t>::min();
    bool filled_reported_ = false;
    bool closed_ = false;
};

}  // namespace sched::trigger
