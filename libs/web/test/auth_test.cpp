#include "sched/web/auth.hpp"

#include <set>

#include <gtest/gtest.h>

namespace sched::web {
namespace {

using store::Role;

Principal Token(Role role) {
    return {.name = "t", .role = role, .token_id = 1};
}

constexpr Permission kEveryPermission[] = {
    Permission::kPublic,   Permission::kViewer,     Permission::kOperator,   Permission::kAdmin,
    Permission::kExecutor, Permission::kLockHolder, Permission::kLockViewer, Permission::kAnyToken,
};

// Every principal against every permission. The lock API: executors and operators take locks,
// every role may look at them.
TEST(Authorize, PeopleRolesAreOrderedAndExecutorsAreApart) {
    using enum Permission;
    struct Case {
        Principal who;
        std::set<Permission> granted;
    };
    const Principal cluster{.name = "cluster-token", .role = Role::kAdmin, .cluster_token = true};
    const Case cases[] = {
        {Token(Role::kViewer), {kPublic, kViewer, kLockViewer, kAnyToken}},
        {Token(Role::kOperator), {kPublic, kViewer, kOperator, kLockHolder, kLockViewer, kAnyToken}},
        {Token(Role::kAdmin), {kPublic, kViewer, kOperator, kAdmin, kLockHolder, kLockViewer, kAnyToken}},
        {Token(Role::kExecutor), {kPublic, kExecutor, kLockHolder, kLockViewer, kAnyToken}},
        {cluster, {kPublic, kViewer, kOperator, kAdmin, kExecutor, kLockHolder, kLockViewer, kAnyToken}},
    };
    for (const auto& c : cases) {
        for (const Permission need : kEveryPermission) {
            const Status s = Authorize(c.who, need);
            EXPECT_EQ(s.ok(), c.granted.contains(need))
                << c.who.name << " (" << store::RoleName(c.who.role) << ") -> " << PermissionName(need);
            if (!s.ok()) {
                EXPECT_EQ(s.code(), Code::kPermissionDenied);
                EXPECT_NE(s.message().find(std::string(store::RoleName(c.who.role))), std::string::npos) << s.message();
            }
        }
    }
}

TEST(NewSecret, IsHexOfTheAskedLengthAndNeverRepeats) {
    std::set<std::string> seen;
    for (int i = 0; i < 1000; ++i) {
        const auto s = NewSecret(16);
        ASSERT_EQ(s.size(), 32u);
        ASSERT_EQ(s.find_first_not_of("0123456789abcdef"), std::string::npos) << s;
        seen.insert(s);
    }
    EXPECT_EQ(seen.size(), 1000u);
    EXPECT_EQ(NewSecret().size(), 64u);
}

TEST(TokenAuthenticator, RefusesAnEmptyClusterToken) {
    net::thread_pool pool(1);
    EXPECT_THROW(TokenAuthenticator(
                     "", [] { return std::shared_ptr<db::Database>(); }, pool, Micros{0}),
                 std::invalid_argument);
    pool.join();
}

}  // namespace
}  // namespace sched::web
