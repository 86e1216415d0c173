#pragma once

/// Table output of schedctl (`-o table`, the default): aligned columns, headers in capitals.
/// Cells come from the API, so they are made safe for a terminal first.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace sched::ctl {

/// `text` with every control character (escape sequences, newlines, tabs) replaced by '?', so a
/// hostile job name can neither break the columns nor drive the terminal.
std::string SanitizeCell(std::string_view text);

/// Columns padded to their widest cell (the last is not padded), two spaces apart, one row per
/// line, headers first. Short rows are padded with empty cells. Widths count bytes.
std::string RenderTable(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows);

/// A table's row: one cell per column.
using TableRow = std::vector<std::string>;

/// RenderTable of one row per item of `items`, `row_of(item)` giving its cells.
template <typename Items, typename RowOf>
std::string RenderRows(const std::vector<std::string>& headers, const Items& items, RowOf&& row_of) {
    std::vector<TableRow> rows;
    rows.reserve(items.size());
    for (const auto& item : items) rows.push_back(row_of(item));
    return RenderTable(headers, rows);
}

/// A JSON value as a cell: strings as is, null or absent as "-", other values as compact JSON.
std::string CellText(const nlohmann::json& value);

/// The field `key` of `object` as a cell ("-" when absent).
std::string FieldCell(const nlohmann::json& object, std::string_view key);

/// Epoch milliseconds as "2026-11-26T10:00:00Z"; "-" for null or absent.
std::string TimeCell(const nlohmann::json& object, std::string_view key);

/// A field of an API view (sched/api) as a cell: text as is, numbers in decimal, true/false, a
/// list of strings as compact JSON, an empty optional as "-" (what CellText makes of the JSON).
std::string Cell(std::string_view text);
std::string Cell(std::int64_t number);
std::string Cell(bool flag);
std::string Cell(const std::vector<std::string>& list);
template <typename T>
std::string Cell(const std::optional<T>& value) {
    return value ? Cell(*value) : std::string("-");
}

/// Epoch milliseconds as "2026-11-26T10:00:00Z"; "-" for an empty optional.
std::string TimeCell(std::int64_t epoch_ms);
std::string TimeCell(const std::optional<std::int64_t>& epoch_ms);

}  // namespace sched::ctl
