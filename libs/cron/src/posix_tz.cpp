#include "impl/posix_tz.hpp"

#include <algorithm>
#include <cctype>

#include "impl/civil.hpp"

namespace sched::cron::impl {

namespace {

class Reader {
  public:
    explicit Reader(std::string_view text) : text_(text) {}

    bool AtEnd() const { return pos_ == text_.size(); }
    char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }
    bool Accept(char c) {
        if (Peek() != c) return false;
        ++pos_;
        return true;
    }
    std::size_t pos() const { return pos_; }

    Status Error(std::string_view what) const {
        return InvalidArgument("POSIX TZ rule: " + std::string(what) + " (at position " + std::to_string(pos_) + ")");
    }

    // `std`/`dst`: 3+ letters, or <...> with letters, digits, '+' and '-' (RFC 8536: 3-6 usual).
    Result<std::string> Abbrev() {
        std::string out;
        if (Accept('<')) {
            while (!AtEnd() && Peek() != '>') {
                const auto c = static_cast<unsigned char>(Peek());
                if (!std::isalnum(c) && c != '+' && c != '-') return Error("bad character in a quoted abbreviation");
                out += static_cast<char>(c);
                ++pos_;
            }
            if (!Accept('>')) return Error("unterminated quoted abbreviation");
        } else {
            while (std::isalpha(static_cast<unsigned char>(Peek()))) out += text_[pos_++];
        }
        if (out.size() < 3 || out.size() > 16) return Error("an abbreviation must have 3 to 16 characters");
        return out;
    }

    // [+-]h[h[h]][:mm[:ss]] with h <= max_hours; seconds, signed as written.
    Result<std::int64_t> Time(int max_hours) {
        int sign = 1;
        if (Accept('-')) {
            sign = -1;
        } else {
            (void)Accept('+');
        }
        auto hours = Number(3);
        if (!hours.ok()) return hours.status();
        if (*hours > max_hours) return Error("hours out of range");
        std::int64_t total = *hours * 3600;
        for (int unit : {60, 1}) {
            if (!Accept(':')) break;
            auto part = Number(2);
            if (!part.ok()) return part.status();
            if (*part > 59) return Error("minutes or seconds out of range");
            total += *part * unit;
        }
        return sign * total;
    }

    // 1 to max_digits decimal digits.
    Result<int> Number(int max_digits) {
        int value = 0;
        int digits = 0;
        while (std::isdigit(static_cast<unsigned char>(Peek()))) {
            if (++digits > max_digits) return Error("number too long");
            value = value * 10 + (text_[pos_++] - '0');
        }
        if (digits == 0) return Error("expected a number");
        return value;
    }

    Result<PosixTzDate> Date() {
        PosixTzDate d;
        if (Accept('M')) {
            auto month = Number(2);
            if (!month.ok()) return month.status();
            if (!Accept('.')) return Error("expected '.' after the month");
            auto week = Number(1);
            if (!week.ok()) return week.status();
            if (!Accept('.')) return Error("expected '.' after the week");
            auto weekday = Number(1);
            if (!weekday.ok()) return weekday.status();
            if (*month < 1 || *month > 12 || *week < 1 || *week > 5 || *weekday > 6) {
                return Error("Mm.w.d out of range (m 1-12, w 1-5, d 0-6)");
            }
            d.kind = PosixTzDate::Kind::kMonthWeekDay;
            d.month = *month;
            d.week = *week;
            d.weekday = *weekday;
        } else {
            const bool julian1 = Accept('J');
            auto day = Number(3);
            if (!day.ok()) return day.status();
            if (julian1 ? (*day < 1 || *day > 365) : *day > 365) return Error("day of the year out of range");
            d.kind = julian1 ? PosixTzDate::Kind::kJulian1 : PosixTzDate::Kind::kJulian0;
            d.day = *day;
        }
        if (Accept('/')) {
            auto time = Time(167);
            if (!time.ok()) return time.status();
            d.time_s = *time;
        }
        return d;
    }

