// Calendars and bounds in the real scheduler-standalone process: a job bound to a
// calendar skips an excluded day with a ledger row of reason `calendar`, and bounded jobs
// (end_at, max_runs) complete by themselves.

#include <signal.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sched/common/node_id.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/common/testing/wait_for.hpp"

#include "../support/scratch_dir.hpp"

namespace sched {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;

constexpr const char* kToken = "calendar-test-token-0123456789ab";

std::string UtcDate(std::int64_t ms) {
    const std::time_t t = ms / 1000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[16];
    std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
    return buf;
}

std::int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Polls every 100ms (over HTTP: the process under test should not feel the polling).
bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    return testing::WaitFor(done, timeout, 100ms);
}

class CalendarProcess : public ::testing::Test {
  protected:
    void SetUp() override {
        std::ofstream(dir_ / "standalone.yaml")
            << "token: \"" << kToken << "\"\nhttp:\n  listen: \"127.0.0.1:0\"\ndatabase:\n  url: \"sqlite://"
            << (dir_ / "s.db").string() << "\"\nlog:\n  level: warn\n";
        process_ = std::make_unique<ChildProcess>(
            std::vector<std::string>{SCHED_STANDALONE_BIN, "--config", (dir_ / "standalone.yaml").string()},
            dir_.string());
        port_ = ListeningPort(*process_, 20s);
        ASSERT_NE(port_, 0) << process_->stderr_text();
    }
    void TearDown() override {
        if (process_) (void)process_->Stop(10s);
    }

    nlohmann::json Call(const std::string& method, const std::string& path, const nlohmann::json& body, int want) {
        auto [status, text] = testing::HttpCall(port_, method, path, body.is_null() ? "" : body.dump(), kToken);
        EXPECT_EQ(status, want) << method << " " << path << ": " << text;
        return text.empty() ? nlohmann::json() : nlohmann::json::parse(text, nullptr, false);
    }

    // Reads job `id` until it completed for `reason`, at most 20 s; returns the job as last read.
    nlohmann::json WaitCompleted(const std::string& id, const std::string& reason) {
        nlohmann::json job;
        WaitFor(
            [&] {
                job = Call("GET", "/api/v1/jobs/" + id, nullptr, 200);
                return job["completed_reason"] == reason;
            },
            20s);
        return job;
    }

    testing::ScratchDir scratch_{"sched-calendar-"};
    const std::filesystem::path& dir_ = scratch_.path();
    std::unique_ptr<ChildProcess> process_;
    unsigned short port_ = 0;
};

TEST_F(CalendarProcess, AnExcludedDayIsSkippedWithALedgerRowAndBoundedJobsComplete) {
    const std::int64_t now = NowMs();
    // Today and tomorrow (UTC) are excluded: every second of the job's next hours falls in them.
    Call("POST", "/api/v1/calendars",
         {{"name", "maintenance"}, {"excluded_dates", {UtcDate(now), UtcDate(now + 86'400'000)}}}, 201);
    const auto excluded = Call("POST", "/api/v1/jobs",
                               {{"name", "excluded"},
                                {"app", "demo"},
                                {"handler", "echo"},
                                {"schedule_type", "cron"},
                                {"schedule_expr", "* * * * * ?"},
                                {"calendar", "maintenance"}},
                               201);
    const auto ending = Call("POST", "/api/v1/jobs",
                             {{"name", "ending"},
                              {"app", "demo"},
                              {"handler", "echo"},
                              {"schedule_type", "cron"},
                              {"schedule_expr", "* * * * * ?"},
                              {"end_at", now + 3000}},
                             201);
    const auto counted = Call("POST", "/api/v1/jobs",
                              {{"name", "counted"},
                               {"app", "demo"},
                               {"handler", "echo"},
                               {"schedule_type", "cron"},
                               {"schedule_expr", "* * * * * ?"},
                               {"max_runs", 2}},
                              201);
    const auto id = [](const nlohmann::json& j) {
        return std::to_string(j["id"].get<std::int64_t>());
    };

    nlohmann::json rows;
    ASSERT_TRUE(WaitFor(
        [&] {
            rows = Call("GET", "/api/v1/fires?reason=calendar&job_id=" + id(excluded), nullptr, 200)["items"];
            return rows.is_array() && !rows.empty();
        },
        20s))
        << process_->stderr_text();
    ASSERT_EQ(rows.size(), 1u) << rows.dump();
    EXPECT_EQ(rows[0]["status"], "skipped");
    EXPECT_GT(rows[0]["skipped_count"].get<std::int64_t>(), 1);
    EXPECT_GE(rows[0]["skipped_until"].get<std::int64_t>(), rows[0]["scheduled_time"].get<std::int64_t>());
    // Nothing of that job ran or was planned to run: its only row is the ledger's.
    const auto all = Call("GET", "/api/v1/fires?job_id=" + id(excluded), nullptr, 200)["items"];
    EXPECT_EQ(all.size(), 1u) << all.dump();

    nlohmann::json job = WaitCompleted(id(ending), "end_at");
    ASSERT_EQ(job["completed_reason"], "end_at") << job.dump();
    EXPECT_TRUE(job["enabled"].get<bool>());
    EXPECT_TRUE(job["next_fire_time"].is_null());
    const std::int64_t end_at = job["end_at"].get<std::int64_t>();
    const auto ending_fires = Call("GET", "/api/v1/fires?job_id=" + id(ending), nullptr, 200)["items"];
    EXPECT_FALSE(ending_fires.empty());
    for (const auto& f : ending_fires) EXPECT_LE(f["scheduled_time"].get<std::int64_t>(), end_at) << f.dump();

    job = WaitCompleted(id(counted), "max_runs");
    ASSERT_EQ(job["completed_reason"], "max_runs") << job.dump();
    EXPECT_EQ(job["planned_runs"], 2);
    EXPECT_EQ(Call("GET", "/api/v1/fires?job_id=" + id(counted), nullptr, 200)["items"].size(), 2u);

    // A higher max_runs brings it back.
    const auto back = Call("PUT", "/api/v1/jobs/" + id(counted), {{"version", job["version"]}, {"max_runs", 5}}, 200);
    EXPECT_TRUE(back["completed_at"].is_null()) << back.dump();
    EXPECT_TRUE(back["next_fire_time"].is_number()) << back.dump();
}

}  // namespace
}  // namespace sched
