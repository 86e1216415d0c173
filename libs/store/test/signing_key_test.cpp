#include "sched/store/signing_key.hpp"

#include <algorithm>
#include <thread>

#include "store_test_base.hpp"

namespace sched::store {
namespace {

class SigningKeyTest : public StoreTest {};

TEST_P(SigningKeyTest, FirstRegistrationCreatesOneActiveKeyPerApp) {
    SigningKeyRepository keys(db());
    EXPECT_TRUE(keys.List("billing")->keys.empty());
    auto first = keys.EnsureForApp("billing");
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ASSERT_EQ(first->keys.size(), 1u);
    const SigningKey& k = first->keys.front();
    EXPECT_EQ(k.generation, 1);
    EXPECT_EQ(k.secret.size(), 64u);
    EXPECT_TRUE(k.key_id.starts_with("k-"));
    ASSERT_NE(first->SigningAt(first->db_now_ms), nullptr);
    EXPECT_EQ(first->SigningAt(first->db_now_ms)->key_id, k.key_id);
    // Idempotent, and per app.
    EXPECT_EQ(keys.EnsureForApp("billing")->keys.front().secret, k.secret);
    auto other = keys.EnsureForApp("shipping");
    EXPECT_NE(other->keys.front().secret, k.secret);
    EXPECT_NE(other->keys.front().key_id, k.key_id);
}

TEST_P(SigningKeyTest, RotationDistributesFirstSignsAfterTheGraceAndKeepsAtMostTwo) {
    SigningKeyRepository keys(db());
    EXPECT_EQ(keys.Rotate("billing", 1000).status().code(), Code::kNotFound);
    const std::string first = keys.EnsureForApp("billing")->keys.front().key_id;

    auto rotated = keys.Rotate("billing", 60'000);
    ASSERT_TRUE(rotated.ok()) << rotated.status().ToString();
    ASSERT_EQ(rotated->keys.size(), 2u);
    const std::string second = rotated->keys.front().key_id;
    EXPECT_NE(second, first);
    // Known to executors already, but nodes keep signing with the first until the grace ends.
    EXPECT_EQ(rotated->SigningAt(rotated->db_now_ms)->key_id, first);
    EXPECT_EQ(rotated->SigningAt(rotated->db_now_ms + 60'001)->key_id, second);
    const Status busy = keys.Rotate("billing", 0).status();
    EXPECT_EQ(busy.code(), Code::kFailedPrecondition);
    EXPECT_NE(busy.message().find(second), std::string::npos);

    // With no grace: the new key signs at once; the previous stays accepted, the one before goes.
    EXPECT_EQ(keys.Rotate("shipping", 0).status().code(), Code::kNotFound);
    ASSERT_TRUE(keys.EnsureForApp("tax").ok());
    auto a = keys.Rotate("tax", 0);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    // The key it would drop may still sit in a node's cache for a while.
    EXPECT_EQ(keys.Rotate("tax", 0).status().code(), Code::kFailedPrecondition);
    auto b = keys.Rotate("tax", 0, /*settle_ms=*/0);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    ASSERT_EQ(b->keys.size(), 2u);
    EXPECT_EQ(b->keys[0].generation, 3);
    EXPECT_EQ(b->keys[1].generation, 2);
    EXPECT_EQ(b->SigningAt(b->db_now_ms)->generation, 3);
}

// Every heartbeat answer and every node's key refresh reads the keys and the DB clock: one
// statement between them once the app has a key.
TEST_P(SigningKeyTest, KeysAndTheClockAreOneStatement) {
    const auto logged_read = [&](const std::string& app, std::string& log) {
        auto r = db().Run(
            [&](soci::session& s) { return Logged(s, log, [&] { return ReadAppKeys(s, db().dialect(), app); }); });
        EXPECT_TRUE(r.ok()) << r.status().ToString();
        return r.ok() ? *r : AppSigningKeys{};
    };
    const auto statements = [](const std::string& log) {
        return std::count(log.begin(), log.end(), '\n');
    };
    const auto local_ms = [] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
    };
    std::string log;
    const AppSigningKeys none = logged_read("billing", log);
    EXPECT_TRUE(none.keys.empty());
    EXPECT_EQ(statements(log), 2) << "no key: the clock is read apart: " << log;
    EXPECT_LT(std::abs(none.db_now_ms - local_ms()), 1000);

    ASSERT_TRUE(SigningKeyRepository(db()).EnsureForApp("billing").ok());
    ASSERT_TRUE(SigningKeyRepository(db()).Rotate("billing", 60'000).ok());
    const AppSigningKeys two = logged_read("billing", log);
    EXPECT_EQ(statements(log), 1) << log;
    ASSERT_EQ(two.keys.size(), 2u);
    EXPECT_EQ(two.keys[0].generation, 2);
    EXPECT_EQ(two.keys[1].generation, 1);
    EXPECT_LT(std::abs(two.db_now_ms - local_ms()), 1000);
    EXPECT_EQ(two.SigningAt(two.db_now_ms)->generation, 1) << "the new key signs after its grace";
}

TEST_P(SigningKeyTest, CacheReadsThroughAtMostOncePerMaxAge) {
    SigningKeyCache cache(std::chrono::hours(1));
    EXPECT_FALSE(cache.Fresh("billing"));
    auto read = cache.Get(db(), "billing");  // creates the app's first key
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    ASSERT_TRUE(cache.Fresh("billing"));
    ASSERT_TRUE(SigningKeyRepository(db()).Rotate("billing", 0).ok());  // a single key: nothing to settle
    // Still the cached set within max_age.
    EXPECT_EQ(cache.Get(db(), "billing")->keys.size(), 1u);
    SigningKeyCache short_lived(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_EQ(short_lived.Get(db(), "billing")->keys.size(), 2u);
    // The DB clock estimate is the database's (same host here: within a second of local).
    const auto local =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    EXPECT_LT(std::abs(short_lived.DbNowMs() - local), 1000);
}

SCHED_DB_TEST_SUITE(SigningKeyTest);

}  // namespace
}  // namespace sched::store
