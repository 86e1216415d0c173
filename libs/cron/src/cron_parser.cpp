#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "impl/civil.hpp"
#include "impl/cron_fields.hpp"
#include "sched/cron/cron_expression.hpp"

namespace sched::cron {

namespace {

constexpr std::size_t kMaxExpressionLength = 1024;

enum class FieldKind { kSecond, kMinute, kHour, kDayOfMonth, kMonth, kDayOfWeek, kYear };

struct FieldSpec {
    FieldKind kind;
    std::string_view name;
    int min;
    int max;
};

constexpr FieldSpec kSecond{FieldKind::kSecond, "second", 0, 59};
constexpr FieldSpec kMinute{FieldKind::kMinute, "minute", 0, 59};
constexpr FieldSpec kHour{FieldKind::kHour, "hour", 0, 23};
constexpr FieldSpec kDayOfMonth{FieldKind::kDayOfMonth, "day-of-month", 1, 31};
constexpr FieldSpec kMonth{FieldKind::kMonth, "month", 1, 12};
constexpr FieldSpec kQuartzDayOfWeek{FieldKind::kDayOfWeek, "day-of-week", 1, 7};
constexpr FieldSpec kUnixDayOfWeek{FieldKind::kDayOfWeek, "day-of-week", 0, 7};
constexpr FieldSpec kYear{FieldKind::kYear, "year", impl::kMinYear, impl::kMaxYear};

constexpr std::array<std::string_view, 12> kMonthNames = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                                          "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<std::string_view, 7> kDayNames = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

struct Macro {
    std::string_view name;
    std::string_view expansion;
};
constexpr std::array<Macro, 7> kMacros = {{{"@yearly", "0 0 0 1 1 ?"},
                                           {"@annually", "0 0 0 1 1 ?"},
                                           {"@monthly", "0 0 0 1 * ?"},
                                           {"@weekly", "0 0 0 ? * 1"},
                                           {"@daily", "0 0 0 * * ?"},
                                           {"@midnight", "0 0 0 * * ?"},
                                           {"@hourly", "0 0 * * * ?"}}};

bool IsSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool IsDigit(char c) {
    return c >= '0' && c <= '9';
}
bool IsAlpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
char Upper(char c) {
    return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (Upper(a[i]) != Upper(b[i])) return false;
    }
    return true;
}

/// Printable form of a token for messages: control and non-ASCII bytes become \xNN so that a
/// message built from hostile input stays one readable line.
std::string Printable(std::string_view s) {
    std::string out;
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7f) {
            out += c;
        } else {
            constexpr char kHex[] = "0123456789abcdef";
            out += "\\x";
            out += kHex[u >> 4];
            out += kHex[u & 0xf];
        }
    }
    return out;
}

struct Field {
    std::string_view text;
    std::size_t position;
};

/// Day-of-month as written, before it is combined with day-of-week.
struct DayOfMonthSpec {
    std::uint64_t days = 0;             // bit d: plain day d
    std::uint64_t nearest_weekday = 0;  // bit d: "dW"
    std::uint64_t last_offsets = 0;     // bit n: "L-n" ("L" is n = 0)
    std::uint64_t last_nearest = 0;     // bit n: "L-nW", the weekday nearest L-n ("LW" is n = 0)
    bool unspecified = false;           // "?"
};

/// Day-of-week as written; weekdays are normalised to 0 = Sunday whatever the form.
struct DayOfWeekSpec {
    std::uint64_t weekdays = 0;  // bit w
    std::uint64_t last = 0;      // bit w: "wL"
    std::uint64_t nth = 0;       // bit w * 5 + (k - 1): "w#k"
    bool unspecified = false;    // "?"
};

class Parser {
  public:
    Parser(CronForm form, std::string seed) : form_(form), seed_(std::move(seed)) {}

    /// Whether some item was written with `H`.
    bool used_hash() const { return used_hash_; }

    /// How one `*` / range / step item was written: `*` (or a bare `/n`), and whether it has a step.
    struct ItemShape {
        bool wildcard = false;
        bool stepped = false;
    };

