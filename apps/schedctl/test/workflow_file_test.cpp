#include "workflow_file.hpp"

#include <gtest/gtest.h>

#include "job_file.hpp"
#include "parser_checks.hpp"

namespace sched::ctl {
namespace {

// A diamond over four jobs the same file declares: a -> (b, c) -> d.
std::string Diamond(const std::string& c_to_d = "on-success") {
    return R"(
jobs:
  - {name: job-a, app: etl, handler: a, schedule_type: manual}
  - {name: job-b, app: etl, handler: b, schedule_type: manual}
  - {name: job-c, app: etl, handler: c, schedule_type: manual}
  - {name: job-d, app: etl, handler: d, schedule_type: manual}
workflows:
  - name: diamond
    schedule_type: cron
    schedule_expr: "0 0 2 * * ?"
    steps:
      - {name: a, job: job-a}
      - {name: b, job: job-b}
      - {name: c, job: job-c}
      - {name: d, job: job-d}
    edges:
      - {parent: a, child: b}
      - {parent: a, child: c, condition: always}
      - {parent: b, child: d}
      - {parent: c, child: d, condition: )" +
           c_to_d + "}\n";
}

std::vector<WorkflowSpec> Parsed(const std::string& text) {
    auto r = ParseWorkflowSection(text, "flows.yaml");
    EXPECT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(r.ok() && r->has_value());
    return r.ok() && r->has_value() ? **r : std::vector<WorkflowSpec>{};
}

std::string ErrorOf(const std::string& yaml) {
    return ParseErrorOf(ParseWorkflowSection(yaml, "flows.yaml"), yaml);
}

// The jobs as the API lists them.
nlohmann::json Jobs() {
    return nlohmann::json::array({{{"id", 11}, {"name", "job-a"}},
                                  {{"id", 12}, {"name", "job-b"}},
                                  {{"id", 13}, {"name", "job-c"}},
                                  {{"id", 14}, {"name", "job-d"}}});
}

// The diamond as the API answers it once created: ids for jobs, every field, defaults filled in.
nlohmann::json StoredDiamond(std::int64_t id, const std::string& name = "diamond") {
    return {{"id", id},
            {"name", name},
            {"description", ""},
            {"schedule_type", "cron"},
            {"schedule_expr", "0 0 2 * * ?"},
            {"time_zone", "UTC"},
            {"misfire_policy", "fire-once-now"},
            {"max_concurrent_runs", 1},
            {"run_timeout_ms", 0},
            {"paused", false},
            {"next_fire_time", 1},
            {"version", 3},
            {"created_at", 1},
            {"updated_at", 1},
            {"steps",
             {{{"name", "a"}, {"job_id", 11}},
              {{"name", "b"}, {"job_id", 12}},
              {{"name", "c"}, {"job_id", 13}},
              {{"name", "d"}, {"job_id", 14}}}},
            {"edges",
             {{{"parent", "a"}, {"child", "b"}, {"condition", "on-success"}},
              {{"parent", "a"}, {"child", "c"}, {"condition", "always"}},
              {{"parent", "b"}, {"child", "d"}, {"condition", "on-success"}},
              {{"parent", "c"}, {"child", "d"}, {"condition", "on-success"}}}}};
}

TEST(ParseWorkflowSection, ReadsADiamondBesideItsJobsWithTheDefaultConditionWrittenOut) {
    const auto flows = Parsed(Diamond());
    ASSERT_EQ(flows.size(), 1u);
    EXPECT_EQ(flows[0].name, "diamond");
    EXPECT_EQ(flows[0].fields["steps"][3], (nlohmann::json{{"name", "d"}, {"job", "job-d"}}));
    EXPECT_EQ(flows[0].fields["edges"][0]["condition"], "on-success");
    EXPECT_EQ(flows[0].fields["edges"][1]["condition"], "always");
    EXPECT_FALSE(flows[0].fields.contains("paused"));
    // The jobs: part of the same file still parses: the key is known to the job file too.
    auto jobs = ParseJobFile(Diamond(), "flows.yaml");
    ASSERT_TRUE(jobs.ok()) << jobs.status().message();
    EXPECT_EQ(jobs->size(), 4u);
}

TEST(ParseWorkflowSection, AbsentKeyLeavesWorkflowsAlone) {
    ExpectAbsentKeyUnmanagedAndEmptyKeyEmpty(ParseWorkflowSection, "workflows:\n", "flows.yaml");
}

TEST(ParseWorkflowSection, ErrorsNameTheFileTheLineTheWorkflowAndTheField) {
    EXPECT_EQ(ErrorOf("workflows:\n  - name: w\n    steps:\n      - {name: a}\n"),
              "flows.yaml: line 4: workflows[0] (name \"w\"): steps[0].job: required");
    EXPECT_EQ(ErrorOf("workflows:\n  - name: w\n    steps: [{name: a, job: j}]\n    colour: red\n"),
              "flows.yaml: line 4: workflows[0] (name \"w\"): colour: unknown field");
    EXPECT_EQ(ErrorOf("workflows:\n  - name: w\n    steps: [{name: a, job: j}]\n"
                      "    edges: [{parent: a, child: a, condition: sometimes}]\n"),
              "flows.yaml: line 4: workflows[0] (name \"w\"): edges[0].condition: expected on-success, on-failure or "
              "always");
    EXPECT_EQ(ErrorOf("workflows:\n  - name: w\n    steps: [{name: a, job: j, job_id: 4}]\n"),
              "flows.yaml: line 3: workflows[0] (name \"w\"): steps[0].job_id: unknown field");
    EXPECT_EQ(ErrorOf("workflows:\n  - name: w\n"), "flows.yaml: line 2: workflows[0] (name \"w\"): steps: required");
    EXPECT_EQ(ErrorOf("workflows:\n  - name: w\n    id: 3\n    steps: [{name: a, job: j}]\n"),
              "flows.yaml: line 3: workflows[0] (name \"w\"): id: not allowed (the server assigns it; workflows are "
              "keyed by name)");
    EXPECT_EQ(ErrorOf("workflows:\n  - name: w\n    max_concurrent_runs: 0\n    steps: [{name: a, job: j}]\n"),
              "flows.yaml: line 3: workflows[0] (name \"w\"): max_concurrent_runs: expected 1 to 100");
    EXPECT_EQ(ErrorOf("workflows:\n  - name: w\n    schedule_type: hourly\n    steps: [{name: a, job: j}]\n")
                  .rfind("flows.yaml: line 3: workflows[0] (name \"w\"): schedule_type: ", 0),
              0u);
    EXPECT_EQ(ErrorOf("workflows:\n  - name: w\n    steps: [{name: a, job: j}, {name: a, job: k}]\n"),
              "flows.yaml: line 3: workflows[0] (name \"w\"): steps[1].name: \"a\" appears twice");
    EXPECT_EQ(ErrorOf("workflows:\n  - {name: w, steps: [{name: a, job: j}]}\n  - {name: w, steps: [{name: a, job: "
                      "j}]}\n"),
              "flows.yaml: line 3: workflows[1] (name \"w\"): name: \"w\" appears twice");
    EXPECT_EQ(ErrorOf("workflows: {name: w}\n"), "flows.yaml: line 1: workflows: expected a list of workflows");
}

TEST(ParseWorkflowSection, StepAndEdgeListsAreBoundedBeforeTheirEntriesAreRead) {
    std::string steps = "workflows:\n  - name: w\n    steps:\n";
    for (std::size_t i = 0; i <= kMaxWorkflowSteps; ++i) steps += "      - 1\n";
    EXPECT_EQ(ErrorOf(steps), "flows.yaml: line 4: workflows[0] (name \"w\"): steps: more than 64 entries");
    std::string edges = "workflows:\n  - name: w\n    steps: [{name: a, job: j}]\n    edges:\n";
    for (std::size_t i = 0; i <= kMaxWorkflowEdges; ++i) edges += "      - 1\n";
    EXPECT_EQ(ErrorOf(edges), "flows.yaml: line 5: workflows[0] (name \"w\"): edges: more than 256 entries");
}

TEST(PlanWorkflowChanges, FromEmptyCreatesWithStepsByJobName) {
    const Plan plan = PlanWorkflowChanges(Parsed(Diamond()), nlohmann::json::array(), false);
    ASSERT_EQ(plan.changes.size(), 1u);
    EXPECT_EQ(plan.changes[0].kind, ChangeKind::kCreate);
    EXPECT_EQ(plan.changes[0].body["steps"][0]["job"], "job-a");

    auto resolved = ResolveStepJobs(plan.changes[0].body, Jobs());
    ASSERT_TRUE(resolved.ok()) << resolved.status().message();
    EXPECT_EQ((*resolved)["steps"][0], (nlohmann::json{{"name", "a"}, {"job_id", 11}}));
    EXPECT_EQ((*resolved)["steps"][3], (nlohmann::json{{"name", "d"}, {"job_id", 14}}));
    EXPECT_EQ((*resolved)["edges"], plan.changes[0].body["edges"]);

    auto missing = ResolveStepJobs(plan.changes[0].body, nlohmann::json::array({{{"id", 11}, {"name", "job-a"}}}));
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.status().message(), "steps[1].job: no job named \"job-b\"");
}

TEST(PlanWorkflowChanges, TheStoredDiamondIsUnchanged) {
    const auto current = StepsByJobName(nlohmann::json::array({StoredDiamond(5)}), Jobs());
    EXPECT_EQ(current[0]["steps"][1], (nlohmann::json{{"name", "b"}, {"job", "job-b"}}));
    const Plan plan = PlanWorkflowChanges(Parsed(Diamond()), current, true);
    ASSERT_EQ(plan.changes.size(), 1u);
    EXPECT_EQ(plan.changes[0].kind, ChangeKind::kUnchanged);
    EXPECT_FALSE(plan.HasDrift());
}

TEST(PlanWorkflowChanges, AnEditedEdgeIsOneUpdateWithTheVersionRead) {
    const auto current = StepsByJobName(nlohmann::json::array({StoredDiamond(5)}), Jobs());
    const Plan plan = PlanWorkflowChanges(Parsed(Diamond("on-failure")), current, false);
    ASSERT_EQ(plan.changes.size(), 1u);
    const auto& c = plan.changes[0];
    EXPECT_EQ(c.kind, ChangeKind::kUpdate);
    EXPECT_EQ(c.id, 5);
    EXPECT_EQ(c.body["version"], 3);
    ASSERT_EQ(c.changes.size(), 1u);
    EXPECT_EQ(c.changes[0].field, "edges");
    EXPECT_EQ(c.body["edges"][3]["condition"], "on-failure");
    EXPECT_FALSE(c.body.contains("name"));
    EXPECT_FALSE(c.body.contains("paused")) << "paused is not in the file: a pause stays";
    EXPECT_EQ(FormatPlan(plan, "workflow ", "Workflows").find("~ update    workflow diamond (id 5)\n    edges: "), 0u)
        << FormatPlan(plan, "workflow ", "Workflows");
}

TEST(PlanWorkflowChanges, AWorkflowMadeByHandIsAdoptedByTheFileThatStatesManagedBy) {
    auto flows = Parsed(Diamond());
    flows[0].fields["managed_by"] = "flows.yaml";  // what apply adds
    auto stored = StoredDiamond(5);
    stored["managed_by"] = nullptr;
    Plan plan = PlanWorkflowChanges(flows, StepsByJobName(nlohmann::json::array({stored}), Jobs()), false);
    ASSERT_EQ(plan.changes.size(), 1u);
    ASSERT_EQ(plan.changes[0].changes.size(), 1u);
    EXPECT_EQ(plan.changes[0].changes[0].field, "managed_by");
    EXPECT_EQ(plan.changes[0].body["managed_by"], "flows.yaml");
    stored["managed_by"] = "flows.yaml";
    plan = PlanWorkflowChanges(flows, StepsByJobName(nlohmann::json::array({stored}), Jobs()), false);
    EXPECT_FALSE(plan.HasDrift());
}

TEST(PlanWorkflowChanges, AStepOnAnotherJobIsDrift) {
    auto stored = StoredDiamond(5);
    stored["steps"][2]["job_id"] = 99;  // a job the list does not hold
    const auto current = StepsByJobName(nlohmann::json::array({stored}), Jobs());
    EXPECT_EQ(current[0]["steps"][2]["job"], "#99");
    const Plan plan = PlanWorkflowChanges(Parsed(Diamond()), current, false);
    ASSERT_EQ(plan.changes.size(), 1u);
    EXPECT_EQ(plan.changes[0].kind, ChangeKind::kUpdate);
    ASSERT_EQ(plan.changes[0].changes.size(), 1u);
    EXPECT_EQ(plan.changes[0].changes[0].field, "steps");
}

TEST(PlanWorkflowChanges, PruneDeletesAWorkflowTheFileNoLongerDeclares) {
    const auto current =
        StepsByJobName(nlohmann::json::array({StoredDiamond(5), StoredDiamond(6, "old-flow")}), Jobs());
    Plan plan = PlanWorkflowChanges(Parsed(Diamond()), current, false);
    EXPECT_FALSE(plan.HasDrift()) << "without --prune a workflow the file leaves out stays";
    plan = PlanWorkflowChanges(Parsed(Diamond()), current, true);
    ASSERT_EQ(plan.changes.size(), 2u);
    EXPECT_EQ(plan.changes[1].kind, ChangeKind::kDelete);
    EXPECT_EQ(plan.changes[1].name, "old-flow");
    EXPECT_EQ(plan.changes[1].id, 6);
}

TEST(ParseWorkflowDocument, UpdateTakesAnyFieldsAndAVersionCreateNeedsNameAndSteps) {
    auto partial = ParseWorkflowDocument("description: nightly\nversion: 4\n", "w.yaml", true);
    ASSERT_TRUE(partial.ok()) << partial.status().message();
    EXPECT_EQ(*partial, (nlohmann::json{{"description", "nightly"}, {"version", 4}}));
    auto create = ParseWorkflowDocument("name: w\n", "w.yaml", false);
    ASSERT_FALSE(create.ok());
    EXPECT_EQ(create.status().message(), "w.yaml: steps: required");
    create = ParseWorkflowDocument("name: w\nversion: 2\nsteps: [{name: a, job: j}]\n", "w.yaml", false);
    ASSERT_FALSE(create.ok());
    EXPECT_NE(create.status().message().find("version: not allowed"), std::string::npos);
}

}  // namespace
}  // namespace sched::ctl
