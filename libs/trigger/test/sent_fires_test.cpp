#include "sched/trigger/sent_fires.hpp"

#include <gtest/gtest.h>

namespace sched::trigger {
namespace {

TEST(SentFiresTest, SendsNoPlannedFireAndRaisesNothingBeforeReady) {
    SentFires sent;
    EXPECT_FALSE(sent.Sendable(1, 100, 1000));
    EXPECT_EQ(sent.RaiseFor(5000), std::nullopt);
    sent.Ready(1000);
    EXPECT_TRUE(sent.Sendable(1, 100, 1000));
}

TEST(SentFiresTest, RaisesPastTheLatestDueTimeOnlyWhenItIsAboveTheCommittedValue) {
    SentFires sent;
    sent.Ready(1000);
    EXPECT_EQ(sent.RaiseFor(1000), std::nullopt);
    EXPECT_EQ(sent.RaiseFor(1001), 1001 + SentFires::kLeadMs);
    sent.Committed(1001 + SentFires::kLeadMs);
    EXPECT_EQ(sent.RaiseFor(1200), std::nullopt);
    sent.Committed(500);  // an older read never lowers it
    EXPECT_EQ(sent.RaiseFor(1200), std::nullopt);
}

TEST(SentFiresTest, AFireDueAfterWhatTheClaimReadOrSentAlreadyIsNotSendable) {
    SentFires sent;
    sent.Ready(0);
    EXPECT_FALSE(sent.Sendable(1, 2000, 1999));
    EXPECT_FALSE(sent.Sendable(1, 2000, std::nullopt));
    EXPECT_TRUE(sent.Sendable(1, 2000, 2000));
    sent.Add({1, 2});
    EXPECT_FALSE(sent.Sendable(1, 2000, 2000));
    EXPECT_EQ(sent.Without({1, 2, 3}), std::vector<std::int64_t>{3});
    sent.Erase({1});
    EXPECT_TRUE(sent.Sendable(1, 2000, 2000));
    EXPECT_EQ(sent.Ids(), (std::set<std::int64_t>{2}));
}

}  // namespace
}  // namespace sched::trigger