    /// The reason the last Parse* call returned false.
    const CronError& error() const { return *error_; }

    bool ParseSimple(const FieldSpec& spec, Field field, std::uint64_t& bits) {
        return ParseList(spec, field, [&](std::string_view item, std::size_t pos) {
            return ParseRangeItem(spec, item, pos, [&](int v) { bits |= std::uint64_t{1} << v; });
        });
    }

    /// The hour field, and whether its repeated hours fire in both passes (docs/cron.md, "DST
    /// rules"): one item that is `*` or has a step (`*/n`, `/n`, `a/n`, `a-b/n`), or all 24 hours.
    bool ParseHours(Field field, std::uint64_t& bits, bool& fires_in_both_passes) {
        int items = 0;
        ItemShape shape;
        const bool ok = ParseList(kHour, field, [&](std::string_view item, std::size_t pos) {
            ++items;
            return ParseRangeItem(
                kHour, item, pos, [&](int v) { bits |= std::uint64_t{1} << v; }, &shape);
        });
        fires_in_both_passes =
            ok && ((items == 1 && (shape.wildcard || shape.stepped)) || bits == (std::uint64_t{1} << 24) - 1);
        return ok;
    }

    bool ParseYear(Field field, impl::YearSet& years) {
        return ParseList(kYear, field, [&](std::string_view item, std::size_t pos) {
            return ParseRangeItem(kYear, item, pos, [&](int v) { years.Set(v); });
        });
    }

    bool ParseDayOfMonth(Field field, DayOfMonthSpec& out) {
        if (field.text == "?") {
            if (!RequireQuartz(kDayOfMonth, field.text, field.position, "'?'")) return false;
            out.unspecified = true;
            return true;
        }
        return ParseList(kDayOfMonth, field, [&](std::string_view item, std::size_t pos) {
            if (Upper(item[0]) == 'L') return ParseLastDay(item, pos, out);
            if (Upper(item.back()) == 'W' && IsDigit(item[0])) {
                if (!RequireQuartz(kDayOfMonth, item, pos, "'W'")) return false;
                std::size_t i = 0;
                const auto day = ParseValue(kDayOfMonth, item, pos, i);
                if (!day) return false;
                if (i != item.size() - 1) return Fail(kDayOfMonth, item.substr(i), pos + i, "unexpected text");
                out.nearest_weekday |= std::uint64_t{1} << *day;
                return true;
            }
            return ParseRangeItem(kDayOfMonth, item, pos, [&](int v) { out.days |= std::uint64_t{1} << v; });
        });
    }

    bool ParseDayOfWeek(Field field, DayOfWeekSpec& out) {
        const FieldSpec& spec = form_ == CronForm::kUnix ? kUnixDayOfWeek : kQuartzDayOfWeek;
        if (field.text == "?") {
            if (!RequireQuartz(spec, field.text, field.position, "'?'")) return false;
            out.unspecified = true;
            return true;
        }
        return ParseList(spec, field, [&](std::string_view item, std::size_t pos) {
            if (item.size() == 1 && Upper(item[0]) == 'L') {
                // Quartz: a bare "L" in day-of-week means the last day of the week, Saturday.
                if (!RequireQuartz(spec, item, pos, "'L'")) return false;
                out.weekdays |= std::uint64_t{1} << 6;
                return true;
            }
            std::size_t i = 0;
            if (item[0] != '*' && item[0] != '/' && Upper(item[0]) != 'H') {
                const auto first = ParseValue(spec, item, pos, i);
                if (!first) return false;
                if (i < item.size() && Upper(item[i]) == 'L') {
                    if (!RequireQuartz(spec, item.substr(i, 1), pos + i, "'L'")) return false;
                    if (i + 1 != item.size()) return Fail(spec, item.substr(i + 1), pos + i + 1, "unexpected text");
                    out.last |= std::uint64_t{1} << Weekday(*first);
                    return true;
                }
                if (i < item.size() && item[i] == '#') {
                    if (!RequireQuartz(spec, item.substr(i, 1), pos + i, "'#'")) return false;
                    ++i;
                    const auto nth = ParseNumber(spec, item, pos, i, 1, 5, "occurrence");
                    if (!nth) return false;
                    if (i != item.size()) return Fail(spec, item.substr(i), pos + i, "unexpected text");
                    out.nth |= std::uint64_t{1} << (Weekday(*first) * 5 + (*nth - 1));
                    return true;
                }
            }
            return ParseRangeItem(spec, item, pos, [&](int v) { out.weekdays |= std::uint64_t{1} << Weekday(v); });
        });
    }

