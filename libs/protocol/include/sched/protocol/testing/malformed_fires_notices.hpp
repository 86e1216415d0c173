#pragma once

/// For tests: bodies of the peer notification (POST /internal/v1/fires, fires_notice.hpp) that a
/// node refuses with a 400, each with the field the refusal names; the route's tests in-process
/// and against a real node send the same ones (header only).

#include <string_view>
#include <utility>

namespace sched::protocol::testing {

inline constexpr std::pair<std::string_view, std::string_view> kMalformedFiresNotices[] = {
    {R"({"epoch": 1, "fire_ids": [1], "priority": 9})", "priority"},
    {R"({"epoch": 1, "fire_ids": "1"})", "fire_ids"},
    {R"({"epoch": 1, "fire_ids": [1, "2"]})", "fire_ids"},
    {R"({"epoch": 1, "fire_ids": [-4]})", "fire_ids"},
    {R"({"epoch": "1", "fire_ids": [1]})", "epoch"},
    {R"({"fire_ids": [1]})", "epoch"},
    {R"({"epoch": 1})", "fire_ids"},
    {R"([1, 2])", "body"},
    {"fires please", "body"},
};

}  // namespace sched::protocol::testing
