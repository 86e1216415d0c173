#pragma once

/// What a slave knows of the planned fires it sends (store::FireClaims "Planned fires"). Such a
/// fire stays `dispatching` from its plan to its record, so nothing in its row tells a poll or
/// a repeated notice that it was sent: the slave keeps its id here from the send until the row
/// has left `dispatching` (its `running` record or its end committed, or a result applied), and
/// never queues or sends a fire it holds.
///
/// It also keeps the node's committed sent_through, as the last claim read it: a planned fire is
/// sent only at or below it, and a claim whose fires are due later raises it first, to their
/// latest due time plus kLeadMs (one row write per about kLeadMs of fires, not one per fire).
/// Until Ready (the fires an earlier process may have sent are judged), no planned fire is sent
/// and nothing is raised.
///
/// Thread-safe: the group loop adds and checks, the record writers and the results path erase.

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_set>
#include <vector>

namespace sched::trigger {

class SentFires {
  public:
    static constexpr std::int64_t kLeadMs = 250;

    /// The node takes planned fires from now on; `sent_through` is its committed value.
    void Ready(std::int64_t sent_through);
    bool ready() const;
    /// The value to raise sent_through to before claiming fires due up to `latest_due_ms`:
    /// nullopt when no raise is needed (or the slave is not ready).
    std::optional<std::int64_t> RaiseFor(std::int64_t latest_due_ms) const;
    /// A claim read the committed value `sent_through`.
    void Committed(std::optional<std::int64_t> sent_through);
    /// Whether a planned fire due at `due_at` may be sent under a claim that read `sent_through`:
    /// ready, at or below it, and not sent already.
    bool Sendable(std::int64_t id, std::int64_t due_at, std::optional<std::int64_t> sent_through) const;

    void Add(const std::vector<std::int64_t>& ids);
    /// The rows of `ids` have left `dispatching`.
    void Erase(const std::vector<std::int64_t>& ids);
    bool Contains(std::int64_t id) const;
    /// Those of `ids` not held here.
    std::vector<std::int64_t> Without(const std::vector<std::int64_t>& ids) const;
    std::set<std::int64_t> Ids() const;
    std::size_t size() const;

  private:
    mutable std::mutex mu_;
    bool ready_ = false;
    std::int64_t sent_through_ = 0;
    std::unordered_set<std::int64_t> ids_;
};

}  // namespace sched::trigger
