#include "job_file.hpp"

#include <gtest/gtest.h>

#include "parser_checks.hpp"

namespace sched::ctl {
namespace {

std::string ErrorOf(std::string_view yaml) {
    return ParseErrorOf(ParseJobFile(yaml, "jobs.yaml"), yaml);
}

TEST(ParseJobFile, ReadsJobsWithTypedFieldsKeyedByName) {
    auto r = ParseJobFile(R"(
jobs:
  - name: nightly
    app: reports
    handler: build
    schedule_type: cron
    schedule_expr: "0 0 2 * * ?"
    retry_max: 3
    jitter_ms: 60000
    dst_gap: shift-forward
    dst_overlap: last
    at_least_once: true
    description: 42
    params: {report: sales, days: 7, ok: true, tags: [a, "1"], none: null}
  - name: manual-one
    app: reports
    handler: build
    schedule_type: manual
)",
                          "jobs.yaml");
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->size(), 2u);
    const auto& j = (*r)[0];
    EXPECT_EQ(j.name, "nightly");
    EXPECT_EQ(j.fields["retry_max"], 3);
    EXPECT_EQ(j.fields["jitter_ms"], 60000);
    EXPECT_EQ(j.fields["dst_gap"], "shift-forward");
    EXPECT_EQ(j.fields["dst_overlap"], "last");
    EXPECT_EQ(j.fields["at_least_once"], true);
    EXPECT_EQ(j.fields["description"], "42");  // a string field keeps the text
    EXPECT_EQ(j.fields["params"],
              nlohmann::json::parse(R"({"report":"sales","days":7,"ok":true,"tags":["a","1"],"none":null})"));
    EXPECT_FALSE((*r)[1].fields.contains("params"));
}

TEST(ParseJobFile, AnEmptyJobListIsValid) {
    auto r = ParseJobFile("jobs: []\n", "f.yaml");
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->empty());
}

TEST(ParseJobFile, ErrorsNameFileJobIndexNameAndField) {
    const std::string base = "jobs:\n  - name: a\n    app: x\n    handler: h\n    schedule_type: manual\n";
    EXPECT_EQ(ErrorOf(base + "    retry_max: many\n"),
              "jobs.yaml: jobs[0] (name \"a\"): retry_max: expected an integer");
    EXPECT_EQ(ErrorOf(base + "    enabled: perhaps\n"),
              "jobs.yaml: jobs[0] (name \"a\"): enabled: expected true or false");
    EXPECT_EQ(ErrorOf(base + "    colour: red\n"), "jobs.yaml: jobs[0] (name \"a\"): colour: unknown field");
    EXPECT_EQ(ErrorOf(base + "    id: 4\n").find("jobs.yaml: jobs[0] (name \"a\"): id: not allowed"), 0u);
    EXPECT_EQ(ErrorOf(base + "    version: 4\n").find("jobs.yaml: jobs[0] (name \"a\"): version: not allowed"), 0u);
    EXPECT_EQ(ErrorOf(base + "    app: [1]\n").find("jobs.yaml: jobs[0] (name \"a\"): app:"), 0u);
    EXPECT_EQ(ErrorOf("jobs:\n  - name: b\n    app: x\n    handler: h\n"),
              "jobs.yaml: jobs[0] (name \"b\"): schedule_type: required");
    EXPECT_EQ(ErrorOf("jobs:\n  - app: x\n"), "jobs.yaml: jobs[0]: name: required");
    EXPECT_EQ(ErrorOf(base + "  - name: a\n    app: y\n    handler: h\n    schedule_type: manual\n"),
              "jobs.yaml: jobs[1] (name \"a\"): name: \"a\" appears twice");
    EXPECT_EQ(ErrorOf("jobs:\n  - 5\n"), "jobs.yaml: jobs[0]: expected a mapping of job fields");
    EXPECT_EQ(ErrorOf("jobz: []\n"),
              "jobs.yaml: line 1: jobz: unknown key (expected jobs, calendars, workflows or alerts)");
    EXPECT_EQ(ErrorOf("- a\n"), "jobs.yaml: expected a mapping with the keys jobs, calendars, workflows and alerts");
    EXPECT_EQ(ErrorOf("jobs: [\n").find("jobs.yaml: line "), 0u);
}