  private:
    CronForm form_;
    std::string seed_;
    bool used_hash_ = false;
    std::optional<CronError> error_;

    bool Fail(const FieldSpec& spec, std::string_view token, std::size_t pos, std::string reason) {
        error_ = CronError{std::string(spec.name), Printable(token), pos, std::move(reason)};
        return false;
    }

    std::nullopt_t FailValue(const FieldSpec& spec, std::string_view token, std::size_t pos, std::string reason) {
        Fail(spec, token, pos, std::move(reason));
        return std::nullopt;
    }

    bool RequireQuartz(const FieldSpec& spec, std::string_view token, std::size_t pos, std::string_view what) {
        if (form_ != CronForm::kUnix) return true;
        return Fail(spec, token, pos,
                    std::string(what) + " is Quartz syntax; use the 6- or 7-field Quartz form (seconds first)");
    }

    int Weekday(int v) const { return form_ == CronForm::kUnix ? v % 7 : v - 1; }

    template <typename ItemFn>
    bool ParseList(const FieldSpec& spec, Field field, ItemFn&& parse_item) {
        std::size_t start = 0;
        while (true) {
            const std::size_t comma = field.text.find(',', start);
            const std::size_t end = comma == std::string_view::npos ? field.text.size() : comma;
            const std::string_view item = field.text.substr(start, end - start);
            if (item.empty()) return Fail(spec, field.text, field.position + start, "empty list item");
            if (item == "?") {
                return Fail(spec, item, field.position + start,
                            spec.kind == FieldKind::kDayOfMonth || spec.kind == FieldKind::kDayOfWeek
                                ? "'?' must be the whole field"
                                : "'?' is only allowed in day-of-month or day-of-week");
            }
            if (!parse_item(item, field.position + start)) return false;
            if (comma == std::string_view::npos) return true;
            start = comma + 1;
        }
    }

    /// A number (up to 9 digits) in [lo, hi]; `what` names it in messages when it is not the
    /// field's own value ("step", "occurrence").
    std::optional<int> ParseNumber(const FieldSpec& spec, std::string_view item, std::size_t pos, std::size_t& i,
                                   int lo, int hi, std::string_view what) {
        const std::size_t start = i;
        std::int64_t n = 0;
        while (i < item.size() && IsDigit(item[i])) {
            if (i - start < 10) n = n * 10 + (item[i] - '0');
            ++i;
        }
        if (i == start) {
            if (i < item.size()) {
                return FailValue(spec, item.substr(i, 1), pos + i,
                                 "expected a number, got '" + Printable(item.substr(i, 1)) + "'");
            }
            return FailValue(spec, item, pos, "expected a number after '" + Printable(item) + "'");
        }
        const std::string_view digits = item.substr(start, i - start);
        if (i - start > 9 || n < lo || n > hi) {
            std::string reason = std::string(what.empty() ? "" : std::string(what) + " ") + std::string(digits) +
                                 " is out of range " + std::to_string(lo) + "-" + std::to_string(hi);
            if (what.empty() && spec.kind == FieldKind::kDayOfWeek && form_ != CronForm::kUnix && n == 0) {
                reason += " (Quartz numbering: 1 = SUN; 0 is only valid in the 5-field Unix form)";
            }
            return FailValue(spec, digits, pos + start, std::move(reason));
        }
        return static_cast<int>(n);
    }

