#include "impl/list_query.hpp"

#include <string>
#include <vector>

#include "impl/context.hpp"

namespace sched::web::impl {

std::optional<PageRequest> ReadPageRequest(const http::Request& req, std::initializer_list<std::string_view> filters,
                                           std::optional<http::Response>& error, const PageBounds& bounds) {
    std::vector<std::string_view> allowed(filters);
    allowed.emplace_back("limit");
    if (bounds.cursor) allowed.emplace_back("cursor");
    if (auto unknown = UnknownQueryParam(req, allowed)) {
        error = BadRequest(*unknown, *unknown + ": unknown query parameter");
        return std::nullopt;
    }
    // limit before cursor (docs/api.md "Paging"): a request with both wrong is told about limit.
    PageRequest page;
    page.limit = static_cast<int>(QueryInt(req, "limit", 1, bounds.max_limit, error).value_or(bounds.default_limit));
    if (error) return std::nullopt;
    if (bounds.cursor) {
        page.cursor = QueryInt(req, "cursor", bounds.min_cursor, kMaxId, error).value_or(0);
        if (error) return std::nullopt;
    }
    return page;
}

std::optional<http::Response> RejectUnknownQuery(const http::Request& req,
                                                 std::initializer_list<std::string_view> allowed) {
    return RejectUnknownQuery(req, std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

std::optional<http::Response> RejectUnknownQuery(const http::Request& req, std::span<const std::string_view> allowed) {
    if (auto unknown = UnknownQueryParam(req, allowed)) {
        return BadRequest(*unknown, *unknown + ": unknown query parameter");
    }
    return std::nullopt;
}

}  // namespace sched::web::impl
