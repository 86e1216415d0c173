// The election state machine against FakeLockStore, whose database clock is the same FakeClock
// the electors use as their steady clock (FakeClock::JumpSystem moves only the database clock).

#include <gtest/gtest.h>

#include <stop_token>
#include <thread>

#include "sched/lock/lease_elector.hpp"
#include "sched/lock/testing/fake_lock_store.hpp"

namespace sched::lock {
namespace {

using namespace std::chrono_literals;
using testing::FakeLockStore;

struct Recorder : ElectionObserver {
    void OnStartedLeading(std::int64_t epoch) override { started.push_back(epoch); }
    void OnStoppedLeading(const LeadershipEnd& end) override { stopped.push_back(end); }
    void OnNewLeader(const std::string& node, std::int64_t epoch) override { leaders.emplace_back(node, epoch); }
    std::vector<std::int64_t> started;
    std::vector<LeadershipEnd> stopped;
    std::vector<std::pair<std::string, std::int64_t>> leaders;
};

class LeaseElectorTest : public ::testing::Test {
  protected:
    LeaseElectorTest()
        : store_(clock_),
          a_(store_, "node-a", ElectionConfig{}, clock_),
          b_(store_, "node-b", ElectionConfig{}, clock_) {
        a_.AddObserver(rec_a_);
        b_.AddObserver(rec_b_);
    }

    std::int64_t DbNowUs() const {
        return std::chrono::duration_cast<std::chrono::microseconds>(clock_.System().time_since_epoch()).count();
    }

