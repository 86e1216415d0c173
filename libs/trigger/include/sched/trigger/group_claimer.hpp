#pragma once

/// Claims one group of a slave's fires until every part of it is claimed (or the slave stops),
/// retrying each failed attempt as ClaimRetry says: a group that keeps losing conflicts is
/// claimed in parts, earliest first, and each claimed part is handed on (sent) before the next
/// part is claimed, so the first fires do not wait behind the last ones' conflicts.
///
/// Every attempt of a group passes the same claim token (the caller's `Attempt` closes over it):
/// the claim reads back the fires holding its token, so a commit that an error hid (the
/// connection lost during COMMIT) is found by the attempt that next names those fires.
///
/// Claim runs on the caller's strand; attempts run on the DB pool.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/trigger/slave_ports.hpp"

namespace sched::trigger {

class GroupClaimer {
  public:
    /// One claim of `ids` (blocking: a database transaction, FireClaimStore::Claim).
    using Attempt = std::function<Result<ClaimedGroup>(const std::vector<std::int64_t>& ids)>;
    /// What is done with a claimed part (`ids` as the attempt named them) before the next part is claimed.
    using OnPart = std::function<net::awaitable<void>(std::vector<std::int64_t> ids, ClaimedGroup claimed)>;

    GroupClaimer(net::any_io_executor strand, net::thread_pool& db_pool, std::string node_id);

    /// Claims `ids` (earliest first) by `attempt`, handing each claimed part to `on_part`. Returns
    /// the ids not claimed because `stopping()` turned true after a failure or between parts
    /// (still pending, or claimed under the token by a hidden commit: the master hands the first
    /// to another slave and ends the second as lost with this node); empty when every part was claimed.
    net::awaitable<std::vector<std::int64_t>> Claim(std::vector<std::int64_t> ids, Attempt attempt,
                                                    std::function<bool()> stopping, OnPart on_part);

  private:
    net::any_io_executor strand_;
    net::thread_pool& db_pool_;
    std::string node_id_;
};

}  // namespace sched::trigger
