#pragma once

/// Wakes the masters after a write that gives them work (sched/protocol/master_wake.hpp,
/// docs/protocol.md "Internal routes"): POST /internal/v1/master/wake to every shard's lease
/// holder, so that its master probes now instead of at its next `probe-interval`.
///
///     MasterWaker waker(io.get_executor(), http, [db] { return db; }, db_pool,
///                       {.token = cluster_token});
///     ... a job written and committed ...
///     waker.Wake();   // returns at once; the POSTs follow on the I/O context
///
/// The leaders: every row of `scheduler_lock` named `lease_name` or `lease_name/<n>` (the
/// shards' leases, store::ShardLeaseName) whose lease has not expired by the database clock,
/// with its holder's address from `trigger_node`, read by one statement on `db_pool`. A node
/// that leads several shards is woken once (its wake route wakes all its masters). The read is
/// reused for `leaders_ttl`, so a burst of writes costs one read; a failed POST or an answer
/// that woke nobody (the view of the leaders is old) drops it, so the next round reads again.
///
/// Coalescing: while a round is in flight (the read and its POSTs), another Wake only asks for
/// one more round after it, so any number of calls in a burst costs at most two rounds. The
/// second round exists so that a write committed while the first round's POSTs were already
/// answered is still announced.
///
/// Best effort: a failed read or POST is logged (a failed read at warn once until reads work
/// again, then debug; a POST at debug, a refused token at warn) and never retried; the masters'
/// own probe every `probe-interval` is the fallback, so a lost wake delays work by at most that.
///
/// Thread-safe. `http`, `db_pool` and what `database` returns must outlive every round: destroy
/// them only after the I/O context has stopped running (a round's coroutines hold them).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "sched/common/duration.hpp"
#include "sched/common/net.hpp"
#include "sched/db/database.hpp"
#include "sched/http/client.hpp"

namespace sched::dispatch {

struct MasterWakerOptions {
    /// The cluster token, sent as the bearer of each POST.
    std::string token;
    /// This process's trigger node id; "" in a process that is no trigger node (scheduler-web).
    std::string self_node_id;
    /// Called, on the I/O context, instead of a POST when the leader is `self_node_id` (a node's
    /// own masters); returns how many were woken. Must not block. Empty: the node is POSTed to
    /// like any other.
    std::function<int()> wake_self;
    /// The master election's name (shard 0's lease row; the others are `<name>/<n>`).
    std::string lease_name = "master";
    /// How long one read of the leaders is reused.
    Micros leaders_ttl = std::chrono::seconds(1);
    /// One POST, connect included.
    Micros timeout = std::chrono::seconds(1);
};

/// Counters since construction (for tests and metrics).
struct MasterWakerStats {
    std::uint64_t rounds = 0;        ///< rounds completed
    std::uint64_t reads = 0;         ///< reads of the leaders attempted
    std::uint64_t posts = 0;         ///< POSTs sent
    std::uint64_t failed_posts = 0;  ///< POSTs without a 2xx answer
    std::uint64_t self_wakes = 0;    ///< calls of wake_self
};

class MasterWaker {
  public:
    /// `io`: where the rounds run (an I/O context's executor); `database` may return nullptr
    /// until the database is open (a round then does nothing).
    MasterWaker(const net::any_io_executor& io, http::HttpClient& http, db::DatabaseProvider database,
                net::thread_pool& db_pool, MasterWakerOptions options);
    /// No round starts after this; one in flight finishes on its own (see the lifetimes above).
    ~MasterWaker();
    MasterWaker(const MasterWaker&) = delete;
    MasterWaker& operator=(const MasterWaker&) = delete;

    /// Asks for a round of wakes. Returns at once, never blocks and never throws: call it after
    /// the commit of a write a master must act on, from any thread (an I/O thread included).
    void Wake() noexcept;

    MasterWakerStats Stats() const;

    struct State;

  private:
    std::shared_ptr<State> state_;
};

}  // namespace sched::dispatch
