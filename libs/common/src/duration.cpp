#include "sched/common/duration.hpp"

#include <cctype>
#include <cstdint>
#include <limits>

namespace sched {

Result<Micros> ParseDuration(std::string_view text) {
    const auto expected = [&](std::string why) {
        return InvalidArgument(
            "expected a duration like \"250ms\", \"3s\", \"1m30s\" (units us, ms, s, m, h, d), got \"" +
            std::string(text) + "\"" + (why.empty() ? "" : ": " + why));
    };
    if (text == "0") return Micros{0};
    if (text.empty()) return expected("empty");
    std::int64_t total = 0;
    std::size_t i = 0;
    while (i < text.size()) {
        if (!std::isdigit(static_cast<unsigned char>(text[i]))) return expected("a number must come first");
        std::int64_t n = 0;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
            // Reject before overflow: durations beyond ~292k years are typos, not configs.
            if (n > (std::numeric_limits<std::int64_t>::max() - 9) / 10) return expected("too large");
            n = n * 10 + (text[i] - '0');
            ++i;
        }
        std::size_t unit_start = i;
        while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
        std::string_view unit = text.substr(unit_start, i - unit_start);
        std::int64_t scale = 0;
        if (unit == "us")
            scale = 1;
        else if (unit == "ms")
            scale = 1000;
        else if (unit == "s")
            scale = 1000 * 1000;
        else if (unit == "m")
            scale = 60LL * 1000 * 1000;
        else if (unit == "h")
            scale = 3600LL * 1000 * 1000;
        else if (unit == "d")
            scale = 86400LL * 1000 * 1000;
        else if (unit.empty())
            return expected("missing unit");
        else
            return expected("unknown unit \"" + std::string(unit) + "\"");
        if (n > std::numeric_limits<std::int64_t>::max() / scale ||
            total > std::numeric_limits<std::int64_t>::max() - n * scale) {
            return expected("too large");
        }
        total += n * scale;
    }
    return Micros{total};
}

std::string FormatDuration(Micros d) {
    std::int64_t us = d.count();
    if (us == 0) return "0s";
    std::string out;
    if (us < 0) {
        out = "-";
        us = -us;
    }
    struct Unit {
        std::int64_t scale;
        const char* name;
    };
    static constexpr Unit kUnits[] = {{86400LL * 1000000, "d"},
                                      {3600LL * 1000000, "h"},
                                      {60LL * 1000000, "m"},
                                      {1000000, "s"},
                                      {1000, "ms"},
                                      {1, "us"}};
    for (const auto& u : kUnits) {
        if (us >= u.scale) {
            out += std::to_string(us / u.scale) + u.name;
            us %= u.scale;
        }
    }
    return out;
}

}  // namespace sched
