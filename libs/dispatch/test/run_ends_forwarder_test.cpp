// RunEndsForwarder against real HTTP servers standing in for the other nodes' route; the peers
// come from an injected reader (the node reads them from trigger_node).

#include "sched/dispatch/run_ends_forwarder.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "sched/http/testing/test_server.hpp"
#include "sched/protocol/fires_notice.hpp"

namespace sched::dispatch {
namespace {

using http::testing::TestServer;
using http::testing::WaitFor;

constexpr const char* kToken = "cluster-secret";

// A node's runs-ended route: keeps the bodies that carry the cluster token and answers that it
// withdrew every id.
class EndedRoute {
  public:
    EndedRoute() {
        http::Router router;
        router.Add(
            http::Method::kPost, protocol::kRunsEndedPath,
            [this](http::Request& req) {
                if (req.headers.Get("Authorization") != std::string("Bearer ") + kToken) {
                    return http::Response::Text("no\n", 401);
                }
                auto body = req.Json();
                auto ended = protocol::ParseRunsEnded(body.ok() ? *body : nlohmann::json());
                if (!ended.ok()) return http::Response::Error(*ended.error);
                std::lock_guard lock(mu_);
                bodies_.push_back(ended.value.fire_ids);
                return http::Response::Json({{"withdrawn", ended.value.fire_ids.size()}}, 202);
            },
            http::Access::kPublic);
        server_ = std::make_unique<TestServer>(std::move(router));
    }
    std::string address() const { return "127.0.0.1:" + std::to_string(server_->port()); }
    std::vector<std::vector<std::int64_t>> bodies() const {
        std::lock_guard lock(mu_);
        return bodies_;
    }

  private:
    mutable std::mutex mu_;
    std::vector<std::vector<std::int64_t>> bodies_;
    std::unique_ptr<TestServer> server_;  // last: stopped first
};

class RunEndsForwarderTest : public ::testing::Test {
  protected:
    void SetUp() override {
        io_thread_ = std::thread([this] { io_.run(); });
    }
    void TearDown() override {
        forwarder_.reset();
        work_.reset();
        io_.stop();
        if (io_thread_.joinable()) io_thread_.join();
        db_pool_.join();
    }

    RunEndsForwarder& Forwarder(RunEndsForwarderOptions options = {}) {
        options.token = kToken;
        if (options.self_node_id.empty()) options.self_node_id = "self";
        forwarder_ = std::make_unique<RunEndsForwarder>(
            io_.get_executor(), http_,
            [this]() -> Result<std::vector<Peer>> {
                ++reads_;
                std::lock_guard lock(mu_);
                if (peers_fail_) return Unavailable("the database is down");
                return peers_;
            },
            db_pool_, std::move(options));
        return *forwarder_;
    }
    void SetPeers(std::vector<Peer> peers, bool fail = false) {
        std::lock_guard lock(mu_);
        peers_ = std::move(peers);
        peers_fail_ = fail;
    }
    bool Rounds(std::uint64_t rounds) {
        return WaitFor([&] { return forwarder_->Stats().rounds >= rounds; });
    }

