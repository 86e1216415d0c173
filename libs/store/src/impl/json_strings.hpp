#pragma once

// A column that holds a JSON array of strings (an executor's handlers, a token's apps).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sched::store::impl {

/// The strings of the JSON array `text`, in order; its other elements are skipped, and a text
/// that is not a JSON array reads as no strings (the caller says what that means for its row).
inline std::vector<std::string> JsonStrings(const std::string& text) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    std::vector<std::string> out;
    if (!j.is_array()) return out;
    for (const auto& item : j) {
        if (item.is_string()) out.push_back(item.get<std::string>());
    }
    return out;
}

}  // namespace sched::store::impl
