#include "table.hpp"

#include <algorithm>
#include <ctime>

namespace sched::ctl {

std::string SanitizeCell(std::string_view text) {
    std::string out(text);
    for (char& c : out) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) c = '?';
    }
    return out;
}

std::string RenderTable(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> widths(headers.size(), 0);
    auto measure = [&](const std::vector<std::string>& row) {
        for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i)
            widths[i] = std::max(widths[i], row[i].size());
    };
    measure(headers);
    for (const auto& row : rows) measure(row);
    std::string out;
    auto emit = [&](const std::vector<std::string>& row) {
        std::string line;
        for (std::size_t i = 0; i < widths.size(); ++i) {
            const std::string cell = i < row.size() ? SanitizeCell(row[i]) : std::string();
            line += cell;
            if (i + 1 < widths.size()) line += std::string(widths[i] - cell.size() + 2, ' ');
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
    };
    emit(headers);
    for (const auto& row : rows) emit(row);
    return out;
}

std::string CellText(const nlohmann::json& value) {
    if (value.is_null()) return "-";
    if (value.is_string()) return value.get<std::string>();
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string FieldCell(const nlohmann::json& object, std::string_view key) {
    if (!object.is_object()) return "-";
    const auto it = object.find(key);
    return it == object.end() ? "-" : CellText(*it);
}

std::string TimeCell(const nlohmann::json& object, std::string_view key) {
    if (!object.is_object()) return "-";
    const auto it = object.find(key);
    if (it == object.end() || !it->is_number_integer()) return "-";
    return TimeCell(it->get<std::int64_t>());
}

std::string Cell(std::string_view text) {
    return std::string(text);
}

std::string Cell(std::int64_t number) {
    return std::to_string(number);
}

std::string Cell(bool flag) {
    return flag ? "true" : "false";
}

std::string Cell(const std::vector<std::string>& list) {
    return CellText(nlohmann::json(list));
}

std::string TimeCell(const std::optional<std::int64_t>& epoch_ms) {
    return epoch_ms ? TimeCell(*epoch_ms) : std::string("-");
}

std::string TimeCell(std::int64_t ms) {
    const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    if (gmtime_r(&seconds, &tm) == nullptr) return std::to_string(ms);
    char buf[32];
    if (std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) return std::to_string(ms);
    return buf;
}

}  // namespace sched::ctl
