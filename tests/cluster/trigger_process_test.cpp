// scheduler-trigger and demo-client as real processes over real HTTP, on SQLite and MariaDB.

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../support/scratch_dir.hpp"
#include "../support/tokens.hpp"
#include "sched/common/node_id.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/common/testing/wait_for.hpp"
#include "sched/db/testing/test_database.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"
#include "sched/store/registry.hpp"

namespace sched {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;

// Polls every 20ms (over HTTP: the process under test should not feel the polling).
bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    return testing::WaitFor(done, timeout, 20ms);
}

std::int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

class TriggerProcessTest : public db::testing::MigratedDbTest {
  protected:
    void TearDown() override {
        client_.reset();
        trigger_.reset();
        DbTest::TearDown();
    }

    void StartTrigger(const std::vector<std::string>& env = {}, const std::string& extra_yaml = "") {
        const auto config = dir_ / "trigger.yaml";
        std::ofstream(config) << "token: \"t0ken\"\n"
                                 "http:\n  listen: \"127.0.0.1:0\"\n  access-log: errors\n"
                                 "database:\n  url: \""
                              << test_db().url().ToString()
                              << "\"\n"
                                 "election:\n  tick: 200ms\n  ttl: 1s\n  margin: 300ms\n"
                                 "slave:\n  poll-interval: 200ms\n"
                              << extra_yaml;
        trigger_ = std::make_unique<ChildProcess>(
            std::vector<std::string>{SCHED_TRIGGER_BIN, "--config", config.string()}, dir_.string(), env);
        port_ = testing::ListeningPort(*trigger_, 30s);
        ASSERT_NE(port_, 0) << trigger_->stderr_text();
    }

    // Starts a trigger node on the config `yaml` and expects it to refuse to start (exit 2) with
    // each of `needles` in its stderr.
    void ExpectRefusedAtStart(const std::string& yaml, const std::vector<std::string>& needles) {
        const auto config = dir_ / "refused.yaml";
        std::ofstream(config) << yaml;
        ChildProcess refused({SCHED_TRIGGER_BIN, "--config", config.string()}, dir_.string());
        const auto code = refused.WaitForExit(20s);
        ASSERT_TRUE(code);
        EXPECT_EQ(*code, 2) << refused.stderr_text();
        for (const auto& needle : needles) {
            EXPECT_NE(refused.stderr_text().find(needle), std::string::npos) << needle << ": " << refused.stderr_text();
        }
    }

    // Starts demo-client number `n` (app demo) and waits until n + 1 instances are registered.
    std::unique_ptr<ChildProcess> LaunchClient(int n) {
        const auto config = dir_ / ("client-" + std::to_string(n) + ".yaml");
        std::ofstream(config) << "executor:\n  app: demo\n  web-endpoints: [\"http://127.0.0.1:" << port_
                              << "\"]\n  token: \"t0ken\"\n  heartbeat-interval: 1s\n  spool-dir: \""
                              << (dir_ / ("spool-" + std::to_string(n))).string()
                              << "\"\n  http:\n    listen: \"127.0.0.1:0\"\n";
        auto client = std::make_unique<ChildProcess>(
            std::vector<std::string>{SCHED_DEMO_CLIENT_BIN, "--config", config.string()}, dir_.string());
        store::ExecutorRepository executors(db());
        EXPECT_TRUE(WaitFor(
            [&] {
                auto live = executors.ListLive("demo", 30000);
                return live.ok() && live->size() >= static_cast<std::size_t>(n + 1);
            },
            30s))
            << client->stderr_text();
        return client;
    }
    void StartClient() { client_ = LaunchClient(0); }

    // A job of app demo, not yet created: the case sets what else it tests, then Create()s it.
    static model::Job DemoJob(const std::string& name, const std::string& handler, sched::ScheduleType type,
                              const std::string& expr, std::optional<std::int64_t> first) {
        model::Job j;
        j.name = name;
        j.app = "demo";
        j.handler = handler;
        j.schedule_type = type;
        j.schedule_expr = expr;
        j.next_fire_time = first;
        return j;
    }
    // A job of app demo that fires once, at `at`.
    static model::Job OnceJob(const std::string& name, const std::string& handler, std::int64_t at) {
        return DemoJob(name, handler, sched::ScheduleType::kOnce, std::to_string(at), at);
    }
    Result<model::Job> Create(const model::Job& j) { return store::JobRepository(db()).Create(j); }

    model::Job CreateJob(const std::string& name, const std::string& type, const std::string& expr,
                         std::optional<std::int64_t> first, const std::string& handler = "echo") {
        auto j = DemoJob(name, handler, *sched::ParseScheduleType(type), expr, first);
        j.params = R"({"from":"test"})";
        auto created = Create(j);
        EXPECT_TRUE(created.ok()) << created.status().ToString();
        return *created;
    }

    std::vector<model::Fire> Fires(std::int64_t job_id) {
        auto fires = store::FireRepository(db()).List({.job_id = job_id, .limit = 1000});
        EXPECT_TRUE(fires.ok()) << fires.status().ToString();
        return fires.ok() ? *fires : std::vector<model::Fire>{};
    }

    // A counter of the node's /metrics (0 when absent or unreadable).
    double NodeCounter(const std::string& name) {
        const auto res = testing::HttpRequest(static_cast<unsigned short>(port_), "GET", "/metrics");
        if (res.status != 200) return 0;
        const auto at = res.body.find("\n" + name + " ");
        if (at == std::string::npos) return 0;
        return std::stod(res.body.substr(at + name.size() + 2));
    }
    double MasterWakes() { return NodeCounter("sched_master_wakes_total"); }
    double ScansSkipped() { return NodeCounter("sched_master_scans_skipped_total"); }

    // Whether the job has exactly `count` fires and every one has ended.
    bool AllEnded(std::int64_t job_id, std::size_t count) {
        const auto all = Fires(job_id);
        return all.size() == count &&
               std::all_of(all.begin(), all.end(), [](const auto& x) { return model::IsFinal(x.status); });
    }

    // How many of the job's fires succeeded so far.
    int Succeeded(std::int64_t job_id) {
        const auto fires = Fires(job_id);
        return static_cast<int>(std::count_if(fires.begin(), fires.end(), [](const model::Fire& f) {
            return f.status == model::FireStatus::kSucceeded;
        }));
    }

    // Waits up to 15 s until the job's one fire has ended; returns it (nullopt, a failure, if not).
    std::optional<model::Fire> OnlyFireEnded(std::int64_t job_id) {
        const bool ended = WaitFor(
            [&] {
                auto all = Fires(job_id);
                return all.size() == 1 && model::IsFinal(all[0].status);
            },
            15s);
        EXPECT_TRUE(ended) << trigger_->stderr_text();
        if (!ended) return std::nullopt;
        return Fires(job_id).front();
    }

    testing::ScratchDir scratch_{"sched-trigger-"};
    const std::filesystem::path& dir_ = scratch_.path();
    std::unique_ptr<ChildProcess> trigger_;
    std::unique_ptr<ChildProcess> client_;
    int port_ = 0;
};