    /// One value of the field: a number in range, or a month / day name where the field has names.
    std::optional<int> ParseValue(const FieldSpec& spec, std::string_view item, std::size_t pos, std::size_t& i) {
        if (i < item.size() && IsAlpha(item[i])) {
            const bool months = spec.kind == FieldKind::kMonth;
            const bool days = spec.kind == FieldKind::kDayOfWeek;
            const std::size_t start = i;
            while (i < item.size() && IsAlpha(item[i])) ++i;
            std::string_view word = item.substr(start, i - start);
            // "FRIL" is FRI followed by the last-weekday marker.
            if (days && word.size() == 4 && Upper(word[3]) == 'L') {
                word = word.substr(0, 3);
                i = start + 3;
            }
            if (months) {
                for (std::size_t k = 0; k < kMonthNames.size(); ++k) {
                    if (EqualsIgnoreCase(word, kMonthNames[k])) return static_cast<int>(k) + 1;
                }
                return FailValue(spec, word, pos + start, "'" + Printable(word) + "' is not a month name (JAN-DEC)");
            }
            if (days) {
                for (std::size_t k = 0; k < kDayNames.size(); ++k) {
                    if (EqualsIgnoreCase(word, kDayNames[k])) {
                        return static_cast<int>(k) + (form_ == CronForm::kUnix ? 0 : 1);
                    }
                }
                return FailValue(spec, word, pos + start, "'" + Printable(word) + "' is not a day name (SUN-SAT)");
            }
            return FailValue(spec, word, pos + start, "unexpected '" + Printable(word) + "'");
        }
        if (i < item.size() && !IsDigit(item[i])) {
            return FailValue(spec, item.substr(i, 1), pos + i, "unexpected '" + Printable(item.substr(i, 1)) + "'");
        }
        return ParseNumber(spec, item, pos, i, spec.min, spec.max, "");
    }

    /// `*`, `v`, `a-b`, each optionally followed by `/step`; `a/step` runs from a to the maximum and
    /// a bare `/step` is `*/step` (as in Quartz). Ranges wrap around (`22-2` hours, `FRI-MON`) except
    /// in the year field.
    /// `shape`, when given, receives how the item was written.
    template <typename AddFn>
    bool ParseRangeItem(const FieldSpec& spec, std::string_view item, std::size_t pos, AddFn&& add,
                        ItemShape* shape = nullptr) {
        if (Upper(item[0]) == 'H') return ParseHashItem(spec, item, pos, add, shape);
        std::size_t i = 0;
        int first = spec.min;
        int last = spec.max;
        bool single = false;
        if (shape) *shape = ItemShape{item[0] == '*' || item[0] == '/', false};
        if (item[0] == '*') {
            i = 1;
        } else if (item[0] != '/') {
            const auto a = ParseValue(spec, item, pos, i);
            if (!a) return false;
            first = *a;
            last = *a;
            single = true;
            if (i < item.size() && item[i] == '-') {
                ++i;
                if (i >= item.size()) return Fail(spec, item, pos, "range '" + Printable(item) + "' has no end");
                const auto b = ParseValue(spec, item, pos, i);
                if (!b) return false;
                last = *b;
                single = false;
                if (spec.kind == FieldKind::kYear && last < first) {
                    return Fail(spec, item.substr(0, i), pos,
                                "range " + std::to_string(first) + "-" + std::to_string(last) + " runs backwards");
                }
            }
        }
        int step = 1;
        if (i < item.size() && item[i] == '/') {
            ++i;
            const int span = spec.max - spec.min + 1;
            const auto s = ParseNumber(spec, item, pos, i, 1, span, "step");
            if (!s) return false;
            step = *s;
            if (shape) shape->stepped = true;
            if (single) last = spec.max;  // "a/n" means from a to the end of the field
        }
        if (i != item.size()) {
            return Fail(spec, item.substr(i), pos + i, "unexpected '" + Printable(item.substr(i, 1)) + "'");
        }
        const int span = spec.max - spec.min + 1;
        const int length = (last - first + span) % span;
        for (int off = 0; off <= length; off += step) add(spec.min + (first - spec.min + off) % span);
        return true;
    }

