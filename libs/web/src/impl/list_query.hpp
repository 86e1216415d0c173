#pragma once

// The query string of a list route (GET /api/v1/jobs, /fires, /audit, /calendars, ...): one
// parser, so that every list route checks the same things in the same order.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/api/page.hpp"
#include "sched/common/status.hpp"
#include "sched/http/message.hpp"

namespace sched::web::impl {

/// The largest page every list route serves (docs/api.md "Paging").
inline constexpr std::int64_t kMaxPageSize = 200;

/// The paging rules of one list route.
struct PageBounds {
    std::int64_t max_limit = kMaxPageSize;  ///< `limit` is in 1..max_limit
    std::int64_t default_limit = 50;        ///< when `limit` is absent or empty
    std::int64_t min_cursor = 0;            ///< `cursor` is in min_cursor..INT64_MAX (0: the first page)
    bool cursor = true;                     ///< false: the route takes no `cursor` (it is an unknown parameter)
};

/// A page request read from the query string.
struct PageRequest {
    int limit = 50;
    std::int64_t cursor = 0;  ///< 0 (or absent): the first page
};

/// Reads `limit` and `cursor` and checks every parameter name, in this order, stopping at the
/// first error (the 400 it sets in `error`, naming the field; the body text is the one every
/// list route has always answered):
///  1. each parameter name, in the order the query lists them, is `limit`, `cursor` (when
///     bounds.cursor) or one of `filters`: else "<name>: unknown query parameter";
///  2. `limit` is a decimal integer in 1..max_limit: else "limit: expected an integer in 1..N, got "x"";
///  3. `cursor` is a decimal integer in min_cursor..INT64_MAX: likewise, naming `cursor`.
/// The route's own filters are read after this, by the route. A repeated parameter counts with
/// its first occurrence (http::Request::Query); an empty value counts as absent.
std::optional<PageRequest> ReadPageRequest(const http::Request& req, std::initializer_list<std::string_view> filters,
                                           std::optional<http::Response>& error, const PageBounds& bounds = {});

/// The answer of a list route, an api::Page ({"items": [...], "next_cursor": "<id of the last
/// row shown>" or null}), from `rows` read with a limit of page + 1 (the one more tells whether a
/// next page exists; it is dropped here). `item(row)` is a row's view or JSON.
template <typename Row, typename Item>
nlohmann::json CursorPage(std::vector<Row>& rows, int page, Item&& item) {
    const bool more = static_cast<int>(rows.size()) > page;
    if (more) rows.resize(static_cast<std::size_t>(page));
    api::Page<std::invoke_result_t<Item&, const Row&>> out;
    for (const auto& row : rows) out.items.push_back(item(row));
    if (more) out.next_cursor = std::to_string(rows.back().id);
    return api::ToJson(out);
}

/// The same from a repository's listing: its error as it is.
template <typename Row, typename Item>
Result<nlohmann::json> CursorPage(Result<std::vector<Row>> listed, int page, Item&& item) {
    if (!listed.ok()) return listed.status();
    return CursorPage(*listed, page, std::forward<Item>(item));
}

/// For routes that are not paged: the 400 "<name>: unknown query parameter" for the first
/// parameter not in `allowed`, if any.
std::optional<http::Response> RejectUnknownQuery(const http::Request& req,
                                                 std::initializer_list<std::string_view> allowed);
std::optional<http::Response> RejectUnknownQuery(const http::Request& req, std::span<const std::string_view> allowed);

}  // namespace sched::web::impl