  private:
    std::string_view text_;
    std::size_t pos_ = 0;
};

// Local seconds (since the epoch, as if UTC) at which `d` happens in `year`.
std::int64_t LocalInstant(const PosixTzDate& d, int year) {
    std::int64_t days = 0;
    switch (d.kind) {
        case PosixTzDate::Kind::kJulian1:
            // Feb 29 is never counted: day 60 is always March 1.
            days = DaysFromCivil(year, 1, 1) + d.day - 1 + (IsLeapYear(year) && d.day >= 60 ? 1 : 0);
            break;
        case PosixTzDate::Kind::kJulian0:
            days = DaysFromCivil(year, 1, 1) + std::min(d.day, IsLeapYear(year) ? 365 : 364);
            break;
        case PosixTzDate::Kind::kMonthWeekDay: {
            const std::int64_t first = DaysFromCivil(year, d.month, 1);
            int day = 1 + (d.weekday - WeekdayFromDays(first) + 7) % 7 + 7 * (d.week - 1);
            while (day > DaysInMonth(year, d.month)) day -= 7;
            days = first + day - 1;
            break;
        }
    }
    return days * kSecondsPerDay + d.time_s;
}

}  // namespace

Result<PosixTz> ParsePosixTz(std::string_view text) {
    if (text.size() > kMaxPosixTzLength) return InvalidArgument("POSIX TZ rule: longer than 128 characters");
    Reader r(text);
    PosixTz tz;
    auto std_abbrev = r.Abbrev();
    if (!std_abbrev.ok()) return std_abbrev.status();
    tz.std_abbrev = std::move(*std_abbrev);
    auto std_offset = r.Time(24);
    if (!std_offset.ok()) return std_offset.status();
    tz.std_offset_s = -*std_offset;
    if (r.AtEnd()) return tz;
    auto dst_abbrev = r.Abbrev();
    if (!dst_abbrev.ok()) return dst_abbrev.status();
    tz.has_dst = true;
    tz.dst_abbrev = std::move(*dst_abbrev);
    tz.dst_offset_s = tz.std_offset_s + 3600;
    if (r.Peek() != ',') {
        auto dst_offset = r.Time(24);
        if (!dst_offset.ok()) return dst_offset.status();
        tz.dst_offset_s = -*dst_offset;
    }
    if (!r.Accept(',')) return r.Error("DST without a rule saying when it applies");
    auto start = r.Date();
    if (!start.ok()) return start.status();
    if (!r.Accept(',')) return r.Error("expected ',' before the end of DST");
    auto end = r.Date();
    if (!end.ok()) return end.status();
    if (!r.AtEnd()) return r.Error("unexpected text after the rule");
    tz.start = *start;
    tz.end = *end;
    return tz;
}

std::vector<PosixTzTransition> PosixTzTransitions(const PosixTz& rule, int first_year, int last_year) {
    std::vector<PosixTzTransition> all;
    if (!rule.has_dst) return all;
    first_year = std::max(first_year, 1);
    last_year = std::min(last_year, 9999);
    for (int y = first_year; y <= last_year; ++y) {
        // The start is written in standard time and the end in daylight time.
        all.push_back({LocalInstant(rule.start, y) - rule.std_offset_s, true});
        all.push_back({LocalInstant(rule.end, y) - rule.dst_offset_s, false});
    }
    // At equal instants the end comes first, so DST all year (`0/0,J365/25`) reads as no change.
    std::stable_sort(all.begin(), all.end(), [](const PosixTzTransition& a, const PosixTzTransition& b) {
        return a.at < b.at || (a.at == b.at && !a.dst && b.dst);
    });
    std::vector<PosixTzTransition> out;
    for (const auto& t : all) {
        // Two changes at one instant cancel out.
        while (!out.empty() && out.back().at == t.at) out.pop_back();
        if (out.empty() || out.back().dst != t.dst) out.push_back(t);
    }
    return out;
}

}  // namespace sched::cron::impl
