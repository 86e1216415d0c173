#include "plan.hpp"

#include <gtest/gtest.h>

namespace sched::ctl {
namespace {

JobSpec Spec(nlohmann::json fields) {
    JobSpec s;
    s.name = fields["name"].get<std::string>();
    s.fields = std::move(fields);
    return s;
}

// A job as the API returns it: every field, defaults filled in.
nlohmann::json Stored(std::int64_t id, const std::string& name, nlohmann::json overrides = nlohmann::json::object()) {
    nlohmann::json j = {{"id", id},
                        {"name", name},
                        {"app", "app"},
                        {"handler", "h"},
                        {"params", ""},
                        {"schedule_type", "cron"},
                        {"schedule_expr", "0 * * * * ?"},
                        {"time_zone", "UTC"},
                        {"misfire_policy", "fire-once-now"},
                        {"routing", "round-robin"},
                        {"block_strategy", "serial"},
                        {"concurrency_limit", 1},
                        {"timeout_ms", 0},
                        {"retry_max", 0},
                        {"retry_backoff_ms", 1000},
                        {"shard_total", 1},
                        {"at_least_once", false},
                        {"enabled", true},
                        {"description", ""},
                        {"pause_after_failures", 0},
                        {"jitter_ms", 0},
                        {"dst_gap", "auto"},
                        {"dst_overlap", "auto"},
                        {"version", 4},
                        {"next_fire_time", 1},
                        {"created_at", 1}};
    j.update(overrides);
    return j;
}

const nlohmann::json kFields = {
    {"app", "app"}, {"handler", "h"}, {"schedule_type", "cron"}, {"schedule_expr", "0 * * * * ?"}};

nlohmann::json Fields(const std::string& name, nlohmann::json extra = nlohmann::json::object()) {
    nlohmann::json f = kFields;
    f["name"] = name;
    f.update(extra);
    return f;
}

TEST(PlanChanges, CreatesMissingJobsAndLeavesMatchingOnesUnchanged) {
    const auto plan =
        PlanChanges({Spec(Fields("a")), Spec(Fields("b"))}, nlohmann::json::array({Stored(7, "a")}), false);
    ASSERT_EQ(plan.changes.size(), 2u);
    EXPECT_EQ(plan.changes[0].kind, ChangeKind::kUnchanged);
    EXPECT_EQ(plan.changes[0].id, 7);
    EXPECT_EQ(plan.changes[1].kind, ChangeKind::kCreate);
    EXPECT_EQ(plan.changes[1].body, Fields("b"));
    EXPECT_TRUE(plan.HasDrift());
}

TEST(PlanChanges, NoDriftWhenEveryJobMatches) {
    const auto plan = PlanChanges({Spec(Fields("a"))}, nlohmann::json::array({Stored(7, "a")}), true);
    EXPECT_FALSE(plan.HasDrift());
    EXPECT_EQ(FormatPlan(plan), "= unchanged a (id 7)\nPlan: 0 to create, 0 to update, 0 to delete, 1 unchanged.\n");
}

TEST(PlanChanges, CalendarAndBoundsRoundTrip) {
    const nlohmann::json bounds = {{"calendar", "holidays"}, {"start_at", 1000}, {"end_at", 2000}, {"max_runs", 3}};
    auto stored = Stored(7, "a", bounds);
    stored["planned_runs"] = 1;  // read-only fields of the server are no drift
    stored["completed_at"] = nullptr;
    const auto same = PlanChanges({Spec(Fields("a", bounds))}, nlohmann::json::array({stored}), false);
    ASSERT_EQ(same.changes.size(), 1u);
    EXPECT_EQ(same.changes[0].kind, ChangeKind::kUnchanged);
    // A different bound is drift, sent with the version read.
    const auto changed = PlanChanges(
        {Spec(Fields("a", {{"calendar", "holidays"}, {"start_at", 1000}, {"end_at", 3000}, {"max_runs", 3}}))},
        nlohmann::json::array({stored}), false);
    ASSERT_EQ(changed.changes.size(), 1u);
    EXPECT_EQ(changed.changes[0].kind, ChangeKind::kUpdate);
    EXPECT_EQ(changed.changes[0].body["end_at"], 3000);
}

TEST(PlanChanges, UpdateListsChangedFieldsAndSendsTheVersionRead) {
    const auto plan = PlanChanges({Spec(Fields("a", {{"schedule_expr", "0 30 * * * ?"}, {"params", {{"x", 1}}}}))},
                                  nlohmann::json::array({Stored(7, "a", {{"retry_max", 3}})}), false);
    ASSERT_EQ(plan.changes.size(), 1u);
    const auto& c = plan.changes[0];
    EXPECT_EQ(c.kind, ChangeKind::kUpdate);
    EXPECT_EQ(c.version, 4);
    EXPECT_EQ(c.body["version"], 4);
    EXPECT_EQ(c.body["retry_max"], 0);  // left out of the file: back to the API's default
    EXPECT_FALSE(c.body.contains("enabled"));
    std::vector<std::string> fields;
    for (const auto& f : c.changes) fields.push_back(f.field);
    EXPECT_EQ(fields, (std::vector<std::string>{"params", "schedule_expr", "retry_max"}));
    EXPECT_EQ(FormatPlan(plan),
              "~ update    a (id 7)\n"
              "    params: \"\" -> {\"x\":1}\n"
              "    schedule_expr: \"0 * * * * ?\" -> \"0 30 * * * ?\"\n"
              "    retry_max: 3 -> 0\n"
              "Plan: 0 to create, 1 to update, 0 to delete, 0 unchanged.\n");
}

TEST(PlanChanges, ScheduleOptionsRoundTrip) {
    const nlohmann::json options = {{"jitter_ms", 60000}, {"dst_gap", "skip"}, {"dst_overlap", "both"}};
    const nlohmann::json stored = nlohmann::json::array({Stored(7, "a", options)});
    // The file states them as stored: no drift.
    EXPECT_FALSE(PlanChanges({Spec(Fields("a", options))}, stored, false).HasDrift());
    // Left out of the file: back to the defaults, listed field by field.
    const auto plan = PlanChanges({Spec(Fields("a"))}, stored, false);
    ASSERT_EQ(plan.changes.size(), 1u);
    std::vector<std::string> fields;
    for (const auto& f : plan.changes[0].changes) fields.push_back(f.field);
    EXPECT_EQ(fields, (std::vector<std::string>{"jitter_ms", "dst_gap", "dst_overlap"}));
    EXPECT_EQ(plan.changes[0].body["jitter_ms"], 0);
    EXPECT_EQ(plan.changes[0].body["dst_gap"], "auto");
    EXPECT_EQ(plan.changes[0].body["dst_overlap"], "auto");
}

TEST(PlanChanges, EnabledIsComparedOnlyWhenTheFileStatesIt) {
    const nlohmann::json paused = nlohmann::json::array({Stored(7, "a", {{"enabled", false}})});
    EXPECT_FALSE(PlanChanges({Spec(Fields("a"))}, paused, false).HasDrift());
    const auto plan = PlanChanges({Spec(Fields("a", {{"enabled", true}}))}, paused, false);
    ASSERT_EQ(plan.changes[0].changes.size(), 1u);
    EXPECT_EQ(plan.changes[0].changes[0].field, "enabled");
}

TEST(PlanChanges, ManagedByIsComparedWhenStatedAndSentWithTheUpdate) {
    // A job made by hand (managed_by null) is adopted by the file that apply marks it with.
    auto plan = PlanChanges({Spec(Fields("a", {{"managed_by", "jobs.yaml"}}))},
                            nlohmann::json::array({Stored(7, "a", {{"managed_by", nullptr}})}), false);
    ASSERT_EQ(plan.changes.size(), 1u);
    EXPECT_EQ(plan.changes[0].kind, ChangeKind::kUpdate);
    ASSERT_EQ(plan.changes[0].changes.size(), 1u);
    EXPECT_EQ(plan.changes[0].changes[0].field, "managed_by");
    EXPECT_EQ(plan.changes[0].body["managed_by"], "jobs.yaml");
    plan = PlanChanges({Spec(Fields("a", {{"managed_by", "jobs.yaml"}}))},
                       nlohmann::json::array({Stored(7, "a", {{"managed_by", "jobs.yaml"}})}), false);
    EXPECT_FALSE(plan.HasDrift());
}

TEST(PlanChanges, PruneDeletesJobsMissingFromTheFileSortedByName) {
    const nlohmann::json current = nlohmann::json::array({Stored(9, "z"), Stored(7, "a"), Stored(8, "m")});
    EXPECT_EQ(PlanChanges({Spec(Fields("a"))}, current, false).Count(ChangeKind::kDelete), 0u);
    const auto plan = PlanChanges({Spec(Fields("a"))}, current, true);
    ASSERT_EQ(plan.changes.size(), 3u);
    EXPECT_EQ(plan.changes[1].kind, ChangeKind::kDelete);
    EXPECT_EQ(plan.changes[1].name, "m");
    EXPECT_EQ(plan.changes[1].id, 8);
    EXPECT_EQ(plan.changes[2].name, "z");
}

TEST(PlanChanges, IgnoresMalformedCurrentJobs) {
    const nlohmann::json current = nlohmann::json::array({5, {{"name", "a"}}, {{"id", "7"}, {"name", "a"}}});
    const auto plan = PlanChanges({Spec(Fields("a"))}, current, true);
    ASSERT_EQ(plan.changes.size(), 1u);
    EXPECT_EQ(plan.changes[0].kind, ChangeKind::kCreate);
}

TEST(FormatPlan, NeutralisesControlCharactersInNames) {
    Plan plan;
    plan.changes.push_back({ChangeKind::kDelete, "evil\x1b[2Jname\n", 3, 0, {}, nullptr});
    EXPECT_EQ(FormatPlan(plan).substr(0, 30), "- delete    evil?[2Jname? (id ");
}

}  // namespace
}  // namespace sched::ctl
