// The slave's grouping, claiming, call limits and batching, against fakes of its two ports
// (a store and an executor client): real io threads and timers, no database, no HTTP.
#include "sched/trigger/slave.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "fake_executors.hpp"
#include "sched/common/clock.hpp"
#include "sched/common/testing/wait_for.hpp"
#include "sched/protocol/testing/collecting_span_sink.hpp"

namespace sched::trigger {
namespace {

using namespace std::chrono_literals;
using model::FireStatus;
using trigger_testing::FakeExecutors;

class FakeStore final : public FireClaimStore {
  public:
    struct Fire {
        model::Fire fire;
        std::int64_t token = 0;
        std::string address;
        std::string message;
        std::optional<model::FireReason> reason;
        bool planned = false;  // written dispatching by the master, no token (FireClaims "Planned fires")
    };
    mutable std::mutex mu;
    std::map<std::int64_t, Fire> fires;
    std::map<std::int64_t, model::Job> jobs;
    std::map<std::int64_t, std::string> run_params;  // workflow run id -> its trigger's params
    std::vector<store::ExecutorInstance> executors;
    std::vector<std::vector<std::int64_t>> claims;    // the ids of every Claim call
    std::vector<std::int64_t> claim_times;            // the `now` of every Claim call
    std::vector<std::int64_t> tokens;                 // the token of every Claim call
    std::vector<std::size_t> running_batches;         // the size of every MarkRunning call
    std::vector<std::size_t> finish_batches;          // the size of every Finish call
    std::map<std::int64_t, std::int64_t> running_at;  // fire id -> wall ms its MarkRunning moved it
    int live_reads = 0;
    int polls = 0;                    // ListPendingIds calls
    std::vector<std::int64_t> found;  // every id FindPending was asked for, in order
    int unassigned = 0;
    int fail_claims_after_commit = 0;                // this many Claim calls commit and then report an error
    std::size_t conflict_above = 0;                  // a Claim of more ids than this loses a conflict (0: none)
    std::int64_t epoch = 42;                         // the lease's epoch, as Claim and Restamp read it
    std::map<std::int64_t, std::int64_t> restamped;  // fire id -> epoch, by Restamp
    std::set<std::int64_t> held_back;                // pending fires every Claim holds back, first in line of their job
    std::int64_t sent_through = 0;                   // the node's, as TakePlanned and Claim read and raise it
    int only_planned_claims = 0;                     // Claim calls told every fire was planned
    std::optional<std::set<std::int64_t>> handed_back_sent;  // the sent ids HandBack was given

    // A fire planned for "n1", already dispatching.
    void AddPlanned(std::int64_t id, std::int64_t job_id, std::int64_t due_at) {
        Add(id, job_id, due_at);
        std::lock_guard lock(mu);
        fires[id].fire.status = FireStatus::kDispatching;
        fires[id].planned = true;
    }
    bool Planned(const Fire& f, const std::string& node) const {
        return f.planned && f.token == 0 && f.fire.status == FireStatus::kDispatching && f.fire.assigned_node == node;
    }

    void Add(std::int64_t id, std::int64_t job_id, std::int64_t due_at) {
        std::lock_guard lock(mu);
        model::Fire f;
        f.id = id;
        f.job_id = job_id;
        f.scheduled_time = due_at;
        f.due_at = due_at;
        f.assigned_node = "n1";
        fires[id].fire = f;
    }
    FireStatus StatusNow(std::int64_t id) const {
        std::lock_guard lock(mu);
        return fires.at(id).fire.status;
    }
    std::string MessageOf(std::int64_t id) const {
        std::lock_guard lock(mu);
        return fires.at(id).message;
    }
    std::optional<model::FireReason> ReasonOf(std::int64_t id) const {
        std::lock_guard lock(mu);
        return fires.at(id).reason;
    }

