#pragma once

/// Tells the other trigger nodes which fires' results this node applied (POST
/// /internal/v1/runs/ended, sched/protocol/fires_notice.hpp), so that the node that dispatched
/// a fire drops the `running` record it still holds for it, which would otherwise be written
/// after the end and change no row.
///
///     RunEndsForwarder forwarder(io.get_executor(), http, read_peers, db_pool,
///                                {.token = cluster_token, .self_node_id = node_id});
///     ... a callback batch applied and committed ...
///     forwarder.Forward(fire_ids);   // returns at once; a round follows after `window`
///
/// A round waits `window` after the first Forward, so the results of several callbacks share
/// one POST per peer, and sends every id gathered meanwhile to every live peer (other than
/// `self_node_id`) in bodies of at most protocol::kMaxNoticeFires ids; it waits for its POSTs
/// (each bounded by `timeout`) before the next round starts. The peers come from `read_peers`,
/// run on `db_pool` and reused for `peers_ttl`; a failed POST drops the cache. At most
/// `max_pending` ids wait for a round; more are dropped and counted.
///
/// Best effort: a peer not reached writes the record, which changes nothing (the record is a CAS
/// from `dispatching`); no error reaches the caller. Failures are logged at debug, a refused token
/// at warn.
///
/// Thread-safe. `http` and `db_pool` must outlive every round: destroy them only after the I/O
/// context has stopped running (a round's coroutines hold them).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sched/common/duration.hpp"
#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/http/client.hpp"

namespace sched::dispatch {

/// Another trigger node, as its heartbeat row names it.
struct Peer {
    std::string node_id;
    std::string address;  ///< host:port of its HTTP server
};

struct RunEndsForwarderOptions {
    /// The cluster token, sent as the bearer of each POST.
    std::string token;
    /// This node, left out of the peers.
    std::string self_node_id;
    /// How long a round gathers ids before it posts them.
    Micros window = std::chrono::milliseconds(50);
    /// How long one read of the peers is reused.
    Micros peers_ttl = std::chrono::seconds(10);
    /// One POST, connect included.
    Micros timeout = std::chrono::seconds(1);
    /// Ids waiting for a round at most.
    std::size_t max_pending = 100'000;
};

/// Counters since construction (for tests and metrics).
struct RunEndsForwarderStats {
    std::uint64_t rounds = 0;        ///< rounds completed
    std::uint64_t reads = 0;         ///< reads of the peers attempted
    std::uint64_t posts = 0;         ///< POSTs sent
    std::uint64_t failed_posts = 0;  ///< POSTs without a 2xx answer
    std::uint64_t withdrawn = 0;     ///< records the peers said they dropped
    std::uint64_t dropped = 0;       ///< ids over max_pending, never sent
};

class RunEndsForwarder {
  public:
    /// The live trigger nodes (this one may be among them); called on the DB pool.
    using PeersReader = std::function<Result<std::vector<Peer>>()>;

    RunEndsForwarder(const net::any_io_executor& io, http::HttpClient& http, PeersReader read_peers,
                     net::thread_pool& db_pool, RunEndsForwarderOptions options);
    /// No round starts after this; one in flight finishes on its own (see the lifetimes above).
    ~RunEndsForwarder();
    RunEndsForwarder(const RunEndsForwarder&) = delete;
    RunEndsForwarder& operator=(const RunEndsForwarder&) = delete;

    /// Queues `fire_ids` for the next round. Returns at once, never blocks and never throws.
    void Forward(const std::vector<std::int64_t>& fire_ids) noexcept;

    RunEndsForwarderStats Stats() const;

    struct State;

  private:
    std::shared_ptr<State> state_;
};

}  // namespace sched::dispatch