TEST_P(TriggerProcessTest, EverySecondJobFiresEachSecondOnceAndPausedJobStops) {
    StartTrigger();
    StartClient();
    const std::int64_t first = (NowMs() / 1000 + 2) * 1000;
    auto job = CreateJob("every-second", "cron", "* * * * * ?", first);
    constexpr int kSeconds = 4;
    // Wait until every fire up to first + 3 s has finished.
    ASSERT_TRUE(WaitFor(
        [&] {
            int done = 0;
            for (const auto& f : Fires(job.id)) {
                if (f.scheduled_time < first + std::int64_t{kSeconds} * 1000 && model::IsFinal(f.status)) ++done;
            }
            return done >= kSeconds;
        },
        20s))
        << trigger_->stderr_text();

    std::map<std::int64_t, int> per_time;
    for (const auto& f : Fires(job.id)) {
        if (f.scheduled_time >= first + std::int64_t{kSeconds} * 1000) continue;
        ++per_time[f.scheduled_time];
        EXPECT_EQ(f.status, model::FireStatus::kSucceeded) << f.result_message.value_or("");
        EXPECT_EQ(f.result_message, R"({"from":"test"})");  // the echo handler returns its params
        ASSERT_TRUE(f.started_at);
        // Lag is a benchmark figure; here only a sanity bound that a broken timer would miss
        // (the run's start: dispatched_at is its plan or claim, before its time).
        EXPECT_LT(*f.started_at - f.scheduled_time, 1000) << "fire " << f.id;
    }
    ASSERT_EQ(per_time.size(), static_cast<std::size_t>(kSeconds));
    for (int i = 0; i < kSeconds; ++i) EXPECT_EQ(per_time[first + std::int64_t{i} * 1000], 1) << "second " << i;

    // The only node leads; its lease was renewed within the last tick (200 ms) plus slack, and
    // its term runs at most ttl - margin (700 ms) ahead.
    const auto [code, body] = sched::testing::HttpGet(static_cast<unsigned short>(port_), "/status");
    ASSERT_EQ(code, 200) << body;
    const auto status = nlohmann::json::parse(body);
    EXPECT_EQ(status.at("role"), "master") << body;
    ASSERT_TRUE(status.at("lease_age_ms").is_number()) << body;
    EXPECT_GE(status.at("lease_age_ms").get<std::int64_t>(), 0) << body;
    EXPECT_LT(status.at("lease_age_ms").get<std::int64_t>(), 700) << body;
    EXPECT_LE(status.at("lease_valid_for_ms").get<std::int64_t>(), 700) << body;
    EXPECT_GT(status.at("lease_valid_for_ms").get<std::int64_t>(), 0) << body;

    // Pause: the job gets no new fire times, and the ones already planned are skipped.
    auto stored = store::JobRepository(db()).Get(job.id);
    stored->enabled = false;
    ASSERT_TRUE(store::JobRepository(db()).Update(*stored, stored->version).ok());
    const std::int64_t paused_at = NowMs();
    std::this_thread::sleep_for(3s);
    // A scan that read the job before the pause committed planned it up to the lookahead (3 s
    // by default) ahead of its own time, which is before paused_at; a fire later than that was
    // planned after the pause.
    constexpr std::int64_t kLookaheadMs = 3000;
    for (const auto& f : Fires(job.id)) {
        if (f.scheduled_time > paused_at + kLookaheadMs) {
            ADD_FAILURE() << "fire planned after the pause: " << f.scheduled_time;
        }
        // A fire is claimed up to claim-ahead + group-span (100 + 400 ms) before it is due; one
        // claimed before the pause committed runs, a later one is skipped.
        if (f.scheduled_time > paused_at + 500 && f.status == model::FireStatus::kSucceeded) {
            ADD_FAILURE() << "a paused job ran at " << f.scheduled_time;
        }
    }
}

// Least privilege: a service holding only an executor token scoped to its app (from the token table,
// as the web module checks it) can use a trigger node's executor API, for its app only; the
// node-to-node routes stay with the cluster token.
TEST_P(TriggerProcessTest, AnAppScopedExecutorTokenOpensOnlyItsAppsOnTheExecutorApi) {
    const std::string demo = sched::testing::StoreExecutorToken(db(), "demo-svc", {"demo"});
    StartTrigger({"SCHED_EXECUTOR_TOKEN=ex3cutor"});
    const auto port = static_cast<unsigned short>(port_);
    const std::string beat = R"({"app":"demo","address":"127.0.0.1:1","handlers":["echo"],"capacity":1,"running":0})";
    const std::string other = R"({"app":"other","address":"127.0.0.1:2","handlers":["echo"]})";
    EXPECT_EQ(sched::testing::HttpCall(port, "POST", "/api/v1/registry/heartbeat", beat, demo).first, 200);
    const auto foreign = sched::testing::HttpCall(port, "POST", "/api/v1/registry/heartbeat", other, demo);
    EXPECT_EQ(foreign.first, 403) << foreign.second;
    EXPECT_NE(foreign.second.find("\"field\":\"app\""), std::string::npos) << foreign.second;
    EXPECT_EQ(
        sched::testing::HttpCall(port, "POST", "/api/v1/locks/k/acquire", R"({"app":"demo","lease_ms":5000})", demo)
            .first,
        200);
    EXPECT_EQ(
        sched::testing::HttpCall(port, "POST", "/api/v1/locks/k/acquire", R"({"app":"other","lease_ms":5000})", demo)
            .first,
        403);
    EXPECT_EQ(sched::testing::HttpCall(port, "POST", "/api/v1/registry/heartbeat", beat, "t0ken").first, 200);
    EXPECT_EQ(sched::testing::HttpCall(port, "POST", "/api/v1/registry/heartbeat", beat, "wrong").first, 401);
    // A configured executor token is what slaves send; it opens the executor API only as a
    // token of the table does (this one is not in it).
    EXPECT_EQ(sched::testing::HttpCall(port, "POST", "/api/v1/registry/heartbeat", beat, "ex3cutor").first, 401);
    auto registered = store::ExecutorRepository(db()).List();
    ASSERT_TRUE(registered.ok());
    ASSERT_EQ(registered->size(), 1u);
    EXPECT_EQ(registered->front().app, "demo");
    // Node-to-node routes stay with the cluster token.
    const std::string fires = R"({"epoch":1,"fire_ids":[]})";
    EXPECT_EQ(sched::testing::HttpCall(port, "POST", "/internal/v1/fires", fires, demo).first, 401);
    EXPECT_EQ(sched::testing::HttpCall(port, "POST", "/internal/v1/fires", fires, "ex3cutor").first, 401);
    EXPECT_NE(sched::testing::HttpCall(port, "POST", "/internal/v1/fires", fires, "t0ken").first, 401);
}

TEST_P(TriggerProcessTest, TheRemovedExecutorTokenKeyIsRefusedAtStart) {
    // Nodes no longer send executors a token (they sign their calls): a config that still sets
    // one is refused with a pointer to what replaced it, not silently ignored.
    ExpectRefusedAtStart("token: \"t0ken\"\nslave:\n  executor-token: \"ex3cutor\"\n",
                         {"slave.executor-token", "signing key"});
}

