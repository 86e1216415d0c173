#pragma once

// Checks the tests of schedctl's file parsers share (header-only).

#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "sched/common/status.hpp"

namespace sched::ctl {

/// The message of the error `parsed` holds; empty, with a failure recorded that shows `text`,
/// when it parsed.
template <typename T>
std::string ParseErrorOf(const Result<T>& parsed, std::string_view text = {}) {
    EXPECT_FALSE(parsed.ok()) << text;
    return parsed.ok() ? std::string() : parsed.status().message();
}

/// A section parser (`parse(text, file_name)`) reads a file without the section's key as a
/// section not managed (no value), and `empty_section`, the key with no entries, as a managed
/// section that is empty.
template <typename Parse>
void ExpectAbsentKeyUnmanagedAndEmptyKeyEmpty(Parse parse, std::string_view empty_section, std::string_view file_name) {
    auto r = parse("jobs: []\n", file_name);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->has_value());
    r = parse(empty_section, file_name);
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->has_value());
    EXPECT_TRUE((*r)->empty());
}

}  // namespace sched::ctl
