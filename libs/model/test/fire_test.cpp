#include <gtest/gtest.h>

#include <array>

#include "sched/model/fire.hpp"

namespace sched::model {
namespace {

constexpr std::array kAllStatuses = {FireStatus::kPending,   FireStatus::kDispatching, FireStatus::kRunning,
                                     FireStatus::kSucceeded, FireStatus::kFailed,      FireStatus::kTimeout,
                                     FireStatus::kKilled,    FireStatus::kLost,        FireStatus::kSkipped};

TEST(FireStatusNames, EveryStatusReadsBackFromItsStoredName) {
    for (const FireStatus s : kAllStatuses) EXPECT_EQ(ParseFireStatus(FireStatusName(s)), s) << FireStatusName(s);
    EXPECT_EQ(FireStatusName(FireStatus::kDispatching), "dispatching");
    EXPECT_EQ(ParseFireStatus("Succeeded"), std::nullopt);
    EXPECT_EQ(ParseFireReason("succeeded_late"), FireReason::kSucceededLate);
    EXPECT_EQ(FireKindName(FireKind::kBackfill), "backfill");
    EXPECT_EQ(ParseFireKind("cron"), std::nullopt);
}

TEST(FireVocabulary, FinalStatesKindsAndReasonsAreKnown) {
    EXPECT_EQ(ParseFireStatus("done"), std::nullopt);
    EXPECT_FALSE(IsFinal(FireStatus::kRunning));
    EXPECT_TRUE(IsFinal(FireStatus::kLost));
    EXPECT_EQ(ParseFireKind("retry"), FireKind::kRetry);
    EXPECT_EQ(ParseFireKind("workflow"), FireKind::kWorkflow);
    EXPECT_EQ(FireKindName(FireKind::kWorkflow), "workflow");
    EXPECT_EQ(ParseFireReason("upstream"), FireReason::kUpstream);
    EXPECT_EQ(ParseFireReason("run_timeout"), FireReason::kRunTimeout);
    EXPECT_EQ(FireReasonName(FireReason::kRunTimeout), "run_timeout");
}

TEST(FireStateMachine, AFireMovesForwardOnly) {
    EXPECT_TRUE(MayMove(FireStatus::kPending, FireStatus::kDispatching));
    EXPECT_TRUE(MayMove(FireStatus::kPending, FireStatus::kSkipped));
    EXPECT_TRUE(MayMove(FireStatus::kDispatching, FireStatus::kRunning));
    EXPECT_TRUE(MayMove(FireStatus::kDispatching, FireStatus::kLost));
    EXPECT_TRUE(MayMove(FireStatus::kRunning, FireStatus::kTimeout));
    EXPECT_FALSE(MayMove(FireStatus::kRunning, FireStatus::kDispatching));
    EXPECT_FALSE(MayMove(FireStatus::kRunning, FireStatus::kPending));
    EXPECT_FALSE(MayMove(FireStatus::kPending, FireStatus::kPending));
}

TEST(FireStateMachine, AFinalStateIsLeftOnlyByALateSuccess) {
    for (const FireStatus from : kAllStatuses) {
        if (!IsFinal(from)) continue;
        for (const FireStatus to : kAllStatuses) {
            const bool late_success = from == FireStatus::kLost && to == FireStatus::kSucceeded;
            EXPECT_EQ(MayMove(from, to), late_success) << FireStatusName(from) << " -> " << FireStatusName(to);
        }
    }
}

TEST(FireStateMachine, AClaimMayBeGivenBackButNotARun) {
    EXPECT_TRUE(MayMove(FireStatus::kDispatching, FireStatus::kPending));
    EXPECT_FALSE(MayMove(FireStatus::kRunning, FireStatus::kPending));
}

TEST(StoredDueAt, IsTheScheduledTimeUnlessADueTimeIsSet) {
    Fire fire;
    fire.scheduled_time = 1000;
    EXPECT_EQ(StoredDueAt(fire), 1000);
    fire.due_at = 4000;
    EXPECT_EQ(StoredDueAt(fire), 4000);
}

}  // namespace
}  // namespace sched::model
