#include "sched/common/crypto.hpp"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace sched::crypto {
namespace {

TEST(Sha256, MatchesTheFipsAndNistVectors) {
    EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(
        Sha256Hex(
            "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrs"
            "tnopqrstu"),
        "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    EXPECT_EQ(Sha256Hex(std::string(1'000'000, 'a')),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, HandlesEveryPaddingBoundary) {
    // 55, 56, 63 and 64 bytes sit on both sides of the one-or-two final blocks boundary.
    EXPECT_EQ(Sha256Hex(std::string(55, 'a')), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    EXPECT_EQ(Sha256Hex(std::string(56, 'a')), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
    EXPECT_EQ(Sha256Hex(std::string(63, 'a')), "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34");
    EXPECT_EQ(Sha256Hex(std::string(64, 'a')), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
    EXPECT_EQ(Sha256(std::string("\0\xff", 2)).size(), 32u);
}

// RFC 4231 section 4: HMAC-SHA256 test cases 1-7 (case 5's output is truncated to 128 bits).
TEST(HmacSha256, MatchesTheRfc4231Vectors) {
    EXPECT_EQ(HmacSha256Hex(std::string(20, '\x0b'), "Hi There"),
              "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    EXPECT_EQ(HmacSha256Hex("Jefe", "what do ya want for nothing?"),
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    EXPECT_EQ(HmacSha256Hex(std::string(20, '\xaa'), std::string(50, '\xdd')),
              "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    std::string key4;
    for (char c = 1; c <= 25; ++c) key4 += c;
    EXPECT_EQ(HmacSha256Hex(key4, std::string(50, '\xcd')),
              "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
    EXPECT_EQ(HmacSha256Hex(std::string(20, '\x0c'), "Test With Truncation").substr(0, 32),
              "a3b6167473100ee06e0c796c2955552b");
    EXPECT_EQ(HmacSha256Hex(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
              "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    EXPECT_EQ(HmacSha256Hex(std::string(131, '\xaa'),
                            "This is a test using a larger than block-size key and a larger than block-size data. The "
                            "key needs to be hashed before being used by the HMAC algorithm."),
              "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST(HmacSha256, AcceptsAnEmptyKeyAndMessage) {
    // Python: hmac.new(b"", b"", hashlib.sha256).hexdigest()
    EXPECT_EQ(HmacSha256Hex("", ""), "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

// Every MAC starts from a copy of one shared context (crypto.cpp): threads signing at once
// must each get exactly the MAC of their own key and message.
TEST(HmacSha256, ThreadsMacingAtOnceGetTheirOwnResults) {
    constexpr int kThreads = 4;
    constexpr int kRounds = 2000;
    std::vector<std::string> expected;
    expected.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t) {
        expected.push_back(HmacSha256Hex("key-" + std::to_string(t), "message-" + std::to_string(t)));
    }
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kRounds; ++i) {
                if (HmacSha256Hex("key-" + std::to_string(t), "message-" + std::to_string(t)) != expected[t]) ++wrong;
            }
        });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_NE(expected[0], expected[1]);
}

TEST(ConstantTimeEqual, ComparesContentAndLength) {
    EXPECT_TRUE(ConstantTimeEqual("", ""));
    EXPECT_TRUE(ConstantTimeEqual("abc", "abc"));
    EXPECT_FALSE(ConstantTimeEqual("abc", "abd"));
    EXPECT_FALSE(ConstantTimeEqual("abc", "ab"));
    EXPECT_FALSE(ConstantTimeEqual("", "a"));
}

TEST(RandomHex, GivesFreshHexOfTheRequestedSize) {
    const std::string a = RandomHex(32);
    const std::string b = RandomHex(32);
    EXPECT_EQ(a.size(), 64u);
    EXPECT_NE(a, b);
    EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
    EXPECT_EQ(RandomHex(0), "");
}

}  // namespace
}  // namespace sched::crypto
