#include "calendar_file.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "apply.hpp"
#include "job_file.hpp"
#include "parser_checks.hpp"

namespace sched::ctl {
namespace {

std::string ErrorOf(const std::string& yaml) {
    return ParseErrorOf(ParseCalendarSection(yaml, "jobs.yaml"), yaml);
}

TEST(ParseCalendarSection, ReadsCalendarsInCanonicalFormBesideJobs) {
    const std::string text = R"(
calendars:
  - name: business-days-de
    time_zone: " Europe/Berlin "
    excluded_weekdays: [Sunday, sat, sun]
    excluded_dates: ["2026-12-24..2026-12-26", " 2027-01-01"]
    excluded_times: ["22:00-06:00"]
  - name: plain
jobs:
  - name: nightly
    app: reports
    handler: build
    schedule_type: cron
    calendar: business-days-de
)";
    auto r = ParseCalendarSection(text, "jobs.yaml");
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_TRUE(r->has_value());
    const auto& calendars = **r;
    ASSERT_EQ(calendars.size(), 2u);
    EXPECT_EQ(calendars[0].name, "business-days-de");
    EXPECT_EQ(calendars[0].fields["time_zone"], "Europe/Berlin");
    EXPECT_EQ(calendars[0].fields["excluded_weekdays"], nlohmann::json::parse(R"(["sat","sun"])"));
    EXPECT_EQ(calendars[0].fields["excluded_dates"][1], "2027-01-01");
    EXPECT_FALSE(calendars[1].fields.contains("time_zone"));
    // The jobs part of the same file still parses, calendar field included.
    auto jobs = ParseJobFile(text, "jobs.yaml");
    ASSERT_TRUE(jobs.ok()) << jobs.status().message();
    EXPECT_EQ((*jobs)[0].fields["calendar"], "business-days-de");
}

TEST(ParseCalendarSection, NoCalendarsKeyMeansCalendarsAreNotManaged) {
    ExpectAbsentKeyUnmanagedAndEmptyKeyEmpty(ParseCalendarSection, "calendars:\njobs: []\n", "f.yaml");
}

TEST(ParseCalendarSection, ErrorsNameFileLineCalendarAndField) {
    const std::string base = "calendars:\n  - name: hol\n";
    const std::string at_hol = "jobs.yaml: line 3: calendars[0] (name \"hol\"): ";
    const std::pair<std::string, std::string> cases[] = {
        {base + "    colour: red\n", at_hol + "colour: unknown field"},
        {base + "    version: 3\n",
         at_hol + "version: not allowed (the server assigns it; calendars are keyed by name)"},
        {base + "    id: 3\n", at_hol + "id: not allowed (the server assigns it; calendars are keyed by name)"},
        {base + "    excluded_dates: \"2026-12-25\"\n", at_hol + "excluded_dates: expected a list of strings"},
        {base + "    excluded_dates: [[1]]\n", at_hol + "excluded_dates: expected strings of at most 32 characters"},
        {base + "    time_zone: [UTC]\n", at_hol + "time_zone: expected a string"},
        {base + "  - name: hol\n", "jobs.yaml: line 3: calendars[1] (name \"hol\"): name: \"hol\" appears twice"},
        {"calendars:\n  - time_zone: UTC\n", "jobs.yaml: line 2: calendars[0]: name: required"},
        {"calendars: {name: x}\n", "jobs.yaml: line 1: calendars: expected a list of calendars"},
        {"calendars:\n  - just-a-name\n", "jobs.yaml: line 2: calendars[0]: expected a mapping of calendar fields"},
    };
    for (const auto& [yaml, error] : cases) EXPECT_EQ(ErrorOf(yaml), error) << yaml;
}

TEST(ParseCalendarSection, HostileSizesAreRefusedBeforeDeeperWork) {
    // Too many calendars.
    std::string many = "calendars:\n";
    for (std::size_t i = 0; i <= kMaxCalendarsPerFile; ++i) many += "  - {name: c" + std::to_string(i) + "}\n";
    EXPECT_NE(ErrorOf(many).find("calendars: more than 1000 calendars"), std::string::npos);
    // Too many entries in one list.
    std::string dates = "calendars:\n  - name: x\n    excluded_dates: [";
    for (std::size_t i = 0; i <= kMaxCalendarEntries; ++i) dates += (i ? ",a" : "a");
    EXPECT_NE(ErrorOf(dates + "]\n").find("excluded_dates: more than 1000 entries"), std::string::npos);
    // One long entry, a long name, a long description.
    EXPECT_NE(ErrorOf("calendars:\n  - name: x\n    excluded_times: [" + std::string(33, '1') + "]\n")
                  .find("excluded_times: expected strings of at most 32 characters"),
              std::string::npos);
    EXPECT_NE(ErrorOf("calendars:\n  - name: " + std::string(192, 'n') + "\n").find("name: longer than 191 bytes"),
              std::string::npos);
    EXPECT_NE(ErrorOf("calendars:\n  - name: x\n    description: " + std::string(5000, 'd') + "\n")
                  .find("description: longer than 4096 bytes"),
              std::string::npos);
    // The whole file.
    EXPECT_NE(ErrorOf("calendars: []\n#" + std::string(kMaxJobFileBytes, 'x')).find("larger than"), std::string::npos);
    // Broken YAML names the line.
    EXPECT_NE(ErrorOf("calendars:\n  - name: [x\n").find("jobs.yaml: line "), std::string::npos);
}

TEST(ParseJobFile, AnUnknownTopLevelKeyNamesItsLine) {
    auto r = ParseJobFile("jobs: []\ncalendarz: []\n", "jobs.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(),
              "jobs.yaml: line 2: calendarz: unknown key (expected jobs, calendars, workflows or alerts)");
}

nlohmann::json Current() {
    return nlohmann::json::parse(R"([
      {"id": 3, "name": "hol", "description": "", "time_zone": "UTC", "excluded_dates": ["2026-12-25"],
       "excluded_weekdays": [], "excluded_times": [], "version": 2},
      {"id": 4, "name": "same", "description": "", "time_zone": "UTC", "excluded_dates": [],
       "excluded_weekdays": ["sat", "sun"], "excluded_times": [], "version": 1},
      {"id": 5, "name": "old", "description": "", "time_zone": "UTC", "excluded_dates": [],
       "excluded_weekdays": [], "excluded_times": [], "version": 1}])");
}