    Result<std::vector<std::int64_t>> ListPendingIds(const std::string& node, int limit) override {
        std::lock_guard lock(mu);
        ++polls;
        std::set<std::pair<std::int64_t, std::int64_t>> pending;  // (scheduled_time, id), as the index orders them
        for (const auto& [id, f] : fires) {
            const bool listed = f.fire.status == FireStatus::kPending || f.fire.status == FireStatus::kDispatching;
            if (listed && f.fire.assigned_node == node) pending.emplace(f.fire.scheduled_time, id);
        }
        std::vector<std::int64_t> out;
        for (const auto& [at, id] : pending) {
            if (static_cast<int>(out.size()) == limit) break;
            out.push_back(id);
        }
        return out;
    }
    Result<std::vector<model::Fire>> FindPending(const std::string& node,
                                                 const std::vector<std::int64_t>& ids) override {
        std::lock_guard lock(mu);
        found.insert(found.end(), ids.begin(), ids.end());
        std::vector<model::Fire> out;
        for (auto id : ids) {
            auto it = fires.find(id);
            if (it != fires.end() &&
                ((it->second.fire.status == FireStatus::kPending && it->second.fire.assigned_node == node) ||
                 Planned(it->second, node)))
                out.push_back(it->second.fire);
        }
        return out;
    }
    Result<ClaimedGroup> Claim(const std::string& node, const std::vector<std::int64_t>& ids, std::int64_t token,
                               std::int64_t now, const store::ClaimOptions& options) override {
        std::lock_guard lock(mu);
        claims.push_back(ids);
        claim_times.push_back(now);
        tokens.push_back(token);
        if (conflict_above > 0 && ids.size() > conflict_above) {
            return Aborted("deadlock: Deadlock found when trying to get lock; try restarting transaction");
        }
        ClaimedGroup g;
        g.epoch = epoch;
        const auto& raise = options.raise_sent_through;
        if (raise && *raise > sent_through) sent_through = *raise;
        if (options.only_planned) ++only_planned_claims;
        g.sent_through = sent_through;
        std::set<std::int64_t> job_ids;
        for (auto id : ids) {
            const auto it = fires.find(id);
            if (it == fires.end()) continue;  // a notice may name a fire that is gone
            auto& f = it->second;
            if (held_back.contains(id) && f.fire.status == FireStatus::kPending) {
                g.held.push_back(id);
                g.first_in_line.insert(id);
                continue;
            }
            if (!options.only_planned && f.fire.status == FireStatus::kPending && f.fire.assigned_node == node) {
                f.fire.status = FireStatus::kDispatching;
                f.fire.dispatched_at = now;
                f.token = token;
            }
            if (Planned(f, node)) {
                g.fires.push_back(f.fire);
                g.planned.insert(id);
                job_ids.insert(f.fire.job_id);
            } else if (f.token == token && f.fire.status == FireStatus::kDispatching) {
                g.fires.push_back(f.fire);
                job_ids.insert(f.fire.job_id);
            }
        }
        if (fail_claims_after_commit > 0) {
            --fail_claims_after_commit;
            return Unavailable("connection lost during COMMIT");
        }
        for (auto id : job_ids) {
            if (jobs.contains(id)) g.jobs.push_back(jobs.at(id));
        }
        for (const auto& f : g.fires) {
            if (f.workflow_run_id && run_params.contains(*f.workflow_run_id)) {
                g.run_params[*f.workflow_run_id] = run_params.at(*f.workflow_run_id);
            }
        }
        return g;
    }
    Result<std::optional<std::int64_t>> Restamp(std::int64_t id, std::int64_t token) override {
        std::lock_guard lock(mu);
        auto& f = fires.at(id);
        if (f.token != token || f.fire.status != FireStatus::kDispatching) return std::optional<std::int64_t>();
        restamped[id] = epoch;
        return std::optional<std::int64_t>(epoch);
    }
    Result<std::vector<store::ExecutorInstance>> LiveExecutors(std::int64_t) override {
        std::lock_guard lock(mu);
        ++live_reads;
        return executors;
    }
    Result<int> MarkRunning(const std::vector<store::StartedFire>& started, const std::string& address) override {
        std::lock_guard lock(mu);
        running_batches.push_back(started.size());
        int moved = 0;
        for (const auto& s : started) {
            auto& f = fires.at(s.id);
            if (f.fire.status != FireStatus::kDispatching) continue;
            f.fire.status = FireStatus::kRunning;
            f.fire.started_at = s.started_at;
            f.address = address;
            running_at[s.id] = FakeExecutors::WallMs();
            ++moved;
        }
        return moved;
    }
    Result<std::vector<std::int64_t>> Finish(const std::vector<FireEnding>& endings) override {
        std::lock_guard lock(mu);
        finish_batches.push_back(endings.size());
        std::vector<std::int64_t> moved;
        for (const auto& e : endings) {
            auto& f = fires.at(e.id);
            // As SqlFireClaimStore::Finish: a timeout ends a dispatching or running fire.
            const bool timeout_of_run = e.to == FireStatus::kTimeout && (f.fire.status == FireStatus::kDispatching ||
                                                                         f.fire.status == FireStatus::kRunning);
            if (f.fire.status != e.from && !timeout_of_run) continue;
            f.fire.status = e.to;
            f.message = e.message;
            f.reason = e.reason;
            if (e.executor_address) f.address = *e.executor_address;
            if (e.started_at) f.fire.started_at = e.started_at;
            moved.push_back(e.id);
        }
        return moved;
    }
    Result<FireStatus> StatusOf(std::int64_t id) override {
        std::lock_guard lock(mu);
        return fires.at(id).fire.status;
    }
    Result<int> EndEarlierDispatches(const std::string&, std::int64_t, std::int64_t) override { return 0; }
    Result<std::optional<PlannedTaken>> TakePlanned(const std::string&, std::int64_t) override {
        std::lock_guard lock(mu);
        return std::optional<PlannedTaken>(PlannedTaken{.sent_through = sent_through});
    }
    Result<int> HandBack(const std::string& node, const std::optional<std::set<std::int64_t>>& sent) override {
        std::lock_guard lock(mu);
        handed_back_sent = sent;
        int n = 0;
        for (auto& [id, f] : fires) {
            if (sent && Planned(f, node) && !sent->contains(id)) {
                f.fire.status = FireStatus::kPending;
                f.planned = false;
            }
            if (f.fire.status == FireStatus::kPending && f.fire.assigned_node == node) {
                f.fire.assigned_node.reset();
                ++n;
            }
        }
        unassigned += n;
        return n;
    }
};

class SlaveTest : public ::testing::Test {
  protected:
    SlaveTest()
        : work_(net::make_work_guard(io_)),
          time_(SystemClock::Instance(), []() -> Result<std::int64_t> { return Unavailable("no database here"); }) {
        for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
        auto store = std::make_unique<FakeStore>();
        store_ = store.get();
        store_owned_ = std::move(store);
        auto exec = std::make_unique<FakeExecutors>(io_.get_executor());
        executors_ = exec.get();
        executors_owned_ = std::move(exec);
        model::Job job;
        job.id = 7;
        job.app = "billing";
        job.handler = "charge";
        store_->jobs[7] = job;
        store::ExecutorInstance e;
        e.app = "billing";
        e.address = "10.0.0.1:9000";
        e.handlers = {"charge"};
        store_->executors.push_back(e);
        config_.poll_interval = 100ms;
        config_.dispatch_timeout = 2s;
    }
    ~SlaveTest() override {
        if (slave_) {
            StopSlave();
        }
        // Detached work (sends, flushes, the loops after Stop) drains by itself: io_.run()
        // returns when none is left, so no coroutine frame outlives the slave it points to.
        work_.reset();
        for (auto& t : threads_) t.join();
        slave_.reset();
        db_pool_.join();
    }

    void StartSlave() {
        slave_ = std::make_unique<Slave>(io_.get_executor(), db_pool_, std::move(store_owned_),
                                         std::move(executors_owned_), time_, "n1", config_, metrics_);
        slave_->SetWakeMasters([this] { ++wakes_; });
        slave_->Start();
    }
    // Runs the slave's Stop: true once it returned within 5 s.
    bool StopSlave() {
        auto stopped = net::co_spawn(io_, slave_->Stop(), net::use_future);
        return stopped.wait_for(5s) == std::future_status::ready;
    }
    // Starts the slave with a poll interval longer than any test and waits for the poll at
    // its start: from then on only notices bring fires.
    bool StartSlavePollingOnce() {
        config_.poll_interval = 60s;
        StartSlave();
        return WaitFor([&] {
            std::lock_guard lock(store_->mu);
            return store_->polls >= 1;
        });
    }
    std::int64_t Now() const { return time_.NowMs(); }

    static bool WaitFor(const std::function<bool()>& pred, Micros timeout = 5s) {
        return sched::testing::WaitFor(pred, timeout);
    }
    // How many fires each Claim call held, in call order.
    std::vector<std::size_t> ClaimSizes() const {
        std::lock_guard lock(store_->mu);
        std::vector<std::size_t> sizes;
        for (const auto& claim : store_->claims) sizes.push_back(claim.size());
        return sizes;
    }
    bool AllIn(const std::vector<std::int64_t>& ids, FireStatus s) {
        return std::all_of(ids.begin(), ids.end(), [&](auto id) { return store_->StatusNow(id) == s; });
    }
    // Fires first_id..first_id+count-1 of job `job_id` (7 unless named), all due at `due`: their ids.
    std::vector<std::int64_t> AddFires(int count, std::int64_t due, std::int64_t first_id = 1,
                                       std::int64_t job_id = 7) {
        std::vector<std::int64_t> ids;
        for (std::int64_t id = first_id; id < first_id + count; ++id) {
            store_->Add(id, job_id, due);
            ids.push_back(id);
        }
        return ids;
    }

    net::io_context io_;
    net::executor_work_guard<net::io_context::executor_type> work_;
    std::vector<std::thread> threads_;
    net::thread_pool db_pool_{2};
    DbTime time_;
    MetricsRegistry metrics_;
    SlaveConfig config_;
    FakeStore* store_ = nullptr;
    FakeExecutors* executors_ = nullptr;
    std::unique_ptr<FireClaimStore> store_owned_;
    std::unique_ptr<dispatch::ExecutorClient> executors_owned_;
    std::unique_ptr<Slave> slave_;
    std::atomic<int> wakes_{0};  // SetWakeMasters calls
};

// A fire its job's concurrency limit holds back is asked for again after its hold (the first in
// line of its job: every 100 ms, HeldFires), not by the next turn of the group loop: that was a
// claim transaction after the other for as long as the seat's run went on.
TEST_F(SlaveTest, AHeldFireIsAskedAgainAfterItsHoldNotInALoop) {
    AddFires(1, Now() + 50);
    store_->held_back.insert(1);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] {
        std::lock_guard lock(store_->mu);
        return !store_->claims.empty();
    }));
    std::this_thread::sleep_for(1s);
    std::lock_guard lock(store_->mu);
    EXPECT_GE(store_->claims.size(), 3u);
    EXPECT_LE(store_->claims.size(), 12u) << "about one claim per 100 ms";
    for (std::size_t i = 1; i < store_->claim_times.size(); ++i) {
        EXPECT_GE(store_->claim_times[i] - store_->claim_times[i - 1], 90) << "claim " << i;
    }
}

