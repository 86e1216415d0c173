// The slave's queue alone: no I/O, no timers, times given by the test.
#include "sched/trigger/fire_queue.hpp"

#include <gtest/gtest.h>

namespace sched::trigger {
namespace {

using Ids = std::vector<std::int64_t>;

std::vector<protocol::NoticedFire> Fires(std::initializer_list<std::pair<std::int64_t, std::int64_t>> id_due) {
    std::vector<protocol::NoticedFire> out;
    for (const auto& [id, due] : id_due) out.push_back({.id = id, .due_at = due});
    return out;
}

// Fires whose jobs' claims judge nothing by the time (model::MayClaimEarly).
std::vector<protocol::NoticedFire> Fillable(std::initializer_list<std::pair<std::int64_t, std::int64_t>> id_due) {
    auto out = Fires(id_due);
    for (auto& f : out) f.fill = true;
    return out;
}

constexpr std::int64_t kNow = 1'000'000;
constexpr std::int64_t kIdleWaitMs = 1000;

TEST(FireQueue, NothingIsTakenUntilTheEarliestIsWithinClaimAheadThenEveryFireWithinTwiceIt) {
    FireQueue q(100);
    q.Admit(Fires({{1, kNow + 150}, {2, kNow + 180}, {3, kNow + 250}, {4, kNow + 251}}));
    auto early = q.TakeGroup(kNow, 500, kIdleWaitMs);
    EXPECT_TRUE(early.ids.empty());
    EXPECT_EQ(early.wait_ms, 50) << "until the earliest is claim-ahead from due";
    auto group = q.TakeGroup(kNow + 50, 500, kIdleWaitMs);
    EXPECT_EQ(group.ids, (Ids{1, 2, 3})) << "due within twice claim-ahead of now, earliest first";
    EXPECT_EQ(q.Queued(), 1u);
    EXPECT_EQ(q.Known(), 4u) << "taken fires stay known until forgotten";
}

TEST(FireQueue, AGroupKnowsItsLatestDueTimeAndWhetherEveryFireIsPlanned) {
    FireQueue q(100);
    auto planned = Fires({{1, kNow + 100}, {2, kNow + 150}});
    for (auto& f : planned) f.planned = true;
    q.Admit(planned);
    auto group = q.TakeGroup(kNow, 500, kIdleWaitMs);
    EXPECT_EQ(group.ids, (Ids{1, 2}));
    EXPECT_EQ(group.latest_due_ms, kNow + 150);
    EXPECT_TRUE(group.all_planned);
    // Held back, a planned fire is pending again; with an unplanned fire a group is not all planned.
    q.Requeue(Fires({{1, kNow + 300}}));
    q.Admit(Fires({{3, kNow + 500}}));
    auto held = q.TakeGroup(kNow + 400, 500, kIdleWaitMs);
    EXPECT_EQ(held.ids, (Ids{1, 3}));
    EXPECT_EQ(held.latest_due_ms, kNow + 500);
    EXPECT_FALSE(held.all_planned);
    EXPECT_EQ(q.TakeGroup(kNow + 400, 500, kIdleWaitMs).latest_due_ms, std::numeric_limits<std::int64_t>::min());
}

TEST(FireQueue, AGroupIsCutAtMaxGroupAndTheRestFollowsAtOnce) {
    FireQueue q(0);
    q.Admit(Fires({{3, kNow}, {1, kNow}, {2, kNow}}));
    auto first = q.TakeGroup(kNow, 2, kIdleWaitMs);
    EXPECT_EQ(first.ids, (Ids{1, 2})) << "(due time, id) order";
    auto second = q.TakeGroup(kNow, 2, kIdleWaitMs);
    EXPECT_EQ(second.ids, (Ids{3}));
    auto none = q.TakeGroup(kNow, 2, kIdleWaitMs);
    EXPECT_TRUE(none.ids.empty());
    EXPECT_EQ(none.wait_ms, kIdleWaitMs) << "an empty queue sleeps the idle wait";
}

TEST(FireQueue, AdmitAsksForAWakeUpOnlyForAFireDueBeforeThePlannedOne) {
    FireQueue q(100);
    q.Admit(Fires({{1, kNow + 600}}));
    ASSERT_TRUE(q.TakeGroup(kNow, 500, kIdleWaitMs).ids.empty());  // the loop sleeps until kNow + 500
    EXPECT_FALSE(q.Admit(Fires({{2, kNow + 700}})).wake) << "claimed after the planned wake-up";
    EXPECT_TRUE(q.Admit(Fires({{3, kNow + 300}})).wake) << "to be claimed at kNow + 200";
    // While the loop claims it looks again before sleeping: no wake-up is asked.
    auto group = q.TakeGroup(kNow + 200, 500, kIdleWaitMs);
    EXPECT_EQ(group.ids, (Ids{3}));
    EXPECT_FALSE(q.Admit(Fires({{4, kNow + 200}})).wake);
}

TEST(FireQueue, AKnownFireIsNotQueuedAgainUntilForgotten) {
    FireQueue q(0);
    q.Admit(Fires({{1, kNow}}));
    ASSERT_EQ(q.TakeGroup(kNow, 10, kIdleWaitMs).ids, (Ids{1}));
    q.Admit(Fires({{1, kNow}}));  // a poll sees it still pending before the claim committed
    EXPECT_TRUE(q.TakeGroup(kNow, 10, kIdleWaitMs).ids.empty());
    EXPECT_EQ(q.Unknown({1, 2}), (Ids{2}));
    q.Forget(1);
    EXPECT_EQ(q.Unknown({1, 2}), (Ids{1, 2}));
    q.Admit(Fires({{1, kNow}}));
    EXPECT_EQ(q.TakeGroup(kNow, 10, kIdleWaitMs).ids, (Ids{1}));
}

TEST(FireQueue, ANoticeLeavesFiresDueBeyondTheHorizonToThePoll) {
    FireQueue q(100);
    q.AdmitNotice(Fires({{1, kNow + FireQueue::kNoticeHorizonMs}, {2, kNow + FireQueue::kNoticeHorizonMs + 1}}), kNow);
    EXPECT_EQ(q.Unknown({1, 2}), (Ids{2}));
    q.Admit(Fires({{2, kNow + FireQueue::kNoticeHorizonMs + 1}}));  // the poll read it: queued
    EXPECT_TRUE(q.Unknown({1, 2}).empty());
}

TEST(FireQueue, TheCapacityBoundsKnownFiresAndAFillIsReportedOnce) {
    FireQueue q(0, 10);
    std::vector<protocol::NoticedFire> many;
    for (std::int64_t id = 1; id <= 15; ++id) many.push_back({.id = id, .due_at = kNow});
    EXPECT_TRUE(q.Admit(many).filled);
    EXPECT_EQ(q.Known(), 10u);
    EXPECT_FALSE(q.Admit(Fires({{16, kNow}})).filled) << "reported once per fill";
    const auto group = q.TakeGroup(kNow, 100, kIdleWaitMs);
    for (auto id : group.ids) q.Forget(id);  // sent: room again
    EXPECT_EQ(q.Known(), 0u);
    for (std::int64_t id = 20; id < 30; ++id) q.Admit(Fires({{id, kNow}}));
    EXPECT_TRUE(q.Admit(Fires({{30, kNow}})).filled) << "a new fill is reported again";
}

TEST(FireQueue, CloseDropsQueuedFiresAndAdmitsNoMoreButKeepsTakenOnesKnown) {
    FireQueue q(0);
    q.Admit(Fires({{1, kNow}, {2, kNow + 5000}}));
    ASSERT_EQ(q.TakeGroup(kNow, 10, kIdleWaitMs).ids, (Ids{1}));
    q.Close();
    EXPECT_EQ(q.Queued(), 0u);
    EXPECT_EQ(q.Known(), 1u) << "fire 1 is being sent";
    q.Admit(Fires({{3, kNow}}));
    EXPECT_EQ(q.Queued(), 0u);
}

// Bursts: 4 fires at one time make one; the node claims 10 fires a second; a burst at most 5 s early.
constexpr FireQueue::Bursts kBursts{.min_fires = 4, .claim_rate = 10, .max_lead_ms = 5000};

std::vector<protocol::NoticedFire> Burst(std::int64_t first_id, int count, std::int64_t due_at) {
    std::vector<protocol::NoticedFire> out;
    for (int i = 0; i < count; ++i) out.push_back({.id = first_id + i, .due_at = due_at});
    return out;
}

TEST(FireQueue, ABurstIsClaimedItsSizeOverTheRateAheadAndPausesWhenItsClaimsRunAhead) {
    FireQueue q(100, FireQueue::kMaxQueued, kBursts);
    q.Admit(Burst(1, 10, kNow + 2000));
    auto early = q.TakeGroup(kNow, 4, kIdleWaitMs);
    EXPECT_TRUE(early.ids.empty());
    EXPECT_EQ(early.wait_ms, 900) << "10 fires at 10 a second: 1 s before claim-ahead";
    auto first = q.TakeGroup(kNow + 900, 4, kIdleWaitMs);
    EXPECT_EQ(first.ids, (Ids{1, 2, 3, 4}));
    EXPECT_EQ(first.burst_due_at, kNow + 2000) << "a burst's group says so";
    EXPECT_EQ(first.burst_left, 6u);
    auto paused = q.TakeGroup(kNow + 900, 4, kIdleWaitMs);
    EXPECT_TRUE(paused.ids.empty()) << "6 left are claimed in 0.6 s: not yet";
    EXPECT_EQ(paused.wait_ms, 400);
    EXPECT_EQ(q.TakeGroup(kNow + 1300, 4, kIdleWaitMs).ids, (Ids{5, 6, 7, 8}));
    auto rest = q.TakeGroup(kNow + 1300, 4, kIdleWaitMs);
    EXPECT_TRUE(rest.ids.empty()) << "2 left are no burst: an ordinary group, at claim-ahead";
    EXPECT_EQ(rest.wait_ms, 600);
    auto ordinary = q.TakeGroup(kNow + 1900, 4, kIdleWaitMs);
    EXPECT_EQ(ordinary.ids, (Ids{9, 10}));
    EXPECT_FALSE(ordinary.burst_due_at);
}

TEST(FireQueue, ABurstsLeadIsBoundedAndOrdinaryGroupsKeepTheirTime) {
    FireQueue q(100, FireQueue::kMaxQueued, kBursts);
    q.Admit(Burst(100, 1000, kNow + 9000));  // 100 s at the rate: bounded to 5 s
    q.Admit(Fires({{1, kNow + 3950}, {2, kNow + 8000}}));
    auto early = q.TakeGroup(kNow, 4, kIdleWaitMs * 10);
    EXPECT_TRUE(early.ids.empty());
    EXPECT_EQ(early.wait_ms, 3850) << "fire 1 at claim-ahead, before the burst's 9000 - 100 - 5000";
    EXPECT_EQ(q.TakeGroup(kNow + 3900, 4, kIdleWaitMs).ids, (Ids{1})) << "the ordinary group first";
    auto burst = q.TakeGroup(kNow + 3900, 4, kIdleWaitMs);
    EXPECT_EQ(burst.ids, (Ids{100, 101, 102, 103})) << "then the burst's, fire 2 (due before it) left for its time";
    EXPECT_EQ(q.Queued(), 1000u - 4u + 1u);
}

TEST(FireQueue, AFireThatMakesABurstWakesTheLoopForItsEarlierClaim) {
    FireQueue q(100, FireQueue::kMaxQueued, kBursts);
    q.Admit(Fires({{1, kNow + 3000}}));
    ASSERT_EQ(q.TakeGroup(kNow, 4, kIdleWaitMs * 10).wait_ms, 2900);
    EXPECT_FALSE(q.Admit(Burst(10, 2, kNow + 3000)).wake) << "3 fires at kNow + 3000 are not a burst";
    EXPECT_TRUE(q.Admit(Burst(20, 1, kNow + 3000)).wake) << "4 (with fire 1) are: claims start 0.4 s earlier";
    EXPECT_EQ(q.TakeGroup(kNow, 4, kIdleWaitMs * 10).wait_ms, 2500);
    q.Close();
    EXPECT_EQ(q.TakeGroup(kNow + 2500, 4, kIdleWaitMs).ids, Ids{}) << "closed: nothing queued";
}

TEST(FireQueue, WithoutBurstsAManyFiresTimeWaitsForClaimAhead) {
    FireQueue q(100);
    q.Admit(Burst(1, 1000, kNow + 2000));
    EXPECT_EQ(q.TakeGroup(kNow, 4, kIdleWaitMs * 10).wait_ms, 1900);
}

TEST(FireQueue, ARecurringBurstIsClaimedAtMostHalfWayFromTheLastAndHeldFiresMakeNoBurst) {
    FireQueue q(100, FireQueue::kMaxQueued, kBursts);
    q.Admit(Burst(1, 4, kNow + 1000));
    q.Admit(Burst(11, 40, kNow + 2000));  // 4 s at the rate
    ASSERT_EQ(q.TakeGroup(kNow + 500, 4, kIdleWaitMs).ids, (Ids{1, 2, 3, 4})) << "0.4 s early";
    auto next = q.TakeGroup(kNow + 500, 4, kIdleWaitMs);
    EXPECT_TRUE(next.ids.empty());
    EXPECT_EQ(next.wait_ms, 900) << "claims of the next burst start at kNow + 1500 - 100: half-way";
    EXPECT_EQ(q.TakeGroup(kNow + 1400, 4, kIdleWaitMs).ids, (Ids{11, 12, 13, 14}));

    // Five fires held back together are asked again at one time, as an ordinary group.
    FireQueue held(100, FireQueue::kMaxQueued, kBursts);
    held.Admit(Fires({{1, kNow + 5000}, {2, kNow + 5001}, {3, kNow + 5002}, {4, kNow + 5003}, {5, kNow + 5004}}));
    ASSERT_EQ(held.TakeGroup(kNow + 4900, 10, kIdleWaitMs).ids.size(), 5u);
    held.Requeue(Fires({{1, kNow + 5000}, {2, kNow + 5000}, {3, kNow + 5000}, {4, kNow + 5000}, {5, kNow + 5000}}));
    auto retry = held.TakeGroup(kNow + 4900, 10, kIdleWaitMs);
    EXPECT_TRUE(retry.ids.empty()) << "not claimed again before the hold ends";
    EXPECT_EQ(retry.wait_ms, 100);
    EXPECT_EQ(held.TakeGroup(kNow + 5000, 10, kIdleWaitMs).ids.size(), 5u);
}

constexpr FireQueue::Fill kFill{.min_fires = 4, .span_ms = 400};

TEST(FireQueue, ASmallGroupIsFilledFromTheSpanUntilItHasMinFires) {
    FireQueue q(100, FireQueue::kMaxQueued, {}, kFill);
    q.Admit(Fillable(
        {{1, kNow + 100}, {2, kNow + 300}, {3, kNow + 450}, {4, kNow + 500}, {5, kNow + 520}, {6, kNow + 700}}));
    auto group = q.TakeGroup(kNow, 500, kIdleWaitMs);
    EXPECT_EQ(group.ids, (Ids{1, 2, 3, 4})) << "1 within twice claim-ahead, 2-4 within claim-ahead + span";
    EXPECT_EQ(group.wait_ms, 420) << "the next claim waits for fire 5's claim-ahead";
    auto next = q.TakeGroup(kNow + 420, 500, kIdleWaitMs);
    EXPECT_EQ(next.ids, (Ids{5, 6})) << "fire 6 is due within the span of this claim";

    // Without the fill the same fires are claimed one claim-ahead at a time.
    FireQueue plain(100);
    plain.Admit(Fillable({{1, kNow + 100}, {2, kNow + 300}, {3, kNow + 450}}));
    EXPECT_EQ(plain.TakeGroup(kNow, 500, kIdleWaitMs).ids, (Ids{1}));
}

TEST(FireQueue, AGroupOfMinFiresIsNotFilledAndTheFillTakesNoBurstHeldOrUnfillableFire) {
    FireQueue full(100, FireQueue::kMaxQueued, {}, kFill);
    full.Admit(Fillable({{1, kNow + 100}, {2, kNow + 110}, {3, kNow + 120}, {4, kNow + 130}, {5, kNow + 300}}));
    EXPECT_EQ(full.TakeGroup(kNow, 500, kIdleWaitMs).ids, (Ids{1, 2, 3, 4})) << "a high rate: as without the fill";
    EXPECT_EQ(full.Queued(), 1u);

    FireQueue q(100, FireQueue::kMaxQueued, kBursts, kFill);
    q.Admit(Fillable({{1, kNow + 100}, {2, kNow + 200}}));
    ASSERT_EQ(q.TakeGroup(kNow, 500, kIdleWaitMs).ids, (Ids{1, 2}));
    q.Requeue(Fires({{2, kNow + 300}}));    // held: asked again at its retry time
    auto burst = Burst(10, 4, kNow + 450);  // a burst (kBursts: 4 fires), paced on its own
    for (auto& f : burst) f.fill = true;
    q.Admit(burst);
    q.Admit(Fires({{5, kNow + 420}}));  // its job's claim judges by the time (skip, ...)
    q.Admit(Fillable({{3, kNow + 150}, {4, kNow + 480}}));
    auto group = q.TakeGroup(kNow + 50, 500, kIdleWaitMs);
    EXPECT_EQ(group.ids, (Ids{3, 4})) << "neither the held fire, the burst's nor an unfillable one fill a group";
    EXPECT_FALSE(group.burst_due_at);
}

TEST(FireQueue, AHeldFireIsTakenAgainAtItsRetryTimeNotAtOnce) {
    FireQueue q(100, FireQueue::kMaxQueued, {}, kFill);
    q.Admit(Fillable({{1, kNow + 100}, {2, kNow + 450}}));
    ASSERT_EQ(q.TakeGroup(kNow, 500, kIdleWaitMs).ids, (Ids{1, 2})) << "2 filled the group, 350 ms early";
    // Both held back at kNow, to be asked again 100 ms later (HeldFires' first in line).
    q.Requeue(Fires({{1, kNow + 100}, {2, kNow + 100}}));
    auto now = q.TakeGroup(kNow, 500, kIdleWaitMs);
    EXPECT_TRUE(now.ids.empty()) << "not asked again at once";
    EXPECT_EQ(now.wait_ms, 100);
    EXPECT_EQ(q.TakeGroup(kNow + 100, 500, kIdleWaitMs).ids, (Ids{1, 2}));
}

}  // namespace
}  // namespace sched::trigger
