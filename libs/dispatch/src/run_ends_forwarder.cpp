#include "sched/dispatch/run_ends_forwarder.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <optional>
#include <utility>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "peer_posts.hpp"
#include "sched/common/on_pool.hpp"
#include "sched/protocol/fires_notice.hpp"

// Why: the SDK posts each flush's results to one node, and a slave writes a `running` record for
// a run that has not ended `record-running-after` past its start unless it saw the end itself. On
// 3 nodes two thirds of the runs end on another node, so at 100 fires/s 7.7 of the cluster's 105
// statements a second were such records, each an UPDATE that changed no row. A POST between
// nodes costs no database work; the records it saves scale with the rate.

namespace sched::dispatch {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

struct RunEndsForwarder::State {
    State(const net::any_io_executor& io, http::HttpClient& client, PeersReader reader, net::thread_pool& pool,
          RunEndsForwarderOptions o)
        : options(std::move(o)), http(client), read_peers(std::move(reader)), db_pool(pool), strand(io) {}

    const RunEndsForwarderOptions options;
    http::HttpClient& http;
    const PeersReader read_peers;
    net::thread_pool& db_pool;
    // Rounds and their POSTs run here, one step at a time: the cache and the count of a round's
    // POSTs in flight need no lock.
    net::strand<net::any_io_executor> strand;

    std::mutex mu;
    std::vector<std::int64_t> pending;  // under mu
    bool running = false;               // under mu: a round is scheduled or in flight
    bool stopped = false;               // under mu

    // On the strand only.
    std::optional<std::vector<Peer>> peers;
    Clock::time_point read_at{};

    std::atomic<std::uint64_t> rounds{0};
    std::atomic<std::uint64_t> reads{0};
    std::atomic<std::uint64_t> posts{0};
    std::atomic<std::uint64_t> failed_posts{0};
    std::atomic<std::uint64_t> withdrawn{0};
    std::atomic<std::uint64_t> dropped{0};
};

namespace {

using State = RunEndsForwarder::State;

net::awaitable<void> PostEnded(std::shared_ptr<State> st, Peer peer, protocol::RunsEnded ended) {
    st->posts.fetch_add(1, std::memory_order_relaxed);
    // Named locals, no temporaries in the co_await (g++ 12, docs/architecture/build.md).
    nlohmann::json body = protocol::ToJson(ended);
    const http::CallOptions call{.timeout = st->options.timeout, .bearer_token = st->options.token};
    constexpr std::string_view what = "runs ended";
    // A node older than the route answers 404 and writes its records as before.
    auto answer = co_await impl::PostToPeer(st->http, what, peer.node_id, peer.address, protocol::kRunsEndedPath,
                                            std::move(body), call);
    if (!answer.ok()) {
        st->failed_posts.fetch_add(1, std::memory_order_relaxed);
        st->peers.reset();  // the node may have left, or another taken its place
        co_return;
    }
    const auto n = answer->value("withdrawn", std::int64_t{0});
    st->withdrawn.fetch_add(static_cast<std::uint64_t>(std::max<std::int64_t>(0, n)), std::memory_order_relaxed);
}

// The peers, from the cache while it is fresh, else read on the DB pool.
net::awaitable<Result<std::vector<Peer>>> Peers(std::shared_ptr<State> st) {
    if (st->peers && Clock::now() - st->read_at < st->options.peers_ttl) co_return *st->peers;
    st->reads.fetch_add(1, std::memory_order_relaxed);
    auto read = co_await OnPool(st->db_pool, [reader = st->read_peers] { return reader(); });
    if (!read.ok()) {
        // The records are written as without the notice: nothing to warn about.
        spdlog::debug("runs ended: the peers could not be read: {}", read.status().ToString());
        co_return read.status();
    }
    std::erase_if(*read, [&](const Peer& p) { return p.node_id == st->options.self_node_id || p.address.empty(); });
    st->peers = *read;
    st->read_at = Clock::now();
    co_return read;
}

net::awaitable<void> Round(std::shared_ptr<State> st, std::vector<std::int64_t> ids) {
    auto peers = co_await Peers(st);
    if (!peers.ok() || peers->empty()) co_return;
    impl::RoundPosts posts(st->strand);
    for (std::size_t begin = 0; begin < ids.size(); begin += protocol::kMaxNoticeFires) {
        const std::size_t end = std::min(ids.size(), begin + protocol::kMaxNoticeFires);
        const protocol::RunsEnded ended{.fire_ids = {ids.begin() + static_cast<std::ptrdiff_t>(begin),
                                                     ids.begin() + static_cast<std::ptrdiff_t>(end)}};
        // All peers at once: one that does not answer delays no other.
        for (const auto& peer : *peers) posts.Spawn(PostEnded(st, peer, ended));
    }
    co_await posts.Wait();
}

net::awaitable<void> Rounds(std::shared_ptr<State> st) {
    net::steady_timer gather(st->strand);
    for (;;) {
        gather.expires_after(st->options.window);
        boost::system::error_code ec;
        co_await gather.async_wait(net::redirect_error(net::use_awaitable, ec));
        std::vector<std::int64_t> ids;
        {
            std::lock_guard lock(st->mu);
            if (st->pending.empty() || st->stopped) {
                st->running = false;
                co_return;
            }
            ids.swap(st->pending);
        }
        try {
            co_await Round(st, std::move(ids));
        } catch (const std::exception& e) {
            spdlog::warn("runs ended: round failed: {}", e.what());
        }
        st->rounds.fetch_add(1, std::memory_order_relaxed);
    }
}

}  // namespace

RunEndsForwarder::RunEndsForwarder(const net::any_io_executor& io, http::HttpClient& http, PeersReader read_peers,
                                   net::thread_pool& db_pool, RunEndsForwarderOptions options)
    : state_(std::make_shared<State>(io, http, std::move(read_peers), db_pool, std::move(options))) {}

RunEndsForwarder::~RunEndsForwarder() {
    std::lock_guard lock(state_->mu);
    state_->stopped = true;
}

void RunEndsForwarder::Forward(const std::vector<std::int64_t>& fire_ids) noexcept {
    if (fire_ids.empty()) return;
    try {
        {
            std::lock_guard lock(state_->mu);
            if (state_->stopped) return;
            const std::size_t room =
                state_->options.max_pending - std::min(state_->options.max_pending, state_->pending.size());
            const std::size_t taken = std::min(room, fire_ids.size());
            state_->pending.insert(state_->pending.end(), fire_ids.begin(),
                                   fire_ids.begin() + static_cast<std::ptrdiff_t>(taken));
            if (taken < fire_ids.size()) state_->dropped.fetch_add(fire_ids.size() - taken, std::memory_order_relaxed);
            if (state_->running) return;
            state_->running = true;
        }
        net::co_spawn(state_->strand, Rounds(state_), net::detached);
    } catch (const std::exception& e) {
        // Out of memory, in practice: the records are written as without the notice.
        spdlog::warn("runs ended: not forwarded: {}", e.what());
        std::lock_guard lock(state_->mu);
        state_->running = false;
    }
}

RunEndsForwarderStats RunEndsForwarder::Stats() const {
    const auto& st = *state_;
    return {.rounds = st.rounds.load(),
            .reads = st.reads.load(),
            .posts = st.posts.load(),
            .failed_posts = st.failed_posts.load(),
            .withdrawn = st.withdrawn.load(),
            .dropped = st.dropped.load()};
}

}  // namespace sched::dispatch