TEST_F(SlaveTest, ABurstIsClaimedAsOneGroupAndSentAtItsDueTime) {
    config_.send_ahead = false;
    const std::int64_t due = Now() + 300;
    const std::vector<std::int64_t> ids = AddFires(200, due);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn(ids, FireStatus::kRunning); })) << executors_->Runs() << " runs";
    EXPECT_EQ(executors_->Runs(), 200u);
    EXPECT_EQ(executors_->Batches(), 1u) << "one request for the burst's instance";
    {
        std::lock_guard lock(store_->mu);
        EXPECT_EQ(store_->claims.size(), 1u) << "one claim for the whole burst";
        EXPECT_EQ(store_->live_reads, 1) << "the registry is read once per group, not per fire";
        EXPECT_LT(store_->running_batches.size(), 20u) << "running records are batched";
        for (const auto& [id, f] : store_->fires) EXPECT_EQ(f.address, "10.0.0.1:9000");
    }
    std::lock_guard lock(executors_->mu);
    for (const auto& c : executors_->calls) {
        EXPECT_GE(c.at_ms, due) << "sent before its due time";
        EXPECT_NE(c.body.find("\"epoch\":42"), std::string::npos) << c.body;
    }
}

// With send-ahead, a group claimed ahead goes to its instance right after the claim, in one
// request, each run carrying the time left to its due time; its running record and its job
// timeout count from the due time. A job under discard-later or cover-early is sent at its due
// time (the executor judges those on arrival).
TEST_F(SlaveTest, ABurstClaimedAheadIsSentAheadWithTheTimeLeftToItsDueTime) {
    config_.record_window = 5ms;
    config_.claim_ahead = 200ms;  // claimed and sent 200-400 ms before due: room for a slow (ASan) build
    model::Job discard = store_->jobs[7];
    discard.id = 8;
    discard.block_strategy = BlockStrategy::kDiscardLater;
    store_->jobs[8] = discard;
    const std::int64_t due = Now() + 500;
    std::vector<std::int64_t> ids;
    for (int i = 1; i <= 100; ++i) {
        store_->Add(i, 7, due + (i % 4));  // four due times
        ids.push_back(i);
    }
    store_->Add(101, 8, due);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn(ids, FireStatus::kRunning); })) << executors_->Runs() << " runs";
    EXPECT_EQ(executors_->Batches("/v1/runs-ahead"), 1u) << "one request for the four due times";
    {
        std::lock_guard lock(store_->mu);
        for (auto id : ids) {
            EXPECT_EQ(store_->fires.at(id).fire.started_at, due + (id % 4)) << id;
            // Held from the run's start, not from its 202 (which came before the due time).
            EXPECT_GE(store_->running_at.at(id), due + (id % 4) + 250) << "recorded running too early: " << id;
        }
    }
    ASSERT_TRUE(WaitFor([&] { return store_->StatusNow(101) == FireStatus::kRunning; }));
    std::lock_guard lock(executors_->mu);
    int runs_ahead = 0;
    for (const auto& c : executors_->calls) {
        if (!c.url.ends_with("/v1/runs-ahead")) {
            EXPECT_GE(c.at_ms, due) << "the discard-later fire is sent at its due time: " << c.url;
            EXPECT_NE(c.body.find("\"fire_id\":101,"), std::string::npos) << c.body;
            EXPECT_EQ(c.body.find("start_in_ms"), std::string::npos) << c.body;
            continue;
        }
        EXPECT_LT(c.at_ms, due);
        const auto body = nlohmann::json::parse(c.body);
        for (const auto& run : body["runs"]) {
            ++runs_ahead;
            const std::int64_t id = run["fire_id"].get<std::int64_t>();
            const std::int64_t start_in = run["start_in_ms"].get<std::int64_t>();
            // Taken when the request was written, a moment before the fake stamped it.
            EXPECT_LE(start_in, due + (id % 4) - c.at_ms + 20) << id;
            EXPECT_GE(start_in, due + (id % 4) - c.at_ms - 20) << id;
            EXPECT_GT(start_in, 100) << "sent well ahead of the due time: " << id;
        }
    }
    EXPECT_EQ(runs_ahead, 100);
}

// A due time with max-group or more fires (a top of the hour) is claimed ahead by its size over
// burst-claim-rate, a group at a time and paced (the lead shrinks with what is left), every
// group before the due time and sent ahead.
TEST_F(SlaveTest, ABurstIsClaimedAheadByItsSizeOverTheRatePacedAndSentAhead) {
    config_.max_group = 50;
    config_.burst_claim_rate = 200;  // 200 fires: 1 s before claim-ahead (100 ms)
    config_.burst_claim_ahead = 2s;
    const std::int64_t due = Now() + 1500;
    const std::vector<std::int64_t> ids = AddFires(200, due);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn(ids, FireStatus::kRunning); })) << executors_->Runs() << " runs";
    EXPECT_EQ(executors_->Batches("/v1/runs-ahead"), 4u) << "each group sent right after its claim";
    ASSERT_EQ(ClaimSizes(), (std::vector<std::size_t>{50, 50, 50, 50}));
    std::lock_guard lock(store_->mu);
    // Planned at due - 1100, - 850, - 600 and - 350 ms; a slow build only delays them.
    EXPECT_LE(store_->claim_times.front(), due - 900) << "the first claim starts about 1.1 s ahead";
    EXPECT_GE(store_->claim_times.back() - store_->claim_times.front(), 500) << "paced, not all at once";
    EXPECT_LT(store_->claim_times.back(), due) << "every group claimed before the due time";
}

// An instance without /v1/runs-ahead (an SDK before it) answers 404 for the path: its runs go
// at their due time in one /v1/runs, and the next groups do not ask it again. Runs an ahead
// batch did not place (busy) go at their due time too.
TEST_F(SlaveTest, RunsAnInstanceCannotHoldGoAtTheirDueTime) {
    executors_->serves_ahead = false;
    std::int64_t due = Now() + 300;
    const auto first = AddFires(10, due);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn(first, FireStatus::kRunning); }));
    EXPECT_GE(Now(), due);
    EXPECT_EQ(executors_->Batches("/v1/runs-ahead"), 1u);
    EXPECT_EQ(executors_->Batches("/v1/runs"), 1u) << "the ten at their due time, in one batch";
    due = Now() + 300;
    const auto second = AddFires(10, due, 11);
    std::vector<protocol::NoticedFire> notice;
    for (const auto id : second) notice.push_back({.id = id, .due_at = due});
    slave_->Notify(notice);
    ASSERT_TRUE(WaitFor([&] { return AllIn(second, FireStatus::kRunning); }));
    EXPECT_EQ(executors_->Batches("/v1/runs-ahead"), 1u) << "not asked again";
    EXPECT_EQ(executors_->Batches("/v1/runs"), 2u);
}

