#include <gtest/gtest.h>

#include <algorithm>
#include <bitset>
#include <random>
#include <string>
#include <vector>

#include "sched/cron/cron_expression.hpp"
#include "test_time.hpp"

namespace sched::cron {
namespace {

using testing::At;
using testing::Show;
using testing::Zone;

/// Random but syntactically valid expressions covering every feature of the grammar.
class RandomCron {
  public:
    explicit RandomCron(std::uint64_t seed) : rng_(seed) {}

    std::string Quartz() {
        std::string text = List(0, 59) + " " + List(0, 59) + " " + List(0, 23) + " ";
        const int days = Uniform(0, 9);
        if (days < 4) {
            text += DayOfMonth() + " " + Month() + " ?";
        } else if (days < 8) {
            text += "? " + Month() + " " + DayOfWeek();
        } else {
            text += "* " + Month() + " *";
        }
        if (Uniform(0, 3) == 0) {
            const int from = Uniform(1970, 2190);
            text += Uniform(0, 1) ? " " + std::to_string(from) + "-" + std::to_string(Uniform(from, 2199))
                                  : " " + std::to_string(from) + "/" + std::to_string(Uniform(1, 9));
        }
        return text;
    }

    std::string Unix() {
        std::string dow = Uniform(0, 2) == 0 ? "*" : List(0, 7, kDays, 0);
        return List(0, 59) + " " + List(0, 23) + " " + (Uniform(0, 2) == 0 ? List(1, 31) : "*") + " " + Month() + " " +
               dow;
    }

    int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
    std::mt19937_64& rng() { return rng_; }

