// Workflows end to end (docs/workflows.md): a real scheduler-standalone process on
// SQLite and on a private MariaDB, and the sink executor. A scheduled diamond (a -> b, c -> d)
// runs each step once per scheduled time and d only after both b and c; a b that fails after its
// retry skips d with a recorded reason and fails the run; a re-run from b completes it; a manual
// trigger's params reach every step; a cycle is refused with its path.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../support/tokens.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/common/testing/private_mariadb.hpp"
#include "sched/common/testing/wait_for.hpp"

namespace sched {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;

std::string RandomSuffix() {
    std::random_device rd;
    return std::to_string(rd()) + std::to_string(rd());
}

bool EnvIs(const char* name, const char* value) {
    const char* v = std::getenv(name);
    return v && std::string(v) == value;
}

// The sink's lines, each {"job_id", "scheduled_ms", "attempt", "arrival_ms", "params", ...}.
std::vector<nlohmann::json> SinkRuns(const std::filesystem::path& log) {
    std::vector<nlohmann::json> out;
    std::ifstream in(log);
    std::string line;
    while (std::getline(in, line)) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (!j.is_discarded()) out.push_back(j);
    }
    return out;
}

enum class Backend { kSqlite, kMariaDb };

class WorkflowProcess : public ::testing::TestWithParam<Backend> {
  protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() / ("sched-workflow-" + RandomSuffix());
        std::filesystem::create_directories(dir_);
        std::string url = "sqlite://" + (dir_ / "data/s.db").string();
        if (GetParam() == Backend::kMariaDb) {
            std::string why;
            mariadb_ = testing::PrivateMariaDb::Start(SCHED_MARIADB_SCRIPT, "127.0.0.1", &why);
            if (!mariadb_) {
                if (EnvIs("SCHED_REQUIRE_MYSQL", "1")) FAIL() << "no private MariaDB: " << why;
                GTEST_SKIP() << "no private MariaDB: " << why;
            }
            url = mariadb_->url();
        }
        const auto config = dir_ / "standalone.yaml";
        std::ofstream(config) << "http:\n  listen: \"127.0.0.1:0\"\ndatabase:\n  url: \"" + url +
                                     "\"\nlog:\n  level: info\n";
        node_ = std::make_unique<ChildProcess>(
            std::vector<std::string>{SCHED_STANDALONE_BIN, "--config", config.string()}, dir_.string());
        port_ = testing::ListeningPort(*node_, 30s);
        ASSERT_NE(port_, 0) << node_->stderr_text();
        auto token_line = node_->WaitForStdoutLine("token (generated): ", 5s);
        ASSERT_TRUE(token_line) << node_->stdout_text();
        token_ = token_line->substr(token_line->rfind(' ') + 1);

        const std::string executor_token = testing::CreateExecutorToken(port_, token_, "sink", {"sink"});
        log_ = dir_ / "sink.log";
        sink_ = std::make_unique<ChildProcess>(
            std::vector<std::string>{SCHED_SINK_BIN, "--app", "sink", "--endpoint",
                                     "http://127.0.0.1:" + std::to_string(port_), "--token", executor_token, "--log",
                                     log_.string(), "--instance", "a", "--spool", (dir_ / "spool").string(),
                                     "--heartbeat", "200"},
            dir_.string());
        ASSERT_TRUE(sink_->WaitForStdoutLine("sink ready at", 20s)) << sink_->stderr_text();
    }
    void TearDown() override {
        if (sink_) sink_->Stop(5s);
        if (node_) node_->Stop(10s);
        mariadb_.reset();  // stopped by its PID
        if (!HasFailure()) std::filesystem::remove_all(dir_);
    }

    nlohmann::json Call(const std::string& method, const std::string& path, const nlohmann::json& body, int want) {
        auto [status, text] = testing::HttpCall(port_, method, path, body.is_null() ? "" : body.dump(), token_);
        EXPECT_EQ(status, want) << method << " " << path << " -> " << text;
        auto parsed = nlohmann::json::parse(text, nullptr, false);
        return parsed.is_discarded() ? nlohmann::json() : parsed;
    }
    std::int64_t CreateStepJob(const std::string& name, const nlohmann::json& params = nullptr) {
        nlohmann::json job = {{"name", name},      {"app", "sink"},
                              {"handler", "sink"}, {"schedule_type", "manual"},
                              {"retry_max", 1},    {"retry_backoff_ms", 100}};
        if (!params.is_null()) job["params"] = params.dump();
        return Call("POST", "/api/v1/jobs", job, 201)["id"].get<std::int64_t>();
    }
    nlohmann::json Run(std::int64_t id) {
        return Call("GET", "/api/v1/workflow-runs/" + std::to_string(id), nullptr, 200);
    }
    // Polls the run until it is no longer running (at most 40 s).
    nlohmann::json WaitEnded(std::int64_t id) {
        nlohmann::json run;
        const bool ended = testing::WaitFor(
            [&] {
                run = Run(id);
                return run.value("status", "") != "running";
            },
            40s, 200ms);
        if (!ended) ADD_FAILURE() << "run " << id << " still running after 40 s: " << run.dump();
        return run;
    }
    static nlohmann::json Step(const nlohmann::json& run, const std::string& name) {
        for (const auto& s : run["steps"]) {
            if (s["name"] == name) return s;
        }
        ADD_FAILURE() << "no step " << name << " in " << run.dump();
        return nlohmann::json::object();
    }

    std::filesystem::path dir_;
    std::filesystem::path log_;
    std::unique_ptr<testing::PrivateMariaDb> mariadb_;
    std::unique_ptr<ChildProcess> node_;
    std::unique_ptr<ChildProcess> sink_;
    unsigned short port_ = 0;
    std::string token_;
};

