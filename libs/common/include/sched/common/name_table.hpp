#pragma once

/// NameTable<Enum>: the one spelling table of a vocabulary enum (the names stored in the
/// database and sent on the wire), with Name and Parse over it, so that a vocabulary is written
/// once and every reader and writer agrees.
///
///     enum class Color { kRed, kDarkBlue };
///     inline constexpr auto kColorNames = MakeNameTable<Color>({"red", "dark-blue"});
///     kColorNames.Name(Color::kDarkBlue);  // "dark-blue"
///     kColorNames.Parse("red");            // Color::kRed; std::nullopt for any other text
///     kColorNames.Expected();              // "red or dark-blue" (for error messages)
///
/// The enum's values must be 0..N-1 in declaration order; `names[i]` spells value i. Parse is
/// exact (case-sensitive, no trimming). constexpr and stateless: thread-safe.

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sched {

template <typename Enum, std::size_t N>
class NameTable {
  public:
    constexpr explicit NameTable(const std::array<std::string_view, N>& names) : names_(names) {}

    /// The spelling of `value`; "unknown" for a value outside the table (a cast, not an enumerator).
    constexpr std::string_view Name(Enum value) const {
        const auto i = static_cast<std::size_t>(value);
        return i < N ? names_[i] : std::string_view("unknown");
    }

    /// The enumerator spelled `name`, or std::nullopt.
    constexpr std::optional<Enum> Parse(std::string_view name) const {
        for (std::size_t i = 0; i < N; ++i) {
            if (names_[i] == name) return static_cast<Enum>(i);
        }
        return std::nullopt;
    }

    /// Every spelling in enum order.
    constexpr const std::array<std::string_view, N>& names() const { return names_; }

    /// The spellings joined for a message: "a, b or c" (`last` joins the final two).
    std::string Expected(std::string_view last = " or ") const {
        std::string out;
        for (std::size_t i = 0; i < N; ++i) {
            if (i > 0) out += i + 1 == N ? last : std::string_view(", ");
            out += names_[i];
        }
        return out;
    }

  private:
    std::array<std::string_view, N> names_;
};

/// Builds a NameTable from the spellings in enum order; N is the number of names.
template <typename Enum, std::size_t N>
constexpr NameTable<Enum, N> MakeNameTable(const std::string_view (&names)[N]) {
    std::array<std::string_view, N> table{};
    for (std::size_t i = 0; i < N; ++i) table[i] = names[i];
    return NameTable<Enum, N>(table);
}

}  // namespace sched
