#include "sched/web/auth.hpp"

#include <set>

#include <gtest/gtest.h>

namespace sched::web {
namespace {

using store::Role;

Principal Token(Role role) {
    return {.name = "t", .role = role, .token_id = 1};
}

TEST(Authorize, PeopleRolesAreOrderedAndExecutorsAreApart) {
    struct Case {
        Principal who;
        Permission need;
        bool allowed;
    };
    const Principal cluster{.name = "cluster-token", .role = Role::kAdmin, .cluster_token = true};
    const Case cases[] = {
        {Token(Role::kViewer), Permission::kViewer, true},
        {Token(Role::kViewer), Permission::kOperator, false},
        {Token(Role::kViewer), Permission::kAdmin, false},
        {Token(Role::kViewer), Permission::kExecutor, false},
        {Token(Role::kOperator), Permission::kViewer, true},
        {Token(Role::kOperator), Permission::kOperator, true},
        {Token(Role::kOperator), Permission::kAdmin, false},
        {Token(Role::kOperator), Permission::kExecutor, false},
        {Token(Role::kAdmin), Permission::kViewer, true},
        {Token(Role::kAdmin), Permission::kOperator, true},
        {Token(Role::kAdmin), Permission::kAdmin, true},
        {Token(Role::kAdmin), Permission::kExecutor, false},
        {Token(Role::kExecutor), Permission::kViewer, false},
        {Token(Role::kExecutor), Permission::kOperator, false},
        {Token(Role::kExecutor), Permission::kAdmin, false},
        {Token(Role::kExecutor), Permission::kExecutor, true},
        {cluster, Permission::kAdmin, true},
        {cluster, Permission::kExecutor, true},
        {Token(Role::kExecutor), Permission::kPublic, true},
        // The lock API: executors and operators take locks, every role may look at them.
        {Token(Role::kExecutor), Permission::kLockHolder, true},
        {Token(Role::kExecutor), Permission::kLockViewer, true},
        {Token(Role::kOperator), Permission::kLockHolder, true},
        {Token(Role::kAdmin), Permission::kLockHolder, true},
        {cluster, Permission::kLockHolder, true},
        {Token(Role::kViewer), Permission::kLockHolder, false},
        {Token(Role::kViewer), Permission::kLockViewer, true},
        {Token(Role::kOperator), Permission::kLockViewer, true},
    };
    for (const auto& c : cases) {
        const Status s = Authorize(c.who, c.need);
        EXPECT_EQ(s.ok(), c.allowed) << store::RoleName(c.who.role) << " -> " << PermissionName(c.need);
        if (!s.ok()) {
            EXPECT_EQ(s.code(), Code::kPermissionDenied);
            EXPECT_NE(s.message().find(std::string(store::RoleName(c.who.role))), std::string::npos) << s.message();
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
