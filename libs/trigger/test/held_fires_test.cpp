#include "sched/trigger/held_fires.hpp"

#include <gtest/gtest.h>

namespace sched::trigger {
namespace {

constexpr std::int64_t kNow = 1'000'000;

std::int64_t DueAt(const std::vector<protocol::NoticedFire>& again, std::int64_t id) {
    for (const auto& f : again) {
        if (f.id == id) return f.due_at;
    }
    ADD_FAILURE() << "fire " << id << " not queued again";
    return -1;
}

TEST(HeldFires, TheFirstInLineIsAskedAgainSoonTheOthersBackOffUpToTheCap) {
    HeldFires held;
    std::vector<std::int64_t> waits;
    for (int round = 0; round < 6; ++round) {
        const auto again = held.HeldAgain({1, 2}, {1}, kNow);
        ASSERT_EQ(again.size(), 2u);
        EXPECT_EQ(DueAt(again, 1), kNow + HeldFires::kFirstInLineMs);
        waits.push_back(DueAt(again, 2) - kNow);
    }
    EXPECT_EQ(waits, (std::vector<std::int64_t>{200, 400, 800, 1600, 2000, 2000}));
    EXPECT_EQ(held.size(), 2u);
}

TEST(HeldFires, AForgottenFireCountsFromOneAgain) {
    HeldFires held;
    (void)held.HeldAgain({7}, {}, kNow);
    (void)held.HeldAgain({7}, {}, kNow);
    EXPECT_EQ(DueAt(held.HeldAgain({7}, {}, kNow), 7), kNow + 800);
    held.Forget(7);
    EXPECT_EQ(held.size(), 0u);
    EXPECT_EQ(DueAt(held.HeldAgain({7}, {}, kNow), 7), kNow + 200);
}

TEST(HeldFires, ManyHoldsNeverOverflowTheWait) {
    HeldFires held;
    std::vector<protocol::NoticedFire> again;
    for (int round = 0; round < 100; ++round) again = held.HeldAgain({3}, {}, kNow);
    EXPECT_EQ(DueAt(again, 3), kNow + HeldFires::kMaxHoldMs);
}

}  // namespace
}  // namespace sched::trigger
