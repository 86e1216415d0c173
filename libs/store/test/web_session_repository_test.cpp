#include "sched/store/web_session.hpp"

#include "store_test_base.hpp"

namespace sched::store {
namespace {

class WebSessionRepositoryTest : public StoreTest {};

constexpr std::int64_t kNow = 1'700'000'000'000;
constexpr std::int64_t kHour = 3'600'000;

std::string Hash(char c) {
    return std::string(64, c);
}

WebSession Session(char hash, const std::string& subject, std::int64_t created_ms) {
    return WebSession{.id_hash = Hash(hash),
                      .subject = subject,
                      .issuer = "https://idp.example.com/realms/x",
                      .name = subject + "@example.com",
                      .role = Role::kOperator,
                      .created_ms = created_ms,
                      .last_seen_ms = created_ms,
                      .expires_ms = created_ms + 12 * kHour};
}

TEST_P(WebSessionRepositoryTest, StoresFindsTouchesAndDeletes) {
    WebSessionRepository sessions(db());
    auto created = sessions.Create(Session('a', "u-alice", kNow), {.idle_ms = kHour}, kNow);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    EXPECT_EQ(*created, 0);
    auto found = sessions.Find(Hash('a'));
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_EQ(found->subject, "u-alice");
    EXPECT_EQ(found->issuer, "https://idp.example.com/realms/x");
    EXPECT_EQ(found->name, "u-alice@example.com");
    EXPECT_EQ(found->role, Role::kOperator);
    EXPECT_EQ(found->created_ms, kNow);
    EXPECT_EQ(found->expires_ms, kNow + 12 * kHour);
    EXPECT_EQ(sessions.Find(Hash('b')).status().code(), Code::kNotFound);
    EXPECT_EQ(sessions.Create(Session('a', "u-bob", kNow), {}, kNow).status().code(), Code::kAlreadyExists);

    // Written at most once per interval, whoever asks.
    EXPECT_FALSE(*sessions.Touch(Hash('a'), kNow + 30'000, 60'000));
    EXPECT_EQ(sessions.Find(Hash('a'))->last_seen_ms, kNow);
    EXPECT_TRUE(*sessions.Touch(Hash('a'), kNow + 61'000, 60'000));
    EXPECT_EQ(sessions.Find(Hash('a'))->last_seen_ms, kNow + 61'000);
    EXPECT_FALSE(*sessions.Touch(Hash('a'), kNow + 62'000, 60'000));
    EXPECT_FALSE(*sessions.Touch(Hash('b'), kNow + 200'000, 60'000)) << "no such session";

    EXPECT_TRUE(*sessions.Delete(Hash('a')));
    EXPECT_FALSE(*sessions.Delete(Hash('a')));
    EXPECT_EQ(sessions.Find(Hash('a')).status().code(), Code::kNotFound);
}

TEST_P(WebSessionRepositoryTest, APersonsOldestSessionMakesRoomAtTheCap) {
    WebSessionRepository sessions(db());
    const WebSessionLimits limits{.per_subject = 2, .total = 100, .idle_ms = kHour};
    ASSERT_TRUE(sessions.Create(Session('a', "u-alice", kNow), limits, kNow).ok());
    ASSERT_TRUE(sessions.Create(Session('b', "u-alice", kNow + 1), limits, kNow + 1).ok());
    ASSERT_TRUE(sessions.Create(Session('x', "u-bob", kNow + 2), limits, kNow + 2).ok());
    auto third = sessions.Create(Session('c', "u-alice", kNow + 3), limits, kNow + 3);
    ASSERT_TRUE(third.ok()) << third.status().ToString();
    EXPECT_EQ(*third, 1);
    EXPECT_EQ(*sessions.CountForSubject("u-alice"), 2);
    EXPECT_EQ(sessions.Find(Hash('a')).status().code(), Code::kNotFound) << "the oldest ended";
    EXPECT_TRUE(sessions.Find(Hash('b')).ok());
    EXPECT_TRUE(sessions.Find(Hash('c')).ok());
    EXPECT_TRUE(sessions.Find(Hash('x')).ok()) << "another person's session is not touched";
}

TEST_P(WebSessionRepositoryTest, TheLeastRecentlyUsedMakesRoomAtTheTotal) {
    WebSessionRepository sessions(db());
    const WebSessionLimits limits{.per_subject = 10, .total = 2, .idle_ms = kHour};
    ASSERT_TRUE(sessions.Create(Session('a', "u-a", kNow), limits, kNow).ok());
    ASSERT_TRUE(sessions.Create(Session('b', "u-b", kNow + 1), limits, kNow + 1).ok());
    ASSERT_TRUE(*sessions.Touch(Hash('a'), kNow + 120'000, 60'000));  // a is now the most recently used
    auto c = sessions.Create(Session('c', "u-c", kNow + 120'001), limits, kNow + 120'001);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(*c, 1);
    EXPECT_TRUE(sessions.Find(Hash('a')).ok());
    EXPECT_EQ(sessions.Find(Hash('b')).status().code(), Code::kNotFound);
    EXPECT_TRUE(sessions.Find(Hash('c')).ok());
}

TEST_P(WebSessionRepositoryTest, EndedSessionsArePurgedIdleOrPastTheirEnd) {
    WebSessionRepository sessions(db());
    const WebSessionLimits limits{.idle_ms = kHour};
    auto short_lived = Session('a', "u-a", kNow);
    short_lived.expires_ms = kNow + 2 * kHour;
    ASSERT_TRUE(sessions.Create(short_lived, limits, kNow).ok());
    ASSERT_TRUE(sessions.Create(Session('b', "u-b", kNow), limits, kNow).ok());
    ASSERT_TRUE(sessions.Create(Session('c', "u-c", kNow), limits, kNow).ok());
    // b is used every half hour and stays; a too, but passes its absolute end; c idles.
    for (std::int64_t t = kNow + kHour / 2; t <= kNow + 3 * kHour; t += kHour / 2) {
        ASSERT_TRUE(sessions.Touch(Hash('a'), t, 60'000).ok());
        ASSERT_TRUE(sessions.Touch(Hash('b'), t, 60'000).ok());
    }
    auto purged = sessions.PurgeEnded(kNow + 3 * kHour, kHour, 100);
    ASSERT_TRUE(purged.ok()) << purged.status().ToString();
    EXPECT_EQ(*purged, 2);
    EXPECT_EQ(sessions.Find(Hash('a')).status().code(), Code::kNotFound) << "past its absolute end";
    EXPECT_TRUE(sessions.Find(Hash('b')).ok());
    EXPECT_EQ(sessions.Find(Hash('c')).status().code(), Code::kNotFound) << "idle";

    // A sign-in purges too, in batches.
    ASSERT_TRUE(sessions.Create(Session('d', "u-d", kNow), limits, kNow).ok());
    ASSERT_TRUE(sessions.Create(Session('e', "u-e", kNow), limits, kNow).ok());
    ASSERT_TRUE(
        sessions.Create(Session('f', "u-f", kNow + 5 * kHour), {.idle_ms = kHour, .purge_batch = 1}, kNow + 5 * kHour)
            .ok());
    EXPECT_EQ(*sessions.CountForSubject("u-b") + *sessions.CountForSubject("u-d") + *sessions.CountForSubject("u-e"), 2)
        << "one of the three ended ones deleted";
    EXPECT_EQ(*sessions.PurgeEnded(kNow + 5 * kHour, 0, 100), 0) << "idle 0: only the absolute end counts";
    EXPECT_EQ(*sessions.PurgeEnded(kNow + 5 * kHour, kHour, 100), 2);
    EXPECT_TRUE(sessions.Find(Hash('f')).ok());
}

SCHED_DB_TEST_SUITE(WebSessionRepositoryTest);

}  // namespace
}  // namespace sched::store
