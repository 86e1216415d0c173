#pragma once

// What every repository's Create answers for a new record.

#include <gtest/gtest.h>

namespace sched::store {

/// `created` is a new record: an id, version 1 and its creation time (ms since the epoch).
template <typename Created>
void ExpectCreated(const Created& created) {
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    EXPECT_GT(created->id, 0);
    EXPECT_EQ(created->version, 1);
    EXPECT_GT(created->created_at, 1'600'000'000'000);
}

}  // namespace sched::store