std::vector<CalendarSpec> Desired() {
    auto r = ParseCalendarSection(R"(
calendars:
  - name: hol
    excluded_dates: ["2026-12-25", "2027-01-01"]
  - name: same
    excluded_weekdays: [saturday, sunday]
  - name: new
    excluded_times: ["12:00-13:00"]
)",
                                  "f.yaml");
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() && *r ? **r : std::vector<CalendarSpec>{};
}

TEST(PlanCalendarChanges, CreatesUpdatesWithTheVersionReadAndPrunesOnlyWhenAsked) {
    const Plan plan = PlanCalendarChanges(Desired(), Current(), false);
    ASSERT_EQ(plan.changes.size(), 3u);
    EXPECT_EQ(plan.changes[0].kind, ChangeKind::kUpdate);
    ASSERT_EQ(plan.changes[0].changes.size(), 1u);
    EXPECT_EQ(plan.changes[0].changes[0].field, "excluded_dates");
    EXPECT_EQ(plan.changes[0].body["version"], 2);
    EXPECT_FALSE(plan.changes[0].body.contains("name"));  // a calendar cannot be renamed
    EXPECT_EQ(plan.changes[0].body["excluded_weekdays"], nlohmann::json::array());
    EXPECT_EQ(plan.changes[1].kind, ChangeKind::kUnchanged);  // long weekday names are the same days
    EXPECT_EQ(plan.changes[2].kind, ChangeKind::kCreate);
    EXPECT_EQ(plan.changes[2].body["name"], "new");
    EXPECT_TRUE(plan.HasDrift());

    const Plan pruned = PlanCalendarChanges(Desired(), Current(), true);
    ASSERT_EQ(pruned.changes.size(), 4u);
    EXPECT_EQ(pruned.changes[3].kind, ChangeKind::kDelete);
    EXPECT_EQ(pruned.changes[3].id, 5);
    const auto [upserts, deletes] = SplitDeletes(pruned);
    EXPECT_EQ(upserts.changes.size(), 3u);
    ASSERT_EQ(deletes.changes.size(), 1u);
    EXPECT_EQ(deletes.changes[0].name, "old");

    EXPECT_EQ(FormatPlan(pruned, "calendar ", "Calendars"),
              "~ update    calendar hol (id 3)\n"
              "    excluded_dates: [\"2026-12-25\"] -> [\"2026-12-25\",\"2027-01-01\"]\n"
              "= unchanged calendar same (id 4)\n"
              "+ create    calendar new\n"
              "- delete    calendar old (id 5)\n"
              "Calendars: 1 to create, 1 to update, 1 to delete, 1 unchanged.\n");
}

TEST(ApplyPlan, CalendarsGoToTheirCollectionAndA409SaysCalendar) {
    std::vector<std::string> paths;
    std::ostringstream out, err;
    const Plan plan = PlanCalendarChanges(Desired(), Current(), true);
    const int failures = ApplyPlan(
        plan,
        [&](http::Method m, const std::string& path, const std::optional<nlohmann::json>&) -> Result<ApiReply> {
            paths.push_back(std::string(http::MethodName(m)) + " " + path);
            ApiReply r;
            r.status = m == http::Method::kPut ? 409 : 200;
            return r;
        },
        out, err, "calendar");
    EXPECT_EQ(failures, 1);
    EXPECT_EQ(paths, (std::vector<std::string>{"PUT /api/v1/calendars/3", "POST /api/v1/calendars",
                                               "DELETE /api/v1/calendars/5"}));
    EXPECT_NE(out.str().find("calendar new: created"), std::string::npos) << out.str();
    EXPECT_NE(err.str().find("calendar hol: not updated: the calendar changed since it was read (version 2)"),
              std::string::npos)
        << err.str();
}

TEST(CalendarRulesSummary, OneLineOfTheRules) {
    EXPECT_EQ(CalendarRulesSummary(Current()[1]), "sat, sun");
    EXPECT_EQ(CalendarRulesSummary(Current()[2]), "-");
    EXPECT_EQ(CalendarRulesSummary(
                  nlohmann::json::parse(R"({"excluded_dates": ["a", "b", "c"], "excluded_times": ["22:00-06:00"]})")),
              "3 dates; 22:00-06:00");
}

}  // namespace
}  // namespace sched::ctl