    /// `H`, `H(a-b)`, `H/n`, `H(a-b)/n` (cron_expression.hpp): the hashed choice is below the
    /// number of candidates, so every value it adds is in the field's range.
    template <typename AddFn>
    bool ParseHashItem(const FieldSpec& spec, std::string_view item, std::size_t pos, AddFn&& add, ItemShape* shape) {
        if (spec.kind == FieldKind::kYear) return Fail(spec, item, pos, "'H' is not allowed in the year field");
        int lo = spec.min;
        int hi = spec.max;
        // Plain H avoids the days that some months lack and the duplicate Sunday of the Unix form.
        if (spec.kind == FieldKind::kDayOfMonth) hi = 28;
        if (spec.kind == FieldKind::kDayOfWeek) hi = form_ == CronForm::kUnix ? 6 : 7;
        std::size_t i = 1;
        if (i < item.size() && item[i] == '(') {
            ++i;
            const auto a = ParseValue(spec, item, pos, i);
            if (!a) return false;
            if (i >= item.size() || item[i] != '-') return Fail(spec, item, pos, "expected 'H(a-b)'");
            ++i;
            const auto b = ParseValue(spec, item, pos, i);
            if (!b) return false;
            if (i >= item.size() || item[i] != ')') return Fail(spec, item, pos, "expected ')' after 'H(a-b'");
            ++i;
            if (*b < *a) {
                return Fail(spec, item, pos,
                            "range " + std::to_string(*a) + "-" + std::to_string(*b) + " in 'H(a-b)' runs backwards");
            }
            lo = *a;
            hi = *b;
        }
        int step = 0;
        if (i < item.size() && item[i] == '/') {
            ++i;
            const auto s = ParseNumber(spec, item, pos, i, 1, spec.max - spec.min + 1, "step");
            if (!s) return false;
            step = *s;
        }
        if (i != item.size()) {
            return Fail(spec, item.substr(i), pos + i, "unexpected '" + Printable(item.substr(i, 1)) + "'");
        }
        used_hash_ = true;
        const std::uint64_t hash = StableHash(seed_ + ":" + std::string(spec.name));
        const int choices = hi - lo + 1;
        if (shape) *shape = ItemShape{false, step > 0};
        if (step == 0) {
            add(lo + static_cast<int>(hash % static_cast<std::uint64_t>(choices)));
            return true;
        }
        const int start = lo + static_cast<int>(hash % static_cast<std::uint64_t>(std::min(step, choices)));
        for (int v = start; v <= hi; v += step) add(v);
        return true;
    }

    bool ParseLastDay(std::string_view item, std::size_t pos, DayOfMonthSpec& out) {
        if (!RequireQuartz(kDayOfMonth, item.substr(0, 1), pos, "'L'")) return false;
        if (item.size() == 1) {
            out.last_offsets |= 1;
            return true;
        }
        if (item.size() == 2 && Upper(item[1]) == 'W') {
            out.last_nearest |= 1;
            return true;
        }
        if (item[1] != '-') {
            return Fail(kDayOfMonth, item.substr(1), pos + 1, "expected 'L', 'LW', 'L-n' or 'L-nW'");
        }
        std::size_t i = 2;
        const auto offset = ParseNumber(kDayOfMonth, item, pos, i, 0, 30, "offset");
        if (!offset) return false;
        const bool nearest = i + 1 == item.size() && Upper(item[i]) == 'W';
        if (!nearest && i != item.size()) return Fail(kDayOfMonth, item.substr(i), pos + i, "unexpected text");
        (nearest ? out.last_nearest : out.last_offsets) |= std::uint64_t{1} << *offset;
        return true;
    }
};

