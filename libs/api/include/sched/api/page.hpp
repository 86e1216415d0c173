#pragma once

/// The shapes every list answer shares (docs/api.md "Paging").

#include <optional>
#include <string>
#include <vector>

#include "sched/api/view.hpp"

namespace sched::api {

/// A page of a list route: pass `next_cursor` back as `cursor` for the next page (null: no more).
template <typename T>
struct Page {
    std::vector<T> items;
    std::optional<std::string> next_cursor;

    SCHED_API_FIELDS(Page, items, next_cursor)
};

/// An answer that is a whole list at once (tokens, a trigger's fires).
template <typename T>
struct ItemList {
    std::vector<T> items;

    SCHED_API_FIELDS(ItemList, items)
};

}  // namespace sched::api