TEST_P(TriggerProcessTest, AMalformedAdvertisedAddressIsRefusedAtStart) {
    ExpectRefusedAtStart("token: \"t0ken\"\nadvertised-address: \"nowhere\"\n", {"advertised-address"});
}

TEST_P(TriggerProcessTest, FixedRateAndFixedDelayKeepTheirCadence) {
    StartTrigger();
    StartClient();
    const std::int64_t start = (NowMs() / 1000 + 2) * 1000;
    auto rate = CreateJob("rate", "fixed-rate", "500ms", start);
    auto d = DemoJob("delay", "sleep", sched::ScheduleType::kFixedDelay, "300ms", start);
    d.params = R"({"ms":200})";
    auto delay = Create(d);
    ASSERT_TRUE(delay.ok());
    ASSERT_TRUE(WaitFor([&] { return Succeeded(rate.id) >= 6 && Succeeded(delay->id) >= 4; }, 20s))
        << trigger_->stderr_text();

    // fixed-rate: every 500 ms on the dot, once each.
    std::set<std::int64_t> rate_times;
    for (const auto& f : Fires(rate.id)) {
        EXPECT_EQ((f.scheduled_time - start) % 500, 0) << f.scheduled_time;
        EXPECT_TRUE(rate_times.insert(f.scheduled_time).second);
    }
    // fixed-delay: each run starts at least 300 ms after the previous one finished.
    auto runs = Fires(delay->id);
    std::sort(runs.begin(), runs.end(),
              [](const auto& a, const auto& b) { return a.scheduled_time < b.scheduled_time; });
    for (std::size_t i = 1; i < runs.size(); ++i) {
        if (!runs[i - 1].finished_at) continue;
        EXPECT_GE(runs[i].scheduled_time, *runs[i - 1].finished_at + 300) << "run " << i;
        EXPECT_LT(runs[i].scheduled_time, *runs[i - 1].finished_at + 300 + 1500) << "run " << i << " waited too long";
    }
}

TEST_P(TriggerProcessTest, ManualTriggerRunsOnceAndFailuresAreRetried) {
    StartTrigger();
    StartClient();
    auto manual = CreateJob("manual", "manual", "", std::nullopt);
    model::Fire f;
    f.job_id = manual.id;
    f.scheduled_time = NowMs();
    f.kind = model::FireKind::kManual;
    auto id = db().Run([&](soci::session& s) { return store::FireRepository::InsertIfAbsent(s, db().dialect(), f); });
    ASSERT_TRUE(id.ok() && id->has_value());
    ASSERT_TRUE(
        WaitFor([&] { return store::FireRepository(db()).Get(**id)->status == model::FireStatus::kSucceeded; }, 15s))
        << trigger_->stderr_text();
    EXPECT_EQ(Fires(manual.id).size(), 1u);

    // A failing handler with two retries: three attempts, all failed, each a row of its own.
    const std::int64_t at = NowMs() + 500;
    auto flaky = OnceJob("flaky", "fail", at);
    flaky.params = R"({"message":"planned failure"})";
    flaky.retry_max = 2;
    flaky.retry_backoff_ms = 200;
    auto created = Create(flaky);
    ASSERT_TRUE(created.ok());
    ASSERT_TRUE(WaitFor([&] { return AllEnded(created->id, 3); }, 20s)) << trigger_->stderr_text();
    std::set<int> attempts;
    for (const auto& x : Fires(created->id)) {
        attempts.insert(x.attempt);
        EXPECT_EQ(x.status, model::FireStatus::kFailed);
        EXPECT_EQ(x.scheduled_time, at);
    }
    EXPECT_EQ(attempts, (std::set<int>{0, 1, 2}));
}

// The master probes only every 30 s (scans fully every 60 s, and heartbeats run out only after
// 30 s: node-ttl 60 s), so only wakes can bring work to it sooner: a manual trigger through a separate web server (POST
// /internal/v1/master/wake over HTTP) and the retries its failed result leaves (the result lands on the node's executor
// API: a wake in process) run within seconds.
TEST_P(TriggerProcessTest, WritesElsewhereWakeAMasterThatProbesRarely) {
    StartTrigger({}, "scheduler:\n  probe-interval: 30s\n  scan-idle-interval: 60s\n  node-ttl: 60s\n");
    StartClient();
    const auto web_config = dir_ / "web.yaml";
    std::ofstream(web_config) << "token: \"t0ken\"\nhttp:\n  listen: \"127.0.0.1:0\"\n  access-log: errors\n"
                                 "database:\n  url: \""
                              << test_db().url().ToString() << "\"\n";
    ChildProcess web({SCHED_WEB_BIN, "--config", web_config.string()}, dir_.string());
    const int web_port = testing::ListeningPort(web, 30s);
    ASSERT_NE(web_port, 0) << web.stderr_text();
    // The master's first scans are behind it and it has gone quiet: nothing due, nothing to do.
    ASSERT_TRUE(WaitFor([&] { return ScansSkipped() >= 1; }, 20s)) << trigger_->stderr_text();

    auto flaky = DemoJob("flaky", "fail", sched::ScheduleType::kManual, "", std::nullopt);
    flaky.params = R"({"message":"planned failure"})";
    flaky.retry_max = 2;
    flaky.retry_backoff_ms = 200;
    auto created = Create(flaky);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    const auto started = std::chrono::steady_clock::now();
    const auto res = testing::HttpRequest(static_cast<unsigned short>(web_port), "POST",
                                          "/api/v1/jobs/" + std::to_string(created->id) + "/trigger", "{}", "t0ken");
    ASSERT_EQ(res.status / 100, 2) << res.body;
    ASSERT_TRUE(WaitFor([&] { return AllEnded(created->id, 3); }, 20s)) << trigger_->stderr_text() << web.stderr_text();
    const auto took = std::chrono::steady_clock::now() - started;
    // Three attempts, two backoffs of 200-400 ms: a few seconds with wakes; at least one probe
    // interval (30 s) without.
    EXPECT_LT(took, 10s) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
    EXPECT_GE(MasterWakes(), 3) << "the trigger, and each of the two failures that left a retry";
}

TEST_P(TriggerProcessTest, SigtermReleasesTheLeaseAndMarksTheNodeStopped) {
    StartTrigger();
    ASSERT_TRUE(WaitFor(
        [&] {
            auto owner = db().Run([](soci::session& s) {
                std::string o;
                soci::indicator ind = soci::i_null;
                s << "SELECT owner FROM scheduler_lock WHERE namespace = 'master'", soci::into(o, ind);
                return ind == soci::i_ok ? o : std::string();
            });
            return owner.ok() && !owner->empty();
        },
        15s));
    trigger_->Signal(SIGTERM);
    auto code = trigger_->WaitForExit(15s);
    ASSERT_TRUE(code) << "did not stop on SIGTERM";
    EXPECT_EQ(*code, 0) << trigger_->stderr_text();
    auto owner = db().Run([](soci::session& s) {
        soci::indicator ind = soci::i_null;
        std::string o;
        s << "SELECT owner FROM scheduler_lock WHERE namespace = 'master'", soci::into(o, ind);
        return ind == soci::i_null;
    });
    EXPECT_TRUE(*owner) << "the lease was not released";
    auto nodes = store::TriggerNodeRepository(db()).List();
    ASSERT_EQ(nodes->size(), 1u);
    EXPECT_EQ(nodes->front().state, "stopped");
}

