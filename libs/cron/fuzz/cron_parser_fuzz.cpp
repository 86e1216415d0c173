// libFuzzer entry point for the cron parser and evaluator. Built with clang++ and
// -fsanitize=fuzzer,address,undefined when available (ctest cron_fuzz), and always with g++ under
// replay_main.cpp (ctest cron_fuzz_replay). Invariant violations trap, so both fail loudly.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "sched/cron/cron_expression.hpp"
#include "sched/cron/schedule.hpp"
#include "sched/cron/time_zone.hpp"

namespace {

void Check(bool ok) {
    if (!ok) __builtin_trap();
}

const date::time_zone* Zone(const char* name) {
    const auto zone = sched::cron::LookupZone(name);
    Check(zone.ok());
    return *zone;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using sched::cron::CronExpression;
    static const date::time_zone* const kZones[] = {nullptr, Zone("Europe/Berlin"), Zone("America/New_York"),
                                                    Zone("Australia/Lord_Howe")};
    const std::string_view text(reinterpret_cast<const char*>(data), size);

    sched::cron::CronError error;
    const auto parsed = CronExpression::Parse(text, &error);
    if (!parsed.ok()) {
        Check(!error.field.empty() && !error.reason.empty());
        Check(error.position <= size);
        Check(parsed.status().message() == error.Message());
        // The other schedule grammars see the same bytes.
        (void)sched::cron::Schedule::Make("fixed-rate", text, "UTC");
        (void)sched::cron::Schedule::Make("once", text, "Europe/Berlin");
        return 0;
    }

    // Start instants: one derived from the input (so the fuzzer explores dates) and a few next to
    // DST transitions of the zones above.
    std::uint64_t hash = 1469598103934665603ULL;
    for (std::size_t i = 0; i < size; ++i) hash = (hash ^ data[i]) * 1099511628211ULL;
    constexpr std::int64_t kSpanMs = 7258118400000LL;  // 1970-01-01 .. 2200-01-01
    const std::int64_t starts[] = {
        static_cast<std::int64_t>(hash % static_cast<std::uint64_t>(kSpanMs)) - 86400000,
        1711846799500,  // 2024-03-31T00:59:59.5Z, Berlin spring forward
        1729989000000,  // 2024-10-27T00:30:00Z, Berlin fall back (first pass)
        1730613600000,  // 2024-11-03T06:00:00Z, New York fall back (second pass starts)
        1712413800000,  // 2024-04-06T14:30:00Z, Lord Howe fall back
    };
    for (const date::time_zone* zone : kZones) {
        for (std::int64_t start : starts) {
            const std::optional<std::int64_t> next = parsed->Next(start, zone);
            if (!next) continue;
            Check(*next > start);
            Check(*next % 1000 == 0);
            Check(parsed->Next(*next - 1, zone) == next);
            const auto after = parsed->Next(*next, zone);
            Check(!after || *after > *next);
        }
    }
    return 0;
}
