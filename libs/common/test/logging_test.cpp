#include "sched/common/logging.hpp"

#include <gtest/gtest.h>

namespace sched {
namespace {

TEST(JsonEscape, EscapesQuotesBackslashesAndControls) {
    EXPECT_EQ(JsonEscape(R"(say "hi" \ bye)"), R"(say \"hi\" \\ bye)");
    EXPECT_EQ(JsonEscape("a\nb\tc"), "a\\nb\\tc");
    EXPECT_EQ(JsonEscape(std::string("\x01", 1)), "\\u0001");
    EXPECT_EQ(JsonEscape("plain"), "plain");
}

TEST(LogConfig, ReadsLevelAndFormatAndRejectsOthers) {
    auto ok = ConfigNode::LoadString("level: debug\nformat: json\n");
    auto c = LogConfig::FromYaml(ok);
    EXPECT_EQ(c.level, "debug");
    EXPECT_EQ(c.format, "json");

    auto bad = ConfigNode::LoadString("level: loud\n");
    try {
        (void)LogConfig::FromYaml(bad);
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_EQ(e.path(), "level");
        EXPECT_NE(std::string(e.what()).find("\"loud\""), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace sched