    FakeClock clock_;
    FakeLockStore store_;
    LeaseElector a_;
    LeaseElector b_;
    Recorder rec_a_;
    Recorder rec_b_;
};

TEST_F(LeaseElectorTest, FirstTickAcquiresEpochOneAndLaterTicksRenew) {
    a_.Tick();
    ASSERT_TRUE(a_.IsLeading());
    EXPECT_EQ(a_.CurrentLeadership()->epoch, 1);
    EXPECT_EQ(rec_a_.started, std::vector<std::int64_t>{1});
    const auto row = store_.Peek("master");
    ASSERT_TRUE(row.has_value());
    EXPECT_EQ(row->owner, "node-a");
    EXPECT_EQ(row->lease_until_us, DbNowUs() + 3'000'000);

    clock_.Advance(1s);
    a_.Tick();
    EXPECT_TRUE(a_.IsLeading(1));
    EXPECT_EQ(store_.Peek("master")->version, 2);
    EXPECT_EQ(store_.Peek("master")->epoch, 1);  // a renew never changes the fencing token
    EXPECT_EQ(a_.Counters().renews, 1u);
    EXPECT_EQ(a_.Counters().started_leading, 1u);
}

TEST_F(LeaseElectorTest, LiveLeaseIsNeverTakenAndExpiredOneIsTakenWithNextEpoch) {
    a_.Tick();  // leads; database lease until +3s; a's own deadline +2s
    const auto t0 = clock_.Steady();
    clock_.Advance(3s - 1us);
    b_.Tick();
    EXPECT_FALSE(b_.IsLeading());
    ASSERT_TRUE(b_.LeaderSeen().has_value());
    EXPECT_EQ(b_.LeaderSeen()->first, "node-a");
    EXPECT_EQ(rec_b_.leaders.back(), std::make_pair(std::string("node-a"), std::int64_t{1}));

    clock_.Advance(1us);  // lease_until_us == now: expired (the lease covers [start, start + ttl))
    b_.Tick();
    ASSERT_TRUE(b_.IsLeading());
    EXPECT_EQ(b_.CurrentLeadership()->epoch, 2);
    // a stopped on its own clock a whole margin before b could take the row.
    EXPECT_FALSE(a_.IsLeading());
    a_.Tick();
    ASSERT_EQ(rec_a_.stopped.size(), 1u);
    EXPECT_EQ(rec_a_.stopped[0].reason, StopReason::kSelfDemoted);
    EXPECT_EQ(rec_a_.stopped[0].ended_at, t0 + 2s);
}

TEST_F(LeaseElectorTest, LeadershipEndsExactlyAtRenewStartPlusTtlMinusMargin) {
    a_.Tick();
    clock_.Advance(1s);
    const auto renew_start = clock_.Steady();
    a_.Tick();
    clock_.Advance(2s - 1us);
    EXPECT_TRUE(a_.IsLeading());
    EXPECT_EQ(a_.CurrentLeadership()->valid_until, renew_start + 2s);
    clock_.Advance(1us);
    EXPECT_FALSE(a_.IsLeading());  // without any Tick: the check itself reads the clock
    EXPECT_EQ(a_.NextTickAt(), renew_start + 1s);
}

TEST_F(LeaseElectorTest, RenewTimeoutDemotesBeforeAnyoneCanTakeOver) {
    a_.Tick();
    const auto t0 = clock_.Steady();
    clock_.Advance(1s);
    bool leading_during_stall = true;
    bool a_cut_off = true;  // a cannot reach the database; b can
    store_.SetHook([&](std::string_view op) {
        if (!a_cut_off) return Status::Ok();
        if (op != "renew") return Unavailable("connection refused");
        // The statement hangs for 1.5 s and then times out; master code asking meanwhile must
        // already see the term over once t0 + 2s has passed.
        clock_.Advance(1500ms);
        leading_during_stall = a_.IsLeading();
        return DeadlineExceeded("statement timeout");
    });
    a_.Tick();
    a_cut_off = false;
    EXPECT_FALSE(leading_during_stall);
    EXPECT_FALSE(a_.IsLeading());
    ASSERT_EQ(rec_a_.stopped.size(), 1u);
    EXPECT_EQ(rec_a_.stopped[0].reason, StopReason::kSelfDemoted);
    EXPECT_EQ(rec_a_.stopped[0].ended_at, t0 + 2s);
    EXPECT_EQ(a_.Counters().self_demotions, 1u);
    EXPECT_EQ(a_.Counters().renew_failures, 1u);

    // Now t0 + 2.5s: the database lease (until t0 + 3s) still stands, so nobody else leads yet.
    b_.Tick();
    EXPECT_FALSE(b_.IsLeading());
    clock_.Advance(500ms);
    b_.Tick();
    EXPECT_TRUE(b_.IsLeading(2));
}

TEST_F(LeaseElectorTest, TransientRenewFailureKeepsLeadingUntilTheDeadline) {
    a_.Tick();
    clock_.Advance(1s);
    store_.SetHook(
        [](std::string_view op) { return op == "renew" ? Unavailable("connection refused") : Status::Ok(); });
    a_.Tick();
    EXPECT_TRUE(a_.IsLeading(1));  // deadline t0 + 2s not reached
    store_.SetHook(nullptr);
    clock_.Advance(500ms);
    a_.Tick();
    ASSERT_TRUE(a_.IsLeading(1));
    EXPECT_TRUE(rec_a_.stopped.empty());
    EXPECT_EQ(a_.Counters().renew_failures, 1u);
    EXPECT_EQ(a_.Counters().renews, 1u);
}

TEST_F(LeaseElectorTest, SameSecondRenewIsAnOrdinarySuccess) {
    a_.Tick();
    const auto before = *store_.Peek("master");
    clock_.Advance(1ms);
    a_.Tick();
    clock_.Advance(1ms);
    a_.Tick();
    const auto after = *store_.Peek("master");
    EXPECT_TRUE(a_.IsLeading(1));
    EXPECT_EQ(a_.Counters().renews, 2u);
    EXPECT_EQ(a_.Counters().renew_failures, 0u);
    EXPECT_EQ(after.version, before.version + 2);
    EXPECT_EQ(after.lease_until_us, before.lease_until_us + 2000);
}

TEST_F(LeaseElectorTest, LostRenewAfterDatabaseClockJumpDemotesAsLost) {
    a_.Tick();
    // The database clock jumps 5 s ahead (an NTP step on the DB host): a's lease is over by the
    // database's judgement although a's own clock says it has 2 s left. b takes over.
    clock_.JumpSystem(5s);
    b_.Tick();
    ASSERT_TRUE(b_.IsLeading(2));
    clock_.Advance(1s);
    a_.Tick();
    EXPECT_FALSE(a_.IsLeading());
    ASSERT_EQ(rec_a_.stopped.size(), 1u);
    EXPECT_EQ(rec_a_.stopped[0].reason, StopReason::kLost);
    EXPECT_EQ(a_.Counters().renew_failures, 1u);
    EXPECT_EQ(a_.LeaderSeen()->first, "node-b");
    EXPECT_TRUE(b_.IsLeading(2));
}

TEST_F(LeaseElectorTest, RenewThatLosesTheRaceToATakeOverEndsTheTermAtItsDeadline) {
    a_.Tick();
    const auto t0 = clock_.Steady();
    clock_.Advance(1s);
    std::optional<std::chrono::steady_clock::time_point> b_started;
    store_.SetHook([&](std::string_view op) {
        if (op == "renew" && !b_started) {
            // a's renew is delayed in flight past the database lease's end; b takes over first.
            clock_.Advance(2500ms);
            b_.Tick();
            if (b_.IsLeading()) b_started = clock_.Steady();
        }
        return Status::Ok();
    });
    a_.Tick();
    store_.SetHook(nullptr);
    ASSERT_TRUE(b_started.has_value());
    EXPECT_TRUE(b_.IsLeading(2));
    EXPECT_FALSE(a_.IsLeading());
    ASSERT_EQ(rec_a_.stopped.size(), 1u);
    EXPECT_EQ(rec_a_.stopped[0].reason, StopReason::kLost);
    // a's term ended at its own deadline, a whole margin before b could start.
    EXPECT_EQ(rec_a_.stopped[0].ended_at, t0 + 2s);
    EXPECT_LE(rec_a_.stopped[0].ended_at + 1s, *b_started);
    EXPECT_EQ(a_.Counters().renew_failures, 1u);
}

TEST_F(LeaseElectorTest, LostTakeOverRaceLeavesExactlyOneLeader) {
    a_.Tick();
    clock_.Advance(3s);  // a's lease expired; a and b both read the expired row
    bool raced = false;
    store_.SetHook([&](std::string_view op) {
        if (op == "takeover" && !raced) {
            raced = true;
            b_.Tick();  // b reads the same version and takes over first
        }
        return Status::Ok();
    });
    a_.Tick();
    store_.SetHook(nullptr);
    ASSERT_TRUE(raced);
    EXPECT_TRUE(b_.IsLeading(2));
    EXPECT_FALSE(a_.IsLeading());
    EXPECT_EQ(store_.Peek("master")->owner, "node-b");
    EXPECT_EQ(store_.Peek("master")->epoch, 2);
}

TEST_F(LeaseElectorTest, ResignReleasesSoAnotherNodeTakesOverAtItsNextTick) {
    a_.Tick();
    ASSERT_TRUE(a_.Resign().ok());
    EXPECT_FALSE(a_.IsLeading());
    ASSERT_EQ(rec_a_.stopped.size(), 1u);
    EXPECT_EQ(rec_a_.stopped[0].reason, StopReason::kResigned);
    const auto row = *store_.Peek("master");
    EXPECT_FALSE(row.owner.has_value());
    EXPECT_EQ(row.epoch, 2);
    clock_.Advance(1ms);  // long before the old lease would have expired
    b_.Tick();
    EXPECT_TRUE(b_.IsLeading(3));
}

TEST_F(LeaseElectorTest, ReleaseConflictIsLeaseLostAndLeavesTheNewOwnerAlone) {
    a_.Tick();
    clock_.JumpSystem(5s);
    b_.Tick();
    ASSERT_TRUE(b_.IsLeading(2));
    const auto before = *store_.Peek("master");
    const Status s = a_.Resign();
    EXPECT_TRUE(IsLeaseLost(s)) << s.ToString();
    const auto after = *store_.Peek("master");
    EXPECT_EQ(after.owner, "node-b");
    EXPECT_EQ(after.epoch, before.epoch);
    EXPECT_EQ(after.version, before.version);
}

TEST_F(LeaseElectorTest, RenewThatSucceedsOnlyAfterTheDeadlineStillEndsTheTermAndGivesTheRowBack) {
    a_.Tick();
    clock_.Advance(1s);
    store_.SetHook([&](std::string_view op) {
        if (op == "renew") clock_.Advance(1500ms);  // slow, but the database lease is still live
        return Status::Ok();
    });
    a_.Tick();
    store_.SetHook(nullptr);
    EXPECT_FALSE(a_.IsLeading());
    ASSERT_EQ(rec_a_.stopped.size(), 1u);
    EXPECT_EQ(rec_a_.stopped[0].reason, StopReason::kSelfDemoted);
    // The same round gave the row back, so a new term (a new epoch) can start at once.
    const auto row = *store_.Peek("master");
    EXPECT_FALSE(row.owner.has_value());
    b_.Tick();
    EXPECT_TRUE(b_.IsLeading(3));
}

TEST_F(LeaseElectorTest, DatabaseErrorsWhileFollowingAreCountedNotThrown) {
    store_.SetHook([](std::string_view) { return Unavailable("connection refused"); });
    a_.Tick();
    a_.Tick();
    EXPECT_FALSE(a_.IsLeading());
    EXPECT_EQ(a_.Counters().acquire_errors, 2u);
    store_.SetHook(nullptr);
    a_.Tick();
    EXPECT_TRUE(a_.IsLeading(1));
}

TEST_F(LeaseElectorTest, NextTickIsTheDeadlineWhenThatIsSooner) {
    a_.Tick();
    const auto t0 = clock_.Steady();
    EXPECT_EQ(a_.NextTickAt(), t0 + 1s);
    store_.SetHook([](std::string_view op) { return op == "renew" ? Unavailable("down") : Status::Ok(); });
    clock_.Advance(1800ms);
    a_.Tick();
    // The next round is due at t0 + 2.8s, but the term ends at t0 + 2s: wake for that.
    EXPECT_EQ(a_.NextTickAt(), t0 + 2s);
    clock_.Advance(200ms);
    a_.Tick();
    ASSERT_EQ(rec_a_.stopped.size(), 1u);
    EXPECT_EQ(rec_a_.stopped[0].ended_at, t0 + 2s);
}

TEST_F(LeaseElectorTest, ObserversSeeEachNewLeaderOnce) {
    a_.Tick();
    b_.Tick();
    b_.Tick();
    ASSERT_EQ(rec_b_.leaders.size(), 1u);
    ASSERT_TRUE(a_.Resign().ok());
    b_.Tick();
    EXPECT_EQ(rec_b_.leaders.back(), std::make_pair(std::string("node-b"), std::int64_t{3}));
    a_.Tick();
    EXPECT_EQ(rec_a_.leaders.back(), std::make_pair(std::string("node-b"), std::int64_t{3}));
}

TEST(LeaseElector, InvalidConfigThrowsAtConstruction) {
    FakeClock clock;
    FakeLockStore store(clock);
    ElectionConfig c;
    c.tick = 2s;
    EXPECT_THROW(LeaseElector(store, "n", c, clock), ConfigError);
}

// A gate is asked only about a free row, with the start of the first round that found it free;
// it can hold an acquisition back for as long as it likes, and a held row resets the count.
struct ScriptedGate : AcquireGate {
    bool MayAcquire(std::string_view, std::chrono::steady_clock::time_point since) override {
        asked.push_back(since);
        return allow;
    }
    bool ShouldYield(std::string_view) override { return yield; }
    bool allow = false;
    bool yield = false;
    std::vector<std::chrono::steady_clock::time_point> asked;
};

TEST_F(LeaseElectorTest, AGateHoldsBackAnAcquisitionAndSeesSinceWhenTheRowIsFree) {
    ScriptedGate gate;
    a_.SetGate(gate);
    const auto first_round = clock_.Steady();
    a_.Tick();
    EXPECT_FALSE(a_.IsLeading());
    EXPECT_EQ(store_.Peek("master"), std::nullopt) << "held back: not even inserted";
    clock_.Advance(1s);
    gate.allow = true;
    a_.Tick();
    EXPECT_TRUE(a_.IsLeading());
    ASSERT_EQ(gate.asked.size(), 2u);
    EXPECT_EQ(gate.asked[0], first_round);
    EXPECT_EQ(gate.asked[1], first_round) << "free since the first round that found it free";
    // While a holds it, b's gate is not asked; b sees a as leader.
    ScriptedGate gate_b;
    gate_b.allow = true;
    b_.SetGate(gate_b);
    b_.Tick();
    EXPECT_TRUE(gate_b.asked.empty());
    EXPECT_EQ(b_.LeaderSeen(), std::make_pair(std::string("node-a"), std::int64_t{1}));
}

TEST_F(LeaseElectorTest, AYieldIsAResignThatAnotherNodeTakesOver) {
    ScriptedGate gate;
    gate.allow = true;
    a_.SetGate(gate);
    a_.Tick();
    ASSERT_TRUE(a_.IsLeading());
    gate.yield = true;
    std::stop_source stop;
    // Run() asks the gate after each round; stop it right after the first.
    std::thread runner([&] { a_.Run(stop.get_token()); });
    ASSERT_TRUE([&] {
        for (int i = 0; i < 200 && a_.IsLeading(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return !a_.IsLeading();
    }());
    stop.request_stop();
    runner.join();
    ASSERT_EQ(rec_a_.stopped.size(), 1u);
    EXPECT_EQ(rec_a_.stopped[0].reason, StopReason::kResigned);
    EXPECT_EQ(store_.Peek("master")->owner, std::nullopt) << "released";
    b_.Tick();
    EXPECT_TRUE(b_.IsLeading());
    EXPECT_EQ(b_.CurrentLeadership()->epoch, 3) << "taken over after the release's epoch";
}

}  // namespace
}  // namespace sched::lock
