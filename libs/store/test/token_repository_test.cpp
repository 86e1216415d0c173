#include "sched/store/token.hpp"

#include "store_test_base.hpp"

namespace sched::store {
namespace {

class TokenRepositoryTest : public StoreTest {};

const std::string kHashA(64, 'a');
const std::string kHashB(64, 'b');

TEST_P(TokenRepositoryTest, CreateFindRevoke) {
    TokenRepository tokens(db());
    auto admin = tokens.Create("bootstrap", Role::kAdmin, kHashA);
    ASSERT_TRUE(admin.ok()) << admin.status().ToString();
    EXPECT_EQ(admin->role, Role::kAdmin);
    auto found = tokens.FindActive(kHashA);
    ASSERT_TRUE(found.ok());
    EXPECT_EQ(found->id, admin->id);
    EXPECT_EQ(tokens.FindActive(kHashB).status().code(), Code::kNotFound);
    EXPECT_EQ(tokens.Create("again", Role::kViewer, kHashA).status().code(), Code::kAlreadyExists);

    ASSERT_TRUE(tokens.Touch(admin->id).ok());
    EXPECT_TRUE(tokens.FindActive(kHashA)->last_used_at.has_value());
    ASSERT_TRUE(tokens.Revoke(admin->id).ok());
    EXPECT_EQ(tokens.FindActive(kHashA).status().code(), Code::kNotFound);
    EXPECT_EQ(tokens.Revoke(admin->id).code(), Code::kNotFound);
    auto all = tokens.List();
    ASSERT_EQ(all->size(), 1u);
    EXPECT_TRUE(all->front().revoked_at.has_value());
}

TEST(Role, NamesRoundTrip) {
    for (auto r : {Role::kAdmin, Role::kOperator, Role::kViewer, Role::kExecutor}) EXPECT_EQ(ParseRole(RoleName(r)), r);
    EXPECT_EQ(ParseRole("root"), std::nullopt);
}

SCHED_DB_TEST_SUITE(TokenRepositoryTest);

}  // namespace
}  // namespace sched::store
