#include "sched/dispatch/master_waker.hpp"

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "peer_posts.hpp"
#include "sched/common/on_pool.hpp"
#include "sched/protocol/master_wake.hpp"
#include "sched/store/shard.hpp"

namespace sched::dispatch {

namespace {

using Clock = std::chrono::steady_clock;

struct Leader {
    std::string node_id;
    std::string address;  ///< "" when the holder has no trigger_node row
};

// Every shard's current holder with its address, in one statement. A lease is judged by the
// database clock of the same statement, as the lock library judges it; a row left by a clock
// that moved back (lock::ClockStepGuard) is not looked for: waking a node that leads nothing
// costs one POST answered {"woken": 0}. The holder's address comes from its heartbeat row; a
// LEFT JOIN keeps a holder without one (this node itself, woken without an address).
Result<std::vector<Leader>> ReadLeaders(db::Database& db, const std::string& lease_name) {
    const std::string now(db.dialect().NowUs());
    const std::string pattern = store::ShardLeasePattern(lease_name);
    return db.Run([&](soci::session& s) -> Result<std::vector<Leader>> {
        std::string owner;
        std::string address;
        soci::indicator address_ind = soci::i_ok;
        soci::statement st =
            (s.prepare << "SELECT DISTINCT l.owner, n.address FROM scheduler_lock l LEFT JOIN trigger_node n ON "
                          "n.node_id = l.owner WHERE (l.namespace = :lease OR l.namespace LIKE :pattern) AND "
                          "l.owner IS NOT NULL AND l.lease_until_us > " +
                              now,
             soci::use(lease_name, "lease"), soci::use(pattern, "pattern"), soci::into(owner),
             soci::into(address, address_ind));
        st.execute(false);
        std::vector<Leader> out;
        while (st.fetch()) out.push_back({owner, address_ind == soci::i_ok ? address : std::string()});
        return out;
    });
}

}  // namespace

struct MasterWaker::State {
    State(const net::any_io_executor& io, http::HttpClient& client, db::DatabaseProvider db, net::thread_pool& pool,
          MasterWakerOptions o)
        : options(std::move(o)), http(client), database(std::move(db)), db_pool(pool), strand(io) {}

    const MasterWakerOptions options;
    http::HttpClient& http;
    const db::DatabaseProvider database;
    net::thread_pool& db_pool;
    // Every round and its POSTs run here, one step at a time: the cache and a round's count of
    // POSTs in flight need no lock.
    net::strand<net::any_io_executor> strand;

    std::mutex mu;
    bool running = false;  // a round is in flight (or about to start)
    bool again = false;    // a Wake came while it was: one more round follows
    bool stopped = false;

    // On the strand only.
    std::optional<std::vector<Leader>> leaders;
    Clock::time_point read_at{};
    bool read_failing = false;

    std::atomic<std::uint64_t> rounds{0};
    std::atomic<std::uint64_t> reads{0};
    std::atomic<std::uint64_t> posts{0};
    std::atomic<std::uint64_t> failed_posts{0};
    std::atomic<std::uint64_t> self_wakes{0};
};

namespace {

using State = MasterWaker::State;

net::awaitable<void> PostWake(std::shared_ptr<State> st, Leader leader) {
    st->posts.fetch_add(1, std::memory_order_relaxed);
    // Named locals, no temporaries in the co_await (g++ 12, docs/architecture/build.md).
    nlohmann::json body = nlohmann::json::object();
    const http::CallOptions call{.timeout = st->options.timeout, .bearer_token = st->options.token};
    constexpr std::string_view what = "master wake";
    // A node older than the route answers 404: its master still probes every scan-interval.
    auto answer = co_await impl::PostToPeer(st->http, what, leader.node_id, leader.address, protocol::kMasterWakePath,
                                            std::move(body), call);
    if (!answer.ok()) st->failed_posts.fetch_add(1, std::memory_order_relaxed);
    // The leaders as cached may not lead any more.
    if (!answer.ok() || answer->value("woken", 0) == 0) st->leaders.reset();
}

// The leaders, from the cache while it is fresh, else read on the DB pool.
net::awaitable<Result<std::vector<Leader>>> Leaders(std::shared_ptr<State> st) {
    if (st->leaders && Clock::now() - st->read_at < st->options.leaders_ttl) co_return *st->leaders;
    st->reads.fetch_add(1, std::memory_order_relaxed);
    auto work = [db = st->database(), lease = st->options.lease_name]() -> Result<std::vector<Leader>> {
        if (!db) return Unavailable("the database is not open yet");
        return ReadLeaders(*db, lease);
    };
    auto read = co_await OnPool(st->db_pool, std::move(work));
    if (!read.ok()) {
        // One warning per outage: the writes that ask for wakes fail with the database as well.
        spdlog::log(st->read_failing ? spdlog::level::debug : spdlog::level::warn,
                    "master wake: the leaders could not be read (the masters find the work at their next probe): {}",
                    read.status().ToString());
        st->read_failing = true;
        co_return read.status();
    }
    st->read_failing = false;
    st->leaders = *read;
    st->read_at = Clock::now();
    co_return read;
}

net::awaitable<void> Round(std::shared_ptr<State> st) {
    auto leaders = co_await Leaders(st);
    if (!leaders.ok()) co_return;
    impl::RoundPosts posts(st->strand);
    for (auto& leader : *leaders) {
        if (!st->options.self_node_id.empty() && leader.node_id == st->options.self_node_id && st->options.wake_self) {
            st->self_wakes.fetch_add(1, std::memory_order_relaxed);
            st->options.wake_self();
            continue;
        }
        if (leader.address.empty()) continue;
        // All at once: a leader that does not answer delays no other.
        posts.Spawn(PostWake(st, std::move(leader)));
    }
    co_await posts.Wait();
}

net::awaitable<void> Rounds(std::shared_ptr<State> st) {
    for (;;) {
        try {
            co_await Round(st);
        } catch (const std::exception& e) {
            spdlog::warn("master wake: round failed: {}", e.what());
        }
        st->rounds.fetch_add(1, std::memory_order_relaxed);
        std::lock_guard lock(st->mu);
        if (!st->again || st->stopped) {
            st->running = false;
            co_return;
        }
        st->again = false;
    }
}

}  // namespace

MasterWaker::MasterWaker(const net::any_io_executor& io, http::HttpClient& http, db::DatabaseProvider database,
                         net::thread_pool& db_pool, MasterWakerOptions options)
    : state_(std::make_shared<State>(io, http, std::move(database), db_pool, std::move(options))) {}

MasterWaker::~MasterWaker() {
    std::lock_guard lock(state_->mu);
    state_->stopped = true;
}

void MasterWaker::Wake() noexcept {
    {
        std::lock_guard lock(state_->mu);
        if (state_->stopped) return;
        if (state_->running) {
            state_->again = true;
            return;
        }
        state_->running = true;
    }
    try {
        net::co_spawn(state_->strand, Rounds(state_), net::detached);
    } catch (const std::exception& e) {
        // Out of memory, in practice: the next Wake tries again.
        spdlog::warn("master wake: not started: {}", e.what());
        std::lock_guard lock(state_->mu);
        state_->running = false;
    }
}

MasterWakerStats MasterWaker::Stats() const {
    const auto& st = *state_;
    return {.rounds = st.rounds.load(),
            .reads = st.reads.load(),
            .posts = st.posts.load(),
            .failed_posts = st.failed_posts.load(),
            .self_wakes = st.self_wakes.load()};
}

}  // namespace sched::dispatch
