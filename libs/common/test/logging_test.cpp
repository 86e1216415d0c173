#include "sched/common/logging.hpp"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "sched/common/announce.hpp"
#include "sched/common/log_fields.hpp"

namespace sched {
namespace {

TEST(JsonEscape, EscapesQuotesBackslashesAndControls) {
    EXPECT_EQ(JsonEscape(R"(say "hi" \ bye)"), R"(say \"hi\" \\ bye)");
    EXPECT_EQ(JsonEscape("a\nb\tc"), "a\\nb\\tc");
    EXPECT_EQ(JsonEscape(std::string("\x01", 1)), "\\u0001");
    EXPECT_EQ(JsonEscape("plain"), "plain");
}

TEST(JsonEscape, KeepsUtf8AndReplacesInvalidBytes) {
    EXPECT_EQ(JsonEscape("gr\xc3\xbc\xc3\x9f \xe2\x82\xac"), "gr\xc3\xbc\xc3\x9f \xe2\x82\xac");
    EXPECT_EQ(JsonEscape("a\xff"
                         "b\xc3"),
              "a\\ufffdb\\ufffd");
    EXPECT_EQ(JsonEscape(std::string("x\0y\x7f", 4)), "x\\u0000y\\u007f");
}

TEST(LogEscape, MakesControlCharactersVisibleAndKeepsText) {
    EXPECT_EQ(LogEscape("job\n2024-01-01 00:00:00.000 info  [1] forged"),
              "job\\n2024-01-01 00:00:00.000 info  [1] forged");
    EXPECT_EQ(LogEscape(std::string("a\0b\r\tc\x1b[31m", 11)), "a\\x00b\\r\\tc\\x1b[31m");
    EXPECT_EQ(LogEscape("say \"hi\" \\ caf\xc3\xa9"), "say \"hi\" \\ caf\xc3\xa9");
    EXPECT_EQ(LogEscape("\xff\xfe"), "\\xff\\xfe");
}

TEST(SetupLogging, EveryMessageIsEscapedAndEachRecordIsOneLine) {
    for (const std::string format : {"text", "json"}) {
        LogConfig config;
        config.format = format;
        SetupLogging(config);
        testing::internal::CaptureStderr();
        spdlog::info("job \"{}\" created", std::string("evil\nFAKE line\0tail", 19));
        const std::string out = testing::internal::GetCapturedStderr();
        ASSERT_FALSE(out.empty()) << format;
        EXPECT_EQ(out.back(), '\n') << format;  // spdlog's own end of line stays
        EXPECT_EQ(out.find('\n'), out.size() - 1) << format << ": " << out;
        EXPECT_EQ(out.find('\0'), std::string::npos) << format;
        if (format == "json") {
            const auto record = nlohmann::json::parse(out);
            EXPECT_EQ(record["msg"], "job \"" + std::string("evil\nFAKE line\0tail", 19) + "\" created");
        } else {
            EXPECT_NE(out.find("job \"evil\\nFAKE line\\x00tail\" created"), std::string::npos) << out;
        }
    }
    SetupLogging(LogConfig{});
}

// The "listening on" line scripts wait for: bare with text logs, a JSON record with json logs.
TEST(Announce, WritesTheLineOnStdoutInTheLogsFormat) {
    LogConfig config;
    config.format = "text";
    SetupLogging(config);
    testing::internal::CaptureStdout();
    Announce("scheduler-web listening on http://127.0.0.1:8080");
    EXPECT_EQ(testing::internal::GetCapturedStdout(), "scheduler-web listening on http://127.0.0.1:8080\n");

    config.format = "json";
    config.level = "error";  // the announcement is not a log message: the level does not hide it
    SetupLogging(config);
    testing::internal::CaptureStdout();
    Announce("scheduler-web listening on http://127.0.0.1:8080\nforged");
    const std::string out = testing::internal::GetCapturedStdout();
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(out.find('\n'), out.size() - 1) << out;
    const auto record = nlohmann::json::parse(out);
    EXPECT_EQ(record["msg"], "scheduler-web listening on http://127.0.0.1:8080\nforged");
    EXPECT_EQ(record["level"], "info");
    SetupLogging(LogConfig{});
}

// Fields are members of the JSON record (integers as numbers) and key=value after a text
// message; process fields come first on every JSON line (text lines leave them out); a hostile
// value stays inside its field.
TEST(LogWithFields, PutsFieldsInTheRecordInBothFormats) {
    static_assert(IsLogFieldKey("trace_id") && IsLogFieldKey("job2"));
    static_assert(!IsLogFieldKey("msg") && !IsLogFieldKey("Job") && !IsLogFieldKey("a-b") && !IsLogFieldKey(""));
    SetProcessLogField("node", "n1");
    const std::string evil = "x\",\"msg\":\"forged\nline";
    LogConfig config;
    config.format = "json";
    SetupLogging(config);
    testing::internal::CaptureStderr();
    LogWithFields(spdlog::level::warn, {{"fire", std::int64_t{42}}, {"job", 7}, {"app", evil}}, "fire {} late", 42);
    std::string out = testing::internal::GetCapturedStderr();
    EXPECT_EQ(out.find('\n'), out.size() - 1) << out;
    const auto record = nlohmann::json::parse(out);
    EXPECT_EQ(record["node"], "n1");
    EXPECT_EQ(record["fire"], 42);
    EXPECT_EQ(record["job"], 7);
    EXPECT_EQ(record["app"], evil);
    EXPECT_EQ(record["msg"], "fire 42 late");
    EXPECT_EQ(record["level"], "warning");

    // A plain line carries the process fields only; a line below the level is not formatted.
    testing::internal::CaptureStderr();
    spdlog::info("plain");
    LogWithFields(spdlog::level::debug, {{"fire", 1}}, "hidden");
    out = testing::internal::GetCapturedStderr();
    const auto plain = nlohmann::json::parse(out);
    EXPECT_EQ(plain["node"], "n1");
    EXPECT_FALSE(plain.contains("fire")) << out;

    config.format = "text";
    SetupLogging(config);
    testing::internal::CaptureStderr();
    LogWithFields(spdlog::level::warn, {{"fire", 42}, {"app", "billing"}, {"why", "two words"}, {"x", evil}}, "late");
    out = testing::internal::GetCapturedStderr();
    EXPECT_EQ(out.find('\n'), out.size() - 1) << out;
    EXPECT_NE(out.find("late fire=42 app=billing why=\"two words\" x=\"x\\\",\\\"msg\\\":\\\"forged\\nline\"\n"),
              std::string::npos)
        << out;

    EXPECT_THROW(SetProcessLogField("msg", "x"), std::invalid_argument);
    ClearProcessLogFields();
    SetupLogging(LogConfig{});
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