TEST_P(WorkflowProcess, ADiamondRunsOnScheduleFailsAtBAndARerunFromBCompletes) {
    const auto fail_flag = dir_ / "b-fails";
    std::map<std::string, std::int64_t> jobs = {
        {"a", CreateStepJob("wf-a")},
        {"b", CreateStepJob("wf-b", {{"fail_if_exists", fail_flag.string()}})},
        {"c", CreateStepJob("wf-c")},
        {"d", CreateStepJob("wf-d")},
    };
    std::map<std::int64_t, std::string> step_of;
    for (const auto& [step, id] : jobs) step_of[id] = step;

    // A cycle is refused with its path, and nothing is created.
    auto cyclic = Call("POST", "/api/v1/workflows",
                       {{"name", "cyclic"},
                        {"steps", {{{"name", "a"}, {"job_id", jobs["a"]}}, {{"name", "b"}, {"job_id", jobs["b"]}}}},
                        {"edges", {{{"parent", "a"}, {"child", "b"}}, {{"parent", "b"}, {"child", "a"}}}}},
                       400);
    EXPECT_EQ(cyclic["error"]["field"], "edges") << cyclic.dump();
    EXPECT_NE(cyclic["error"]["message"].get<std::string>().find("cycle a -> b -> a"), std::string::npos)
        << cyclic.dump();

    nlohmann::json steps = nlohmann::json::array();
    for (const auto& [step, id] : jobs) steps.push_back({{"name", step}, {"job_id", id}});
    const auto wf = Call("POST", "/api/v1/workflows",
                         {{"name", "diamond"},
                          {"schedule_type", "cron"},
                          {"schedule_expr", "*/2 * * * * ?"},
                          // Room for the re-run and the manual trigger beside a scheduled run
                          // that may still be going when the workflow is paused.
                          {"max_concurrent_runs", 3},
                          {"steps", steps},
                          {"edges",
                           {{{"parent", "a"}, {"child", "b"}},
                            {{"parent", "a"}, {"child", "c"}},
                            {{"parent", "b"}, {"child", "d"}},
                            {{"parent", "c"}, {"child", "d"}}}}},
                         201);
    const std::string wf_path = "/api/v1/workflows/" + std::to_string(wf["id"].get<std::int64_t>());

    // Scheduled runs: wait for two that succeeded.
    std::vector<std::int64_t> succeeded;
    ASSERT_TRUE(testing::WaitFor(
        [&] {
            succeeded.clear();
            const auto page = Call("GET", wf_path + "/runs?limit=100", nullptr, 200);
            for (const auto& r : page["items"]) {
                if (r["status"] == "succeeded") succeeded.push_back(r["id"].get<std::int64_t>());
            }
            return succeeded.size() >= 2;
        },
        40s, 250ms))
        << Call("GET", wf_path + "/runs", nullptr, 200).dump();

    // Each step of a succeeded run ran once at its scheduled time, d after both b and c.
    const auto runs = SinkRuns(log_);
    for (const std::int64_t id : succeeded) {
        const auto run = Run(id);
        const std::int64_t t = run["scheduled_time"].get<std::int64_t>();
        std::map<std::string, std::vector<std::int64_t>> arrivals;
        for (const auto& line : runs) {
            if (line["scheduled_ms"] != t || !step_of.contains(line["job_id"].get<std::int64_t>())) continue;
            arrivals[step_of[line["job_id"].get<std::int64_t>()]].push_back(line["arrival_ms"].get<std::int64_t>());
        }
        for (const auto& [step, id_unused] : jobs) {
            EXPECT_EQ(arrivals[step].size(), 1u) << "step " << step << " of run " << id << " at " << t;
            EXPECT_EQ(Step(run, step)["state"], "succeeded") << run.dump();
        }
        if (arrivals["d"].size() == 1 && arrivals["b"].size() == 1 && arrivals["c"].size() == 1) {
            EXPECT_GE(arrivals["d"][0], arrivals["b"][0]);
            EXPECT_GE(arrivals["d"][0], arrivals["c"][0]);
        }
    }

    // b fails from now on (both tries): the next run fails at b and d is skipped with the reason.
    std::ofstream(fail_flag) << "x";
    std::int64_t failed = 0;
    ASSERT_TRUE(testing::WaitFor(
        [&] {
            const auto page = Call("GET", wf_path + "/runs?limit=100", nullptr, 200);
            for (const auto& r : page["items"]) {
                if (r["status"] == "failed") failed = r["id"].get<std::int64_t>();
            }
            return failed != 0;
        },
        40s, 250ms));
    Call("POST", wf_path + "/pause", nullptr, 200);
    auto run = Run(failed);
    EXPECT_EQ(run["reason"], "step \"b\" failed") << run.dump();
    EXPECT_EQ(Step(run, "b")["state"], "failed");
    EXPECT_EQ(Step(run, "b")["attempts"], 2) << "the step failed after its retry: " << run.dump();
    EXPECT_EQ(Step(run, "c")["state"], "succeeded");
    const auto d = Step(run, "d");
    EXPECT_EQ(d["state"], "skipped") << run.dump();
    EXPECT_EQ(d["reason"], "upstream") << run.dump();
    EXPECT_EQ(d["message"], "parent \"b\" failed (edge on-success)") << run.dump();

    // The operator fixes b and re-runs from it: b and d run again, a and c do not.
    std::filesystem::remove(fail_flag);
    const std::size_t lines_before = SinkRuns(log_).size();
    Call("POST", "/api/v1/workflow-runs/" + std::to_string(failed) + "/rerun", {{"from_step", "b"}}, 200);
    run = WaitEnded(failed);
    EXPECT_EQ(run["status"], "succeeded") << run.dump();
    EXPECT_EQ(run["generation"], 1);
    std::multiset<std::string> again;
    const auto after = SinkRuns(log_);
    for (std::size_t i = lines_before; i < after.size(); ++i) {
        const auto job = after[i]["job_id"].get<std::int64_t>();
        if (after[i]["scheduled_ms"] == run["scheduled_time"] && step_of.contains(job)) again.insert(step_of[job]);
    }
    EXPECT_EQ(again, (std::multiset<std::string>{"b", "d"}));

    // A manual trigger (also while paused) passes its params to every step.
    const auto manual = Call("POST", wf_path + "/trigger", {{"params", {{"night", "2026-11-26"}}}}, 201);
    run = WaitEnded(manual["id"].get<std::int64_t>());
    EXPECT_EQ(run["status"], "succeeded") << run.dump();
    std::set<std::string> with_params;
    for (const auto& line : SinkRuns(log_)) {
        const auto job = line["job_id"].get<std::int64_t>();
        if (line["scheduled_ms"] == run["scheduled_time"] && step_of.contains(job) &&
            line["params"] == nlohmann::json({{"night", "2026-11-26"}})) {
            with_params.insert(step_of[job]);
        }
    }
    EXPECT_EQ(with_params, (std::set<std::string>{"a", "b", "c", "d"}));
}

INSTANTIATE_TEST_SUITE_P(Backends, WorkflowProcess, ::testing::Values(Backend::kSqlite, Backend::kMariaDb),
                         [](const auto& info) { return info.param == Backend::kSqlite ? "Sqlite" : "MariaDb"; });

}  // namespace
}  // namespace sched
