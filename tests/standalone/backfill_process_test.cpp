// Backfill end to end: a real scheduler-standalone process and the sink executor.
// A backfill over five past minutes runs exactly those five times, once each; a second
// identical backfill creates no fire and runs nothing.

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../support/scratch_dir.hpp"
#include "../support/tokens.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/common/testing/wait_for.hpp"

namespace sched {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;

constexpr std::int64_t kMinute = 60'000;

// The sink's lines ({"job_id", "scheduled_ms", "fire_id", ...}) of job `job_id`.
std::vector<nlohmann::json> SinkRuns(const std::filesystem::path& log, std::int64_t job_id) {
    std::vector<nlohmann::json> out;
    std::ifstream in(log);
    std::string line;
    while (std::getline(in, line)) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (!j.is_discarded() && j.value("job_id", std::int64_t{0}) == job_id) out.push_back(j);
    }
    return out;
}

class BackfillProcess : public ::testing::Test {
  protected:
    nlohmann::json Call(const std::string& method, const std::string& path, const nlohmann::json& body, int want) {
        auto [status, text] = testing::HttpCall(port_, method, path, body.is_null() ? "" : body.dump(), token_);
        EXPECT_EQ(status, want) << method << " " << path << " -> " << text;
        auto parsed = nlohmann::json::parse(text, nullptr, false);
        return parsed.is_discarded() ? nlohmann::json() : parsed;
    }
    // Polls the backfill until it is no longer running (at most 40 s).
    nlohmann::json WaitDone(std::int64_t id) {
        nlohmann::json b;
        const bool done = testing::WaitFor(
            [&] {
                b = Call("GET", "/api/v1/backfills/" + std::to_string(id), nullptr, 200);
                return b.value("state", "") != "running";
            },
            40s, 200ms);
        if (!done) ADD_FAILURE() << "backfill " << id << " still running after 40 s: " << b.dump();
        return b;
    }

    testing::ScratchDir scratch_{"sched-backfill-"};
    const std::filesystem::path& dir_ = scratch_.path();
    unsigned short port_ = 0;
    std::string token_;
};

TEST_F(BackfillProcess, ABackfillRunsExactlyTheRangeOnceAndARepeatCreatesNothing) {
    const auto config = dir_ / "standalone.yaml";
    std::ofstream(config) << "http:\n  listen: \"127.0.0.1:0\"\ndatabase:\n  url: \"sqlite://" +
                                 (dir_ / "data/s.db").string() + "\"\nlog:\n  level: info\n";
    ChildProcess node({SCHED_STANDALONE_BIN, "--config", config.string()}, dir_.string());
    port_ = testing::ListeningPort(node, 20s);
    ASSERT_NE(port_, 0) << node.stderr_text();
    auto token_line = node.WaitForStdoutLine("token (generated): ", 5s);
    ASSERT_TRUE(token_line) << node.stdout_text();
    token_ = token_line->substr(token_line->rfind(' ') + 1);

    const std::string executor_token = testing::CreateExecutorToken(port_, token_, "sink", {"sink"});
    const auto log = dir_ / "sink.log";
    ChildProcess sink({SCHED_SINK_BIN, "--app", "sink", "--endpoint", "http://127.0.0.1:" + std::to_string(port_),
                       "--token", executor_token, "--log", log.string(), "--instance", "a", "--spool",
                       (dir_ / "spool").string(), "--heartbeat", "200"},
                      dir_.string());
    ASSERT_TRUE(sink.WaitForStdoutLine("sink ready at", 20s)) << sink.stderr_text();

    // Every minute; the range is five minutes half an hour ago, before the job existed.
    const auto job = Call("POST", "/api/v1/jobs",
                          {{"name", "bf"},
                           {"app", "sink"},
                           {"handler", "sink"},
                           {"schedule_type", "cron"},
                           {"schedule_expr", "0 * * * * ?"}},
                          201);
    const std::int64_t job_id = job["id"].get<std::int64_t>();
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    const std::int64_t base = (now / kMinute - 30) * kMinute;
    const nlohmann::json range = {{"from", base}, {"to", base + 5 * kMinute}, {"overlap", "serial"}};
    const std::string path = "/api/v1/jobs/" + std::to_string(job_id) + "/backfill";

    auto dry = range;
    dry["dry_run"] = true;
    const auto plan = Call("POST", path, dry, 200);
    EXPECT_EQ(plan["would_run"], 5) << plan.dump();

    const auto first = Call("POST", path, range, 201);
    const auto done = WaitDone(first["id"].get<std::int64_t>());
    EXPECT_EQ(done["state"], "completed") << done.dump();
    EXPECT_EQ(done["counts"]["created"], 5) << done.dump();
    EXPECT_EQ(done["counts"]["succeeded"], 5) << done.dump();

    // The executor ran each time of the range once (its line is written before the callback
    // that ended the fire, so it is there by now).
    std::set<std::int64_t> expected;
    for (int i = 0; i < 5; ++i) expected.insert(base + i * kMinute);
    const auto in_range = [&] {
        std::multiset<std::int64_t> times;
        for (const auto& run : SinkRuns(log, job_id)) {
            const auto t = run["scheduled_ms"].get<std::int64_t>();
            if (t >= base && t < base + 5 * kMinute) times.insert(t);
        }
        return times;
    };
    auto ran = in_range();
    EXPECT_EQ(ran.size(), 5u);
    EXPECT_EQ(std::set<std::int64_t>(ran.begin(), ran.end()), expected);
    const auto fires = Call("GET", "/api/v1/fires?job_id=" + std::to_string(job_id) + "&limit=200", nullptr, 200);
    int backfill_fires = 0;
    for (const auto& f : fires["items"]) backfill_fires += f["kind"] == "backfill" ? 1 : 0;
    EXPECT_EQ(backfill_fires, 5);

    // The same backfill again: nothing new.
    const auto second = Call("POST", path, range, 201);
    const auto repeat = WaitDone(second["id"].get<std::int64_t>());
    EXPECT_EQ(repeat["state"], "completed") << repeat.dump();
    EXPECT_EQ(repeat["counts"]["created"], 0) << repeat.dump();
    EXPECT_EQ(repeat["counts"]["existing"], 5) << repeat.dump();
    std::this_thread::sleep_for(1s);  // a wrongly created fire would be dispatched by now
    EXPECT_EQ(in_range().size(), 5u);
    const auto after = Call("GET", "/api/v1/fires?job_id=" + std::to_string(job_id) + "&limit=200", nullptr, 200);
    int backfill_after = 0;
    for (const auto& f : after["items"]) backfill_after += f["kind"] == "backfill" ? 1 : 0;
    EXPECT_EQ(backfill_after, 5);

    sink.Signal(SIGTERM);
    EXPECT_TRUE(sink.WaitForExit(15s));
    node.Signal(SIGTERM);
    EXPECT_TRUE(node.WaitForExit(15s));
}

}  // namespace
}  // namespace sched
