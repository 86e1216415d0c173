// Utf8CharLength against RFC 3629's table of well-formed sequences, and the bytes it must refuse.
#include "sched/common/utf8.hpp"

#include <string>

#include <gtest/gtest.h>

namespace sched {
namespace {

std::size_t Len(std::initializer_list<unsigned char> bytes) {
    const std::string s(bytes.begin(), bytes.end());
    return Utf8CharLength(s);
}

TEST(Utf8CharLength, WellFormedSequencesAtEachLengthsEdges) {
    EXPECT_EQ(Len({'a'}), 1u);
    EXPECT_EQ(Len({0x00}), 1u);
    EXPECT_EQ(Len({0x7f}), 1u);
    EXPECT_EQ(Len({0xc2, 0x80}), 2u);              // U+0080
    EXPECT_EQ(Len({0xdf, 0xbf}), 2u);              // U+07FF
    EXPECT_EQ(Len({0xe0, 0xa0, 0x80}), 3u);        // U+0800
    EXPECT_EQ(Len({0xed, 0x9f, 0xbf}), 3u);        // U+D7FF, below the surrogates
    EXPECT_EQ(Len({0xef, 0xbf, 0xbf}), 3u);        // U+FFFF
    EXPECT_EQ(Len({0xf0, 0x90, 0x80, 0x80}), 4u);  // U+10000
    EXPECT_EQ(Len({0xf4, 0x8f, 0xbf, 0xbf}), 4u);  // U+10FFFF
    EXPECT_EQ(Len({0xe2, 0x82, 0xac, 'x'}), 3u) << "only the first character counts";
}

TEST(Utf8CharLength, StrayOverlongSurrogateTooLargeAndTruncatedSequencesAreZero) {
    EXPECT_EQ(Len({0x80}), 0u);                    // a continuation byte alone
    EXPECT_EQ(Len({0xc0, 0x80}), 0u);              // overlong U+0000
    EXPECT_EQ(Len({0xc1, 0xbf}), 0u);              // overlong
    EXPECT_EQ(Len({0xe0, 0x9f, 0xbf}), 0u);        // overlong U+07FF
    EXPECT_EQ(Len({0xed, 0xa0, 0x80}), 0u);        // U+D800, a surrogate
    EXPECT_EQ(Len({0xf0, 0x8f, 0xbf, 0xbf}), 0u);  // overlong U+FFFF
    EXPECT_EQ(Len({0xf4, 0x90, 0x80, 0x80}), 0u);  // U+110000
    EXPECT_EQ(Len({0xf5, 0x80, 0x80, 0x80}), 0u);
    EXPECT_EQ(Len({0xff}), 0u);
    EXPECT_EQ(Len({0xe2, 0x82}), 0u);  // truncated
    EXPECT_EQ(Len({0xc3, 'a'}), 0u);   // not a continuation byte
    EXPECT_EQ(Len({0xe2, 0x82, 0xc0}), 0u);
}

}  // namespace
}  // namespace sched
