// RunEndsForwarder against real HTTP servers standing in for the other nodes' route; the peers
// come from an injected reader (the node reads them from trigger_node).

#include "sched/dispatch/run_ends_forwarder.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "peer_route.hpp"
#include "sched/common/testing/io_thread.hpp"
#include "sched/protocol/fires_notice.hpp"

namespace sched::dispatch {
namespace {

using http::testing::WaitFor;

// A node's runs-ended route, answering that it withdrew every id.
class EndedRoute : public testing::PeerRoute {
  public:
    EndedRoute()
        : PeerRoute(protocol::kRunsEndedPath, [](const nlohmann::json& body) {
              auto ended = protocol::ParseRunsEnded(body);
              if (!ended.ok()) return http::Response::Error(*ended.error);
              return http::Response::Json({{"withdrawn", ended.value.fire_ids.size()}}, 202);
          }) {}
    /// Each accepted body's ids.
    std::vector<std::vector<std::int64_t>> fire_ids() const {
        std::vector<std::vector<std::int64_t>> out;
        for (const auto& body : bodies()) out.push_back(protocol::ParseRunsEnded(body).value.fire_ids);
        return out;
    }
};

class RunEndsForwarderTest : public ::testing::Test {
  protected:
    void TearDown() override {
        forwarder_.reset();
        loop_.Stop();
    }

    RunEndsForwarder& Forwarder(RunEndsForwarderOptions options = {}) {
        options.token = testing::kClusterToken;
        if (options.self_node_id.empty()) options.self_node_id = "self";
        forwarder_ = std::make_unique<RunEndsForwarder>(
            loop_.io.get_executor(), http_,
            [this]() -> Result<std::vector<Peer>> {
                ++reads_;
                std::lock_guard lock(mu_);
                if (peers_fail_) return Unavailable("the database is down");
                return peers_;
            },
            loop_.pool, std::move(options));
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

    sched::testing::IoThread loop_;
    http::HttpClient http_{loop_.io.get_executor()};
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
    EXPECT_EQ(a.fire_ids(), one_body);
    EXPECT_EQ(b.fire_ids(), one_body);
    EXPECT_TRUE(self.fire_ids().empty()) << "posted to itself";
    EXPECT_EQ(forwarder.Stats().posts, 2u);
    EXPECT_EQ(forwarder.Stats().withdrawn, 10u);

    // The next round, within peers-ttl, reuses the peers read.
    forwarder.Forward({6});
    ASSERT_TRUE(Rounds(2));
    EXPECT_EQ(a.fire_ids().back(), std::vector<std::int64_t>{6});
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
    const auto bodies = a.fire_ids();
    ASSERT_EQ(bodies.size(), 2u);
    EXPECT_EQ(bodies[0].size() + bodies[1].size(), ids.size());
    EXPECT_LE(std::max(bodies[0].size(), bodies[1].size()), protocol::kMaxNoticeFires);
}

TEST_F(RunEndsForwarderTest, ADeadNodeHoldsNoOtherAndMakesTheNextRoundReadThePeersAgain) {
    EndedRoute alive;
    SetPeers({{"dead", "127.0.0.1:" + std::to_string(testing::ClosedPort())}, {"alive", alive.address()}});
    auto& forwarder = Forwarder({.window = std::chrono::milliseconds(1), .timeout = std::chrono::seconds(2)});
    forwarder.Forward({7});
    ASSERT_TRUE(Rounds(1));
    EXPECT_EQ(alive.fire_ids().size(), 1u);
    EXPECT_EQ(forwarder.Stats().failed_posts, 1u);
    forwarder.Forward({8});
    ASSERT_TRUE(Rounds(2));
    EXPECT_EQ(alive.fire_ids().size(), 2u);
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
    EXPECT_EQ(a.fire_ids(), (std::vector<std::vector<std::int64_t>>{{2}}));
    EXPECT_EQ(reads_.load(), 2);
}

TEST_F(RunEndsForwarderTest, IdsOverMaxPendingAreDroppedAndCounted) {
    EndedRoute a;
    SetPeers({{"a", a.address()}});
    auto& forwarder = Forwarder({.window = std::chrono::milliseconds(300), .max_pending = 3});
    forwarder.Forward({1, 2});
    forwarder.Forward({3, 4, 5});
    ASSERT_TRUE(Rounds(1));
    EXPECT_EQ(a.fire_ids(), (std::vector<std::vector<std::int64_t>>{{1, 2, 3}}));
    EXPECT_EQ(forwarder.Stats().dropped, 2u);
}

}  // namespace
}  // namespace sched::dispatch