TEST_F(SlaveTest, RunsAnAheadBatchDidNotPlaceGoAtTheirDueTime) {
    config_.claim_ahead = 200ms;
    {
        std::lock_guard lock(executors_->mu);
        executors_->refuse_first = 3;  // busy (503) for the first three runs
    }
    const std::int64_t due = Now() + 500;
    const auto ids = AddFires(10, due);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn(ids, FireStatus::kRunning); }));
    std::lock_guard lock(executors_->mu);
    ASSERT_EQ(executors_->calls.size(), 2u);
    EXPECT_TRUE(executors_->calls[0].url.ends_with("/v1/runs-ahead"));
    EXPECT_LT(executors_->calls[0].at_ms, due);
    EXPECT_TRUE(executors_->calls[1].url.ends_with("/v1/runs"));
    EXPECT_GE(executors_->calls[1].at_ms, due) << "the three refused runs, at their due time";
    EXPECT_EQ(nlohmann::json::parse(executors_->calls[1].body)["runs"].size(), 3u);
}

TEST_F(SlaveTest, AStepOfAWorkflowRunTriggeredWithParamsGetsTheRunsParams) {
    store_->jobs[7].params = R"({"job":true})";
    const std::int64_t due = Now() + 100;
    store_->Add(1, 7, due);  // an ordinary fire: the job's params
    store_->Add(2, 7, due);  // a step of run 5, triggered with params
    store_->Add(3, 7, due);  // a step of run 6, triggered without
    {
        std::lock_guard lock(store_->mu);
        store_->fires[2].fire.workflow_run_id = 5;
        store_->fires[3].fire.workflow_run_id = 6;
        store_->run_params[5] = R"({"region":"eu"})";
    }
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn({1, 2, 3}, FireStatus::kRunning); }));
    std::map<std::int64_t, nlohmann::json> params;
    std::lock_guard lock(executors_->mu);
    for (const auto& c : executors_->calls) {
        const auto body = nlohmann::json::parse(c.body);
        const auto runs = body.contains("runs") ? body["runs"] : nlohmann::json::array({body});
        for (const auto& run : runs) params[run["fire_id"].get<std::int64_t>()] = run["params"];
    }
    ASSERT_EQ(params.size(), 3u);
    EXPECT_EQ(params[1], nlohmann::json({{"job", true}}));
    EXPECT_EQ(params[2], nlohmann::json({{"region", "eu"}}));
    EXPECT_EQ(params[3], nlohmann::json({{"job", true}}));
}

TEST_F(SlaveTest, RunsABatchRefusedGoThePerFirePathAndABlockedOneIsSkipped) {
    config_.send_ahead = false;    // the due time's batch (/v1/runs)
    executors_->refuse_first = 3;  // busy for the batch's first three runs
    executors_->refuse_status = 503;
    const std::int64_t due = Now() + 200;
    const std::vector<std::int64_t> ids = AddFires(10, due);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn(ids, FireStatus::kRunning); }));
    EXPECT_EQ(executors_->Batches(), 1u);
    EXPECT_EQ(executors_->Runs(), 13u) << "10 in the batch, then the 3 refused one by one";

    // discard-later: the executor refuses a run while the job is busy; the fire is skipped with
    // the reason, not retried.
    executors_->refuse_first = 1;
    executors_->refuse_status = 409;
    executors_->refuse_field = "block_strategy";
    const std::int64_t next = Now() + 200;
    store_->Add(21, 7, next);
    store_->Add(22, 7, next);
    ASSERT_TRUE(WaitFor([&] {
        return store_->StatusNow(21) == FireStatus::kSkipped && store_->StatusNow(22) == FireStatus::kRunning;
    })) << model::FireStatusName(store_->StatusNow(21));
    EXPECT_EQ(store_->ReasonOf(21), model::FireReason::kBlocked);
    EXPECT_EQ(executors_->Batches(), 2u);
    EXPECT_EQ(executors_->Runs(), 15u);
}

TEST_F(SlaveTest, AnExecutorWithoutTheBatchRouteGetsRunsOneByOne) {
    config_.send_ahead = false;
    executors_->serves_batch = false;
    auto ids = AddFires(5, Now() + 200);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn(ids, FireStatus::kRunning); }));
    EXPECT_EQ(executors_->Batches(), 1u);
    EXPECT_EQ(executors_->Runs(), 5u);
    // The next burst does not ask it for a batch again.
    const auto next = AddFires(5, Now() + 200, 6);
    ids.insert(ids.end(), next.begin(), next.end());
    ASSERT_TRUE(WaitFor([&] { return AllIn(ids, FireStatus::kRunning); }));
    EXPECT_EQ(executors_->Batches(), 1u);
    EXPECT_EQ(executors_->Runs(), 10u);
}

TEST_F(SlaveTest, AFailedBatchRequestLeavesEveryRunToThePerFirePath) {
    executors_->batch_status = 500;  // the batch request fails as a whole
    executors_->status = 500;        // and so does every run alone
    // One due time, read once: two reads can straddle a millisecond (under ASan they did), and
    // fires due at different times are not one batch.
    const std::int64_t due = Now() + 100;
    store_->Add(1, 7, due);
    store_->Add(2, 7, due);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn({1, 2}, FireStatus::kFailed); }));
    EXPECT_NE(store_->MessageOf(1).find("HTTP 500"), std::string::npos) << store_->MessageOf(1);
    EXPECT_EQ(executors_->Batches(), 1u);
    EXPECT_EQ(executors_->Runs(), 2u) << "the batch's 500 answered no run; each was sent once more alone";
}

// A group claimed ahead of its due time carries the epoch of the claim. When a new master took
// over meanwhile and the executor has seen its epoch, the fires are re-stamped with the current
// epoch (they are still this claim's) and sent again, not failed; a fire whose claim was ended
// elsewhere is not sent at all.
TEST_F(SlaveTest, FiresClaimedBeforeAFailoverAreReStampedWithTheNewEpochNotFailed) {
    config_.claim_ahead = 400ms;
    config_.send_ahead = false;  // sent at the due time, after the failover below
    const std::int64_t due = Now() + 600;
    store_->Add(1, 7, due);
    store_->Add(2, 7, due);
    store_->Add(3, 7, due);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn({1, 2, 3}, FireStatus::kDispatching); }));
    ASSERT_LT(Now(), due - 50) << "claimed ahead of the due time";
    {
        std::lock_guard lock(store_->mu);
        store_->epoch = 43;                                   // a failover: the new master's epoch
        store_->fires.at(3).fire.status = FireStatus::kLost;  // and it ended fire 3 (e.g. swept)
    }
    {
        std::lock_guard lock(executors_->mu);
        executors_->newest_epoch = 43;  // the executor has already run a fire of the new master
    }
    ASSERT_TRUE(WaitFor([&] {
        return AllIn({1, 2}, FireStatus::kRunning);
    })) << model::FireStatusName(store_->StatusNow(1))
        << " " << store_->MessageOf(1);
    std::this_thread::sleep_for(100ms);
    {
        std::lock_guard lock(store_->mu);
        EXPECT_EQ(store_->restamped, (std::map<std::int64_t, std::int64_t>{{1, 43}, {2, 43}}));
        EXPECT_EQ(store_->fires.at(3).fire.status, FireStatus::kLost) << "not failed, not sent";
    }
    std::lock_guard lock(executors_->mu);
    int accepted_at_43 = 0;
    for (const auto& c : executors_->calls) {
        EXPECT_GE(c.at_ms, due) << "claimed ahead, sent at the due time";
        if (c.url.ends_with("/v1/run") && c.body.find("\"epoch\":43") != std::string::npos) ++accepted_at_43;
        if (c.url.ends_with("/v1/run") && c.body.find("\"fire_id\":3,") != std::string::npos) {
            EXPECT_EQ(c.body.find("\"epoch\":43"), std::string::npos) << "fire 3 was re-stamped: " << c.body;
        }
    }
    EXPECT_EQ(accepted_at_43, 2);
}