  private:
    static constexpr const char* kMonths[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                              "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
    static constexpr const char* kDays[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

    std::string Value(int lo, int hi, const char* const* names, int name_base) {
        const int v = Uniform(lo, hi);
        if (names && v - name_base >= 0 && v - name_base < (name_base == 0 ? 7 : 12) && Uniform(0, 2) == 0) {
            return names[v - name_base];
        }
        return std::to_string(v);
    }

    std::string Item(int lo, int hi, const char* const* names = nullptr, int name_base = 0) {
        switch (Uniform(0, 6)) {
            case 0:
                return "*";
            case 1:  // Quartz also takes a bare "/n" for "*/n"
                return (Uniform(0, 3) ? "*/" : "/") + std::to_string(Uniform(1, hi - lo + 1));
            case 2:
                return Value(lo, hi, names, name_base) + "/" + std::to_string(Uniform(1, hi - lo + 1));
            case 3:
                return Value(lo, hi, names, name_base) + "-" + Value(lo, hi, names, name_base);
            case 4:
                return Value(lo, hi, names, name_base) + "-" + Value(lo, hi, names, name_base) + "/" +
                       std::to_string(Uniform(1, 5));
            default:
                return Value(lo, hi, names, name_base);
        }
    }

    std::string List(int lo, int hi, const char* const* names = nullptr, int name_base = 0) {
        std::string out = Item(lo, hi, names, name_base);
        for (int n = Uniform(0, 2); n > 0; --n) out += "," + Item(lo, hi, names, name_base);
        return out;
    }

    std::string Month() { return Uniform(0, 1) ? "*" : List(1, 12, kMonths, 1); }

    std::string DayOfMonth() {
        std::string out;
        for (int n = Uniform(1, 2); n > 0; --n) {
            if (!out.empty()) out += ",";
            switch (Uniform(0, 5)) {
                case 0:
                    out += "L";
                    break;
                case 1:
                    out += "L-" + std::to_string(Uniform(0, 30)) + (Uniform(0, 1) ? "W" : "");
                    break;
                case 2:
                    out += "LW";
                    break;
                case 3:
                    out += std::to_string(Uniform(1, 31)) + "W";
                    break;
                default:
                    out += Item(1, 31);
                    break;
            }
        }
        return out;
    }

    std::string DayOfWeek() {
        switch (Uniform(0, 3)) {
            case 0:
                return Value(1, 7, kDays, 1) + "L";
            case 1:
                return Value(1, 7, kDays, 1) + "#" + std::to_string(Uniform(1, 5));
            default:
                return List(1, 7, kDays, 1);
        }
    }

    std::mt19937_64 rng_;
};

std::vector<const date::time_zone*> Zones() {
    return {nullptr,
            Zone("UTC"),
            Zone("Europe/Berlin"),
            Zone("America/New_York"),
            Zone("Australia/Lord_Howe"),
            Zone("Asia/Shanghai")};
}

TEST(CronProperty, NextIsAfterAndNothingIsSkippedBeforeIt) {
    RandomCron gen(7);
    const auto zones = Zones();
    const std::int64_t lo = At("1970-01-01T00:00:00Z");
    const std::int64_t hi = At("2200-01-01T00:00:00Z");
    int parsed = 0;
    int found = 0;
    for (int i = 0; i < 1500; ++i) {
        const std::string text = i % 4 == 0 ? gen.Unix() : gen.Quartz();
        CronError error;
        const auto expr = CronExpression::Parse(text, &error);
        if (!expr.ok()) {
            // The generator writes valid syntax; only impossible dates may be refused.
            EXPECT_NE(error.reason.find("never"), std::string::npos) << text << ": " << error.Message();
            continue;
        }
        ++parsed;
        for (const date::time_zone* zone : zones) {
            const std::int64_t starts[] = {
                std::uniform_int_distribution<std::int64_t>(lo, hi)(gen.rng()),
                std::uniform_int_distribution<std::int64_t>(At("2020-01-01T00:00:00Z"),
                                                            At("2030-01-01T00:00:00Z"))(gen.rng()),
                At("2024-10-27T00:59:59Z") + gen.Uniform(0, 3600 * 1000),  // Berlin fall back
                At("2024-03-10T06:30:00Z") + gen.Uniform(0, 3600 * 1000),  // New York spring forward
            };
            for (std::int64_t t : starts) {
                const auto next = expr->Next(t, zone);
                if (!next) continue;
                ++found;
                ASSERT_GT(*next, t) << text << " after " << t;
                ASSERT_EQ(*next % 1000, 0) << text;
                ASSERT_EQ(expr->Next(*next - 1, zone), next) << text << " after " << t;
            }
        }
    }
    EXPECT_GT(parsed, 1000);
    EXPECT_GT(found, parsed * 6 * 2);
}

/// Time-of-day fields for the oracle, expanded here independently of the parser.
struct TimeOfDay {
    std::string text;
    std::bitset<60> seconds;
    std::bitset<60> minutes;
    std::bitset<24> hours;
    bool frequent = false;  // the repeated-hour rule, from docs/cron.md
};

std::string RandomTimeField(RandomCron& gen, int max, std::bitset<60>& bits, const std::vector<int>& interesting) {
    std::string text;
    const int kind = gen.Uniform(0, 4);
    if (kind == 0) {
        text = "*";
        for (int v = 0; v <= max; ++v) bits.set(static_cast<std::size_t>(v));
    } else if (kind == 1) {
        const int step = gen.Uniform(2, std::min(30, max));
        const int start = gen.Uniform(0, step - 1);
        text = std::to_string(start) + "/" + std::to_string(step);
        for (int v = start; v <= max; v += step) bits.set(static_cast<std::size_t>(v));
    } else if (kind == 2) {
        const int a = interesting[static_cast<std::size_t>(gen.Uniform(0, static_cast<int>(interesting.size()) - 1))];
        const int b = std::min(max, a + gen.Uniform(0, 3));
        text = std::to_string(a) + "-" + std::to_string(b);
        for (int v = a; v <= b; ++v) bits.set(static_cast<std::size_t>(v));
    } else {
        for (int n = gen.Uniform(1, 3); n > 0; --n) {
            const int v =
                gen.Uniform(0, 3) == 0
                    ? gen.Uniform(0, max)
                    : interesting[static_cast<std::size_t>(gen.Uniform(0, static_cast<int>(interesting.size()) - 1))];
            text += (text.empty() ? "" : ",") + std::to_string(v);
            bits.set(static_cast<std::size_t>(v));
        }
    }
    return text;
}

TimeOfDay RandomTimeOfDay(RandomCron& gen) {
    TimeOfDay t;
    const std::string seconds = RandomTimeField(gen, 59, t.seconds, {0, 15, 30, 45});
    const std::string minutes = RandomTimeField(gen, 59, t.minutes, {0, 10, 15, 29, 30, 45, 59});
    std::bitset<60> hours;
    const std::string hours_text = RandomTimeField(gen, 23, hours, {0, 1, 2, 3});
    for (std::size_t h = 0; h < 24; ++h) t.hours[h] = hours[h];
    t.frequent = (hours_text.find(',') == std::string::npos && hours_text.find_first_of("*/") != std::string::npos) ||
                 t.hours.all();
    t.text = seconds + " " + minutes + " " + hours_text + " * * ?";
    return t;
}

bool Matches(const TimeOfDay& tod, std::int64_t local_seconds) {
    const date::local_seconds local{std::chrono::seconds{local_seconds}};
    const date::hh_mm_ss<std::chrono::seconds> hms{local - date::floor<date::days>(local)};
    return tod.hours[static_cast<std::size_t>(hms.hours().count())] &&
           tod.minutes[static_cast<std::size_t>(hms.minutes().count())] &&
           tod.seconds[static_cast<std::size_t>(hms.seconds().count())];
}

/// Every fire instant in [from, to) by the documented rules, checking each second.
std::vector<std::int64_t> OracleFires(const TimeOfDay& tod, const date::time_zone* zone, std::int64_t from,
                                      std::int64_t to) {
    std::vector<std::int64_t> fires;
    for (std::int64_t t = from; t < to; ++t) {
        const date::sys_info info = zone->get_info(date::sys_seconds{std::chrono::seconds{t}});
        const std::int64_t local = t + info.offset.count();
        bool fire = false;
        if (Matches(tod, local)) {
            const date::local_info li = zone->get_info(date::local_seconds{std::chrono::seconds{local}});
            const bool first = li.result != date::local_info::ambiguous || t == local - li.first.offset.count();
            fire = first || tod.frequent;
        }
        if (!fire && info.begin.time_since_epoch().count() == t) {
            // A gap ends at t: local times in it that match fire now.
            const auto before = zone->get_info(date::sys_seconds{std::chrono::seconds{t - 1}}).offset.count();
            for (std::int64_t l = t + before; l < local && !fire; ++l) fire = Matches(tod, l);
        }
        if (fire) fires.push_back(t * 1000);
    }
    return fires;
}

TEST(CronProperty, MatchesABruteForceOracleAcrossDstTransitions) {
    struct Transition {
        const char* zone;
        const char* at;
    };
    const std::vector<Transition> transitions = {
        {"Europe/Berlin", "2024-03-31T01:00:00Z"},       {"Europe/Berlin", "2024-10-27T01:00:00Z"},
        {"America/New_York", "2024-03-10T07:00:00Z"},    {"America/New_York", "2024-11-03T06:00:00Z"},
        {"Australia/Lord_Howe", "2024-04-06T15:00:00Z"}, {"Australia/Lord_Howe", "2024-10-05T15:30:00Z"},
    };
    RandomCron gen(2024);
    std::size_t total = 0;
    for (const Transition& tr : transitions) {
        const date::time_zone* zone = Zone(tr.zone);
        const std::int64_t from = At(tr.at) / 1000 - std::int64_t{3} * 3600;
        const std::int64_t to = At(tr.at) / 1000 + std::int64_t{3} * 3600;
        for (int i = 0; i < 40; ++i) {
            const TimeOfDay tod = RandomTimeOfDay(gen);
            const auto expr = CronExpression::Parse(tod.text);
            ASSERT_TRUE(expr.ok()) << tod.text << ": " << expr.status().ToString();
            ASSERT_EQ(expr->FiresInBothPasses(), tod.frequent) << tod.text;
            const std::vector<std::int64_t> expected = OracleFires(tod, zone, from, to);
            std::vector<std::int64_t> actual;
            for (auto t = expr->Next(from * 1000 - 1, zone); t && *t < to * 1000; t = expr->Next(*t, zone)) {
                actual.push_back(*t);
            }
            total += expected.size();
            if (actual != expected) {
                std::string detail;
                for (std::size_t k = 0; k < std::max(actual.size(), expected.size()) && k < 400; ++k) {
                    const std::string a = k < actual.size() ? Show(actual[k], zone) : "-";
                    const std::string e = k < expected.size() ? Show(expected[k], zone) : "-";
                    if (a != e) {
                        detail = "first difference at #" + std::to_string(k);
                        detail += ": got " + a;
                        detail += ", expected " + e;
                        break;
                    }
                }
                ADD_FAILURE() << tod.text << " in " << tr.zone << " around " << tr.at << ": " << detail;
            }
        }
    }
    EXPECT_GT(total, 10000U) << "the oracle windows should contain fire times";
}

}  // namespace
}  // namespace sched::cron