std::uint64_t DayOfMonthMask(const DayOfMonthSpec& s, int days_in_month, int first_weekday) {
    const std::uint64_t valid = ((std::uint64_t{1} << (days_in_month + 1)) - 1) & ~std::uint64_t{1};
    std::uint64_t mask = s.days & valid;
    const auto nearest_weekday = [&](int d) {
        // Never leaves the month: 1W on a Saturday is Monday the 3rd, the last day on a Sunday
        // moves back to Friday.
        const int weekday = (first_weekday + d - 1) % 7;
        if (weekday == 6) return d == 1 ? 3 : d - 1;
        if (weekday == 0) return d == days_in_month ? d - 2 : d + 1;
        return d;
    };
    for (int d = 1; d <= days_in_month; ++d) {
        if ((s.nearest_weekday >> d) & 1U) mask |= std::uint64_t{1} << nearest_weekday(d);
    }
    for (int n = 0; n <= 30 && days_in_month - n >= 1; ++n) {
        if ((s.last_offsets >> n) & 1U) mask |= std::uint64_t{1} << (days_in_month - n);
        if ((s.last_nearest >> n) & 1U) mask |= std::uint64_t{1} << nearest_weekday(days_in_month - n);
    }
    return mask;
}

std::uint64_t DayOfWeekMask(const DayOfWeekSpec& s, int days_in_month, int first_weekday) {
    std::uint64_t mask = 0;
    for (int w = 0; w < 7; ++w) {
        const int first = 1 + (w - first_weekday + 7) % 7;
        if ((s.weekdays >> w) & 1U) {
            for (int d = first; d <= days_in_month; d += 7) mask |= std::uint64_t{1} << d;
        }
        for (int k = 1; k <= 5; ++k) {
            const int d = first + 7 * (k - 1);
            if (((s.nth >> (w * 5 + k - 1)) & 1U) && d <= days_in_month) mask |= std::uint64_t{1} << d;
        }
        if ((s.last >> w) & 1U) mask |= std::uint64_t{1} << (first + (days_in_month - first) / 7 * 7);
    }
    return mask;
}

enum class DayRule { kDayOfMonth, kDayOfWeek, kBoth, kEither };

bool AnyDateMatches(const impl::CronFields& f, const impl::YearSet& years) {
    for (auto y = years.NextFrom(impl::kMinYear); y; y = years.NextFrom(*y + 1)) {
        for (int m = 1; m <= 12; ++m) {
            if (((f.months >> m) & 1U) && f.DayMask(*y, m) != 0) return true;
        }
    }
    return false;
}

impl::YearSet AllYears() {
    impl::YearSet all;
    for (int y = impl::kMinYear; y <= impl::kMaxYear; ++y) all.Set(y);
    return all;
}

// Whether one day field alone (its mask per month shape) matches some day of the months and years.
template <typename MaskOf>
bool AnyDayMatches(const impl::CronFields& f, MaskOf mask_of) {
    for (auto y = f.years.NextFrom(impl::kMinYear); y; y = f.years.NextFrom(*y + 1)) {
        for (int m = 1; m <= 12; ++m) {
            if (((f.months >> m) & 1U) &&
                mask_of(impl::DaysInMonth(*y, m), impl::WeekdayFromDays(impl::DaysFromCivil(*y, m, 1))) != 0) {
                return true;
            }
        }
    }
    return false;
}

