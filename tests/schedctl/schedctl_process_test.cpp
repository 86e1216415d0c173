// schedctl as an operator runs it: the real binary against a real scheduler-standalone (SQLite,
// loopback), declarative apply/diff included.

#include <signal.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <memory>
#include <string_view>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api_client.hpp"
#include "sched/common/node_id.hpp"
#include "sched/common/testing/child_process.hpp"

#include "../support/scratch_dir.hpp"

namespace sched {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;

constexpr const char* kToken = "schedctl-test-token";

struct Outcome {
    int code = -1;
    std::string out;
    std::string err;
};

class SchedctlProcess : public ::testing::Test {
  protected:
    void SetUp() override {
        Write("standalone.yaml", "token: \"" + std::string(kToken) + "\"\nhttp:\n  listen: \"127.0.0.1:0\"\n" +
                                     "database:\n  url: \"sqlite://" + (dir_ / "s.db").string() +
                                     "\"\nlog:\n  level: warn\n");
        standalone_ = std::make_unique<ChildProcess>(
            std::vector<std::string>{SCHED_STANDALONE_BIN, "--config", (dir_ / "standalone.yaml").string()},
            dir_.string());
        const auto line = standalone_->WaitForStdoutLine("listening on http://127.0.0.1:", 20s);
        ASSERT_TRUE(line) << standalone_->stderr_text();
        server_ = line->substr(line->find("http://"));
        while (!server_.empty() && std::isspace(static_cast<unsigned char>(server_.back()))) server_.pop_back();
    }
    void TearDown() override {
        if (standalone_) {
            standalone_->Signal(SIGTERM);
            standalone_->WaitForExit(10s);
        }
    }

    void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }

    // HOME points at the test's directory, so no operator's ~/.config/schedctl is read.
    // `env` entries come last and so win ("SCHED_TOKEN=" empties it).
    Outcome Run(std::vector<std::string> args, const std::vector<std::string>& env = {}) {
        args.insert(args.begin(), SCHEDCTL_BIN);
        std::vector<std::string> all_env = {"SCHED_SERVER=" + server_, std::string("SCHED_TOKEN=") + kToken,
                                            "HOME=" + dir_.string(), "XDG_CONFIG_HOME="};
        all_env.insert(all_env.end(), env.begin(), env.end());
        ChildProcess p(args, dir_.string(), all_env);
        const auto code = p.WaitForExit(10s);
        return {code.value_or(-1), p.stdout_text(), p.stderr_text()};
    }
    // schedctl with `args` (and `env`, as for Run) fails with exit code 1, saying each of `said`
    // on stderr.
    void ExpectRefused(std::vector<std::string> args, std::initializer_list<std::string_view> said,
                       const std::vector<std::string>& env = {}) {
        const auto r = Run(std::move(args), env);
        EXPECT_EQ(r.code, 1) << r.out << r.err;
        for (const auto part : said) EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
    }

    static std::string Jobs(const std::string& nightly_expr, bool with_manual) {
        std::string text =
            "jobs:\n"
            "  - name: nightly\n    app: reports\n    handler: build\n    schedule_type: cron\n"
            "    schedule_expr: \"" +
            nightly_expr + "\"\n    params: {report: sales}\n";
        if (with_manual) text += "  - name: on-demand\n    app: reports\n    handler: run\n    schedule_type: manual\n";
        return text;
    }

    testing::ScratchDir scratch_{"sched-schedctl-"};
    const std::filesystem::path& dir_ = scratch_.path();
    std::unique_ptr<ChildProcess> standalone_;
    std::string server_;
};

