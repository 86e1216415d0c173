// Next-fire evaluations per second for typical expressions (docs/cron.md lists the figures).
// Run: build/<dir>/libs/cron/cron_bench [--benchmark_filter=...]

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "sched/cron/cron_expression.hpp"
#include "sched/cron/time_zone.hpp"

namespace {

using sched::cron::CronExpression;

constexpr std::int64_t kStart = 1704067200000;  // 2024-01-01T00:00:00Z
constexpr std::int64_t kYearMs = 366LL * 86400 * 1000;

CronExpression ParseOrThrow(const char* text) {
    auto expr = CronExpression::Parse(text);
    if (!expr.ok()) throw std::runtime_error(expr.status().ToString());
    return std::move(expr).value();
}

const date::time_zone* ZoneOrUtcShortcut(const char* name) {
    if (name == nullptr) return nullptr;
    auto zone = sched::cron::LookupZone(name);
    if (!zone.ok()) throw std::runtime_error(zone.status().ToString());
    return *zone;
}

/// Walks the schedule forward, each call starting from the previous fire time, as the master does.
void BM_NextChained(benchmark::State& state, const char* text, const char* zone_name) {
    const CronExpression expr = ParseOrThrow(text);
    const date::time_zone* zone = ZoneOrUtcShortcut(zone_name);
    std::int64_t t = kStart;
    for (auto _ : state) {
        const auto next = expr.Next(t, zone);
        t = next && *next < kStart + 10 * kYearMs ? *next : kStart;
        benchmark::DoNotOptimize(t);
    }
    state.SetItemsProcessed(state.iterations());
}

/// From random instants spread over a year, so every call takes a cold path through the calendar.
void BM_NextRandom(benchmark::State& state, const char* text, const char* zone_name) {
    const CronExpression expr = ParseOrThrow(text);
    const date::time_zone* zone = ZoneOrUtcShortcut(zone_name);
    std::mt19937_64 rng(1);
    std::vector<std::int64_t> starts(4096);
    for (auto& s : starts) s = kStart + static_cast<std::int64_t>(rng() % kYearMs);
    std::size_t i = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(expr.Next(starts[i++ & 4095], zone));
    }
    state.SetItemsProcessed(state.iterations());
}

/// From random instants within a day of Berlin's fall-back transition: the exact DST path.
void BM_NextNearTransition(benchmark::State& state, const char* text) {
    const CronExpression expr = ParseOrThrow(text);
    const date::time_zone* zone = ZoneOrUtcShortcut("Europe/Berlin");
    constexpr std::int64_t kTransition = 1729990800000;  // 2024-10-27T01:00:00Z
    std::mt19937_64 rng(1);
    std::vector<std::int64_t> starts(4096);
    for (auto& s : starts) s = kTransition - 86400000 + static_cast<std::int64_t>(rng() % (2 * 86400000ULL));
    std::size_t i = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(expr.Next(starts[i++ & 4095], zone));
    }
    state.SetItemsProcessed(state.iterations());
}

void BM_Parse(benchmark::State& state, const char* text) {
    for (auto _ : state) benchmark::DoNotOptimize(CronExpression::Parse(text));
    state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK_CAPTURE(BM_NextChained, every_minute / utc_shortcut, "0 * * * * ?", nullptr);
BENCHMARK_CAPTURE(BM_NextChained, every_minute / UTC, "0 * * * * ?", "UTC");
BENCHMARK_CAPTURE(BM_NextChained, every_minute / Berlin, "0 * * * * ?", "Europe/Berlin");
BENCHMARK_CAPTURE(BM_NextChained, every_10s / UTC, "*/10 * * * * ?", "UTC");
BENCHMARK_CAPTURE(BM_NextChained, daily_noon / UTC, "0 0 12 * * ?", "UTC");
BENCHMARK_CAPTURE(BM_NextChained, daily_noon / New_York, "0 0 12 * * ?", "America/New_York");
BENCHMARK_CAPTURE(BM_NextChained, business_hours / UTC, "0 */5 9-17 ? * MON-FRI", "UTC");
BENCHMARK_CAPTURE(BM_NextChained, business_hours / Berlin, "0 */5 9-17 ? * MON-FRI", "Europe/Berlin");
BENCHMARK_CAPTURE(BM_NextChained, unix_weekdays / UTC, "30 9 * * 1-5", "UTC");
BENCHMARK_CAPTURE(BM_NextChained, last_friday / UTC, "0 15 10 ? * 6L", "UTC");
BENCHMARK_CAPTURE(BM_NextChained, last_weekday / Berlin, "0 0 18 LW * ?", "Europe/Berlin");
BENCHMARK_CAPTURE(BM_NextChained, leap_day / UTC, "0 0 0 29 2 ?", "UTC");
BENCHMARK_CAPTURE(BM_NextChained, every_minute / Lord_Howe, "0 * * * * ?", "Australia/Lord_Howe");

BENCHMARK_CAPTURE(BM_NextRandom, every_minute / UTC, "0 * * * * ?", "UTC");
BENCHMARK_CAPTURE(BM_NextRandom, daily_noon / UTC, "0 0 12 * * ?", "UTC");
BENCHMARK_CAPTURE(BM_NextRandom, daily_noon / Berlin, "0 0 12 * * ?", "Europe/Berlin");
BENCHMARK_CAPTURE(BM_NextRandom, business_hours / New_York, "0 */5 9-17 ? * MON-FRI", "America/New_York");

BENCHMARK_CAPTURE(BM_NextNearTransition, every_15min, "0 */15 * * * ?");
BENCHMARK_CAPTURE(BM_NextNearTransition, daily_0230, "0 30 2 * * ?");

BENCHMARK_CAPTURE(BM_Parse, business_hours, "0 */5 9-17 ? * MON-FRI");
BENCHMARK_CAPTURE(BM_Parse, quartz_specials, "0 15 10 LW,15W,L-3 JAN-JUN/2 ? 2024-2030");

BENCHMARK_MAIN();