// A burst that cannot be sent (no live instance of its app) is ended in one transaction per
// record-window, not one per fire; each end keeps its own message and ledger reason.
TEST_F(SlaveTest, TheEndsOfABurstNobodyServesAreRecordedInOneBatch) {
    config_.record_window = 200ms;
    model::Job job;
    job.id = 8;
    job.app = "nobody";
    job.handler = "charge";
    store_->jobs[8] = job;
    const auto ids = AddFires(30, Now() + 50, 1, 8);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn(ids, FireStatus::kFailed); }));
    for (auto id : ids) {
        EXPECT_EQ(store_->ReasonOf(id), model::FireReason::kNoExecutor) << id;
        EXPECT_NE(store_->MessageOf(id).find("no live executor of app nobody"), std::string::npos)
            << store_->MessageOf(id);
    }
    std::lock_guard lock(store_->mu);
    std::size_t ended = 0;
    for (auto n : store_->finish_batches) ended += n;
    EXPECT_EQ(ended, 30u);
    EXPECT_LE(store_->finish_batches.size(), 2u) << "one transaction per window, not per fire";
}

// The slave's own end of a fire carries the fire's `ended` span, pushed only if that end moved
// the row: a fire a result ended first (while the slave waited for an instance) keeps the
// result's span alone, not a second `ended` with the slave's status.
TEST_F(SlaveTest, AnEndedSpanIsPushedOnlyForAnEndThatMovedTheFire) {
    protocol::testing::ScopedSpanSink spans;
    config_.dispatch_timeout = 300ms;  // how long a fire waits for a live instance of its app
    model::Job job;
    job.id = 8;
    job.app = "nobody";
    job.handler = "charge";
    store_->jobs[8] = job;
    store_->Add(1, 8, Now());
    store_->Add(2, 8, Now());
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return store_->StatusNow(2) == FireStatus::kDispatching; }));
    {
        std::lock_guard lock(store_->mu);
        store_->fires.at(2).fire.status = FireStatus::kSucceeded;  // a result landed first
    }
    ASSERT_TRUE(WaitFor([&] { return store_->StatusNow(1) == FireStatus::kFailed; }));
    std::this_thread::sleep_for(100ms);  // the slave's end of fire 2 was written with fire 1's, or after
    EXPECT_EQ(store_->StatusNow(2), FireStatus::kSucceeded);
    const auto ended = spans->Named("ended");
    ASSERT_EQ(ended.size(), 1u) << "fire 2's end moved nothing: no span";
    EXPECT_EQ(protocol::testing::IntAttribute(ended[0], "sched.fire_id"), 1);
}

TEST_F(SlaveTest, AGroupIsCutAtMaxGroup) {
    config_.max_group = 50;
    const auto ids = AddFires(120, Now());
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn(ids, FireStatus::kRunning); }));
    const auto sizes = ClaimSizes();
    EXPECT_GE(sizes.size(), 3u);
    for (const std::size_t size : sizes) EXPECT_LE(size, 50u);
}

TEST_F(SlaveTest, AFireWonElsewhereIsNotSent) {
    const std::int64_t due = Now() + 500;  // claimed from 100-200 ms before due (claim-ahead)
    store_->Add(1, 7, due);
    store_->Add(2, 7, due);
    StartSlave();
    {
        // Another slave claims fire 2 after this one queued it.
        ASSERT_TRUE(WaitFor([&] { return slave_->Scheduled() == 2; }));
        std::lock_guard lock(store_->mu);
        store_->fires.at(2).fire.status = FireStatus::kDispatching;
        store_->fires.at(2).token = 999;
    }
    ASSERT_TRUE(WaitFor([&] { return store_->StatusNow(1) == FireStatus::kRunning; }));
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(executors_->Runs(), 1u);
    EXPECT_EQ(store_->StatusNow(2), FireStatus::kDispatching);
    EXPECT_TRUE(WaitFor([&] { return slave_->Scheduled() == 0; }));
}

TEST_F(SlaveTest, AClaimRetriedAfterAnErrorReusesItsTokenAndSendsOnce) {
    store_->fail_claims_after_commit = 2;
    const std::int64_t due = Now();
    store_->Add(1, 7, due);
    store_->Add(2, 7, due);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn({1, 2}, FireStatus::kRunning); }));
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(executors_->Runs(), 2u);
    std::lock_guard lock(store_->mu);
    ASSERT_EQ(store_->tokens.size(), 3u);
    EXPECT_EQ(store_->tokens[0], store_->tokens[1]);
    EXPECT_EQ(store_->tokens[1], store_->tokens[2]);
}

// Other nodes' claims kept writing rows of a large group (Galera certification): the group is
// halved until a part wins, each part sent before the next, all under the group's token.
TEST_F(SlaveTest, AGroupThatKeepsLosingConflictsIsClaimedInHalvesAndEveryFireIsSent) {
    store_->conflict_above = 2;
    const auto ids = AddFires(8, Now());
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn(ids, FireStatus::kRunning); }));
    EXPECT_EQ(executors_->Runs(), 8u);
    // Two conflicts at each size before halving: 8, 8, 4, 4, then parts of 2.
    ASSERT_EQ(ClaimSizes(), (std::vector<std::size_t>{8, 8, 4, 4, 2, 2, 2, 2}));
    std::lock_guard lock(store_->mu);
    EXPECT_EQ(store_->claims[4], (std::vector<std::int64_t>{1, 2})) << "earliest first";
    for (const auto token : store_->tokens) EXPECT_EQ(token, store_->tokens.front());
}

// An outage is not a conflict: the group is retried whole.
TEST_F(SlaveTest, AGroupIsRetriedWholeAfterAnOutage) {
    store_->fail_claims_after_commit = 3;
    const auto ids = AddFires(6, Now());
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn(ids, FireStatus::kRunning); }));
    EXPECT_EQ(ClaimSizes(), (std::vector<std::size_t>{6, 6, 6, 6}));
}

TEST_F(SlaveTest, CallsToOneExecutorAreCapped) {
    config_.max_calls_per_executor = 4;
    executors_->delay = 40ms;
    executors_->serves_batch = false;  // one call per fire
    const auto ids = AddFires(20, Now());
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn(ids, FireStatus::kRunning); }));
    std::lock_guard lock(executors_->mu);
    EXPECT_LE(executors_->max_open, 4);
    EXPECT_GE(executors_->max_open, 2) << "calls run concurrently up to the cap";
}

TEST_F(SlaveTest, ABusyExecutorIsAskedAgainUntilItAccepts) {
    executors_->refuse_first = 2;
    executors_->refuse_status = 503;
    store_->Add(1, 7, Now());
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return store_->StatusNow(1) == FireStatus::kRunning; }));
    EXPECT_EQ(executors_->Runs(), 3u);
}

TEST_F(SlaveTest, AnErrorAnswerFailsTheFireWithTheReasonAndIsNotRepeated) {
    executors_->status = 500;
    store_->Add(1, 7, Now());
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return store_->StatusNow(1) == FireStatus::kFailed; }));
    EXPECT_NE(store_->MessageOf(1).find("HTTP 500"), std::string::npos) << store_->MessageOf(1);
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(executors_->Runs(), 1u);
}