std::optional<CronError> CheckCanFire(const impl::CronFields& f, DayRule rule, const std::vector<Field>& fields,
                                      std::size_t dom, std::size_t dow, std::optional<std::size_t> year,
                                      const DayOfMonthSpec& dom_spec, const DayOfWeekSpec& dow_spec) {
    if (AnyDateMatches(f, f.years)) return std::nullopt;
    const auto error = [](std::string_view name, Field field, std::string reason) {
        return CronError{std::string(name), Printable(field.text), field.position, std::move(reason)};
    };
    const std::string months = "month '" + Printable(fields[dom + 1].text) + "'";
    if (year && AnyDateMatches(f, AllYears())) {
        return error("year", fields[*year],
                     "no date in year '" + Printable(fields[*year].text) + "' matches the day and month fields");
    }
    // Both must match: a field that never matches in these months on its own is the one to blame
    // (`0 0 31 4 */2`: the 31st, not the step of weekdays), whatever the other one says.
    if (rule == DayRule::kBoth) {
        if (!AnyDayMatches(f, [&](int dim, int wd) { return DayOfMonthMask(dom_spec, dim, wd); })) {
            rule = DayRule::kDayOfMonth;
        } else if (!AnyDayMatches(f, [&](int dim, int wd) { return DayOfWeekMask(dow_spec, dim, wd); })) {
            rule = DayRule::kDayOfWeek;
        }
    }
    switch (rule) {
        case DayRule::kDayOfMonth:
            return error("day-of-month", fields[dom],
                         "'" + Printable(fields[dom].text) + "' never occurs in " + months + "; it can never fire");
        case DayRule::kDayOfWeek:
            return error("day-of-week", fields[dow],
                         "'" + Printable(fields[dow].text) + "' never occurs in " + months + "; it can never fire");
        case DayRule::kBoth:
        case DayRule::kEither:
            break;
    }
    return error("day-of-week", fields[dow],
                 "day-of-month '" + Printable(fields[dom].text) + "' and day-of-week '" + Printable(fields[dow].text) +
                     "' never fall on the same day in " + months + "; it can never fire");
}

std::vector<Field> SplitFields(std::string_view text, std::size_t base) {
    std::vector<Field> fields;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && IsSpace(text[i])) ++i;
        const std::size_t start = i;
        while (i < text.size() && !IsSpace(text[i])) ++i;
        if (i > start) fields.push_back({text.substr(start, i - start), base + start});
    }
    return fields;
}

Result<CronExpression> Reject(CronError e, CronError* out) {
    Status status = InvalidArgument(e.Message());
    if (out) *out = std::move(e);
    return status;
}

}  // namespace

std::string CronError::Message() const {
    return field + ": " + reason + " (at position " + std::to_string(position) + ")";
}

CronExpression::CronExpression(std::shared_ptr<const impl::CronFields> fields, CronForm form, std::string text,
                               const CronOptions& options)
    : fields_(std::move(fields)),
      form_(form),
      text_(std::move(text)),
      dst_gap_(options.dst_gap),
      dst_overlap_(options.dst_overlap) {}