// An unknown value of a vocabulary (schedule type, misfire policy, routing, block strategy) is
// refused naming the file, the job and the field, with the values the jobs API expects; a single
// job document names the field too; a known value passes.
TEST(ParseJobFile, RejectsAnUnknownVocabularyValueWhereTheFileSaysIt) {
    const std::string job = "jobs:\n  - name: a\n    app: x\n    handler: h\n";
    const struct {
        std::string lines;
        std::string error;
    } files[] = {
        {"    schedule_type: hourly\n",
         "jobs.yaml: jobs[0] (name \"a\"): schedule_type: unknown schedule type 'hourly' (expected cron, "
         "fixed-rate, fixed-delay, once or manual)"},
        {"    schedule_type: manual\n    misfire_policy: later\n",
         "jobs.yaml: jobs[0] (name \"a\"): misfire_policy: unknown misfire policy 'later' (expected skip, "
         "fire-once-now or fire-all)"},
        {"    schedule_type: manual\n    routing: nearest\n",
         "jobs.yaml: jobs[0] (name \"a\"): routing: expected one of first, last, round-robin, random, "
         "consistent-hash, least-frequently-used, least-recently-used, failover, busy-over, sharding-broadcast, "
         "got \"nearest\""},
        {"    schedule_type: manual\n    block_strategy: queue\n",
         "jobs.yaml: jobs[0] (name \"a\"): block_strategy: expected one of serial, discard-later, cover-early, "
         "skip, buffer-one, buffer-all, cancel-other, terminate-other, allow-all, got \"queue\""},
    };
    for (const auto& c : files) EXPECT_EQ(ErrorOf(job + c.lines), c.error);

    const struct {
        std::string text;
        std::string error_start;
    } documents[] = {
        {"schedule_type: Cron\n", "job.yaml: schedule_type: unknown schedule type 'Cron'"},
        {"routing: Failover\n", "job.yaml: routing: expected one of first, "},
    };
    for (const auto& c : documents) {
        auto doc = ParseJobDocument(c.text, "job.yaml");
        ASSERT_FALSE(doc.ok()) << c.text;
        EXPECT_EQ(doc.status().message().find(c.error_start), 0u) << doc.status().message();
    }
    for (const char* valid :
         {"misfire_policy: fire-all\n", "routing: sharding-broadcast\nblock_strategy: cover-early\n"}) {
        EXPECT_TRUE(ParseJobDocument(valid, "job.yaml").ok()) << valid;
    }
}

TEST(ParseJobFile, BoundsSizeJobCountAndParamsDepth) {
    EXPECT_NE(ErrorOf(std::string(kMaxJobFileBytes + 1, '#')).find("larger than"), std::string::npos);
    std::string many = "jobs:\n";
    for (std::size_t i = 0; i <= kMaxJobsPerFile; ++i) many += "  - {}\n";
    EXPECT_EQ(ErrorOf(many), "jobs.yaml: jobs: more than 1000 jobs");
    std::string deep = "jobs:\n  - name: d\n    app: x\n    handler: h\n    schedule_type: manual\n    params: ";
    for (int i = 0; i < 40; ++i) deep += "[";
    for (int i = 0; i < 40; ++i) deep += "]";
    EXPECT_NE(ErrorOf(deep + "\n").find("params: nesting deeper than 32 levels"), std::string::npos);
}

TEST(ParseJobDocument, ReadsOneJobFromJsonOrYamlWithVersion) {
    auto r = ParseJobDocument(R"({"name": "a", "retry_max": 2, "version": 5, "params": {"x": "1"}})", "job.json");
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ((*r)["retry_max"], 2);
    EXPECT_EQ((*r)["version"], 5);
    EXPECT_EQ((*r)["params"]["x"], "1");
    auto bad = ParseJobDocument("retry_max: x\n", "job.yaml");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().message(), "job.yaml: retry_max: expected an integer");
}

}  // namespace
}  // namespace sched::ctl