// What the slave writes for a master (an end: its follow-up; fires handed back at Stop) wakes
// the masters; a run that was only accepted does not.
TEST_F(SlaveTest, AnEndOrAHandBackWakesTheMastersAndAnAcceptedRunDoesNot) {
    store_->Add(1, 7, Now());
    store_->Add(2, 7, Now() + 60'000);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return store_->StatusNow(1) == FireStatus::kRunning; }));
    EXPECT_EQ(wakes_.load(), 0) << "an accepted run leaves the master nothing";
    executors_->status = 500;
    store_->Add(3, 7, Now());
    slave_->NotifyIds({3});
    ASSERT_TRUE(WaitFor([&] { return store_->StatusNow(3) == FireStatus::kFailed; }));
    ASSERT_TRUE(WaitFor([&] { return wakes_.load() == 1; })) << "a failed fire's follow-up (its retry)";
    ASSERT_TRUE(StopSlave());
    EXPECT_EQ(wakes_.load(), 2) << "fire 2 handed back, for the master to give to another node";
}

TEST_F(SlaveTest, FiresOfPausedOrDeletedJobsAreSkippedWithTheReason) {
    model::Job paused = store_->jobs[7];
    paused.id = 8;
    paused.enabled = false;
    store_->jobs[8] = paused;
    store_->Add(1, 8, Now());
    store_->Add(2, 9, Now());  // job 9 does not exist
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn({1, 2}, FireStatus::kSkipped); }));
    EXPECT_EQ(store_->MessageOf(1), "job paused");
    EXPECT_EQ(store_->ReasonOf(1), model::FireReason::kPaused);
    EXPECT_EQ(store_->MessageOf(2), "job deleted");
    EXPECT_EQ(store_->ReasonOf(2), model::FireReason::kJobDeleted);
    EXPECT_EQ(executors_->Runs(), 0u);
}