Result<CronExpression> CronExpression::Parse(std::string_view text, CronError* error_out, const CronOptions& options) {
    const auto whole = [&](std::string reason) {
        return CronError{"expression", Printable(text.substr(0, 64)), 0, std::move(reason)};
    };
    if (text.size() > kMaxExpressionLength) {
        return Reject(whole("expression is " + std::to_string(text.size()) + " characters long; the limit is " +
                            std::to_string(kMaxExpressionLength)),
                      error_out);
    }

    std::string_view body = text;
    std::size_t base = 0;
    CronForm form = CronForm::kQuartz;
    std::vector<Field> fields = SplitFields(text, 0);
    if (!fields.empty() && fields[0].text[0] == '@') {
        if (fields.size() != 1) {
            return Reject(CronError{"expression", Printable(fields[1].text), fields[1].position,
                                    "a macro must be the whole expression"},
                          error_out);
        }
        const Macro* macro = nullptr;
        for (const Macro& m : kMacros) {
            if (EqualsIgnoreCase(fields[0].text, m.name)) macro = &m;
        }
        if (!macro) {
            return Reject(CronError{"expression", Printable(fields[0].text), fields[0].position,
                                    "unknown macro '" + Printable(fields[0].text) +
                                        "' (expected @yearly, @annually, @monthly, @weekly, @daily, @midnight or "
                                        "@hourly)"},
                          error_out);
        }
        form = CronForm::kMacro;
        body = macro->expansion;
        base = fields[0].position;
        fields = SplitFields(body, base);
    } else if (fields.size() == 5) {
        form = CronForm::kUnix;
    } else if (fields.size() != 6 && fields.size() != 7) {
        return Reject(whole("expected 5 fields (Unix) or 6-7 fields (Quartz, seconds first), got " +
                            std::to_string(fields.size())),
                      error_out);
    }

    Parser parser(form, options.hash_seed.value_or(""));
    auto f = std::make_shared<impl::CronFields>();
    // Unix fields are the Quartz ones without seconds (and without a year).
    const std::size_t shift = form == CronForm::kUnix ? 1 : 0;
    if (form == CronForm::kUnix) {
        f->seconds = 1;
    } else if (!parser.ParseSimple(kSecond, fields[0], f->seconds)) {
        return Reject(parser.error(), error_out);
    }
    const std::size_t minute = 1 - shift;
    const std::size_t hour = 2 - shift;
    const std::size_t dom = 3 - shift;
    const std::size_t month = 4 - shift;
    const std::size_t dow = 5 - shift;
    DayOfMonthSpec dom_spec;
    DayOfWeekSpec dow_spec;
    const bool ok =
        parser.ParseSimple(kMinute, fields[minute], f->minutes) &&
        parser.ParseHours(fields[hour], f->hours, f->fires_in_both_passes) &&
        parser.ParseDayOfMonth(fields[dom], dom_spec) && parser.ParseSimple(kMonth, fields[month], f->months) &&
        parser.ParseDayOfWeek(fields[dow], dow_spec) && (fields.size() != 7 || parser.ParseYear(fields[6], f->years));
    if (!ok) return Reject(parser.error(), error_out);
    if (fields.size() != 7) f->years = AllYears();
    f->uses_hash = parser.used_hash();

    DayRule rule = DayRule::kBoth;
    if (form == CronForm::kUnix) {
        // Vixie cron / cronie: when either day field starts with '*' both must match (so the other
        // one decides); when both are restricted, a day matching either fires.
        const bool star = fields[dom].text[0] == '*' || fields[dow].text[0] == '*';
        rule = star ? DayRule::kBoth : DayRule::kEither;
    } else if (dom_spec.unspecified && dow_spec.unspecified) {
        return Reject(CronError{"day-of-week", "?", fields[dow].position,
                                "'?' may be used in only one of day-of-month and day-of-week"},
                      error_out);
    } else if (dom_spec.unspecified || (fields[dom].text == "*" && !dow_spec.unspecified)) {
        rule = DayRule::kDayOfWeek;
    } else if (dow_spec.unspecified || fields[dow].text == "*") {
        rule = DayRule::kDayOfMonth;
    } else {
        return Reject(CronError{"day-of-week", Printable(fields[dow].text), fields[dow].position,
                                "day-of-month and day-of-week are both restricted; set one of them to '?'"},
                      error_out);
    }

    for (int dim = 28; dim <= 31; ++dim) {
        for (int first_weekday = 0; first_weekday < 7; ++first_weekday) {
            const std::uint64_t by_month = DayOfMonthMask(dom_spec, dim, first_weekday);
            const std::uint64_t by_week = DayOfWeekMask(dow_spec, dim, first_weekday);
            std::uint64_t mask = 0;
            switch (rule) {
                case DayRule::kDayOfMonth:
                    mask = by_month;
                    break;
                case DayRule::kDayOfWeek:
                    mask = by_week;
                    break;
                case DayRule::kBoth:
                    mask = by_month & by_week;
                    break;
                case DayRule::kEither:
                    mask = by_month | by_week;
                    break;
            }
            f->day_masks[static_cast<std::size_t>(dim - 28)][static_cast<std::size_t>(first_weekday)] = mask;
        }
    }

    // f->fires_in_both_passes (set by ParseHours) is the DST rule for repeated hours
    // (docs/cron.md): a wildcard or stepped hour field is a frequent job that must not pause for the
    // repeated hour; a list names its hours one by one (`2-12,1-14/8` included), unless it covers
    // all 24.

    if (auto never =
            CheckCanFire(*f, rule, fields, dom, dow, fields.size() == 7 ? std::optional<std::size_t>(6) : std::nullopt,
                         dom_spec, dow_spec)) {
        if (form == CronForm::kMacro) never->position = base;
        return Reject(std::move(*never), error_out);
    }
    return CronExpression(std::move(f), form, std::string(text), options);
}

}  // namespace sched::cron
