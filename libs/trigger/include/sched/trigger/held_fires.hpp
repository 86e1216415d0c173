#pragma once

/// The fires of this slave that a job's concurrency limit held back, and when the slave asks for
/// each again. The first in line of its job is asked again after kFirstInLineMs: its seat frees
/// when the running fire's end is recorded. The others cannot get a seat before it: each is asked
/// again after kFirstInLineMs doubled once per time it was held (the first hold waits twice that),
/// at most kMaxHoldMs. A fire's count starts over once it wins a seat or is no longer pending here.
///
/// No I/O, no clock of its own (times come in). Not thread-safe: the slave uses it on its strand.

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "sched/protocol/fires_notice.hpp"

namespace sched::trigger {

class HeldFires {
  public:
    static constexpr std::int64_t kFirstInLineMs = 100;
    static constexpr std::int64_t kMaxHoldMs = 2000;

    /// The fires `held` were held back by a claim at `now_ms` (`first_in_line`: those first of
    /// their job in line): each counted once more, with the time to ask for it again at in
    /// `due_at` (a retry time: FireQueue::Requeue takes it so).
    std::vector<protocol::NoticedFire> HeldAgain(const std::vector<std::int64_t>& held,
                                                 const std::set<std::int64_t>& first_in_line, std::int64_t now_ms);
    /// `id` won a seat or is no longer pending here: forgotten, its next hold counts from one.
    void Forget(std::int64_t id);
    /// Fires held back at least once and not forgotten since.
    std::size_t size() const { return holds_.size(); }

  private:
    std::map<std::int64_t, int> holds_;  // how often each fire was held back
};

}  // namespace sched::trigger