// Fires planned ahead that became late while the node was stopped (here: due 10 s ago, as
// after a 10 s SIGSTOP) obey their job's misfire policy instead of all running late.
TEST_F(SlaveTest, PlannedFiresThatBecameLateObeyTheJobsMisfirePolicy) {
    config_.misfire_threshold = 1s;
    const auto job_with = [&](std::int64_t id, const std::string& policy) {
        model::Job j = store_->jobs[7];
        j.id = id;
        j.misfire_policy = *sched::ParseMisfirePolicy(policy);
        store_->jobs[id] = j;
    };
    job_with(10, "skip");
    job_with(11, "fire-once-now");
    job_with(12, "fire-all");
    const std::int64_t now = Now();
    store_->Add(1, 10, now - 10'000);  // skip: late -> skipped
    store_->Add(2, 10, now - 9'000);   // skip: late -> skipped
    store_->Add(3, 10, now);           // skip: on time -> runs
    store_->Add(4, 11, now - 10'000);  // fire-once-now: folded into 5
    store_->Add(5, 11, now - 9'000);   // fire-once-now: the latest late one runs
    store_->Add(6, 12, now - 10'000);  // fire-all: runs
    store_->Add(7, 12, now - 9'000);   // fire-all: runs
    store_->Add(8, 10, now - 10'000);  // a late retry of a skip job still runs
    store_->Add(9, 10, now - 4'900);   // planned when already due (judged by the master), waited 100 ms: runs
    {
        std::lock_guard lock(store_->mu);
        store_->fires[8].fire.kind = model::FireKind::kRetry;
        store_->fires[8].fire.attempt = 1;
        store_->fires[9].fire.created_at = now - 100;
    }
    StartSlave();
    ASSERT_TRUE(WaitFor([&] {
        return AllIn({1, 2, 4}, FireStatus::kSkipped) && AllIn({3, 5, 6, 7, 8, 9}, FireStatus::kRunning);
    })) << "fire 1 "
        << model::FireStatusName(store_->StatusNow(1)) << ", fire 5 " << model::FireStatusName(store_->StatusNow(5));
    for (std::int64_t id : {1, 2, 4}) {
        EXPECT_EQ(store_->ReasonOf(id), model::FireReason::kMisfire) << id;
        EXPECT_NE(store_->MessageOf(id).find("misfire: planned for"), std::string::npos) << store_->MessageOf(id);
    }
    EXPECT_NE(store_->MessageOf(1).find("policy skip"), std::string::npos) << store_->MessageOf(1);
    EXPECT_NE(store_->MessageOf(4).find("folded into fire 5"), std::string::npos) << store_->MessageOf(4);
    EXPECT_EQ(executors_->Runs(), 6u);
}

TEST_F(SlaveTest, NoLiveExecutorFailsTheFireAndTheRegistryIsReadAgain) {
    store_->executors.clear();
    store_->Add(1, 7, Now());
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return store_->StatusNow(1) == FireStatus::kFailed; }));
    EXPECT_NE(store_->MessageOf(1).find("no live executor of app billing"), std::string::npos);
    EXPECT_EQ(store_->ReasonOf(1), model::FireReason::kNoExecutor);
    // A service registers; the next fire of its app finds it although the copy is fresh.
    {
        std::lock_guard lock(store_->mu);
        store::ExecutorInstance e;
        e.app = "billing";
        e.address = "10.0.0.2:9000";
        e.handlers = {"charge"};
        store_->executors.push_back(e);
    }
    store_->Add(2, 7, Now());
    ASSERT_TRUE(WaitFor([&] { return store_->StatusNow(2) == FireStatus::kRunning; }));
}

// After a database outage the registry read with a claim can predate the instances' next
// heartbeat: the fire waits for one (registry read again with backoff) within dispatch-timeout
// instead of failing at once.
TEST_F(SlaveTest, AFireWithNoInstanceYetWaitsForOneWithinTheDispatchTimeout) {
    store_->executors.clear();
    store_->Add(1, 7, Now());
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return store_->StatusNow(1) == FireStatus::kDispatching; }));
    std::this_thread::sleep_for(300ms);
    {
        std::lock_guard lock(store_->mu);
        store::ExecutorInstance e;
        e.app = "billing";
        e.address = "10.0.0.3:9000";
        e.handlers = {"charge"};
        store_->executors.push_back(e);  // its first heartbeat since the outage
    }
    ASSERT_TRUE(WaitFor([&] { return store_->StatusNow(1) == FireStatus::kRunning; }))
        << model::FireStatusName(store_->StatusNow(1)) << ": " << store_->MessageOf(1);
    std::lock_guard lock(store_->mu);
    EXPECT_EQ(store_->fires.at(1).address, "10.0.0.3:9000");
    EXPECT_LE(store_->live_reads, 8) << "re-read with backoff, not in a tight loop";
}

TEST_F(SlaveTest, StopHandsBackTheFiresNotYetClaimed) {
    store_->Add(1, 7, Now() + 60'000);
    store_->Add(2, 7, Now() + 60'000);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return slave_->Scheduled() == 2; }));
    ASSERT_TRUE(StopSlave());
    EXPECT_EQ(slave_->Scheduled(), 0u);
    std::lock_guard lock(store_->mu);
    EXPECT_EQ(store_->unassigned, 2);
    EXPECT_TRUE(store_->claims.empty());
}

// A planned fire stays `dispatching` until its record lands, so every poll lists it: it is
// sent once, and only once the node's sent_through covers it (raised by the claim).
TEST_F(SlaveTest, APlannedFireIsSentOnceUnderARaisedSentThroughThoughEveryPollFindsIt) {
    config_.record_running_after = 2s;  // the record waits: the fire stays dispatching meanwhile
    store_->AddPlanned(1, 7, Now() + 100);
    store_->AddPlanned(2, 7, Now() + 150);
    store_->Add(3, 7, Now() + 150);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return executors_->Runs() == 3; }));
    const auto polls = [&] {
        std::lock_guard lock(store_->mu);
        return store_->polls;
    }();
    ASSERT_TRUE(WaitFor([&] {
        std::lock_guard lock(store_->mu);
        return store_->polls >= polls + 4;
    }));
    EXPECT_EQ(executors_->Runs(), 3u) << "polls found the planned fires again; none was sent twice";
    EXPECT_EQ(store_->StatusNow(1), FireStatus::kDispatching);
    std::lock_guard lock(store_->mu);
    EXPECT_GE(store_->sent_through, store_->fires.at(2).fire.due_at) << "raised past the fires sent";
    EXPECT_LE(store_->sent_through, store_->fires.at(2).fire.due_at + SentFires::kLeadMs);
}

// A group of planned fires only (as notices and polls say) is claimed without looking for
// pending ones; a fire held back is pending again and claimed with the look.
TEST_F(SlaveTest, AGroupOfPlannedFiresOnlyIsClaimedWithoutTheUpdateOfPendingOnes) {
    ASSERT_TRUE(StartSlavePollingOnce());
    store_->AddPlanned(1, 7, Now() + 50);
    store_->AddPlanned(2, 7, Now() + 50);
    slave_->Notify(
        {{.id = 1, .due_at = Now() + 50, .planned = true}, {.id = 2, .due_at = Now() + 50, .planned = true}});
    ASSERT_TRUE(WaitFor([&] { return executors_->Runs() == 2; }));
    store_->Add(3, 7, Now() + 50);
    slave_->Notify({{.id = 3, .due_at = Now() + 50, .planned = true}});  // a wrong hint: it is pending
    ASSERT_TRUE(WaitFor([&] {
        std::lock_guard lock(store_->mu);
        return store_->claims.size() >= 2;
    }));
    std::this_thread::sleep_for(200ms);
    std::lock_guard lock(store_->mu);
    EXPECT_EQ(store_->only_planned_claims, 2);
    EXPECT_EQ(store_->fires.at(3).fire.status, FireStatus::kPending) << "not won: the poll finds it later";
}

// A planned fire due after the sent_through the claim read is not sent (a claim that could not
// raise it: the master released the fire meanwhile, or a notice's due time was wrong).
TEST_F(SlaveTest, APlannedFireDueAfterTheSentThroughItsClaimReadIsNotSent) {
    ASSERT_TRUE(StartSlavePollingOnce());
    store_->AddPlanned(1, 7, Now() + 60'000);  // the row says later than the notice below
    store_->Add(2, 7, Now() + 50);
    slave_->Notify({{.id = 1, .due_at = Now() + 50}, {.id = 2, .due_at = Now() + 50}});
    ASSERT_TRUE(WaitFor([&] { return executors_->Runs() == 1; }));
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(executors_->Runs(), 1u);
    EXPECT_EQ(store_->StatusNow(1), FireStatus::kDispatching) << "still the node's, unsent";
    std::lock_guard lock(store_->mu);
    ASSERT_FALSE(store_->claims.empty());
    EXPECT_NE(std::find(store_->claims.front().begin(), store_->claims.front().end(), 1), store_->claims.front().end())
        << "claimed by the notice's due time";
    EXPECT_LT(store_->sent_through, store_->fires.at(1).fire.due_at);
}

// A slave stopped before it started has no group loop to wait for (Stop would otherwise wait out
// dispatch-timeout before it hands anything back).
TEST_F(SlaveTest, AStopBeforeStartDoesNotWaitForAGroupLoop) {
    config_.dispatch_timeout = 60s;
    store_->Add(1, 7, Now() + 60'000);
    slave_ = std::make_unique<Slave>(io_.get_executor(), db_pool_, std::move(store_owned_), std::move(executors_owned_),
                                     time_, "n1", config_, metrics_);
    ASSERT_TRUE(StopSlave()) << "returned within 5 s";
    std::lock_guard lock(store_->mu);
    EXPECT_TRUE(store_->handed_back_sent.has_value());
    EXPECT_EQ(store_->unassigned, 1);
}

// Stop hands back the planned fires it has not sent, and keeps those it sent.
TEST_F(SlaveTest, StopHandsBackThePlannedFiresItHasNotSent) {
    executors_->delay = 300ms;  // fire 1 is in flight when Stop hands back: sent, not recorded
    store_->AddPlanned(1, 7, Now() + 50);
    store_->AddPlanned(2, 7, Now() + 60'000);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return executors_->Runs() == 1; }));
    ASSERT_TRUE(StopSlave());
    std::lock_guard lock(store_->mu);
    ASSERT_TRUE(store_->handed_back_sent.has_value()) << "the group loop had ended";
    EXPECT_EQ(*store_->handed_back_sent, std::set<std::int64_t>{1});
    EXPECT_EQ(store_->fires.at(2).fire.status, FireStatus::kPending);
    EXPECT_EQ(store_->fires.at(2).fire.assigned_node, std::nullopt);
    EXPECT_NE(store_->fires.at(1).fire.status, FireStatus::kPending);
}

// The poll reads ids; a fire is read whole only while this node does not know it (its
// notification was lost), so a node with thousands of fires queued reads no row per poll.
TEST_F(SlaveTest, APollReadsWholeOnlyTheFiresThisNodeDoesNotKnow) {
    const std::int64_t later = Now() + 60000;  // queued for the whole test
    for (int i = 1; i <= 1500; ++i) store_->Add(i, 7, later + i);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return slave_->Scheduled() == 1500; }));
    {
        std::lock_guard lock(store_->mu);
        ASSERT_EQ(store_->found.size(), 1500u) << "each unknown fire read once";
        EXPECT_EQ(store_->found.front(), 1);
        EXPECT_EQ(store_->found.back(), 1500);
    }
    const auto polls_before = [&] {
        std::lock_guard lock(store_->mu);
        return store_->polls;
    }();
    store_->Add(2000, 7, later);  // assigned with no notification
    ASSERT_TRUE(WaitFor([&] { return slave_->Scheduled() == 1501; }));
    ASSERT_TRUE(WaitFor([&] {
        std::lock_guard lock(store_->mu);
        return store_->polls >= polls_before + 3;
    }));
    std::lock_guard lock(store_->mu);
    ASSERT_EQ(store_->found.size(), 1501u) << "known fires are not read again";
    EXPECT_EQ(store_->found.back(), 2000);
    EXPECT_TRUE(store_->claims.empty());
}

// The master's notice carries each fire's due time: the slave queues the fires by it and reads
// them only in its claim, which holds it to its own pending fires whatever the notice names.
TEST_F(SlaveTest, NoticedFiresAreQueuedByTheirDueTimeAndReadOnlyByTheirClaim) {
    config_.claim_ahead = 100ms;
    ASSERT_TRUE(StartSlavePollingOnce());
    const std::int64_t due = Now() + 400;
    for (int i = 1; i <= 4; ++i) store_->Add(i, 7, due);
    {
        std::lock_guard lock(store_->mu);
        store_->fires[4].fire.assigned_node = "n2";  // another node's
    }
    slave_->Notify({{.id = 1, .due_at = due},
                    {.id = 2, .due_at = due},
                    {.id = 3, .due_at = due},
                    {.id = 4, .due_at = due},
                    {.id = 5, .due_at = due}});  // 5: no such fire
    ASSERT_TRUE(WaitFor([&] { return AllIn({1, 2, 3}, FireStatus::kRunning); }));
    EXPECT_EQ(executors_->Runs(), 3u);
    std::lock_guard lock(store_->mu);
    EXPECT_TRUE(store_->found.empty()) << "no fire read before its claim";
    ASSERT_EQ(store_->claims.size(), 1u) << "the five in one claim";
    EXPECT_EQ(store_->claims[0], (std::vector<std::int64_t>{1, 2, 3, 4, 5}));
    for (int i = 1; i <= 3; ++i) {
        // Claimed by the notice's due time: within twice claim-ahead before it.
        EXPECT_GE(*store_->fires.at(i).fire.dispatched_at, due - 200) << i;
    }
    EXPECT_EQ(store_->fires.at(4).fire.status, FireStatus::kPending) << "another node's fire is not taken";
    EXPECT_EQ(slave_->Scheduled(), 0u) << "the two the claim did not win are forgotten";
}

// What a notice may queue unread is bounded: in time (a fire due beyond the horizon is left to
// the poll, which reads it) and in count.
TEST_F(SlaveTest, ANoticeQueuesOnlyFiresDueWithinItsHorizonAndNoMoreThanTheCap) {
    ASSERT_TRUE(StartSlavePollingOnce());
    const std::int64_t soon = Now() + 30000;
    slave_->Notify({{.id = 900001, .due_at = Now() + Slave::kNoticeHorizonMs + 60000}, {.id = 900002, .due_at = soon}});
    EXPECT_EQ(slave_->Scheduled(), 1u) << "only the fire due within the horizon";
    std::int64_t next_id = 1;
    while (next_id <= static_cast<std::int64_t>(Slave::kMaxQueued) + 5000) {
        std::vector<protocol::NoticedFire> notice;
        for (std::size_t i = 0; i < protocol::kMaxNoticeFires; ++i) notice.push_back({.id = next_id++, .due_at = soon});
        slave_->Notify(notice);
    }
    EXPECT_EQ(slave_->Scheduled(), Slave::kMaxQueued);
}

// A master older than the notice's due times sends ids alone: the slave reads those fires
// before it queues them, as before.
TEST_F(SlaveTest, ANoticeWithoutDueTimesReadsItsFiresFirst) {
    ASSERT_TRUE(StartSlavePollingOnce());
    store_->Add(1, 7, Now() + 100);
    slave_->NotifyIds({1});
    ASSERT_TRUE(WaitFor([&] { return AllIn({1}, FireStatus::kRunning); }));
    std::lock_guard lock(store_->mu);
    EXPECT_EQ(store_->found, std::vector<std::int64_t>{1});
}

TEST_F(SlaveTest, StopWaitsForTheDispatchesOfClaimedFiresAndTheirRunningRecords) {
    executors_->delay = 300ms;
    store_->Add(1, 7, Now());
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return executors_->Runs() == 1; }));
    ASSERT_TRUE(StopSlave());
    EXPECT_EQ(slave_->InFlight(), 0u);
    EXPECT_EQ(store_->StatusNow(1), FireStatus::kRunning) << "the 202 arrived during Stop and is recorded";
}