TEST_P(TriggerProcessTest, MisfirePoliciesAfterTheClusterWasDownForAMinute) {
    // Jobs whose next fire time lies a minute in the past: the cluster was down.
    const std::int64_t start = NowMs();
    const std::int64_t missed_from = (start / 1000 - 60) * 1000;
    std::map<std::string, std::int64_t> jobs;
    for (const char* policy : {"skip", "fire-once-now", "fire-all"}) {
        auto j =
            DemoJob(std::string("misfire-") + policy, "echo", sched::ScheduleType::kCron, "* * * * * ?", missed_from);
        j.misfire_policy = *sched::ParseMisfirePolicy(policy);
        auto created = Create(j);
        ASSERT_TRUE(created.ok()) << created.status().ToString();
        jobs[policy] = created->id;
    }
    StartTrigger();
    StartClient();
    ASSERT_TRUE(WaitFor(
        [&] {
            for (const auto& [policy, id] : jobs) {
                if (Fires(id).empty()) return false;
            }
            return true;
        },
        20s))
        << trigger_->stderr_text();
    std::this_thread::sleep_for(1500ms);
    const std::int64_t threshold_ms = 5000;  // the default misfire-threshold
    // Fires, not ledger rows (those are counted below).
    auto count = [&](const std::string& policy, model::FireKind kind, std::int64_t before) {
        int n = 0;
        for (const auto& f : Fires(jobs[policy])) {
            n += f.kind == kind && f.scheduled_time < before && f.reason != model::FireReason::kMisfire ? 1 : 0;
        }
        return n;
    };
    // The ledger: the missed minute is one row per job that skipped or folded times.
    auto ledger = [&](const std::string& policy) {
        std::vector<model::Fire> out;
        for (const auto& f : Fires(jobs[policy])) {
            if (f.reason == model::FireReason::kMisfire) out.push_back(f);
        }
        return out;
    };
    for (const char* policy : {"skip", "fire-once-now"}) {
        const auto rows = ledger(policy);
        ASSERT_EQ(rows.size(), 1u) << policy;
        EXPECT_EQ(rows[0].status, model::FireStatus::kSkipped);
        EXPECT_EQ(rows[0].scheduled_time, missed_from) << policy;
        EXPECT_GE(rows[0].skipped_count.value_or(0), 54) << policy;
        EXPECT_EQ(rows[0].skipped_count.value_or(0), (rows[0].skipped_until.value_or(0) - missed_from) / 1000 + 1)
            << policy;
    }
    EXPECT_TRUE(ledger("fire-all").empty());
    // skip: nothing older than the threshold fires; the schedule simply resumes.
    EXPECT_EQ(count("skip", model::FireKind::kSchedule, start - threshold_ms - 1000), 0);
    EXPECT_EQ(count("skip", model::FireKind::kMisfire, start + 60'000), 0);
    EXPECT_GT(count("skip", model::FireKind::kSchedule, start + 60'000), 0);
    // fire-once-now: one misfire fire stands for the whole missed minute.
    EXPECT_EQ(count("fire-once-now", model::FireKind::kMisfire, start + 60'000), 1);
    EXPECT_EQ(count("fire-once-now", model::FireKind::kSchedule, start - threshold_ms - 1000), 0);
    // fire-all: every missed second is caught up (the default cap of 100 is above 60).
    const int caught_up = count("fire-all", model::FireKind::kMisfire, start + 60'000);
    EXPECT_GE(caught_up, 53);
    EXPECT_LE(caught_up, 61);
    std::set<std::int64_t> times;
    for (const auto& f : Fires(jobs["fire-all"])) {
        EXPECT_TRUE(times.insert(f.scheduled_time).second) << "second " << f.scheduled_time << " twice";
    }
}

// A node stopped (SIGSTOP) past the misfire threshold holds fires planned ahead; when
// it resumes, those and the times it missed obey the job's policy (skip: none fires late) and
// every scheduled second is either run or in the ledger with reason misfire.
// The fires as lines (id, time, status, start, end, instance, message), for a failure's message.
std::string Listed(const std::vector<model::Fire>& fires) {
    std::string out;
    for (const auto& f : fires) {
        out += "\n  " + std::to_string(f.id) + " @" + std::to_string(f.scheduled_time) + " " +
               std::string(model::FireStatusName(f.status)) + " started " + std::to_string(f.started_at.value_or(-1)) +
               " finished " + std::to_string(f.finished_at.value_or(-1)) + " on " + f.executor_address.value_or("-") +
               " " + f.result_message.value_or("");
    }
    return out + "\n";
}

TEST_P(TriggerProcessTest, ASkipJobStoppedPastTheThresholdFiresNothingLateAndRecordsEverySecond) {
    StartTrigger();
    StartClient();
    const std::int64_t first = (NowMs() / 1000 + 2) * 1000;
    auto skip_job = DemoJob("skip-every-second", "echo", sched::ScheduleType::kCron, "* * * * * ?", first);
    skip_job.misfire_policy = sched::MisfirePolicy::kSkip;
    auto created = Create(skip_job);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    const model::Job job = *created;
    ASSERT_TRUE(WaitFor([&] { return Succeeded(job.id) >= 2; }, 20s)) << trigger_->stderr_text();
    const std::int64_t stopped_at = NowMs();
    trigger_->Signal(SIGSTOP);
    std::this_thread::sleep_for(8s);
    trigger_->Signal(SIGCONT);
    const std::int64_t resumed_at = NowMs();
    const std::int64_t threshold_ms = 5000;  // the default misfire-threshold
    // Wait until every second up to 3 s after the resume has ended: each is covered by a fire
    // (its own, or a skipped one's range) and none of those is still going. Checking only the
    // fires that exist passed at once when the node had not planned those seconds yet.
    const std::int64_t first_second = (stopped_at / 1000 + 1) * 1000;
    ASSERT_TRUE(WaitFor(
        [&] {
            const auto now = Fires(job.id);
            for (std::int64_t t = first_second; t <= resumed_at + 3000; t += 1000) {
                const bool ended = std::any_of(now.begin(), now.end(), [t](const model::Fire& f) {
                    return f.scheduled_time <= t && t <= f.skipped_until.value_or(f.scheduled_time) &&
                           model::IsFinal(f.status);
                });
                if (!ended) return false;
            }
            return true;
        },
        20s))
        << Listed(Fires(job.id)) << trigger_->stderr_text();
    const auto fires = Fires(job.id);
    int ran = 0;
    int in_ledger = 0;
    for (std::int64_t t = first_second; t <= resumed_at + 3000; t += 1000) {
        bool accounted = false;
        for (const auto& f : fires) {
            const bool covers = f.scheduled_time <= t && t <= f.skipped_until.value_or(f.scheduled_time);
            if (!covers) continue;
            if (f.status == model::FireStatus::kSucceeded && f.scheduled_time == t) {
                ++ran;
                accounted = true;
                // Nothing ran more than the threshold late (plus the claim's own latency).
                EXPECT_LE(f.started_at.value_or(0) - t, threshold_ms + 1000) << "second " << t << " ran late";
            } else if (f.status == model::FireStatus::kSkipped && f.reason == model::FireReason::kMisfire) {
                ++in_ledger;
                accounted = true;
                EXPECT_NE(f.result_message.value_or("").find("misfire"), std::string::npos);
            }
        }
        std::string seen;
        for (const auto& f : fires) {
            if (f.scheduled_time == t) {
                seen += " fire " + std::to_string(f.id) + " " + std::string(model::FireStatusName(f.status)) + " (" +
                        f.result_message.value_or("") + ")";
            }
        }
        EXPECT_TRUE(accounted) << "second " << t << " neither ran nor is in the ledger:" << seen;
    }
    EXPECT_GT(in_ledger, 0) << "an 8 s stop with a 5 s threshold skips some seconds";
    EXPECT_GT(ran, 0);
}

TEST_P(TriggerProcessTest, DiscardLaterSkipsFiresWhileTheLastOneStillRuns) {
    StartTrigger();
    StartClient();
    auto j = DemoJob("long-runner", "sleep", sched::ScheduleType::kCron, "* * * * * ?", (NowMs() / 1000 + 2) * 1000);
    j.params = R"({"ms":2500})";
    j.block_strategy = BlockStrategy::kDiscardLater;
    auto job = Create(j);
    ASSERT_TRUE(job.ok());
    ASSERT_TRUE(WaitFor(
        [&] {
            int skipped = 0;
            int succeeded = 0;
            for (const auto& f : Fires(job->id)) {
                skipped += f.status == model::FireStatus::kSkipped ? 1 : 0;
                succeeded += f.status == model::FireStatus::kSucceeded ? 1 : 0;
            }
            return skipped >= 2 && succeeded >= 1;
        },
        20s))
        << trigger_->stderr_text();
    for (const auto& f : Fires(job->id)) {
        if (f.status == model::FireStatus::kSkipped) {
            EXPECT_NE(f.result_message.value_or("").find("discard-later"), std::string::npos);
        }
    }
}

// The most runs of one job that were going at the same moment, from the fires' start and end
// as their executors reported them.
int MostAtOnce(const std::vector<model::Fire>& fires) {
    std::vector<std::pair<std::int64_t, int>> edges;  // (time, +1 start / -1 end); ends sort first
    for (const auto& f : fires) {
        if (!f.started_at || !f.finished_at) continue;
        edges.emplace_back(*f.started_at, 1);
        edges.emplace_back(*f.finished_at, -1);
    }
    std::sort(edges.begin(), edges.end());
    int now = 0;
    int most = 0;
    for (const auto& [at, change] : edges) most = std::max(most, now += change);
    return most;
}

// Concurrency and overlap are the job's, cluster-wide: two instances of the app, and a job
// with concurrency_limit 3 runs three at once even on one instance; a serial job never runs two
// at once across the instances (its fires wait and run later); a discard-later job skips.
TEST_P(TriggerProcessTest, ConcurrencyLimitsAndOverlapPoliciesHoldAcrossInstances) {
    StartTrigger();
    std::vector<std::unique_ptr<ChildProcess>> clients;
    for (int n = 0; n < 2; ++n) clients.push_back(LaunchClient(n));
    const std::int64_t first = (NowMs() / 1000 + 2) * 1000;
    const auto make = [&](const std::string& name, BlockStrategy policy, int limit, Routing routing, int ms) {
        auto j = DemoJob(name, "sleep", sched::ScheduleType::kCron, "* * * * * ?", first);
        j.params = R"({"ms":)" + std::to_string(ms) + "}";
        j.block_strategy = policy;
        j.concurrency_limit = limit;
        j.routing = routing;
        auto created = Create(j);
        EXPECT_TRUE(created.ok()) << created.status().ToString();
        return *created;
    };
    // Three at once on the first instance: the executor no longer runs a job's runs one by one.
    const auto three = make("three-at-once", BlockStrategy::kBufferAll, 3, Routing::kFirst, 3500);
    const auto serial = make("serial", BlockStrategy::kSerial, 1, Routing::kRoundRobin, 1500);
    const auto discard = make("discard", BlockStrategy::kDiscardLater, 1, Routing::kRoundRobin, 2500);
    ASSERT_TRUE(WaitFor(
        [&] { return Succeeded(three.id) >= 6 && Succeeded(serial.id) >= 4 && Succeeded(discard.id) >= 2; }, 40s))
        << trigger_->stderr_text();
    const auto three_fires = Fires(three.id);
    EXPECT_EQ(MostAtOnce(three_fires), 3) << "concurrency_limit 3 on one instance";
    EXPECT_EQ(MostAtOnce(Fires(serial.id)), 1) << "serial never overlaps, whichever instance runs it";
    EXPECT_EQ(MostAtOnce(Fires(discard.id)), 1);
    std::set<std::string> serial_instances;
    int waited = 0;
    for (const auto& f : Fires(serial.id)) {
        if (f.executor_address) serial_instances.insert(*f.executor_address);
        if (f.status == model::FireStatus::kSucceeded && f.started_at && *f.started_at > f.scheduled_time + 300)
            ++waited;
        EXPECT_NE(f.status, model::FireStatus::kSkipped) << "serial buffers, it does not drop";
    }
    EXPECT_EQ(serial_instances.size(), 2u) << "both instances ran the serial job";
    EXPECT_GE(waited, 1) << "a serial fire waited for the one before it:" << Listed(Fires(serial.id));
    // In order: no serial fire ran while an earlier one still waited.
    const auto serial_fires = Fires(serial.id);
    for (const auto& ran : serial_fires) {
        if (ran.status != model::FireStatus::kSucceeded) continue;
        for (const auto& earlier : serial_fires) {
            EXPECT_FALSE(earlier.scheduled_time < ran.scheduled_time && !model::IsFinal(earlier.status))
                << "fire " << ran.id << " ran before " << earlier.id << Listed(serial_fires);
        }
    }
    int skipped = 0;
    for (const auto& f : Fires(discard.id)) {
        if (f.status != model::FireStatus::kSkipped) continue;
        ++skipped;
        EXPECT_EQ(f.reason, model::FireReason::kBlocked);
        EXPECT_NE(f.result_message.value_or("").find("overlap policy discard-later"), std::string::npos)
            << f.result_message.value_or("");
    }
    EXPECT_GE(skipped, 2);
}

TEST_P(TriggerProcessTest, AFireWithNoLiveExecutorFailsWithItsReasonAndTheNodeLivesOn) {
    StartTrigger();
    auto j = OnceJob("orphan-app", "echo", NowMs() + 300);
    j.app = "nobody-serves-this";
    auto job = Create(j);
    ASSERT_TRUE(job.ok());
    const auto fire = OnlyFireEnded(job->id);
    ASSERT_TRUE(fire);
    EXPECT_EQ(fire->status, model::FireStatus::kFailed);
    EXPECT_NE(fire->result_message.value_or("").find("no live executor of app nobody-serves-this"), std::string::npos)
        << fire->result_message.value_or("");
    // The failure path once crashed the node (a g++ 12 coroutine temporary): it must live on.
    EXPECT_FALSE(trigger_->WaitForExit(500ms)) << trigger_->stderr_text();
}

TEST_P(TriggerProcessTest, TimeoutKillsTheRunAndMarksTheFire) {
    StartTrigger();
    StartClient();
    auto slow = OnceJob("slow", "sleep", NowMs() + 300);
    slow.params = R"({"ms":10000})";
    slow.timeout_ms = 700;
    auto job = Create(slow);
    ASSERT_TRUE(job.ok());
    const auto fire = OnlyFireEnded(job->id);
    ASSERT_TRUE(fire);
    // The slave's timeout and the SDK's own deadline race; either way the run ends as timeout,
    // long before the handler's 10 s.
    EXPECT_EQ(fire->status, model::FireStatus::kTimeout) << fire->result_message.value_or("");
    ASSERT_TRUE(fire->finished_at && fire->dispatched_at);
    EXPECT_LT(*fire->finished_at - *fire->dispatched_at, 5000);
}

TEST_P(TriggerProcessTest, RoutingAcrossThreeInstances) {
    StartTrigger();
    std::vector<std::unique_ptr<ChildProcess>> clients;
    clients.reserve(3);
    for (int n = 0; n < 3; ++n) clients.push_back(LaunchClient(n));
    auto live = store::ExecutorRepository(db()).ListLive("demo", 30000);
    ASSERT_TRUE(live.ok());
    ASSERT_EQ(live->size(), 3u);
    std::vector<std::string> addresses;
    for (const auto& e : *live) addresses.push_back(e.address);
    std::sort(addresses.begin(), addresses.end());

    // sharding-broadcast: one fire per instance, shard i on the i-th instance by address.
    const std::int64_t at = NowMs() + 500;
    auto broadcast = CreateJob("broadcast", "once", std::to_string(at), at);
    {
        auto stored = store::JobRepository(db()).Get(broadcast.id);
        stored->routing = Routing::kShardingBroadcast;
        ASSERT_TRUE(store::JobRepository(db()).Update(*stored, stored->version).ok());
    }
    // round-robin: consecutive fires go to different instances.
    const std::int64_t first = (NowMs() / 1000 + 2) * 1000;
    auto rr = CreateJob("round-robin", "cron", "* * * * * ?", first);
    ASSERT_TRUE(WaitFor(
        [&] {
            auto b = Fires(broadcast.id);
            return b.size() == 3 &&
                   std::all_of(b.begin(), b.end(), [](const auto& f) { return model::IsFinal(f.status); }) &&
                   Succeeded(rr.id) >= 3;
        },
        20s))
        << trigger_->stderr_text();
    for (const auto& f : Fires(broadcast.id)) {
        EXPECT_EQ(f.status, model::FireStatus::kSucceeded);
        EXPECT_EQ(f.shard_total, 3);
        ASSERT_TRUE(f.executor_address);
        EXPECT_EQ(*f.executor_address, addresses[f.shard_index]) << "shard " << f.shard_index;
    }
    std::set<std::string> rr_targets;
    for (const auto& f : Fires(rr.id)) {
        if (f.executor_address) rr_targets.insert(*f.executor_address);
    }
    EXPECT_EQ(rr_targets.size(), 3u) << "round-robin did not reach every instance";

    // failover: the first instance by address dies; its registration is still fresh, so only
    // the beat probe can tell, and every fire must land on a live one.
    std::size_t dead_index = clients.size();
    for (std::size_t i = 0; i < clients.size(); ++i) {
        (void)clients[i]->WaitForStdoutLine("\x01", std::chrono::milliseconds(1));  // drain its output
        if (clients[i]->stderr_text().find(" handler(s) at " + addresses[0]) != std::string::npos) {
            dead_index = i;
        }
    }
    ASSERT_LT(dead_index, clients.size()) << "cannot tell which client serves " << addresses[0];
    clients[dead_index]->Signal(SIGKILL);
    ASSERT_TRUE(clients[dead_index]->WaitForExit(5s));
    const std::int64_t fo_first = (NowMs() / 1000 + 2) * 1000;
    auto failover = CreateJob("failover", "cron", "* * * * * ?", fo_first);
    {
        auto stored = store::JobRepository(db()).Get(failover.id);
        stored->routing = Routing::kFailover;
        ASSERT_TRUE(store::JobRepository(db()).Update(*stored, stored->version).ok());
    }
    ASSERT_TRUE(WaitFor(
        [&] {
            int done = 0;
            for (const auto& f : Fires(failover.id)) done += model::IsFinal(f.status) ? 1 : 0;
            return done >= 2;
        },
        20s));
    for (const auto& f : Fires(failover.id)) {
        if (!model::IsFinal(f.status)) continue;
        EXPECT_EQ(f.status, model::FireStatus::kSucceeded) << f.result_message.value_or("");
        EXPECT_NE(f.executor_address.value_or(""), addresses[0]);
        EXPECT_EQ(f.executor_address.value_or(""), addresses[1]) << "failover picks the next by address";
    }
}

TEST_P(TriggerProcessTest, ANodeWhoseClockIsTenMinutesOffFiresOnTime) {
    if (GetParam() != db::Backend::kMySql) {
        GTEST_SKIP() << "SQLite's clock is the node's own; the database clock only differs on a server";
    }
    const char* faketime = SCHED_LIBFAKETIME;
    if (!std::filesystem::exists(faketime)) {
        if (const char* require = std::getenv("SCHED_REQUIRE_MYSQL"); require && std::string(require) == "1") {
            FAIL() << "libfaketime missing at " << faketime << " (apt-get install libfaketime)";
        }
        GTEST_SKIP() << "libfaketime not installed";
    }
    // The trigger node's wall clock is ten minutes ahead; the database's (and this test's) is not.
    // Only the wall clock is off, as on a real machine: monotonic clocks have no "time of day".
    StartTrigger({std::string("LD_PRELOAD=") + faketime, "FAKETIME=+10m", "FAKETIME_DONT_RESET=1",
                  "FAKETIME_DONT_FAKE_MONOTONIC=1"});
    StartClient();
    const std::int64_t first = (NowMs() / 1000 + 2) * 1000;
    auto job = CreateJob("on-time", "cron", "* * * * * ?", first);
    ASSERT_TRUE(WaitFor([&] { return Succeeded(job.id) >= 3; }, 20s)) << trigger_->stderr_text();
    for (const auto& f : Fires(job.id)) {
        if (f.status != model::FireStatus::kSucceeded) continue;
        EXPECT_EQ(f.kind, model::FireKind::kSchedule) << "treated as a misfire: the node used its own clock";
        ASSERT_TRUE(f.started_at);
        // Not early (a node trusting its clock would fire everything at once) and not late.
        // started_at is the run's start as the node records it (a run sent ahead starts at its
        // due time; dispatched_at is the plan or the claim, seconds before it).
        EXPECT_GE(*f.started_at, f.scheduled_time - 550);
        EXPECT_LT(*f.started_at, f.scheduled_time + 1000);
    }
}

SCHED_DB_TEST_SUITE(TriggerProcessTest);

// Three nodes on one database, 50 jobs firing every second, kill -9 of the master.
class TriggerClusterTest : public TriggerProcessTest {
  protected:
    // Node `n` (node-<n>); `scheduler` adds keys to its scheduler section ("  key: value\n").
    ChildProcess& StartNode(int n, const std::string& extra = "", const std::string& scheduler = "") {
        const auto config = dir_ / ("trigger-" + std::to_string(n) + ".yaml");
        std::ofstream(config) << "node-id: \"node-" << n << "\"\ntoken: \"t0ken\"\nheartbeat-interval: 200ms\n"
                              << "http:\n  listen: \"127.0.0.1:0\"\n  access-log: errors\n"
                              << "database:\n  url: \"" << test_db().url().ToString() << "\"\n"
                              << "election:\n  tick: 200ms\n  ttl: 1s\n  margin: 300ms\n"
                              << "scheduler:\n  node-ttl: 1s\n"
                              << scheduler << "slave:\n  poll-interval: 200ms\n"
                              << extra;
        nodes_[n] = std::make_unique<ChildProcess>(
            std::vector<std::string>{SCHED_TRIGGER_BIN, "--config", config.string()}, dir_.string());
        auto line = nodes_[n]->WaitForStdoutLine("listening on http://127.0.0.1:", 30s);
        EXPECT_TRUE(line) << nodes_[n]->stderr_text();
        ports_[n] = line ? std::stoi(line->substr(line->rfind(':') + 1)) : 0;
        return *nodes_[n];
    }
    std::string Owner() {
        auto owner = db().Run([](soci::session& s) {
            std::string o;
            soci::indicator ind = soci::i_null;
            s << "SELECT owner FROM scheduler_lock WHERE namespace = 'master'", soci::into(o, ind);
            return ind == soci::i_ok ? o : std::string();
        });
        return owner.ok() ? *owner : "";
    }
    void TearDown() override {
        nodes_.clear();
        TriggerProcessTest::TearDown();
    }
    void KillOneNodeUnderLoad(bool kill_master);
    std::map<int, std::unique_ptr<ChildProcess>> nodes_;
    std::map<int, int> ports_;
};

// Runs 50 every-second jobs on three nodes, kills the master (or a slave) with SIGKILL, and
// checks that every (job, second) fired exactly once or is recorded lost with its reason.
void TriggerClusterTest::KillOneNodeUnderLoad(bool kill_master) {
    for (int n = 1; n <= 3; ++n) StartNode(n);
    port_ = ports_[1];
    // The SDK fails over between the three nodes' executor APIs.
    const auto config = dir_ / "client.yaml";
    std::ofstream(config) << "executor:\n  app: demo\n  web-endpoints: [\"http://127.0.0.1:" << ports_[1]
                          << "\", \"http://127.0.0.1:" << ports_[2] << "\", \"http://127.0.0.1:" << ports_[3]
                          << "\"]\n  token: \"t0ken\"\n  heartbeat-interval: 1s\n  capacity: 1000\n  spool-dir: \""
                          << (dir_ / "spool").string() << "\"\n  http:\n    listen: \"127.0.0.1:0\"\n";
    client_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{SCHED_DEMO_CLIENT_BIN, "--config", config.string()}, dir_.string());
    ASSERT_TRUE(WaitFor(
        [&] {
            auto live = store::ExecutorRepository(db()).ListLive("demo", 30000);
            return live.ok() && !live->empty();
        },
        30s))
        << client_->stderr_text();

    constexpr int kJobs = 50;
    const std::int64_t first = (NowMs() / 1000 + 2) * 1000;
    std::vector<std::int64_t> jobs;
    jobs.reserve(kJobs);
    for (int i = 0; i < kJobs; ++i)
        jobs.push_back(CreateJob("job-" + std::to_string(i), "cron", "* * * * * ?", first).id);

    ASSERT_TRUE(WaitFor([&] { return NowMs() > first + 3000; }, 10s));
    const std::string master = Owner();
    ASSERT_FALSE(master.empty());
    const int master_index = std::stoi(master.substr(master.rfind('-') + 1));
    const int victim = kill_master ? master_index : (master_index % 3) + 1;
    const std::int64_t killed_at = NowMs();
    nodes_[victim]->Signal(SIGKILL);
    ASSERT_TRUE(nodes_[victim]->WaitForExit(5s));
    if (kill_master) {
        ASSERT_TRUE(WaitFor(
            [&] {
                auto o = Owner();
                return !o.empty() && o != master;
            },
            10s))
            << "no new master";
    }
    const std::string new_master = Owner();
    // Let the cluster run on, then stop it gracefully. Long enough for the new master's own
    // fires to be checked: the dead one had planned up to lookahead (3 s) past the kill, and
    // only times 2 s before the stop count (they had time to finish). With 5 s, a takeover that
    // came late in its window left no new-master fire before that cut (1 in 8 runs, on older
    // builds too); 8 s leaves 3 s of them.
    std::this_thread::sleep_for(8s);
    const std::string owner_before_stop = Owner();
    const std::int64_t checked_until = (NowMs() / 1000 - 2) * 1000;  // fires before this had time to finish
    for (auto& [n, p] : nodes_) {
        if (n != victim) p->Signal(SIGTERM);
    }
    for (auto& [n, p] : nodes_) {
        if (n != victim) {
            EXPECT_TRUE(p->WaitForExit(15s)) << "node " << n;
        }
    }

    // Every (job, second) has exactly one fire; it ran, or it is recorded lost with its reason.
    std::int64_t new_epoch_first_created = std::numeric_limits<std::int64_t>::max();
    std::int64_t new_epoch_worst_lag = 0;
    int succeeded = 0;
    int lost = 0;
    for (auto job : jobs) {
        std::map<std::int64_t, int> per_time;
        for (const auto& f : Fires(job)) {
            if (f.kind != model::FireKind::kSchedule && f.kind != model::FireKind::kMisfire) continue;
            if (f.scheduled_time >= checked_until) continue;
            ++per_time[f.scheduled_time];
            if (f.status == model::FireStatus::kSucceeded) {
                ++succeeded;
            } else if (f.status == model::FireStatus::kLost) {
                ++lost;
                EXPECT_TRUE(f.result_message.has_value());
            } else {
                ADD_FAILURE() << "job " << job << " fire at " << f.scheduled_time << " is "
                              << model::FireStatusName(f.status) << ": " << f.result_message.value_or("");
            }
            // Only the new master can have created a fire after the kill.
            if (f.created_at > killed_at && f.started_at) {
                new_epoch_first_created = std::min(new_epoch_first_created, f.created_at);
                new_epoch_worst_lag = std::max(new_epoch_worst_lag, *f.started_at - f.due_at);
            }
        }
        for (std::int64_t t = first; t < checked_until; t += 1000) {
            EXPECT_EQ(per_time[t], 1) << "job " << job << " second " << (t - first) / 1000;
        }
    }
    RecordProperty("succeeded", succeeded);
    RecordProperty("lost", lost);
    EXPECT_LE(lost, kJobs) << "more fires lost than were in flight on the killed node";
    if (kill_master) {
        // Failover: fires created after the kill (by the new master) were dispatched within
        // ttl + tick of it, plus scheduling slack on a loaded 2-core box.
        // Failover: the new master planned its first fire within ttl + tick of the kill (plus
        // scheduling slack on a loaded 2-core box), and its fires left on time. Not "dispatched
        // within ttl + tick": the dead master had planned at least lookahead - lookahead-refill
        // (2 s) ahead, so the new master's first fire is due 2-3 s after the kill by design, and such a bound failed in
        // about 1 run in 4 whatever the code did.
        ASSERT_NE(new_epoch_first_created, std::numeric_limits<std::int64_t>::max());
        EXPECT_LE(new_epoch_first_created - killed_at, 1000 + 200 + 1500) << "new master " << new_master;
        EXPECT_LE(new_epoch_worst_lag, 1500) << "new master " << new_master;
    } else {
        EXPECT_EQ(owner_before_stop, master) << "killing a slave must not move the lease";
    }
}

TEST_P(TriggerClusterTest, KillingTheMasterLosesAndDoublesNoFire) {
    if (GetParam() != db::Backend::kMySql) GTEST_SKIP() << "the cluster runs on MariaDB";
    KillOneNodeUnderLoad(true);
}

TEST_P(TriggerClusterTest, KillingASlaveMovesItsPendingFiresAndDoublesNone) {
    if (GetParam() != db::Backend::kMySql) GTEST_SKIP() << "the cluster runs on MariaDB";
    KillOneNodeUnderLoad(false);
}

// A node paused (SIGSTOP) past the node TTL while the cluster was started again with another
// shard count: the new node records its count (nobody else live), and the paused node, once it
// resumes, reads the count after that gap in its heartbeats, gives up every shard and answers
// /readyz 503 saying how to restart it, well before the every-30-s read would have.
TEST_P(TriggerClusterTest, ANodePausedWhileTheClusterWasReshardedGivesUpItsShardsWhenItResumes) {
    if (GetParam() != db::Backend::kMySql) GTEST_SKIP() << "the cluster runs on MariaDB";
    ChildProcess& paused = StartNode(1);
    ASSERT_TRUE(WaitFor([&] { return Owner() == "node-1"; }, 15s)) << paused.stderr_text();
    const auto ready = [&](int n) {
        return testing::HttpGet(static_cast<unsigned short>(ports_[n]), "/readyz");
    };
    ASSERT_TRUE(WaitFor([&] { return ready(1).first == 200; }, 10s)) << ready(1).second;

    paused.Signal(SIGSTOP);
    std::this_thread::sleep_for(2500ms);  // node-ttl 1 s: node-1 is no longer live
    ChildProcess& resharded = StartNode(2, "", "  shards: 2\n");
    ASSERT_TRUE(WaitFor([&] { return Owner() == "node-2"; }, 15s)) << resharded.stderr_text();
    paused.Signal(SIGCONT);
    const auto resumed_at = std::chrono::steady_clock::now();

    std::pair<int, std::string> answer;
    ASSERT_TRUE(WaitFor(
        [&] {
            answer = ready(1);
            return answer.first == 503 &&
                   answer.second.find("restart this node with scheduler.shards: 2") != std::string::npos;
        },
        10s))
        << answer.first << " " << answer.second << "\n"
        << paused.stderr_text();
    EXPECT_LT(std::chrono::steady_clock::now() - resumed_at, 10s);
    EXPECT_TRUE(paused.WaitForStderrLine("node-1 gives up every shard and takes none", 5s)) << paused.stderr_text();
    // It takes no shard: both of the new count's leases stay node-2's.
    std::this_thread::sleep_for(2s);
    auto owners = db().Run([](soci::session& s) {
        std::vector<std::string> out;
        soci::rowset<std::string> rows =
            (s.prepare << "SELECT COALESCE(owner, '') FROM scheduler_lock WHERE namespace IN ('master', 'master/1')");
        for (const auto& o : rows) out.push_back(o);
        return out;
    });
    ASSERT_TRUE(owners.ok()) << owners.status().ToString();
    EXPECT_EQ(*owners, (std::vector<std::string>{"node-2", "node-2"})) << resharded.stderr_text();
    EXPECT_EQ(ready(2).first, 200) << ready(2).second;
}

// The executor posts every result to node-1; node-2 dispatched half the fires. Its `running`
// records wait 5 s, long past the runs' ends: node-1 tells it which fires ended
// (POST /internal/v1/runs/ended), so it writes none of them.
TEST_P(TriggerClusterTest, ANodeWritesNoRunningRecordForAFireWhoseResultAnotherNodeApplied) {
    if (GetParam() != db::Backend::kMySql) GTEST_SKIP() << "the cluster runs on MariaDB";
    const std::string slave = "  record-running-after: 5s\n";
    StartNode(1, slave);
    StartNode(2, slave);
    port_ = ports_[1];
    StartClient();  // its web endpoint: node-1 alone
    const std::int64_t first = (NowMs() / 1000 + 2) * 1000;
    std::vector<std::int64_t> jobs;
    for (int i = 0; i < 6; ++i)
        jobs.push_back(CreateJob("ended-" + std::to_string(i), "cron", "* * * * * ?", first).id);
    ASSERT_TRUE(WaitFor([&] { return NowMs() > first + 4000; }, 10s));
    for (auto job : jobs)
        ASSERT_TRUE(
            db().Run([&](soci::session& s) { s << "UPDATE job SET enabled = 0 WHERE id = :id", soci::use(job); }).ok());
    const auto on_node_2 = [&] {
        auto n = db().Run([](soci::session& s) {
            long long c = 0;
            s << "SELECT COUNT(*) FROM job_fire WHERE assigned_node = 'node-2' AND status = 'succeeded'", soci::into(c);
            return c;
        });
        return n.ok() ? *n : 0;
    };
    ASSERT_TRUE(WaitFor([&] { return on_node_2() >= 3; }, 15s)) << nodes_[2]->stderr_text();
    // Past the last runs' records' 5 s and their writer's window (as long), which are when node-2
    // would have written them.
    std::this_thread::sleep_for(std::chrono::milliseconds(std::max<std::int64_t>(0, first + 4000 + 10500 - NowMs())));
    const auto counter = [&](int n, const std::string& name) {
        const auto res = testing::HttpRequest(static_cast<unsigned short>(ports_[n]), "GET", "/metrics");
        const auto at = res.body.find("\n" + name + " ");
        return at == std::string::npos ? -1.0 : std::stod(res.body.substr(at + name.size() + 2));
    };
    EXPECT_EQ(counter(2, "sched_slave_running_batches_total"), 0) << "node-2 wrote running records for ended fires";
    EXPECT_GE(counter(1, "sched_run_end_ids_total{outcome=\"withdrawn\"}"), 3) << "node-2's records, withdrawn";
    EXPECT_EQ(counter(1, "sched_run_end_notices_total{outcome=\"failed\"}"), 0);
}

SCHED_DB_TEST_SUITE(TriggerClusterTest);

}  // namespace
}  // namespace sched
