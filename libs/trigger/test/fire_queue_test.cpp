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

}  // namespace
}  // namespace sched::trigger