// A run is recorded `running` only once it has run record-running-after: a run whose result
// ended it first (here the store ends it, as a callback would) is never moved to `running`,
// and a longer one is recorded after that time, not at its 202.
TEST_F(SlaveTest, ARunEndedWithinRecordRunningAfterIsNeverRecordedRunning) {
    config_.send_ahead = false;
    config_.record_window = 5ms;
    config_.record_running_after = 300ms;
    const std::int64_t due = Now() + 100;
    store_->Add(1, 7, due);
    store_->Add(2, 7, due);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return executors_->Runs() == 2; }));
    const std::int64_t sent = FakeExecutors::WallMs();
    {
        std::lock_guard lock(store_->mu);
        auto& f = store_->fires.at(1);
        ASSERT_EQ(f.fire.status, FireStatus::kDispatching) << "recorded running at its 202";
        f.fire.status = FireStatus::kSucceeded;  // its result, applied while dispatching
    }
    ASSERT_TRUE(WaitFor([&] { return store_->StatusNow(2) == FireStatus::kRunning; }));
    std::lock_guard lock(store_->mu);
    EXPECT_EQ(store_->fires.at(1).fire.status, FireStatus::kSucceeded);
    EXPECT_FALSE(store_->running_at.contains(1)) << "an ended run was moved to running";
    EXPECT_GE(store_->running_at.at(2), sent + 250) << "recorded before record-running-after";
    EXPECT_EQ(store_->fires.at(2).address, "10.0.0.1:9000");
}

// A job timeout shorter than record-running-after: the end takes the queued `running` record
// back and is written alone, from `dispatching`, with the instance and start the record had.
TEST_F(SlaveTest, ATimeoutBeforeTheRunningRecordEndsTheFireWithTheRecordsInstance) {
    config_.send_ahead = false;
    config_.record_window = 5ms;
    config_.record_running_after = 2s;
    store_->jobs[7].timeout_ms = 50;
    const std::int64_t due = Now() + 100;
    store_->Add(1, 7, due);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return store_->StatusNow(1) == FireStatus::kTimeout; }));
    std::lock_guard lock(store_->mu);
    EXPECT_TRUE(store_->running_batches.empty()) << "the withdrawn record was written";
    EXPECT_EQ(store_->fires.at(1).address, "10.0.0.1:9000");
    ASSERT_TRUE(store_->fires.at(1).fire.started_at.has_value());
    EXPECT_GE(*store_->fires.at(1).fire.started_at, due);
}

// A run its job's policy may stop for a later fire is recorded at the next record-window, not
// held: the claim that stops it, maybe on another node, finds its instance only in the record.
TEST_F(SlaveTest, ARunALaterFireMayStopIsRecordedRunningWithoutTheHold) {
    config_.send_ahead = false;
    config_.record_window = 5ms;
    config_.record_running_after = 3s;
    store_->jobs[7].block_strategy = BlockStrategy::kTerminateOther;
    store_->Add(1, 7, Now() + 100);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return executors_->Runs() == 1; }));
    const std::int64_t sent = FakeExecutors::WallMs();
    ASSERT_TRUE(WaitFor([&] { return store_->StatusNow(1) == FireStatus::kRunning; }));
    std::lock_guard lock(store_->mu);
    EXPECT_LT(store_->running_at.at(1), sent + 1000) << "held like any run";
    EXPECT_EQ(store_->fires.at(1).address, "10.0.0.1:9000");
}

TEST_F(SlaveTest, ASlaveDestroyedWhileADispatchHangsLeavesItsCoroutineSafeToDestroy) {
    // A node stopping while an executor hangs: Stop gives up after dispatch-timeout, the slave
    // is destroyed, and the I/O context destroys the unfinished dispatch later. Under ASan (the
    // suite's second stage) a coroutine that touched the slave then fails this test.
    config_.dispatch_timeout = 300ms;
    executors_->delay = 60s;
    store_->Add(1, 7, Now());
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return executors_->Runs() == 1; }));
    ASSERT_TRUE(StopSlave());
    EXPECT_EQ(slave_->InFlight(), 1u) << "the hanging dispatch is still in flight";
    EXPECT_EQ(store_->StatusNow(1), FireStatus::kDispatching);
    io_.stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
    slave_.reset();
    // io_ (destroyed with the fixture, after this) now destroys the suspended dispatch.
}

}  // namespace
}  // namespace sched::trigger