    net::io_context io_;
    std::optional<net::executor_work_guard<net::io_context::executor_type>> work_{io_.get_executor()};
    std::thread io_thread_;
    net::thread_pool db_pool_{1};
    http::HttpClient http_{io_.get_executor()};
    std::mutex mu_;
    std::vector<Peer> peers_;
    bool peers_fail_ = false;
    std::atomic<int> reads_{0};
    std::unique_ptr<RunEndsForwarder> forwarder_;
};

TEST_F(RunEndsForwarderTest, TheIdsOfAWindowGoInOnePostToEveryOtherNode) {
    EndedRoute a, b, self;
    SetPeers({{"a", a.address()}, {"self", self.address()}, {"b", b.address()}});
    // A window long enough that all three calls fall in it.
    auto& forwarder = Forwarder({.window = std::chrono::milliseconds(300)});
    forwarder.Forward({1, 2});
    forwarder.Forward({3});
    forwarder.Forward({});
    forwarder.Forward({4, 5});
    ASSERT_TRUE(Rounds(1));
    const std::vector<std::vector<std::int64_t>> one_body = {{1, 2, 3, 4, 5}};
    EXPECT_EQ(a.bodies(), one_body);
    EXPECT_EQ(b.bodies(), one_body);
    EXPECT_TRUE(self.bodies().empty()) << "posted to itself";
    EXPECT_EQ(forwarder.Stats().posts, 2u);
    EXPECT_EQ(forwarder.Stats().withdrawn, 10u);

    // The next round, within peers-ttl, reuses the peers read.
    forwarder.Forward({6});
    ASSERT_TRUE(Rounds(2));
    EXPECT_EQ(a.bodies().back(), std::vector<std::int64_t>{6});
    EXPECT_EQ(reads_.load(), 1);
    EXPECT_EQ(forwarder.Stats().failed_posts, 0u);
}

TEST_F(RunEndsForwarderTest, AnIdListOverTheBoundIsSentInBodiesWithinIt) {
    EndedRoute a;
    SetPeers({{"a", a.address()}});
    auto& forwarder = Forwarder({.window = std::chrono::milliseconds(1)});
    std::vector<std::int64_t> ids;
    for (std::size_t i = 1; i <= protocol::kMaxNoticeFires + 5; ++i) ids.push_back(static_cast<std::int64_t>(i));
    forwarder.Forward(ids);
    ASSERT_TRUE(Rounds(1));
    const auto bodies = a.bodies();
    ASSERT_EQ(bodies.size(), 2u);
    EXPECT_EQ(bodies[0].size() + bodies[1].size(), ids.size());
    EXPECT_LE(std::max(bodies[0].size(), bodies[1].size()), protocol::kMaxNoticeFires);
}

TEST_F(RunEndsForwarderTest, ADeadNodeHoldsNoOtherAndMakesTheNextRoundReadThePeersAgain) {
    std::uint16_t closed = 0;  // a port nobody listens on any more
    {
        net::io_context scratch;
        tcp::acceptor acceptor(scratch, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
        closed = acceptor.local_endpoint().port();
    }
    EndedRoute alive;
    SetPeers({{"dead", "127.0.0.1:" + std::to_string(closed)}, {"alive", alive.address()}});
    auto& forwarder = Forwarder({.window = std::chrono::milliseconds(1), .timeout = std::chrono::seconds(2)});
    forwarder.Forward({7});
    ASSERT_TRUE(Rounds(1));
    EXPECT_EQ(alive.bodies().size(), 1u);
    EXPECT_EQ(forwarder.Stats().failed_posts, 1u);
    forwarder.Forward({8});
    ASSERT_TRUE(Rounds(2));
    EXPECT_EQ(alive.bodies().size(), 2u);
    EXPECT_EQ(reads_.load(), 2) << "the failed POST should have dropped the peers read";
}

TEST_F(RunEndsForwarderTest, UnreadablePeersSendNothingAndAreReadAgainNextRound) {
    EndedRoute a;
    SetPeers({{"a", a.address()}}, /*fail=*/true);
    auto& forwarder = Forwarder({.window = std::chrono::milliseconds(1)});
    forwarder.Forward({1});
    ASSERT_TRUE(Rounds(1));
    EXPECT_EQ(forwarder.Stats().posts, 0u);
    SetPeers({{"a", a.address()}});
    forwarder.Forward({2});
    ASSERT_TRUE(Rounds(2));
    EXPECT_EQ(a.bodies(), (std::vector<std::vector<std::int64_t>>{{2}}));
    EXPECT_EQ(reads_.load(), 2);
}

TEST_F(RunEndsForwarderTest, IdsOverMaxPendingAreDroppedAndCounted) {
    EndedRoute a;
    SetPeers({{"a", a.address()}});
    auto& forwarder = Forwarder({.window = std::chrono::milliseconds(300), .max_pending = 3});
    forwarder.Forward({1, 2});
    forwarder.Forward({3, 4, 5});
    ASSERT_TRUE(Rounds(1));
    EXPECT_EQ(a.bodies(), (std::vector<std::vector<std::int64_t>>{{1, 2, 3}}));
    EXPECT_EQ(forwarder.Stats().dropped, 2u);
}

}  // namespace
}  // namespace sched::dispatch
