#include "impl/run_registry.hpp"

#include <gtest/gtest.h>

namespace sched::client::impl {
namespace {

RunRequest MakeRun(std::int64_t fire_id, std::int64_t job_id, BlockStrategy strategy = BlockStrategy::kSerial,
                   std::int64_t epoch = 1, std::int64_t attempt = 0) {
    RunRequest r;
    r.fire_id = fire_id;
    r.job_id = job_id;
    r.attempt = attempt;
    r.epoch = epoch;
    r.handler = "h";
    r.block_strategy = strategy;
    return r;
}

// A serial run with a timeout of its own.
RunRequest TimedRun(std::int64_t fire_id, std::int64_t job_id, std::int64_t timeout_ms) {
    RunRequest r = MakeRun(fire_id, job_id);
    r.timeout_ms = timeout_ms;
    return r;
}

TEST(RunRegistry, FirstRunOfAJobStartsAtOnce) {
    RunRegistry reg(8, 100);
    auto a = reg.Admit(MakeRun(1, 10));
    EXPECT_EQ(a.admission, Admission::kAccepted);
    EXPECT_TRUE(a.start_now);
    EXPECT_FALSE(reg.Idle(10));
    EXPECT_TRUE(reg.Idle(11));
    EXPECT_EQ(reg.InFlight(), 1u);
    EXPECT_EQ(reg.Finish(a.run), nullptr);
    EXPECT_TRUE(reg.Idle(10));
    EXPECT_EQ(reg.InFlight(), 0u);
}

TEST(RunRegistry, SerialQueuesBehindTheRunningFireAndStartsInArrivalOrder) {
    RunRegistry reg(8, 100);
    auto a = reg.Admit(MakeRun(1, 10));
    auto b = reg.Admit(MakeRun(2, 10));
    auto c = reg.Admit(MakeRun(3, 10));
    ASSERT_EQ(b.admission, Admission::kAccepted);
    EXPECT_FALSE(b.start_now);
    EXPECT_FALSE(c.start_now);
    EXPECT_TRUE(reg.Admit(MakeRun(4, 11)).start_now);  // another job is not blocked
    EXPECT_EQ(reg.Finish(a.run), b.run);
    EXPECT_EQ(reg.Finish(b.run), c.run);
    EXPECT_EQ(reg.Finish(c.run), nullptr);
    EXPECT_TRUE(reg.Idle(10));
}

TEST(RunRegistry, DiscardLaterRefusesWhileTheJobIsBusy) {
    RunRegistry reg(8, 100);
    auto a = reg.Admit(MakeRun(1, 10, BlockStrategy::kDiscardLater));
    auto b = reg.Admit(MakeRun(2, 10, BlockStrategy::kDiscardLater));
    EXPECT_EQ(b.admission, Admission::kBusy);
    EXPECT_NE(b.message.find("running fire 1"), std::string::npos) << b.message;
    (void)reg.Finish(a.run);
    // Refused runs were not remembered: the same fire may come again and run.
    EXPECT_EQ(reg.Admit(MakeRun(2, 10, BlockStrategy::kDiscardLater)).admission, Admission::kAccepted);
}

TEST(RunRegistry, CoverEarlyCancelsTheRunningFireDropsQueuedOnesAndRunsNext) {
    RunRegistry reg(8, 100);
    auto a = reg.Admit(MakeRun(1, 10));
    auto b = reg.Admit(MakeRun(2, 10));  // serial: queued
    auto c = reg.Admit(MakeRun(3, 10, BlockStrategy::kCoverEarly));
    ASSERT_EQ(c.admission, Admission::kAccepted);
    EXPECT_FALSE(c.start_now);  // never two runs of one job at once
    EXPECT_EQ(a.run->token.reason(), CancelReason::kCovered);
    EXPECT_EQ(a.run->covered_by.load(), 3);
    ASSERT_EQ(c.dropped.size(), 1u);
    EXPECT_EQ(c.dropped[0], b.run);
    EXPECT_EQ(reg.InFlight(), 2u);
    EXPECT_EQ(reg.Finish(a.run), c.run);
    EXPECT_FALSE(c.run->token.cancelled());
}

TEST(RunRegistry, DuplicateFireAndAttemptIsRecognisedButANewAttemptRuns) {
    RunRegistry reg(8, 100);
    auto a = reg.Admit(MakeRun(1, 10));
    (void)reg.Finish(a.run);
    EXPECT_EQ(reg.Admit(MakeRun(1, 10)).admission, Admission::kDuplicate);
    EXPECT_EQ(reg.Admit(MakeRun(1, 10, BlockStrategy::kSerial, 1, 1)).admission, Admission::kAccepted);
}

TEST(RunRegistry, DedupeWindowForgetsTheOldestPairs) {
    RunRegistry reg(8, 2);
    for (int f = 1; f <= 3; ++f) (void)reg.Finish(reg.Admit(MakeRun(f, f)).run);
    EXPECT_EQ(reg.Admit(MakeRun(3, 3)).admission, Admission::kDuplicate);
    EXPECT_EQ(reg.Admit(MakeRun(1, 1)).admission, Admission::kAccepted);
}

TEST(RunRegistry, OlderEpochIsRefusedOnceANewerOneWasSeen) {
    RunRegistry reg(8, 100);
    EXPECT_EQ(reg.Admit(MakeRun(1, 10, BlockStrategy::kSerial, 5)).admission, Admission::kAccepted);
    auto stale = reg.Admit(MakeRun(2, 11, BlockStrategy::kSerial, 4));
    EXPECT_EQ(stale.admission, Admission::kStaleEpoch);
    EXPECT_NE(stale.message.find("epoch 4 is older than epoch 5"), std::string::npos) << stale.message;
    EXPECT_EQ(reg.Admit(MakeRun(3, 12, BlockStrategy::kSerial, 5)).admission, Admission::kAccepted);
    EXPECT_EQ(reg.Admit(MakeRun(4, 13, BlockStrategy::kSerial, 6)).admission, Admission::kAccepted);
    EXPECT_EQ(reg.Admit(MakeRun(5, 14, BlockStrategy::kSerial, 5)).admission, Admission::kStaleEpoch);
    EXPECT_EQ(reg.MaxEpoch(), 6);
}

TEST(RunRegistry, CapacityCountsRunningAndQueuedRuns) {
    RunRegistry reg(2, 100);
    auto a = reg.Admit(MakeRun(1, 10));
    EXPECT_EQ(reg.Admit(MakeRun(2, 10)).admission, Admission::kAccepted);  // queued
    auto full = reg.Admit(MakeRun(3, 11));
    EXPECT_EQ(full.admission, Admission::kNoCapacity);
    EXPECT_NE(full.message.find("capacity 2"), std::string::npos);
    // cover-early replaces what it covers, so it fits.
    EXPECT_EQ(reg.Admit(MakeRun(4, 10, BlockStrategy::kCoverEarly)).admission, Admission::kAccepted);
}

TEST(RunRegistry, KillCancelsARunningFireAndRemovesAQueuedOne) {
    RunRegistry reg(8, 100);
    auto a = reg.Admit(MakeRun(1, 10));
    auto b = reg.Admit(MakeRun(2, 10));
    auto kill_queued = reg.Kill(2);
    EXPECT_EQ(kill_queued.run, b.run);
    EXPECT_FALSE(kill_queued.was_running);
    EXPECT_EQ(reg.InFlight(), 1u);
    auto kill_running = reg.Kill(1);
    EXPECT_TRUE(kill_running.was_running);
    EXPECT_TRUE(kill_running.stopped_now);
    EXPECT_EQ(a.run->token.reason(), CancelReason::kKilled);
    // A second kill of a run already stopping changes nothing, and says so (no log line).
    auto again = reg.Kill(1);
    EXPECT_TRUE(again.was_running);
    EXPECT_FALSE(again.stopped_now);
    EXPECT_EQ(reg.Kill(99).run, nullptr);
    EXPECT_EQ(reg.Finish(a.run), nullptr);  // the killed queued fire does not start
}

// The node's watch of a job's timeout starts at its dispatch, the run's own at its handler's
// start: a timeout kill ends a run only once the run's own timeout passed.
TEST(RunRegistry, ATimeoutKillWaitsForTheRunsOwnTimeoutCountedFromItsStart) {
    using std::chrono::milliseconds;
    RunRegistry reg(8, 100);
    const auto t0 = std::chrono::steady_clock::now();
    auto first = reg.Admit(TimedRun(1, 10, 2000));
    auto queued = reg.Admit(TimedRun(2, 10, 2000));
    ASSERT_FALSE(queued.start_now);

    // Admitted but not started (no worker yet): its whole timeout is ahead.
    auto early = reg.Kill(1, true, t0 + milliseconds(2500));
    ASSERT_TRUE(early.run);
    EXPECT_TRUE(early.was_running);
    EXPECT_EQ(early.timeout_in, milliseconds(2000));
    EXPECT_FALSE(first.run->token.cancelled());

    first.run->MarkStarted(t0 + milliseconds(100));
    EXPECT_EQ(reg.Kill(1, true, t0 + milliseconds(1500)).timeout_in, milliseconds(600));
    EXPECT_FALSE(first.run->token.cancelled());
    // Queued behind it: not started, and it stays queued.
    auto behind = reg.Kill(2, true, t0 + milliseconds(2000));
    EXPECT_FALSE(behind.was_running);
    EXPECT_EQ(behind.timeout_in, milliseconds(2000));
    EXPECT_FALSE(queued.run->token.cancelled());
    EXPECT_EQ(reg.InFlight(), 2u);

    // Its own timeout passed: cancelled, as a timeout, not as a kill by request.
    auto due = reg.Kill(1, true, t0 + milliseconds(2100));
    EXPECT_FALSE(due.timeout_in);
    EXPECT_TRUE(due.was_running);
    EXPECT_EQ(first.run->token.reason(), CancelReason::kTimeout);
    ASSERT_EQ(reg.Finish(first.run), queued.run);
    queued.run->MarkStarted(t0 + milliseconds(2200));
    EXPECT_EQ(reg.Kill(2, true, t0 + milliseconds(2300)).timeout_in, milliseconds(1900));
    // A kill by request is at once, whatever the timeout.
    reg.Kill(2, false, t0 + milliseconds(2300));
    EXPECT_EQ(queued.run->token.reason(), CancelReason::kKilled);
}

TEST(RunRegistry, ATimeoutKillCountsARunsHoldAndEndsARunWithoutATimeoutAtOnce) {
    using std::chrono::milliseconds;
    RunRegistry reg(8, 100);
    const auto t0 = std::chrono::steady_clock::now();
    auto held = reg.AdmitAll({TimedRun(1, 10, 1000)},
                             [&](std::size_t, impl::Run& run, bool) { run.not_before = t0 + milliseconds(300); });
    EXPECT_EQ(reg.Kill(1, true, t0 + milliseconds(100)).timeout_in, milliseconds(1200));
    // Without a timeout of its own, the node's watch is the only clock: it ends the run now.
    auto untimed = reg.Admit(MakeRun(2, 11));
    RunRequest behind = MakeRun(3, 11);
    auto queued = reg.Admit(behind);
    auto now = reg.Kill(2, true, t0);
    EXPECT_FALSE(now.timeout_in);
    EXPECT_EQ(untimed.run->token.reason(), CancelReason::kTimeout);
    auto removed = reg.Kill(3, true, t0);
    EXPECT_FALSE(removed.was_running);
    EXPECT_EQ(queued.run->token.reason(), CancelReason::kTimeout);
    EXPECT_EQ(reg.InFlight(), 2u);
}

TEST(RunRegistry, CancelAllCancelsRunningAndReturnsQueued) {
    RunRegistry reg(8, 100);
    auto a = reg.Admit(MakeRun(1, 10));
    (void)reg.Admit(MakeRun(2, 10));
    auto c = reg.Admit(MakeRun(3, 11));
    const auto dropped = reg.CancelAll(CancelReason::kShutdown);
    ASSERT_EQ(dropped.size(), 1u);
    EXPECT_EQ(dropped[0]->request.fire_id, 2);
    EXPECT_EQ(a.run->token.reason(), CancelReason::kShutdown);
    EXPECT_EQ(c.run->token.reason(), CancelReason::kShutdown);
    EXPECT_EQ(reg.InFlight(), 2u);
}

TEST(RunRegistry, RunsAdmittedTogetherSeeEachOtherAsIfTheyCameOneByOne) {
    RunRegistry reg(4, 100);
    std::vector<RunRequest> batch;
    batch.push_back(MakeRun(1, 10));                                   // starts
    batch.push_back(MakeRun(2, 10));                                   // queued behind fire 1
    batch.push_back(MakeRun(1, 10));                                   // the same fire again
    batch.push_back(MakeRun(3, 11, BlockStrategy::kSerial, 5));        // raises the epoch
    batch.push_back(MakeRun(4, 12, BlockStrategy::kSerial, 4));        // now stale
    batch.push_back(MakeRun(5, 10, BlockStrategy::kDiscardLater, 5));  // job 10 is busy
    batch.push_back(MakeRun(6, 13, BlockStrategy::kSerial, 5));        // the fourth in flight
    batch.push_back(MakeRun(7, 14, BlockStrategy::kSerial, 5));        // over capacity
    std::vector<std::pair<std::size_t, bool>> accepted;                // (index, start_now), in the order seen
    const auto results = reg.AdmitAll(std::move(batch), [&](std::size_t index, const impl::Run& run, bool start_now) {
        EXPECT_EQ(run.request.fire_id, std::vector<std::int64_t>({1, 2, 1, 3, 4, 5, 6, 7}).at(index));
        accepted.emplace_back(index, start_now);
    });
    ASSERT_EQ(results.size(), 8u);
    EXPECT_EQ(results[0].admission, Admission::kAccepted);
    EXPECT_TRUE(results[0].start_now);
    EXPECT_EQ(results[1].admission, Admission::kAccepted);
    EXPECT_FALSE(results[1].start_now);
    EXPECT_EQ(results[2].admission, Admission::kDuplicate);
    EXPECT_EQ(results[3].admission, Admission::kAccepted);
    EXPECT_EQ(results[4].admission, Admission::kStaleEpoch);
    EXPECT_EQ(results[5].admission, Admission::kBusy);
    EXPECT_EQ(results[6].admission, Admission::kAccepted);
    EXPECT_EQ(results[7].admission, Admission::kNoCapacity);
    EXPECT_EQ(accepted, (std::vector<std::pair<std::size_t, bool>>{{0, true}, {1, false}, {3, true}, {6, true}}));
    EXPECT_EQ(reg.InFlight(), 4u);
    EXPECT_EQ(reg.MaxEpoch(), 5);
    EXPECT_EQ(reg.Finish(results[0].run), results[1].run);
}

TEST(CancellationToken, FirstReasonWinsAndWakesWaiters) {
    CancellationToken token;
    EXPECT_FALSE(token.WaitFor(std::chrono::milliseconds(1)));
    std::thread canceller([&] { token.Cancel(CancelReason::kTimeout); });
    EXPECT_TRUE(token.WaitFor(std::chrono::seconds(30)));
    canceller.join();
    EXPECT_FALSE(token.Cancel(CancelReason::kKilled));
    EXPECT_EQ(token.reason(), CancelReason::kTimeout);
}

}  // namespace
}  // namespace sched::client::impl
