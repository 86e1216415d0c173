#include "sched/common/status.hpp"

#include <gtest/gtest.h>

namespace sched {
namespace {

TEST(Result, HoldsValueOrError) {
    Result<int> good = 42;
    ASSERT_TRUE(good.ok());
    EXPECT_EQ(*good, 42);
    EXPECT_TRUE(good.status().ok());

    Result<int> bad = Unavailable("db down");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), Code::kUnavailable);
    EXPECT_EQ(bad.status().ToString(), "unavailable: db down");
    EXPECT_THROW((void)bad.value(), BadResultAccess);
}

TEST(Result, RefusesOkStatusWithoutValue) {
    EXPECT_THROW(Result<int>{Status::Ok()}, std::logic_error);
}

TEST(Status, CodeNamesAreStable) {
    EXPECT_EQ(CodeName(Code::kAborted), "aborted");
    EXPECT_EQ(CodeName(Code::kFailedPrecondition), "failed_precondition");
    EXPECT_EQ(Status().ToString(), "ok");
}

}  // namespace
}  // namespace sched
