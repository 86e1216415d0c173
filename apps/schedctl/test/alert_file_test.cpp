#include "alert_file.hpp"

#include <gtest/gtest.h>

#include "parser_checks.hpp"

namespace sched::ctl {
namespace {

std::string ErrorOf(const std::string& text) {
    return ParseErrorOf(ParseAlertRuleDocument(text, "pager.yaml"), text);
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

std::vector<AlertRuleSpec> Section(const std::string& text) {
    auto r = ParseAlertSection(text, "ops.yaml");
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() && *r ? **r : std::vector<AlertRuleSpec>{};
}

std::string SectionError(const std::string& text) {
    auto r = ParseAlertSection(text, "ops.yaml");
    EXPECT_FALSE(r.ok()) << text;
    return r.ok() ? std::string() : r.status().message();
}

TEST(ParseAlertSection, AFileWithoutTheKeyLeavesTheRulesAloneAndAnEmptyOneManagesNone) {
    auto absent = ParseAlertSection("jobs: []\n", "ops.yaml");
    ASSERT_TRUE(absent.ok());
    EXPECT_FALSE(absent->has_value());
    auto empty = ParseAlertSection("alerts:\n", "ops.yaml");
    ASSERT_TRUE(empty.ok());
    ASSERT_TRUE(empty->has_value());
    EXPECT_TRUE((*empty)->empty());
}

TEST(ParseAlertSection, ReadsRulesWithTheirJobByName) {
    const auto rules = Section(
        "alerts:\n"
        "  - name: pager\n    job: nightly\n    events: [failed, timeout]\n    consecutive_failures: 3\n"
        "    url: http://hooks.internal/x\n    secret: \"0123456789abcdef\"\n"
        "  - {name: all, events: [lost], url: http://hooks.internal/y}\n");
    ASSERT_EQ(rules.size(), 2u);
    EXPECT_EQ(rules[0].name, "pager");
    EXPECT_EQ(rules[0].fields["job"], "nightly");
    EXPECT_EQ(rules[0].fields["consecutive_failures"], 3);
    EXPECT_EQ(rules[0].fields["events"], nlohmann::json({"failed", "timeout"}));
    EXPECT_FALSE(rules[1].fields.contains("job"));
}

TEST(ParseAlertSection, ProblemsNameTheFileTheLineTheRuleAndTheField) {
    EXPECT_EQ(SectionError("alerts:\n  - name: p\n    job_id: 7\n    events: [failed]\n    url: http://h/\n"),
              "ops.yaml: line 3: alerts[0] (name \"p\"): job_id: not allowed (rules are keyed by name; name a job "
              "with job:)");
    EXPECT_EQ(SectionError("alerts:\n  - name: p\n    colour: red\n"),
              "ops.yaml: line 3: alerts[0] (name \"p\"): colour: unknown field");
    EXPECT_EQ(SectionError("alerts:\n  - name: p\n    url: http://h/\n"),
              "ops.yaml: line 2: alerts[0] (name \"p\"): events: required");
    EXPECT_EQ(SectionError("alerts:\n  - {name: p, events: [failed], url: http://h/}\n"
                           "  - {name: p, events: [lost], url: http://h/}\n"),
              "ops.yaml: line 3: alerts[1] (name \"p\"): name: \"p\" appears twice");
    EXPECT_EQ(SectionError("alerts: {name: p}\n"), "ops.yaml: line 1: alerts: expected a list of alert rules");
    std::string many = "alerts:\n";
    for (std::size_t i = 0; i <= kMaxAlertRulesPerFile; ++i) many += "  - {name: r" + std::to_string(i) + "}\n";
    EXPECT_NE(SectionError(many).find("more than 1000 rules"), std::string::npos);
}

TEST(PlanAlertRuleChanges, ComparesByNameWithDefaultsAndNeverTheSecret) {
    auto desired = Section(
        "alerts:\n"
        "  - {name: same, job: nightly, events: [failed], url: http://h/a, secret: \"0123456789abcdef\"}\n"
        "  - {name: drift, events: [failed, lost], url: http://h/b, secret: \"0123456789abcdef\"}\n"
        "  - {name: new, events: [failed], url: http://h/c, secret: \"0123456789abcdef\"}\n");
    for (auto& d : desired) d.fields["managed_by"] = "ops.yaml";
    const nlohmann::json jobs = {{{"id", 7}, {"name", "nightly"}}};
    const nlohmann::json server = RulesByJobName(
        nlohmann::json::array(
            {{{"id", 1},
              {"name", "same"},
              {"job_id", 7},
              {"events", {"failed"}},
              {"consecutive_failures", 1},
              {"no_success_within_ms", nullptr},
              {"url", "http://h/a"},
              {"enabled", true},
              {"has_secret", true},
              {"version", 3},
              {"managed_by", "ops.yaml"}},
             {{"id", 2},
              {"name", "drift"},
              {"job_id", 9},
              {"events", {"failed"}},
              {"consecutive_failures", 1},
              {"no_success_within_ms", nullptr},
              {"url", "http://h/b"},
              {"enabled", true},
              {"has_secret", true},
              {"version", 5},
              {"managed_by", "ops.yaml"}},
             {{"id", 4}, {"name", "by-hand"}, {"job_id", nullptr}, {"events", {"lost"}}, {"version", 1}}}),
        jobs);
    EXPECT_EQ(server[1]["job"], "#9");  // a job no listed job has
    EXPECT_TRUE(server[2]["job"].is_null());

    const Plan plan = PlanAlertRuleChanges(desired, server, false);
    ASSERT_EQ(plan.changes.size(), 3u);
    EXPECT_EQ(plan.changes[0].kind, ChangeKind::kUnchanged);
    const auto& drift = plan.changes[1];
    ASSERT_EQ(drift.kind, ChangeKind::kUpdate);
    ASSERT_EQ(drift.changes.size(), 2u);
    EXPECT_EQ(drift.changes[0].field, "job");  // every job in the file, job 9 on the server
    EXPECT_TRUE(drift.changes[0].new_value.is_null());
    EXPECT_EQ(drift.changes[1].field, "events");
    EXPECT_EQ(drift.body["version"], 5);
    EXPECT_EQ(drift.body["name"], "drift");
    EXPECT_EQ(drift.body["secret"], "0123456789abcdef");  // sent with the update, never compared
    EXPECT_EQ(drift.body["enabled"], true);
    EXPECT_EQ(plan.changes[2].kind, ChangeKind::kCreate);

    const Plan pruned = PlanAlertRuleChanges(desired, server, true);
    ASSERT_EQ(pruned.changes.size(), 4u);
    EXPECT_EQ(pruned.changes[3].kind, ChangeKind::kDelete);
    EXPECT_EQ(pruned.changes[3].name, "by-hand");
    EXPECT_EQ(pruned.changes[3].id, 4);

    // The body the API gets: the job's id, no nulls (every job, no no_success threshold).
    auto body = ResolveRuleJob(drift.body, jobs);
    ASSERT_TRUE(body.ok());
    EXPECT_FALSE(body->contains("job"));
    EXPECT_FALSE(body->contains("job_id"));
    EXPECT_FALSE(body->contains("no_success_within_ms"));
    auto named = ResolveRuleJob(plan.changes[0].body, jobs);
    ASSERT_TRUE(named.ok());
    EXPECT_EQ((*named)["job_id"], 7);
    auto missing = ResolveRuleJob(nlohmann::json{{"job", "nowhere"}}, jobs);
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.status().message(), "job: no job named \"nowhere\"");
}

}  // namespace
}  // namespace sched::ctl
