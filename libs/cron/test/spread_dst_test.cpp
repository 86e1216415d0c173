#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "sched/cron/cron_expression.hpp"
#include "sched/cron/schedule.hpp"
#include "test_time.hpp"

namespace sched::cron {
namespace {

using testing::At;
using testing::Show;
using testing::Zone;

CronExpression Parse(std::string_view text, const CronOptions& options) {
    auto expr = CronExpression::Parse(text, nullptr, options);
    if (!expr.ok()) throw std::runtime_error(expr.status().ToString());
    return *expr;
}

CronOptions Seed(std::string seed) {
    CronOptions o;
    o.hash_seed = std::move(seed);
    return o;
}

std::vector<std::string> Fires(std::string_view text, const CronOptions& options, const char* zone_name,
                               const char* start, std::size_t n) {
    const date::time_zone* zone = Zone(zone_name);
    std::vector<std::string> out;
    for (std::int64_t t : Parse(text, options).NextN(At(start), zone, n)) out.push_back(Show(t, zone));
    return out;
}

TEST(StableHash, IsFnv1a64) {
    // The published FNV-1a 64 test vectors: the hash must never change (it places every H job).
    EXPECT_EQ(StableHash(""), 0xcbf29ce484222325ULL);
    EXPECT_EQ(StableHash("a"), 0xaf63dc4c8601ec8cULL);
    EXPECT_EQ(StableHash("foobar"), 0x85944171f73967e8ULL);
}

TEST(CronHash, PlainHIsOneStableValueOfTheFieldFromTheSeed) {
    const auto a = Parse("H * * * *", Seed("42"));
    const auto b = Parse("H * * * *", Seed("42"));
    EXPECT_TRUE(a.UsesHash());
    const std::int64_t start = At("2024-01-01T00:00:00Z");
    EXPECT_EQ(a.NextN(start, nullptr, 5), b.NextN(start, nullptr, 5));
    // Exactly the minute the documented hash names, once an hour.
    const int minute = static_cast<int>(StableHash("42:minute") % 60);
    const auto same = CronExpression::Parse(std::to_string(minute) + " * * * *");
    ASSERT_TRUE(same.ok());
    EXPECT_EQ(a.NextN(start, nullptr, 5), same->NextN(start, nullptr, 5));
    EXPECT_FALSE(same->UsesHash());
}

TEST(CronHash, SeedsSpreadOverTheField) {
    std::set<std::int64_t> minutes;
    const std::int64_t start = At("2024-01-01T00:00:00Z") - 1000;  // Next() is strictly after
    for (int id = 1; id <= 100; ++id) {
        const auto t = Parse("0 H * * * ?", Seed(std::to_string(id))).Next(start, nullptr);
        ASSERT_TRUE(t);
        const std::int64_t minute = (*t - start - 1000) / 60'000;
        EXPECT_GE(minute, 0);
        EXPECT_LT(minute, 60);
        minutes.insert(minute);
    }
    EXPECT_GT(minutes.size(), 30U);  // 100 seeds over 60 minutes: far from one value
}

TEST(CronHash, RangesAndStepsStayInTheirBounds) {
    for (int id = 1; id <= 200; ++id) {
        const auto seed = Seed(std::to_string(id));
        const std::int64_t start = At("2024-01-01T00:00:00Z") - 1000;  // Next() is strictly after
        // H(10-20): one minute in 10-20.
        for (std::int64_t t : Parse("0 H(10-20) * * * ?", seed).NextN(start, nullptr, 3)) {
            const std::int64_t minute = (t / 60'000) % 60;
            EXPECT_GE(minute, 10);
            EXPECT_LE(minute, 20);
        }
        // H/15: four minutes, 15 apart, the first below 15.
        const auto quarter = Parse("0 H/15 * * * ?", seed).NextN(start, nullptr, 4);
        ASSERT_EQ(quarter.size(), 4U);
        EXPECT_LT((quarter[0] - start) / 60'000, 15);
        for (std::size_t i = 1; i < quarter.size(); ++i) EXPECT_EQ(quarter[i] - quarter[i - 1], 15 * 60'000);
        // H(0-5)/2 hours: 3 hours a day, 2 apart, all within 0-5.
        const auto hours = Parse("0 0 H(0-5)/2 * * ?", seed).NextN(start, nullptr, 3);
        ASSERT_EQ(hours.size(), 3U);
        for (std::int64_t t : hours) EXPECT_LE((t - start) / 3'600'000, 5);
        EXPECT_EQ(hours[1] - hours[0], 2 * 3'600'000);
        // Plain H in day-of-month avoids 29-31; in Unix day-of-week it is 0-6.
        const auto day = Parse("0 0 H * *", seed).Next(start, nullptr);
        ASSERT_TRUE(day);
        EXPECT_LT(*day - start, 28LL * 86'400'000);
        EXPECT_TRUE(Parse("0 0 * * H", seed).Next(start, nullptr));
        EXPECT_TRUE(Parse("0 0 0 ? * H", seed).Next(start, nullptr));
    }
}

TEST(CronHash, DifferentFieldsHashDifferently) {
    // The same seed gives each field its own value ("<seed>:minute" vs "<seed>:second").
    int differ = 0;
    for (int id = 1; id <= 20; ++id) {
        const std::string s = std::to_string(id);
        if (StableHash(s + ":second") % 60 != StableHash(s + ":minute") % 60) ++differ;
    }
    EXPECT_GT(differ, 15);
}

TEST(CronHash, WithoutSeedValidatesAndRejectsMisuse) {
    // A new job has no id yet: H is accepted (seed "").
    EXPECT_TRUE(CronExpression::Parse("H H * * *").ok());
    CronError error;
    EXPECT_FALSE(CronExpression::Parse("0 0 0 * * ? H", &error).ok());
    EXPECT_EQ(error.field, "year");
    EXPECT_FALSE(CronExpression::Parse("H(20-10) * * * *", &error).ok());
    EXPECT_EQ(error.field, "minute");
    EXPECT_FALSE(CronExpression::Parse("H(0-70) * * * *", &error).ok());
    EXPECT_FALSE(CronExpression::Parse("H/0 * * * *", &error).ok());
    EXPECT_FALSE(CronExpression::Parse("H(1-5 * * * *", &error).ok());
    EXPECT_FALSE(CronExpression::Parse("Hx * * * *", &error).ok());
    EXPECT_FALSE(CronExpression::Parse("0 H(MON-FRI)x * * ?", &error).ok());
}

TEST(CronHash, HourWithAStepFiresInBothPassesPlainHDoesNot) {
    EXPECT_TRUE(Parse("0 0 H/2 * * ?", Seed("7")).FiresInBothPasses());
    EXPECT_FALSE(Parse("0 0 H * * ?", Seed("7")).FiresInBothPasses());
}

CronOptions Dst(DstGap gap, DstOverlap overlap) {
    CronOptions o;
    o.dst_gap = gap;
    o.dst_overlap = overlap;
    return o;
}

TEST(CronDstChoice, GapInTheNorth) {
    // Europe/Berlin, 31 March 2024: 02:00 CET -> 03:00 CEST.
    const char* start = "2024-03-30T12:00:00+0100";
    EXPECT_EQ(Fires("0 30 2 * * ?", Dst(DstGap::kAuto, DstOverlap::kAuto), "Europe/Berlin", start, 2),
              (std::vector<std::string>{"2024-03-31T03:00:00+0200", "2024-04-01T02:30:00+0200"}));
    EXPECT_EQ(Fires("0 30 2 * * ?", Dst(DstGap::kSkip, DstOverlap::kAuto), "Europe/Berlin", start, 2),
              (std::vector<std::string>{"2024-04-01T02:30:00+0200", "2024-04-02T02:30:00+0200"}));
    EXPECT_EQ(Fires("0 30 2 * * ?", Dst(DstGap::kShiftForward, DstOverlap::kAuto), "Europe/Berlin", start, 2),
              (std::vector<std::string>{"2024-03-31T03:30:00+0200", "2024-04-01T02:30:00+0200"}));
    // Every 15 minutes of hour 2: skip loses the hour, shift-forward runs it an hour later.
    EXPECT_EQ(Fires("0 */15 2 * * ?", Dst(DstGap::kSkip, DstOverlap::kAuto), "Europe/Berlin", start, 1),
              (std::vector<std::string>{"2024-04-01T02:00:00+0200"}));
    EXPECT_EQ(
        Fires("0 */15 2 * * ?", Dst(DstGap::kShiftForward, DstOverlap::kAuto), "Europe/Berlin", start, 5),
        (std::vector<std::string>{"2024-03-31T03:00:00+0200", "2024-03-31T03:15:00+0200", "2024-03-31T03:30:00+0200",
                                  "2024-03-31T03:45:00+0200", "2024-04-01T02:00:00+0200"}));
    // A frequent job does not fire twice where a shifted time meets a real one.
    EXPECT_EQ(Fires("0 */30 * * * ?", Dst(DstGap::kShiftForward, DstOverlap::kAuto), "Europe/Berlin",
                    "2024-03-31T01:15:00+0100", 4),
              (std::vector<std::string>{"2024-03-31T01:30:00+0100", "2024-03-31T03:00:00+0200",
                                        "2024-03-31T03:30:00+0200", "2024-03-31T04:00:00+0200"}));
}

TEST(CronDstChoice, GapInTheSouth) {
    // Australia/Sydney, 6 October 2024: 02:00 AEST -> 03:00 AEDT.
    const char* start = "2024-10-05T12:00:00+1000";
    EXPECT_EQ(Fires("0 30 2 * * ?", Dst(DstGap::kAuto, DstOverlap::kAuto), "Australia/Sydney", start, 1),
              (std::vector<std::string>{"2024-10-06T03:00:00+1100"}));
    EXPECT_EQ(Fires("0 30 2 * * ?", Dst(DstGap::kSkip, DstOverlap::kAuto), "Australia/Sydney", start, 1),
              (std::vector<std::string>{"2024-10-07T02:30:00+1100"}));
    EXPECT_EQ(Fires("0 30 2 * * ?", Dst(DstGap::kShiftForward, DstOverlap::kAuto), "Australia/Sydney", start, 1),
              (std::vector<std::string>{"2024-10-06T03:30:00+1100"}));
    // Lord Howe's gap is 30 minutes (02:00 -> 02:30): a shifted 02:20 (-> 02:50) comes after the
    // real 02:40, and both fire, in order.
    EXPECT_EQ(
        Fires("0 20,40 2 * * ?", Dst(DstGap::kShiftForward, DstOverlap::kAuto), "Australia/Lord_Howe",
              "2024-10-05T12:00:00+1030", 3),
        (std::vector<std::string>{"2024-10-06T02:40:00+1100", "2024-10-06T02:50:00+1100", "2024-10-07T02:20:00+1100"}));
}

TEST(CronDstChoice, OverlapInTheNorth) {
    // Europe/Berlin, 27 October 2024: 03:00 CEST -> 02:00 CET.
    const char* start = "2024-10-26T12:00:00+0200";
    const auto at = [&](const char* text, DstOverlap o, std::size_t n) {
        return Fires(text, Dst(DstGap::kAuto, o), "Europe/Berlin", start, n);
    };
    EXPECT_EQ(at("0 30 2 * * ?", DstOverlap::kAuto, 2),
              (std::vector<std::string>{"2024-10-27T02:30:00+0200", "2024-10-28T02:30:00+0100"}));
    EXPECT_EQ(at("0 30 2 * * ?", DstOverlap::kFirst, 2),
              (std::vector<std::string>{"2024-10-27T02:30:00+0200", "2024-10-28T02:30:00+0100"}));
    EXPECT_EQ(at("0 30 2 * * ?", DstOverlap::kLast, 2),
              (std::vector<std::string>{"2024-10-27T02:30:00+0100", "2024-10-28T02:30:00+0100"}));
    EXPECT_EQ(
        at("0 30 2 * * ?", DstOverlap::kBoth, 3),
        (std::vector<std::string>{"2024-10-27T02:30:00+0200", "2024-10-27T02:30:00+0100", "2024-10-28T02:30:00+0100"}));
    // A frequent hour field fires in both passes by default; `first` pauses it for the repeat.
    EXPECT_EQ(
        Fires("0 0/30 * * * ?", Dst(DstGap::kAuto, DstOverlap::kFirst), "Europe/Berlin", "2024-10-27T01:45:00+0200", 3),
        (std::vector<std::string>{"2024-10-27T02:00:00+0200", "2024-10-27T02:30:00+0200", "2024-10-27T03:00:00+0100"}));
    EXPECT_EQ(
        Fires("0 0/30 * * * ?", Dst(DstGap::kAuto, DstOverlap::kLast), "Europe/Berlin", "2024-10-27T01:45:00+0200", 3),
        (std::vector<std::string>{"2024-10-27T02:00:00+0100", "2024-10-27T02:30:00+0100", "2024-10-27T03:00:00+0100"}));
}

TEST(CronDstChoice, OverlapInTheSouth) {
    // Australia/Sydney, 7 April 2024: 03:00 AEDT -> 02:00 AEST.
    const char* start = "2024-04-06T12:00:00+1100";
    const auto at = [&](DstOverlap o, std::size_t n) {
        return Fires("0 30 2 * * ?", Dst(DstGap::kAuto, o), "Australia/Sydney", start, n);
    };
    EXPECT_EQ(at(DstOverlap::kFirst, 1), (std::vector<std::string>{"2024-04-07T02:30:00+1100"}));
    EXPECT_EQ(at(DstOverlap::kLast, 1), (std::vector<std::string>{"2024-04-07T02:30:00+1000"}));
    EXPECT_EQ(
        at(DstOverlap::kBoth, 3),
        (std::vector<std::string>{"2024-04-07T02:30:00+1100", "2024-04-07T02:30:00+1000", "2024-04-08T02:30:00+1000"}));
}

TEST(CronDstChoice, NamesRoundTrip) {
    for (DstGap g : {DstGap::kAuto, DstGap::kSkip, DstGap::kShiftForward}) EXPECT_EQ(*ParseDstGap(DstGapName(g)), g);
    for (DstOverlap o : {DstOverlap::kAuto, DstOverlap::kFirst, DstOverlap::kLast, DstOverlap::kBoth}) {
        EXPECT_EQ(*ParseDstOverlap(DstOverlapName(o)), o);
    }
    EXPECT_FALSE(ParseDstGap("Skip").ok());
    EXPECT_FALSE(ParseDstOverlap("").ok());
}

TEST(Jitter, OffsetIsDeterministicAndWithinTheBound) {
    EXPECT_EQ(JitterOffsetMs(7, 1'700'000'000'000, 0), 0);
    std::set<std::int64_t> seen;
    for (std::int64_t k = 0; k < 500; ++k) {
        const std::int64_t nominal = 1'700'000'000'000 + k * 60'000;
        const std::int64_t off = JitterOffsetMs(7, nominal, 30'000);
        EXPECT_EQ(off, JitterOffsetMs(7, nominal, 30'000));
        EXPECT_GE(off, 0);
        EXPECT_LE(off, 30'000);
        seen.insert(off);
        // Bounded below the gap to the next nominal time.
        EXPECT_LT(JitterOffsetMs(7, nominal, 30'000, nominal + 1000), 1000);
    }
    EXPECT_GT(seen.size(), 400U);
    // Another job gets other offsets.
    int differ = 0;
    for (std::int64_t k = 0; k < 50; ++k) {
        const std::int64_t nominal = 1'700'000'000'000 + k * 60'000;
        if (JitterOffsetMs(7, nominal, 30'000) != JitterOffsetMs(8, nominal, 30'000)) ++differ;
    }
    EXPECT_GT(differ, 45);
}

TEST(Jitter, ScheduleAppliesItToFireTimesNotToNominalTimes) {
    ScheduleOptions o;
    o.job_id = 12;
    o.jitter_ms = 600'000;
    const auto s = Schedule::Make("cron", "0 0 * * * ?", "UTC", nullptr, o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    const std::int64_t start = At("2024-01-01T00:00:00Z");
    const auto nominal = s->Preview(start, 5);
    const auto fired = s->PreviewFireTimes(start, 5);
    ASSERT_EQ(fired.size(), 5U);
    for (std::size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(nominal[i] % 3'600'000, 0);
        EXPECT_GE(fired[i] - nominal[i], 0);
        EXPECT_LE(fired[i] - nominal[i], 600'000);
        EXPECT_EQ(fired[i], nominal[i] + JitterOffsetMs(12, nominal[i], 600'000, nominal[i] + 3'600'000));
    }
    std::string field;
    o.jitter_ms = kMaxJitterMs + 1;
    EXPECT_FALSE(Schedule::Make("cron", "0 0 * * * ?", "UTC", &field, o).ok());
    EXPECT_EQ(field, "jitter_ms");
    o.jitter_ms = -1;
    EXPECT_FALSE(Schedule::Make("cron", "0 0 * * * ?", "UTC", &field, o).ok());
}

TEST(ScheduleOptions, JobIdSeedsHAndDstChoiceReachesTheCronSearch) {
    ScheduleOptions o;
    o.job_id = 42;
    const auto with_id = Schedule::Make("cron", "H * * * *", "UTC", nullptr, o);
    ASSERT_TRUE(with_id.ok());
    const auto same = CronExpression::Parse("H * * * *", nullptr, Seed("42"));
    const std::int64_t start = At("2024-01-01T00:00:00Z");
    EXPECT_EQ(with_id->Preview(start, 3), same->NextN(start, nullptr, 3));
    o.job_id.reset();
    o.dst_gap = DstGap::kSkip;
    const auto skip = Schedule::Make("cron", "0 30 2 * * ?", "Europe/Berlin", nullptr, o);
    ASSERT_TRUE(skip.ok());
    EXPECT_EQ(skip->Preview(At("2024-03-30T12:00:00+0100"), 1),
              (std::vector<std::int64_t>{At("2024-04-01T02:30:00+0200")}));
}

}  // namespace
}  // namespace sched::cron

namespace sched::cron {
namespace {

TEST(ScheduleOptions, ParseNamesTheColumn) {
    std::string field;
    EXPECT_TRUE(ParseScheduleOptions(1, 0, "auto", "auto", &field).ok());
    EXPECT_FALSE(ParseScheduleOptions(1, 3'600'001, "auto", "auto", &field).ok());
    EXPECT_EQ(field, "jitter_ms");
    EXPECT_FALSE(ParseScheduleOptions(1, 0, "later", "auto", &field).ok());
    EXPECT_EQ(field, "dst_gap");
    EXPECT_FALSE(ParseScheduleOptions(1, 0, "skip", "twice", &field).ok());
    EXPECT_EQ(field, "dst_overlap");
    const auto ok = ParseScheduleOptions(7, 5000, "shift-forward", "last");
    ASSERT_TRUE(ok.ok());
    EXPECT_EQ(ok->job_id, 7);
    EXPECT_EQ(ok->dst_gap, DstGap::kShiftForward);
    EXPECT_EQ(ok->dst_overlap, DstOverlap::kLast);
}

TEST(NextOffsetChange, FindsTheNextTransitionInBothHemispheres) {
    const auto berlin =
        NextOffsetChange(*testing::Zone("Europe/Berlin"), testing::At("2024-03-01T00:00:00Z"), 366LL * 86'400'000);
    ASSERT_TRUE(berlin);
    EXPECT_EQ(berlin->at_ms, testing::At("2024-03-31T01:00:00Z"));
    EXPECT_EQ(berlin->offset_before_s, 3600);
    EXPECT_EQ(berlin->offset_after_s, 7200);
    const auto sydney =
        NextOffsetChange(*testing::Zone("Australia/Sydney"), testing::At("2024-03-01T00:00:00Z"), 366LL * 86'400'000);
    ASSERT_TRUE(sydney);
    EXPECT_EQ(sydney->at_ms, testing::At("2024-04-06T16:00:00Z"));
    EXPECT_EQ(sydney->offset_after_s, 36000);
    // Past 2037 from the footer rule, and none for UTC or Shanghai.
    EXPECT_TRUE(
        NextOffsetChange(*testing::Zone("Australia/Sydney"), testing::At("2040-01-01T00:00:00Z"), 366LL * 86'400'000));
    EXPECT_FALSE(NextOffsetChange(*testing::Zone("UTC"), testing::At("2024-03-01T00:00:00Z"), 366LL * 86'400'000));
    EXPECT_FALSE(
        NextOffsetChange(*testing::Zone("Asia/Shanghai"), testing::At("2024-03-01T00:00:00Z"), 366LL * 86'400'000));
    // Not within a day.
    EXPECT_FALSE(NextOffsetChange(*testing::Zone("Europe/Berlin"), testing::At("2024-03-01T00:00:00Z"), 86'400'000));
}

}  // namespace
}  // namespace sched::cron
