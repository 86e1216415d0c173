#pragma once

// Reading a stored vocabulary name (a schedule type, a misfire policy, a routing, ...) back into
// its enum.

#include <cstdint>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

namespace sched::store::impl {

/// `stored` as its enum in `names`. An unknown name (a damaged row, or a newer release's name)
/// is logged as "<row> <id>: unknown <column> <quote(stored)> in the database, read as
/// <fallback>" and read as `fallback`, so that one row cannot take a listing down.
template <typename Names, typename Enum>
Enum StoredName(const Names& names, const std::string& stored, Enum fallback, std::string_view row, std::int64_t id,
                std::string_view column, std::string (*quote)(std::string_view)) {
    if (auto parsed = names.Parse(stored)) return *parsed;
    spdlog::warn("{} {}: unknown {} {} in the database, read as {}", row, id, column, quote(stored),
                 names.Name(fallback));
    return fallback;
}

}  // namespace sched::store::impl
