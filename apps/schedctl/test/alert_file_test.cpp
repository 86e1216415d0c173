#include "alert_file.hpp"

#include <gtest/gtest.h>

namespace sched::ctl {
namespace {

std::string ErrorOf(const std::string& text) {
    auto r = ParseAlertRuleDocument(text, "pager.yaml");
    EXPECT_FALSE(r.ok()) << text;
    return r.ok() ? std::string() : r.status().message();
}

TEST(ParseAlertRuleDocument, ReadsYamlAndJsonAsTheApiTypesThem) {
    auto yaml = ParseAlertRuleDocument(R"(
name: pager
job_id: 7
events: [failed, timeout]
consecutive_failures: 3
url: http://hooks.internal:8080/sched
secret: "0123456789abcdef"
enabled: false
)",
                                       "pager.yaml");
    ASSERT_TRUE(yaml.ok()) << yaml.status().message();
    EXPECT_EQ((*yaml)["name"], "pager");
    EXPECT_EQ((*yaml)["job_id"], 7);
    EXPECT_EQ((*yaml)["events"], nlohmann::json({"failed", "timeout"}));
    EXPECT_EQ((*yaml)["consecutive_failures"], 3);
    EXPECT_EQ((*yaml)["secret"], "0123456789abcdef");
    EXPECT_EQ((*yaml)["enabled"], false);

    auto json = ParseAlertRuleDocument(R"({"name": "x", "events": ["lost"], "secret": "1234567890123456"})", "a.json");
    ASSERT_TRUE(json.ok()) << json.status().message();
    EXPECT_EQ((*json)["events"], nlohmann::json({"lost"}));
    EXPECT_EQ((*json)["secret"], "1234567890123456");  // quoted digits stay a string
}

TEST(ParseAlertRuleDocument, IgnoresWhatTheApiAnswersButNamesUnknownAndMisshapenFields) {
    // A rule saved from `alerts get -o json` can be edited and sent back.
    auto saved = ParseAlertRuleDocument(R"({"id": 4, "name": "x", "has_secret": true, "created_at_ms": 1})", "r.json");
    ASSERT_TRUE(saved.ok()) << saved.status().message();
    EXPECT_EQ(*saved, nlohmann::json({{"name", "x"}}));

    EXPECT_EQ(ErrorOf("name: x\ncolour: red\n"), "pager.yaml: colour: unknown field");
    EXPECT_EQ(ErrorOf("events: failed\n"), "pager.yaml: events: expected a list of event names");
    EXPECT_EQ(ErrorOf("events: [[failed]]\n"), "pager.yaml: events: expected a list of event names");
    EXPECT_EQ(ErrorOf("name: [a, b]\n"), "pager.yaml: name: expected a single value");
    EXPECT_EQ(ErrorOf("- name: x\n"), "pager.yaml: expected a mapping of alert rule fields");
}

TEST(MergeAlertRuleUpdate, TheFileOverTheRuleReadWithoutReadOnlyFieldsOrNulls) {
    const nlohmann::json current = {{"id", 4},
                                    {"name", "pager"},
                                    {"job_id", 7},
                                    {"events", {"failed", "no_success"}},
                                    {"consecutive_failures", 1},
                                    {"no_success_within_ms", 60000},
                                    {"url", "http://h/x"},
                                    {"has_secret", true},
                                    {"enabled", true},
                                    {"created_at_ms", 1},
                                    {"version", 3}};
    // Events without no_success drop the threshold; job_id null (every job) is left out.
    const auto body = MergeAlertRuleUpdate(current, {{"events", {"timeout"}}, {"job_id", nullptr}});
    EXPECT_EQ(body, nlohmann::json({{"name", "pager"},
                                    {"events", {"timeout"}},
                                    {"consecutive_failures", 1},
                                    {"url", "http://h/x"},
                                    {"enabled", true},
                                    {"version", 3}}));
    // The file's version and secret win; the threshold stays with no_success.
    const auto kept = MergeAlertRuleUpdate(current, {{"version", 2}, {"secret", "fedcba9876543210"}});
    EXPECT_EQ(kept["version"], 2);
    EXPECT_EQ(kept["secret"], "fedcba9876543210");
    EXPECT_EQ(kept["no_success_within_ms"], 60000);
    EXPECT_EQ(kept["job_id"], 7);
}

}  // namespace
}  // namespace sched::ctl