TEST_F(SchedctlProcess, ApplyDiffUpdateTriggerAndPruneAgainstARealNode) {
    const std::string file = (dir_ / "jobs.yaml").string();
    Write("jobs.yaml", Jobs("0 0 3 * * ?", true));

    auto r = Run({"apply", "-f", file});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("Plan: 2 to create, 0 to update, 0 to delete, 0 unchanged."), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("nightly: created"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("on-demand: created"), std::string::npos) << r.out;

    r = Run({"diff", "-f", file});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("0 to create, 0 to update, 0 to delete, 2 unchanged"), std::string::npos) << r.out;

    Write("jobs.yaml", Jobs("0 30 4 * * ?", true));
    r = Run({"diff", "-f", file});
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.out.find("~ update    nightly"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("schedule_expr: \"0 0 3 * * ?\" -> \"0 30 4 * * ?\""), std::string::npos) << r.out;

    r = Run({"apply", "-f", file});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("nightly: updated"), std::string::npos) << r.out;

    r = Run({"jobs", "list", "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto listed = nlohmann::json::parse(r.out);
    ASSERT_EQ(listed["items"].size(), 2u) << r.out;
    std::int64_t on_demand_id = 0;
    bool saw_update = false;
    for (const auto& job : listed["items"]) {
        if (job["name"] == "nightly") saw_update = job["schedule_expr"] == "0 30 4 * * ?";
        if (job["name"] == "on-demand") on_demand_id = job["id"].get<std::int64_t>();
    }
    EXPECT_TRUE(saw_update) << r.out;
    ASSERT_GT(on_demand_id, 0);

    // An edit made outside the file (in the UI, say) is drift: apply puts the file's state back.
    Write("edit.yaml", "retry_max: 5\nenabled: false\n");
    r = Run({"jobs", "update", std::to_string(on_demand_id), "-f", (dir_ / "edit.yaml").string()});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    r = Run({"diff", "-f", file});
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.out.find("retry_max: 5 -> 0"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("enabled"), std::string::npos) << "enabled is not in the file: a pause stays\n" << r.out;
    r = Run({"apply", "-f", file});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("on-demand: updated"), std::string::npos) << r.out;
    EXPECT_EQ(Run({"diff", "-f", file}).code, 0);
    r = Run({"jobs", "resume", std::to_string(on_demand_id)});
    ASSERT_EQ(r.code, 0) << r.out << r.err;

    r = Run({"jobs", "list"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out.rfind("ID  NAME", 0), 0u) << r.out;

    r = Run({"jobs", "trigger", std::to_string(on_demand_id)});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    r = Run({"fires", "list", "--job", "on-demand"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("manual"), std::string::npos) << r.out;
    r = Run({"fires", "list", "--job", "on-demand", "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto fires = nlohmann::json::parse(r.out);
    ASSERT_EQ(fires["items"].size(), 1u) << r.out;
    EXPECT_EQ(fires["items"][0]["job_id"], on_demand_id);

    Write("jobs.yaml", Jobs("0 30 4 * * ?", false));
    r = Run({"apply", "-f", file, "--prune", "--dry-run"});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("- delete    on-demand"), std::string::npos) << r.out;
    r = Run({"apply", "-f", file, "--prune"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("on-demand: deleted"), std::string::npos) << r.out;
    r = Run({"diff", "-f", file, "--prune"});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("1 unchanged"), std::string::npos) << r.out;
}

// A calendar and a job naming it in one file, applied in one go; an edit of the
// calendar made through the API is drift that apply puts back.
TEST_F(SchedctlProcess, CalendarsInTheFileApplyBeforeTheJobsThatNameThem) {
    const std::string file = (dir_ / "jobs.yaml").string();
    Write("jobs.yaml",
          "calendars:\n"
          "  - name: business-days\n    time_zone: Europe/Berlin\n    excluded_weekdays: [saturday, sun]\n"
          "    excluded_dates: [\"2026-12-24..2026-12-26\"]\n"
          "jobs:\n"
          "  - name: nightly\n    app: reports\n    handler: build\n    schedule_type: cron\n"
          "    schedule_expr: \"0 0 3 * * ?\"\n    calendar: business-days\n");

    auto r = Run({"diff", "-f", file});
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.out.find("+ create    calendar business-days"), std::string::npos) << r.out;
    r = Run({"apply", "-f", file});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("Calendars: 1 to create, 0 to update, 0 to delete, 0 unchanged."), std::string::npos) << r.out;
    ASSERT_NE(r.out.find("nightly: created"), std::string::npos) << r.out;
    EXPECT_LT(r.out.find("calendar business-days: created"), r.out.find("nightly: created")) << r.out;

    r = Run({"diff", "-f", file});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("= unchanged calendar business-days"), std::string::npos) << r.out;

    r = Run({"calendars", "list"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(r.out.rfind("ID  NAME", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("business-days"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Europe/Berlin"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("sat, sun; 2026-12-24..2026-12-26"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("nightly"), std::string::npos) << "USED BY names the job\n" << r.out;

    // An edit through the API (the UI's route) is drift, and apply puts the file's state back.
    r = Run({"calendars", "get", "business-days", "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto calendar = nlohmann::json::parse(r.out);
    const std::string id = std::to_string(calendar["id"].get<std::int64_t>());
    ctl::ApiClient api(*http::Url::Parse(server_), kToken, std::chrono::seconds(10));
    const auto edited = api.Call(http::Method::kPut, "/api/v1/calendars/" + id,
                                 nlohmann::json{{"version", calendar["version"]}, {"excluded_times", {"12:00-13:00"}}});
    ASSERT_TRUE(edited.ok()) << edited.status().message();
    ASSERT_EQ(edited->status, 200) << edited->body;
    r = Run({"diff", "-f", file});
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.out.find("~ update    calendar business-days (id " + id + ")"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("excluded_times: [\"12:00-13:00\"] -> []"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Plan: 0 to create, 0 to update, 0 to delete, 1 unchanged."), std::string::npos) << r.out;
    r = Run({"apply", "-f", file});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("calendar business-days: updated"), std::string::npos) << r.out;
    EXPECT_EQ(Run({"diff", "-f", file}).code, 0);

    // In use: the API refuses the delete and names the job.
    ExpectRefused({"calendars", "delete", "business-days"}, {"HTTP 409", "nightly"});

    // Pruned from the file together with its job: the job goes first, then the calendar.
    Write("jobs.yaml", "calendars: []\njobs: []\n");
    r = Run({"apply", "-f", file, "--prune"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    ASSERT_NE(r.out.find("calendar business-days: deleted"), std::string::npos) << r.out;
    EXPECT_LT(r.out.find("nightly: deleted"), r.out.find("calendar business-days: deleted")) << r.out;
    r = Run({"calendars", "list", "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(nlohmann::json::parse(r.out)["items"].empty()) << r.out;

    Write("bad.yaml", "calendars:\n  - name: x\n    holidays: [xmas]\n");
    ExpectRefused({"diff", "-f", (dir_ / "bad.yaml").string()},
                  {"bad.yaml: line 3: calendars[0] (name \"x\"): holidays: unknown field"});
    Write("bad.yaml", "calendars:\n  - name: x\n    excluded_weekdays: [funday]\n");
    ExpectRefused({"calendars", "apply", "-f", (dir_ / "bad.yaml").string()}, {"HTTP 400", "field: excluded_weekdays"});
}

TEST_F(SchedctlProcess, PauseWithANoteAndTheJobsHistoryInTheAuditLog) {
    Write("jobs.yaml", Jobs("0 30 4 * * ?", true));
    auto r = Run({"apply", "-f", (dir_ / "jobs.yaml").string()});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    r = Run({"jobs", "list", "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto listed = nlohmann::json::parse(r.out)["items"];
    ASSERT_FALSE(listed.empty());
    const std::string id = std::to_string(listed[0]["id"].get<std::int64_t>());
    const std::string name = listed[0]["name"];

    r = Run({"jobs", "pause", id, "--note", "db migration until 14:00"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    r = Run({"jobs", "get", id, "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["paused"]["note"], "db migration until 14:00") << r.out;
    r = Run({"jobs", "resume", id});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(Run({"jobs", "resume", id, "--note", "x"}).code, 1);

    // The job's history by name: resume, pause (with its note), create; newest first, by the token.
    r = Run({"audit", "--job", name, "--since", "1h"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(r.out.rfind("ID  AT", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("note: db migration until 14:00"), std::string::npos) << r.out;
    r = Run({"audit", "--job", id, "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto items = nlohmann::json::parse(r.out)["items"];
    ASSERT_EQ(items.size(), 3u) << r.out;
    EXPECT_EQ(items[0]["action"], "resume");
    EXPECT_EQ(items[1]["action"], "pause");
    EXPECT_EQ(items[2]["action"], "create");
    EXPECT_EQ(items[1]["actor"]["name"], "cluster-token");
    ExpectRefused({"audit", "--since", "soon"}, {"--since: expected a duration"});
}

TEST_F(SchedctlProcess, ServerAndTokenComeFromTheConfigFile) {
    Write("config.yaml", "server: " + server_ + "\ntoken: " + kToken + "\n");
    auto r = Run({"--config", (dir_ / "config.yaml").string(), "cluster", "status"}, {"SCHED_SERVER=", "SCHED_TOKEN="});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(r.out.rfind("leader: ", 0), 0u) << r.out;
    std::filesystem::permissions(dir_ / "config.yaml",
                                 std::filesystem::perms::group_read | std::filesystem::perms::others_read,
                                 std::filesystem::perm_options::add);
    r = Run({"--config", (dir_ / "config.yaml").string(), "cluster", "status"}, {"SCHED_SERVER=", "SCHED_TOKEN="});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("holds a token and others may read it"), std::string::npos) << r.err;
    std::filesystem::permissions(dir_ / "config.yaml",
                                 std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    r = Run({"--config", (dir_ / "config.yaml").string(), "cluster", "status"}, {"SCHED_SERVER=", "SCHED_TOKEN="});
    EXPECT_EQ(r.err, "");
    // Without a token the API answers 401, shown readably.
    ExpectRefused({"--server", server_, "jobs", "list"}, {"HTTP 401"}, {"SCHED_TOKEN="});
}

// One shard (the standalone node): no shards table; -o json carries the shards as they came.
TEST_F(SchedctlProcess, ClusterStatusOfOneShardHasNoShardsTableAndItsJsonCarriesTheShard) {
    auto r = Run({"cluster", "status"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(r.out.find("SHARD"), std::string::npos) << r.out;
    r = Run({"cluster", "status", "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto cluster = nlohmann::json::parse(r.out);
    EXPECT_EQ(cluster["shard_count"], 1) << r.out;
    ASSERT_EQ(cluster["shards"].size(), 1u) << r.out;
    EXPECT_EQ(cluster["shards"][0]["shard"], 0);
    EXPECT_EQ(cluster["shards"][0]["lease"], "master");
    EXPECT_EQ(cluster["shards"][0]["leader"], cluster["leader"]);
    EXPECT_EQ(cluster["shards"][0]["epoch"], cluster["epoch"]);
    // A lease taken since the column exists says since when.
    if (!cluster["leader"].is_null()) {
        EXPECT_TRUE(cluster["shards"][0]["held_since"].is_number()) << r.out;
    }
}

TEST_F(SchedctlProcess, ErrorsShowTheApiErrorOrTheUnreachableUrlAndExit1) {
    ExpectRefused({"jobs", "get", "999999"}, {"HTTP 404"});

    Write("bad.yaml", "jobs:\n  - name: x\n    app: a\n    handler: h\n    schedule_type: cron\n    retry_max: lots\n");
    ExpectRefused({"diff", "-f", (dir_ / "bad.yaml").string()},
                  {"bad.yaml: jobs[0] (name \"x\"): retry_max: expected an integer"});

    Write("bad-cron.yaml",
          "jobs:\n  - name: x\n    app: a\n    handler: h\n    schedule_type: cron\n"
          "    schedule_expr: \"not cron\"\n");
    ExpectRefused({"apply", "-f", (dir_ / "bad-cron.yaml").string()}, {"HTTP 400", "field: schedule_expr"});

    ExpectRefused({"--server", "http://127.0.0.1:1", "cluster", "status"},
                  {"cannot reach http://127.0.0.1:1/api/v1/cluster"});
}

// A workflow made through the API, operated with schedctl: list, trigger with params,
// its runs, a run's steps, a re-run the server refuses.
TEST_F(SchedctlProcess, WorkflowsAreListedTriggeredAndInspected) {
    Write("jobs.yaml",
          "jobs:\n"
          "  - name: extract\n    app: etl\n    handler: run\n    schedule_type: manual\n"
          "  - name: load\n    app: etl\n    handler: run\n    schedule_type: manual\n");
    auto r = Run({"apply", "-f", (dir_ / "jobs.yaml").string()});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    r = Run({"jobs", "list", "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    std::map<std::string, std::int64_t> ids;
    const auto jobs = nlohmann::json::parse(r.out);
    for (const auto& job : jobs["items"]) {
        ids[job["name"].get<std::string>()] = job["id"].get<std::int64_t>();
    }
    ASSERT_EQ(ids.size(), 2u) << r.out;
    ctl::ApiClient api(*http::Url::Parse(server_), kToken, std::chrono::seconds(10));
    const auto created = api.Call(
        http::Method::kPost, "/api/v1/workflows",
        nlohmann::json{
            {"name", "nightly-etl"},
            {"schedule_type", "manual"},
            {"steps", {{{"name", "extract"}, {"job_id", ids["extract"]}}, {{"name", "load"}, {"job_id", ids["load"]}}}},
            {"edges", {{{"parent", "extract"}, {"child", "load"}}}}});
    ASSERT_TRUE(created.ok()) << created.status().message();
    ASSERT_EQ(created->status, 201) << created->body;
    const std::string id = std::to_string(nlohmann::json::parse(created->body)["id"].get<std::int64_t>());

    r = Run({"workflows", "list"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(r.out.rfind("ID  NAME", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("nightly-etl"), std::string::npos) << r.out;
    r = Run({"workflows", "trigger", id, "--params", R"({"day":"2026-11-27"})", "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto run = nlohmann::json::parse(r.out);
    EXPECT_EQ(run["params"], nlohmann::json({{"day", "2026-11-27"}}));
    EXPECT_EQ(run["kind"], "manual");
    const std::string run_id = std::to_string(run["id"].get<std::int64_t>());

    r = Run({"workflows", "runs", id});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find(run_id), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("manual"), std::string::npos) << r.out;
    r = Run({"workflows", "run", run_id});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("STEP"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("extract"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("load"), std::string::npos) << r.out;
    // The server's refusal names the field (the run's state depends on the master: no executor
    // serves app etl, so its first step ends without running sooner or later).
    ExpectRefused({"workflows", "rerun", run_id, "--from-step", "nope"}, {"HTTP 400", "(field: from_step)"});
    r = Run({"workflows", "get", id, "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["steps"].size(), 2u) << r.out;
}

// A diamond workflow over four jobs, all in one file: applied from empty (the jobs first, then
// the workflow naming them), unchanged on a second apply, one update for an edited edge, and
// pruned before the job it runs.
TEST_F(SchedctlProcess, AWorkflowInTheFileAppliesAfterItsJobsAndIsPrunedBeforeThem) {
    const auto text = [](const std::string& c_to_d, bool with_workflow) {
        std::string t = "jobs:\n";
        for (const char* step : {"a", "b", "c", "d"}) {
            t += std::string("  - {name: job-") + step + ", app: etl, handler: " + step + ", schedule_type: manual}\n";
        }
        if (!with_workflow) return t + "workflows: []\n";
        return t +
               "workflows:\n"
               "  - name: diamond\n    schedule_type: cron\n    schedule_expr: \"0 0 2 * * ?\"\n"
               "    steps:\n"
               "      - {name: a, job: job-a}\n      - {name: b, job: job-b}\n"
               "      - {name: c, job: job-c}\n      - {name: d, job: job-d}\n"
               "    edges:\n"
               "      - {parent: a, child: b}\n      - {parent: a, child: c}\n"
               "      - {parent: b, child: d}\n      - {parent: c, child: d, condition: " +
               c_to_d + "}\n";
    };
    const std::string file = (dir_ / "flows.yaml").string();
    Write("flows.yaml", text("on-success", true));

    auto r = Run({"diff", "-f", file});
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.out.find("+ create    workflow diamond"), std::string::npos) << r.out;
    r = Run({"apply", "-f", file});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("Workflows: 1 to create, 0 to update, 0 to delete, 0 unchanged."), std::string::npos) << r.out;
    ASSERT_NE(r.out.find("workflow diamond: created"), std::string::npos) << r.out;
    EXPECT_LT(r.out.find("job-d: created"), r.out.find("workflow diamond: created")) << r.out;

    r = Run({"jobs", "list", "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    std::map<std::string, std::int64_t> job_ids;
    const auto listed_jobs = nlohmann::json::parse(r.out);
    for (const auto& job : listed_jobs["items"]) {
        job_ids[job["name"].get<std::string>()] = job["id"].get<std::int64_t>();
    }
    ASSERT_EQ(job_ids.size(), 4u) << r.out;
    r = Run({"workflows", "list", "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto workflows = nlohmann::json::parse(r.out)["items"];
    ASSERT_EQ(workflows.size(), 1u) << r.out;
    const auto& diamond = workflows[0];
    const std::string id = std::to_string(diamond["id"].get<std::int64_t>());
    ASSERT_EQ(diamond["steps"].size(), 4u) << r.out;
    EXPECT_EQ(diamond["steps"][3], (nlohmann::json{{"name", "d"}, {"job_id", job_ids["job-d"]}})) << r.out;
    EXPECT_EQ(diamond["edges"].size(), 4u) << r.out;
    EXPECT_EQ(diamond["schedule_expr"], "0 0 2 * * ?") << r.out;
    // Marked as the file's, by its name: the UI shows both read-only.
    EXPECT_EQ(diamond["managed_by"], "flows.yaml") << r.out;
    for (const auto& job : listed_jobs["items"]) EXPECT_EQ(job["managed_by"], "flows.yaml") << r.out;

    // A second apply changes nothing.
    r = Run({"apply", "-f", file});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("Plan: 0 to create, 0 to update, 0 to delete, 4 unchanged."), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Workflows: 0 to create, 0 to update, 0 to delete, 1 unchanged."), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("created"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("updated"), std::string::npos) << r.out;

    // managed_by cleared through the API (PUT with null) is drift that apply puts back.
    ctl::ApiClient api(*http::Url::Parse(server_), kToken, std::chrono::seconds(10));
    const std::string job_a = std::to_string(job_ids["job-a"]);
    r = Run({"jobs", "get", job_a, "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto cleared =
        api.Call(http::Method::kPut, "/api/v1/jobs/" + job_a,
                 nlohmann::json{{"version", nlohmann::json::parse(r.out)["version"]}, {"managed_by", nullptr}});
    ASSERT_TRUE(cleared.ok()) << cleared.status().message();
    ASSERT_EQ(cleared->status, 200) << cleared->body;
    EXPECT_TRUE(cleared->json["managed_by"].is_null()) << cleared->body;
    r = Run({"diff", "-f", file});
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.out.find("~ update    job-a (id " + job_a + ")\n    managed_by: null -> \"flows.yaml\"\n"),
              std::string::npos)
        << r.out;
    r = Run({"apply", "-f", file});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("job-a: updated"), std::string::npos) << r.out;

    // An edited edge: one update, with the version read.
    Write("flows.yaml", text("on-failure", true));
    r = Run({"diff", "-f", file});
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.out.find("~ update    workflow diamond (id " + id + ")\n    edges: "), std::string::npos) << r.out;
    r = Run({"apply", "-f", file});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("Workflows: 0 to create, 1 to update, 0 to delete, 0 unchanged."), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("workflow diamond: updated"), std::string::npos) << r.out;
    r = Run({"workflows", "get", id, "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto updated = nlohmann::json::parse(r.out);
    EXPECT_EQ(updated["edges"][3]["condition"], "on-failure") << r.out;
    EXPECT_EQ(updated["version"], diamond["version"].get<std::int64_t>() + 1) << r.out;
    EXPECT_EQ(Run({"diff", "-f", file}).code, 0);

    // Removed from the file: --prune deletes the workflow, before the job it ran.
    std::string pruned = text("", false);
    pruned.erase(pruned.find("  - {name: job-d"), pruned.find("workflows:") - pruned.find("  - {name: job-d"));
    Write("flows.yaml", pruned);
    r = Run({"apply", "-f", file});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(r.out.find("deleted"), std::string::npos) << "without --prune nothing is deleted\n" << r.out;
    r = Run({"apply", "-f", file, "--prune"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    ASSERT_NE(r.out.find("workflow diamond: deleted"), std::string::npos) << r.out;
    ASSERT_NE(r.out.find("job-d: deleted"), std::string::npos) << r.out;
    EXPECT_LT(r.out.find("workflow diamond: deleted"), r.out.find("job-d: deleted")) << r.out;
    r = Run({"workflows", "list", "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(nlohmann::json::parse(r.out)["items"].empty()) << r.out;

    Write("bad.yaml", "workflows:\n  - name: w\n    steps:\n      - {name: a, jobb: job-a}\n");
    ExpectRefused({"diff", "-f", (dir_ / "bad.yaml").string()},
                  {"bad.yaml: line 4: workflows[0] (name \"w\"): steps[0].jobb: unknown field"});
    // A step naming a job that exists neither in the cluster nor in the file: refused by name.
    Write("bad.yaml", "workflows:\n  - name: w\n    steps:\n      - {name: a, job: nowhere}\n");
    ExpectRefused({"apply", "-f", (dir_ / "bad.yaml").string()},
                  {"workflow w: not created: steps[0].job: no job named \"nowhere\""});
}

TEST_F(SchedctlProcess, WorkflowsCreateUpdateAndDeleteFromAFile) {
    Write("jobs.yaml",
          "jobs:\n"
          "  - {name: extract, app: etl, handler: run, schedule_type: manual}\n"
          "  - {name: load, app: etl, handler: run, schedule_type: manual}\n");
    auto r = Run({"apply", "-f", (dir_ / "jobs.yaml").string()});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    Write("wf.yaml",
          "name: etl\nsteps:\n  - {name: extract, job: extract}\n  - {name: load, job: load}\n"
          "edges:\n  - {parent: extract, child: load}\n");
    r = Run({"workflows", "create", "-f", (dir_ / "wf.yaml").string(), "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto created = nlohmann::json::parse(r.out);
    const std::string id = std::to_string(created["id"].get<std::int64_t>());
    EXPECT_EQ(created["steps"].size(), 2u) << r.out;
    EXPECT_EQ(created["schedule_type"], "manual") << r.out;
    EXPECT_TRUE(created["managed_by"].is_null()) << "made by hand, not by apply\n" << r.out;

    Write("edit.yaml", "description: nightly load\nedges:\n  - {parent: extract, child: load, condition: always}\n");
    r = Run({"workflows", "update", id, "-f", (dir_ / "edit.yaml").string()});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("workflow " + id + " updated (version 2)"), std::string::npos) << r.out;
    r = Run({"workflows", "get", id, "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto updated = nlohmann::json::parse(r.out);
    EXPECT_EQ(updated["description"], "nightly load");
    EXPECT_EQ(updated["edges"][0]["condition"], "always");
    EXPECT_EQ(updated["steps"].size(), 2u) << "steps left out keep their values";

    r = Run({"workflows", "delete", id});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("workflow " + id + " deleted"), std::string::npos) << r.out;
    ExpectRefused({"workflows", "get", id}, {"HTTP 404"});
}

TEST_F(SchedctlProcess, AlertRulesAreCreatedEditedTestedAndDeleted) {
    Write("jobs.yaml", Jobs("0 0 3 * * ?", false));
    auto r = Run({"apply", "-f", (dir_ / "jobs.yaml").string()});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const std::string rule_file = (dir_ / "pager.yaml").string();
    // A host name, not an address: the default address policy refuses loopback webhooks.
    Write("pager.yaml",
          "name: pager\nevents: [failed, timeout]\nconsecutive_failures: 2\n"
          "url: http://hooks.example:9/sched\nsecret: \"0123456789abcdef\"\n");
    r = Run({"alerts", "create", "-f", rule_file});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("alert rule 1 created (pager)"), std::string::npos) << r.out;

    r = Run({"alerts", "list"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(r.out.rfind("ID  NAME", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("failed,timeout"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(every job)"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("0123456789abcdef"), std::string::npos) << r.out;

    // Only what changes: the rest (and the secret, which never comes back) is the rule's.
    Write("edit.yaml", "events: [lost]\nenabled: false\n");
    r = Run({"alerts", "update", "1", "-f", (dir_ / "edit.yaml").string()});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("alert rule 1 updated (version 2)"), std::string::npos) << r.out;
    r = Run({"alerts", "get", "1", "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto rule = nlohmann::json::parse(r.out);
    EXPECT_EQ(rule["events"], nlohmann::json({"lost"}));
    EXPECT_EQ(rule["consecutive_failures"], 2);
    EXPECT_EQ(rule["has_secret"], true);
    EXPECT_EQ(rule["version"], 2);

    // A stale version in the file: the server's 409 and its message.
    Write("stale.yaml", "name: pager-2\nversion: 1\n");
    ExpectRefused({"alerts", "update", "1", "-f", (dir_ / "stale.yaml").string()},
                  {"HTTP 409", "changed since it was read"});

    // A disabled rule's test is refused (field enabled); enabled, it queues a marked delivery.
    ExpectRefused({"alerts", "test", "1"}, {"(field: enabled)"});
    Write("enable.yaml", "enabled: true\n");
    ASSERT_EQ(Run({"alerts", "update", "1", "-f", (dir_ / "enable.yaml").string()}).code, 0);
    r = Run({"alerts", "test", "1"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("test delivery 1 of alert rule 1 queued"), std::string::npos) << r.out;
    r = Run({"alerts", "deliveries", "--rule", "1"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(r.out.rfind("ID  RULE", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("(test)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("lost"), std::string::npos) << r.out;
    ExpectRefused({"alerts", "deliveries", "--rule", "x"}, {"--rule"});
    ExpectRefused({"alerts", "list", "--rule", "1"}, {"only alerts deliveries takes a rule"});

    Write("bad.yaml", "name: x\ncolour: red\n");
    ExpectRefused({"alerts", "create", "-f", (dir_ / "bad.yaml").string()}, {"colour: unknown field"});

    r = Run({"alerts", "delete", "1"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("alert rule 1 deleted"), std::string::npos) << r.out;
    ExpectRefused({"alerts", "get", "1"}, {"HTTP 404"});
}

TEST_F(SchedctlProcess, AlertRulesInTheFileNameTheirJobAndFollowDriftAndPrune) {
    const auto text = [](const std::string& events, bool with_rule) {
        std::string t = Jobs("0 0 3 * * ?", false);
        if (!with_rule) return t + "alerts: []\n";
        // A host name, not an address: the default address policy refuses loopback webhooks.
        return t +
               "alerts:\n"
               "  - name: pager\n    job: nightly\n    events: " +
               events +
               "\n    consecutive_failures: 2\n"
               "    url: http://hooks.example:9/sched\n    secret: \"0123456789abcdef\"\n"
               "  - name: everything\n    events: [lost]\n    url: http://hooks.example:9/all\n"
               "    secret: \"fedcba9876543210\"\n";
    };
    const std::string file = (dir_ / "ops.yaml").string();
    Write("ops.yaml", text("[failed, timeout]", true));
    auto r = Run({"diff", "-f", file});
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.out.find("+ create    alert-rule pager"), std::string::npos) << r.out;
    r = Run({"apply", "-f", file});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("Alert rules: 2 to create, 0 to update, 0 to delete, 0 unchanged."), std::string::npos)
        << r.out;
    // The job first: the rule names it.
    ASSERT_NE(r.out.find("alert-rule pager: created"), std::string::npos) << r.out;
    EXPECT_LT(r.out.find("nightly: created"), r.out.find("alert-rule pager: created")) << r.out;
    EXPECT_EQ(r.out.find("0123456789abcdef"), std::string::npos) << "the plan shows no secret\n" << r.out;

    r = Run({"jobs", "list", "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto nightly = nlohmann::json::parse(r.out)["items"][0];
    r = Run({"alerts", "list", "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    auto rules = nlohmann::json::parse(r.out)["items"];
    ASSERT_EQ(rules.size(), 2u) << r.out;
    const auto& pager = rules[0];
    EXPECT_EQ(pager["name"], "pager") << r.out;
    EXPECT_EQ(pager["job_id"], nightly["id"]) << r.out;
    EXPECT_EQ(pager["events"], nlohmann::json({"failed", "timeout"})) << r.out;
    EXPECT_EQ(pager["consecutive_failures"], 2) << r.out;
    EXPECT_EQ(pager["has_secret"], true) << r.out;
    EXPECT_EQ(pager["managed_by"], "ops.yaml") << r.out;
    EXPECT_TRUE(rules[1]["job_id"].is_null()) << r.out;
    EXPECT_EQ(rules[1]["managed_by"], "ops.yaml") << r.out;
    const std::string id = std::to_string(pager["id"].get<std::int64_t>());

    // A second apply changes nothing (the secret, never returned, is not compared).
    r = Run({"apply", "-f", file});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("Alert rules: 0 to create, 0 to update, 0 to delete, 2 unchanged."), std::string::npos)
        << r.out;

    // Edited through the API meanwhile: drift, which apply puts back with the version it read.
    ctl::ApiClient api(*http::Url::Parse(server_), kToken, std::chrono::seconds(10));
    const auto edited = api.Call(http::Method::kPut, "/api/v1/alert-rules/" + id,
                                 nlohmann::json{{"version", pager["version"]},
                                                {"name", "pager"},
                                                {"events", {"failed"}},
                                                {"url", "http://hooks.example:9/sched"},
                                                {"job_id", nightly["id"]},
                                                {"consecutive_failures", 2}});
    ASSERT_TRUE(edited.ok()) << edited.status().message();
    ASSERT_EQ(edited->status, 200) << edited->body;
    EXPECT_EQ(edited->json["managed_by"], "ops.yaml") << "a PUT without managed_by keeps it\n" << edited->body;
    r = Run({"diff", "-f", file});
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.out.find("~ update    alert-rule pager (id " + id +
                         ")\n    events: [\"failed\"] -> [\"failed\",\"timeout\"]\n"),
              std::string::npos)
        << r.out;
    r = Run({"apply", "-f", file});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("alert-rule pager: updated"), std::string::npos) << r.out;
    r = Run({"alerts", "get", id, "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto restored = nlohmann::json::parse(r.out);
    EXPECT_EQ(restored["events"], nlohmann::json({"failed", "timeout"})) << r.out;
    EXPECT_EQ(restored["job_id"], nightly["id"]) << r.out;
    EXPECT_EQ(restored["version"], pager["version"].get<std::int64_t>() + 2) << r.out;
    EXPECT_EQ(Run({"diff", "-f", file}).code, 0);

    // The file's change: one update.
    Write("ops.yaml", text("[failed, timeout, lost]", true));
    r = Run({"apply", "-f", file});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("Alert rules: 0 to create, 1 to update, 0 to delete, 1 unchanged."), std::string::npos)
        << r.out;

    // A rule made by hand is not the file's: only --prune deletes it, with the file's rules gone.
    Write("hand.yaml",
          "name: by-hand\nevents: [failed]\nurl: http://hooks.example:9/hand\nsecret: \"0123456789abcdef\"\n");
    ASSERT_EQ(Run({"alerts", "create", "-f", (dir_ / "hand.yaml").string()}).code, 0);
    Write("ops.yaml", text("", false));
    r = Run({"apply", "-f", file});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(r.out.find("deleted"), std::string::npos) << "without --prune nothing is deleted\n" << r.out;
    r = Run({"diff", "-f", file, "--prune"});
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.out.find("Alert rules: 0 to create, 0 to update, 3 to delete, 0 unchanged."), std::string::npos)
        << r.out;
    r = Run({"apply", "-f", file, "--prune"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("alert-rule pager: deleted"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("alert-rule by-hand: deleted"), std::string::npos) << r.out;
    r = Run({"alerts", "list", "-o", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(nlohmann::json::parse(r.out)["items"].empty()) << r.out;

    // Without an alerts: key the cluster's rules are not the file's business, even with --prune.
    ASSERT_EQ(Run({"alerts", "create", "-f", (dir_ / "hand.yaml").string()}).code, 0);
    Write("ops.yaml", Jobs("0 0 3 * * ?", false));
    r = Run({"apply", "-f", file, "--prune"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(r.out.find("Alert rules"), std::string::npos) << r.out;
    EXPECT_NE(Run({"alerts", "list", "-o", "json"}).out.find("by-hand"), std::string::npos);

    Write("bad.yaml", "alerts:\n  - name: x\n    job_id: 3\n    events: [failed]\n    url: http://h.example/\n");
    ExpectRefused({"diff", "-f", (dir_ / "bad.yaml").string()},
                  {"bad.yaml: line 3: alerts[0] (name \"x\"): job_id: not allowed"});
    // A rule naming a job that exists neither in the cluster nor in the file: refused by name.
    Write("bad.yaml",
          "alerts:\n  - name: x\n    job: nowhere\n    events: [failed]\n    url: http://h.example/\n"
          "    secret: \"0123456789abcdef\"\n");
    ExpectRefused({"apply", "-f", (dir_ / "bad.yaml").string()},
                  {"alert-rule x: not created: job: no job named \"nowhere\""});
}

// A "billion laughs" job file: 9 levels of 9 aliases, 387,420,489 leaves in 700 bytes. Run under
// a 1 GiB address-space limit, so that a schedctl which expands it fails this test by running out
// of memory (or by the timeout) instead of taking the machine with it.
TEST(SchedctlHostileFile, ABillionLaughsFileIsRefusedNamingItsLineWithinAMemoryLimit) {
    const testing::ScratchDir scratch("sched-schedctl-laughs-");
    const std::filesystem::path& dir = scratch.path();
    std::string text = "jobs:\n  - name: lol\n    app: a\n    handler: h\n    schedule_type: manual\n    params:\n";
    for (int level = 0; level < 9; ++level) {
        text += "      l" + std::to_string(level) + ": &l" + std::to_string(level) + " [";
        for (int i = 0; i < 9; ++i) {
            text += std::string(i ? ", " : "") + (level == 0 ? std::string("lol") : "*l" + std::to_string(level - 1));
        }
        text += "]\n";
    }
    const std::string file = (dir / "laughs.yaml").string();
    std::ofstream(file) << text;
    ChildProcess p({"/usr/bin/prlimit", "--as=1073741824", "--", SCHEDCTL_BIN, "--server", "http://127.0.0.1:1",
                    "apply", "--dry-run", "-f", file},
                   dir.string(), {"HOME=" + dir.string(), "XDG_CONFIG_HOME="});
    const auto code = p.WaitForExit(30s);
    ASSERT_TRUE(code.has_value()) << "still expanding after 30 s";
    EXPECT_EQ(*code, 1) << p.stderr_text();
    EXPECT_NE(p.stderr_text().find("laughs.yaml: line 12: the document expands to more than 250000 values"),
              std::string::npos)
        << p.stderr_text();
    EXPECT_EQ(p.stdout_text(), "") << "nothing of the expansion is printed";
}

}  // namespace
}  // namespace sched
