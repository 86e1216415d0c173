#pragma once

/// How a slave retries the claim of a group of fires that failed, without I/O: how long to wait
/// and how many of the group's fires the next attempt claims (the others are claimed after it).
///
/// Two kinds of failure are told apart:
/// - a *conflict* (Code::kAborted: an InnoDB deadlock, a Galera certification failure or
///   brute-force abort) means another writer touched the same rows at the same moment. The
///   transaction was rolled back and the database is fine: the next attempt comes soon (a few
///   milliseconds, capped at kConflictCapMs), and a group that loses kSplitAfter conflicts in
///   a row is halved, down to one fire, since a smaller group touches fewer rows (fires, seats)
///   that other nodes write;
/// - anything else (the database unreachable, a statement timeout) backs off up to kOtherCapMs
///   and keeps the group whole.
/// Every wait is spread (BackoffJitter::kSpread): a fixed wait can lock into the rhythm of the
/// writers it collides with (jobs due every second, claimed at the same offset of each second),
/// so that every attempt meets them again.
///
/// One per claimed group, used from one coroutine. Not thread-safe.

#include <cstddef>
#include <cstdint>

#include "sched/common/backoff.hpp"
#include "sched/common/status.hpp"

namespace sched::trigger {

class ClaimRetry {
  public:
    static constexpr std::int64_t kConflictFirstMs = 5;
    static constexpr std::int64_t kConflictCapMs = 100;
    static constexpr std::int64_t kOtherFirstMs = 10;
    static constexpr std::int64_t kOtherCapMs = 1'000;
    /// Conflicts in a row after which a group of more than one fire is halved.
    static constexpr int kSplitAfter = 2;

    struct Step {
        Micros wait;        ///< before the next attempt
        std::size_t claim;  ///< fires the next attempt claims: the first `claim` of the group, >= 1
    };
    /// After the failure `why` of an attempt that claimed `claimed` fires (>= 1).
    Step Next(const Status& why, std::size_t claimed);

    /// Conflicts in a row so far.
    int conflicts() const { return conflicts_; }

  private:
    Backoff conflict_{std::chrono::milliseconds(kConflictFirstMs), std::chrono::milliseconds(kConflictCapMs),
                      BackoffJitter::kSpread};
    Backoff other_{std::chrono::milliseconds(kOtherFirstMs), std::chrono::milliseconds(kOtherCapMs),
                   BackoffJitter::kSpread};
    int conflicts_ = 0;
};

}  // namespace sched::trigger
