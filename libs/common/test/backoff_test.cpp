#include "sched/common/backoff.hpp"

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

namespace sched {
namespace {

using namespace std::chrono_literals;

TEST(CappedExponential, DoublesFromTheFirstAttemptUpToTheCap) {
    EXPECT_EQ(CappedExponential<Micros>(5s, 1, 10min), 5s);
    EXPECT_EQ(CappedExponential<Micros>(5s, 2, 10min), 10s);
    EXPECT_EQ(CappedExponential<Micros>(5s, 4, 10min), 40s);
    EXPECT_EQ(CappedExponential<Micros>(5s, 20, 10min), 10min);
    EXPECT_EQ(CappedExponential<Micros>(5s, 0, 10min), 5s);
    EXPECT_EQ(CappedExponential<Micros>(20min, 1, 10min), 10min);  // the cap wins
}

TEST(CappedExponential, NeverOverflowsHoweverManyAttempts) {
    const auto huge = Micros::max();
    EXPECT_EQ(CappedExponential<Micros>(1s, 1'000'000, huge), huge);
    const auto huge_ms = std::chrono::milliseconds::max();
    EXPECT_EQ(CappedExponential(std::chrono::milliseconds(3), 100, huge_ms), huge_ms);
}

// 200 draws of Jittered(base, jitter) from a generator seeded with `seed`.
template <typename D>
std::vector<D> Draws(D base, BackoffJitter jitter, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<D> draws;
    for (int i = 0; i < 200; ++i) draws.push_back(Jittered<D>(base, jitter, rng));
    return draws;
}

// How many of `draws` differ.
template <typename D>
std::size_t Distinct(const std::vector<D>& draws) {
    std::set<typename D::rep> seen;
    for (const D d : draws) seen.insert(d.count());
    return seen.size();
}

TEST(Jittered, SpreadStaysWithinHalfToOneAndAHalfAndVaries) {
    const auto draws = Draws<Micros>(100ms, BackoffJitter::kSpread, 7);
    for (const Micros d : draws) {
        EXPECT_GE(d, 50ms);
        EXPECT_LT(d, 150ms);
    }
    EXPECT_GT(Distinct(draws), 100u);
    std::mt19937_64 rng(7);
    EXPECT_EQ(Jittered<Micros>(Micros(0), BackoffJitter::kSpread, rng), Micros(1));  // never zero
}

TEST(Jittered, UpperHalfStaysWithinHalfToWholeInTheBaseUnit) {
    const auto draws = Draws(std::chrono::milliseconds(1000), BackoffJitter::kUpperHalf, 3);
    for (const auto d : draws) {
        EXPECT_GE(d.count(), 500);
        EXPECT_LE(d.count(), 1000);
    }
    EXPECT_GT(Distinct(draws), 100u);
    std::mt19937_64 rng(3);
    EXPECT_EQ(Jittered<Micros>(42ms, BackoffJitter::kNone, rng), 42ms);
}

TEST(Jittered, QuarterMoreNeverShortensTheDelay) {
    const auto draws = Draws<Micros>(400ms, BackoffJitter::kQuarterMore, 11);
    for (const Micros d : draws) {
        EXPECT_GE(d, 400ms);
        EXPECT_LE(d, 500ms);
        EXPECT_EQ(d.count() % 1000, 0);  // whole milliseconds
    }
    EXPECT_GT(Distinct(draws), 50u);
}

TEST(Backoff, DoublesToTheCapAndResetStartsAgain) {
    Backoff b(10ms, 50ms);
    EXPECT_EQ(b.base(), 10ms);
    EXPECT_EQ(b.Next(), 10ms);
    EXPECT_EQ(b.Next(), 20ms);
    EXPECT_EQ(b.Next(), 40ms);
    EXPECT_EQ(b.Next(), 50ms);
    EXPECT_EQ(b.Next(), 50ms);
    b.Reset();
    EXPECT_EQ(b.Next(), 10ms);
}

TEST(Backoff, ACapBelowTheFirstDelayIsRaisedToIt) {
    Backoff b(100ms, 10ms);
    EXPECT_EQ(b.Next(), 100ms);
    EXPECT_EQ(b.Next(), 100ms);
}

TEST(Backoff, UncappedDoublingSaturatesInsteadOfOverflowing) {
    Backoff b(Micros::max() / 3, Micros::max());
    (void)b.Next();
    (void)b.Next();
    EXPECT_EQ(b.Next(), Micros::max());
}

TEST(Backoff, SpreadJitterStaysAroundTheBase) {
    Backoff b(100ms, 100ms, BackoffJitter::kSpread);
    for (int i = 0; i < 100; ++i) {
        const Micros d = b.Next();
        EXPECT_GE(d, 50ms);
        EXPECT_LT(d, 150ms);
    }
}

}  // namespace
}  // namespace sched
