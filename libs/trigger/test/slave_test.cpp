// The slave's grouping, claiming, call limits and batching, against fakes of its two ports
// (a store and an executor client): real io threads and timers, no database, no HTTP.
#include "sched/trigger/slave.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "sched/common/clock.hpp"

namespace sched::trigger {
namespace {

using namespace std::chrono_literals;
using store::FireStatus;

class FakeStore final : public FireClaimStore {
  public:
    struct Fire {
        store::Fire fire;
        std::int64_t token = 0;
        std::string address;
        std::string message;
        std::optional<store::FireReason> reason;
    };
    mutable std::mutex mu;
    std::map<std::int64_t, Fire> fires;
    std::map<std::int64_t, store::Job> jobs;
    std::vector<store::ExecutorInstance> executors;
    std::vector<std::vector<std::int64_t>> claims;  // the ids of every Claim call
    std::vector<std::int64_t> tokens;               // the token of every Claim call
    std::vector<std::size_t> running_batches;       // the size of every MarkRunning call
    int live_reads = 0;
    int unassigned = 0;
    int fail_claims_after_commit = 0;  // this many Claim calls commit and then report an error

    void Add(std::int64_t id, std::int64_t job_id, std::int64_t due_at) {
        std::lock_guard lock(mu);
        store::Fire f;
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
    std::optional<store::FireReason> ReasonOf(std::int64_t id) const {
        std::lock_guard lock(mu);
        return fires.at(id).reason;
    }

    Result<std::vector<store::Fire>> ListPending(const std::string& node, int limit) override {
        std::lock_guard lock(mu);
        std::vector<store::Fire> out;
        for (const auto& [id, f] : fires) {
            if (f.fire.status == FireStatus::kPending && f.fire.assigned_node == node &&
                static_cast<int>(out.size()) < limit)
                out.push_back(f.fire);
        }
        return out;
    }
    Result<std::vector<store::Fire>> FindPending(const std::string& node,
                                                 const std::vector<std::int64_t>& ids) override {
        std::lock_guard lock(mu);
        std::vector<store::Fire> out;
        for (auto id : ids) {
            auto it = fires.find(id);
            if (it != fires.end() && it->second.fire.status == FireStatus::kPending &&
                it->second.fire.assigned_node == node)
                out.push_back(it->second.fire);
        }
        return out;
    }
    Result<ClaimedGroup> Claim(const std::vector<std::int64_t>& ids, std::int64_t token, std::int64_t now) override {
        std::lock_guard lock(mu);
        claims.push_back(ids);
        tokens.push_back(token);
        ClaimedGroup g;
        g.epoch = 42;
        std::set<std::int64_t> job_ids;
        for (auto id : ids) {
            auto& f = fires.at(id);
            if (f.fire.status == FireStatus::kPending) {
                f.fire.status = FireStatus::kDispatching;
                f.fire.dispatched_at = now;
                f.token = token;
            }
            if (f.token == token && f.fire.status == FireStatus::kDispatching) {
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
        return g;
    }
    Result<std::vector<store::ExecutorInstance>> LiveExecutors(std::int64_t) override {
        std::lock_guard lock(mu);
        ++live_reads;
        return executors;
    }
    Result<int> MarkRunning(const std::vector<std::int64_t>& ids, const std::string& address,
                            std::int64_t started_at) override {
        std::lock_guard lock(mu);
        running_batches.push_back(ids.size());
        int moved = 0;
        for (auto id : ids) {
            auto& f = fires.at(id);
            if (f.fire.status != FireStatus::kDispatching) continue;
            f.fire.status = FireStatus::kRunning;
            f.fire.started_at = started_at;
            f.address = address;
            ++moved;
        }
        return moved;
    }
    Status Finish(std::int64_t id, FireStatus from, FireStatus to, const std::string& message,
                  std::optional<store::FireReason> reason, std::int64_t) override {
        std::lock_guard lock(mu);
        auto& f = fires.at(id);
        if (f.fire.status != from) return Aborted("not in the expected state");
        f.fire.status = to;
        f.message = message;
        f.reason = reason;
        return Status::Ok();
    }
    Result<FireStatus> StatusOf(std::int64_t id) override {
        std::lock_guard lock(mu);
        return fires.at(id).fire.status;
    }
    Result<int> EndEarlierDispatches(const std::string&, std::int64_t, std::int64_t) override { return 0; }
    Result<int> UnassignPending(const std::string& node) override {
        std::lock_guard lock(mu);
        int n = 0;
        for (auto& [id, f] : fires) {
            if (f.fire.status == FireStatus::kPending && f.fire.assigned_node == node) {
                f.fire.assigned_node.reset();
                ++n;
            }
        }
        unassigned += n;
        return n;
    }
};

class FakeExecutors final : public ExecutorClient {
  public:
    struct Call {
        std::string url;
        std::string body;
        std::int64_t at_ms = 0;
    };
    std::mutex mu;
    std::vector<Call> calls;
    int open = 0;
    int max_open = 0;
    int refuse_first = 0;  // answer this many /v1/run calls with `refuse_status`
    int refuse_status = 503;
    int status = 202;  // then this
    Micros delay{0};   // each /v1/run takes this long
    net::any_io_executor io;

    explicit FakeExecutors(net::any_io_executor e) : io(std::move(e)) {}

    std::size_t Runs() {
        std::lock_guard lock(mu);
        return static_cast<std::size_t>(
            std::count_if(calls.begin(), calls.end(), [](const Call& c) { return c.url.ends_with("/v1/run"); }));
    }

    net::awaitable<Result<rest::ClientResponse>> Send(std::string, rest::Method, std::string url, std::string body,
                                                      rest::CallOptions) override {
        int answer = status;
        {
            std::lock_guard lock(mu);
            calls.push_back({url, body, WallMs()});
            max_open = std::max(max_open, ++open);
            if (refuse_first > 0) {
                --refuse_first;
                answer = refuse_status;
            }
        }
        if (delay > Micros{0}) {
            net::steady_timer t(io);
            t.expires_after(delay);
            co_await t.async_wait(net::use_awaitable);
        }
        {
            std::lock_guard lock(mu);
            --open;
        }
        rest::ClientResponse r;
        r.status = answer;
        co_return r;
    }

    static std::int64_t WallMs() {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
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
        store::Job job;
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
            auto stopped = net::co_spawn(io_, slave_->Stop(), net::use_future);
            stopped.wait_for(5s);
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
        slave_->Start();
    }
    std::int64_t Now() const { return time_.NowMs(); }

    template <typename Pred>
    bool WaitFor(Pred pred, Micros timeout = 5s) {
        const auto until = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < until) {
            if (pred()) return true;
            std::this_thread::sleep_for(5ms);
        }
        return pred();
    }
    bool AllIn(const std::vector<std::int64_t>& ids, FireStatus s) {
        return std::all_of(ids.begin(), ids.end(), [&](auto id) { return store_->StatusNow(id) == s; });
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
    std::unique_ptr<ExecutorClient> executors_owned_;
    std::unique_ptr<Slave> slave_;
};

TEST_F(SlaveTest, ABurstIsClaimedAsOneGroupAndSentAtItsDueTime) {
    const std::int64_t due = Now() + 300;
    std::vector<std::int64_t> ids;
    for (int i = 1; i <= 200; ++i) {
        store_->Add(i, 7, due);
        ids.push_back(i);
    }
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn(ids, FireStatus::kRunning); })) << executors_->Runs() << " runs";
    EXPECT_EQ(executors_->Runs(), 200u);
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

TEST_F(SlaveTest, AGroupIsCutAtMaxGroup) {
    config_.max_group = 50;
    std::vector<std::int64_t> ids;
    for (int i = 1; i <= 120; ++i) {
        store_->Add(i, 7, Now());
        ids.push_back(i);
    }
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn(ids, FireStatus::kRunning); }));
    std::lock_guard lock(store_->mu);
    EXPECT_GE(store_->claims.size(), 3u);
    for (const auto& c : store_->claims) EXPECT_LE(c.size(), 50u);
}

TEST_F(SlaveTest, AFireWonElsewhereIsNotSent) {
    store_->Add(1, 7, Now() + 100);
    store_->Add(2, 7, Now() + 100);
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
    store_->Add(1, 7, Now());
    store_->Add(2, 7, Now());
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn({1, 2}, FireStatus::kRunning); }));
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(executors_->Runs(), 2u);
    std::lock_guard lock(store_->mu);
    ASSERT_EQ(store_->tokens.size(), 3u);
    EXPECT_EQ(store_->tokens[0], store_->tokens[1]);
    EXPECT_EQ(store_->tokens[1], store_->tokens[2]);
}

TEST_F(SlaveTest, CallsToOneExecutorAreCapped) {
    config_.max_calls_per_executor = 4;
    executors_->delay = 40ms;
    std::vector<std::int64_t> ids;
    for (int i = 1; i <= 20; ++i) {
        store_->Add(i, 7, Now());
        ids.push_back(i);
    }
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

TEST_F(SlaveTest, FiresOfPausedOrDeletedJobsAreSkippedWithTheReason) {
    store::Job paused = store_->jobs[7];
    paused.id = 8;
    paused.enabled = false;
    store_->jobs[8] = paused;
    store_->Add(1, 8, Now());
    store_->Add(2, 9, Now());  // job 9 does not exist
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return AllIn({1, 2}, FireStatus::kSkipped); }));
    EXPECT_EQ(store_->MessageOf(1), "job paused");
    EXPECT_EQ(store_->ReasonOf(1), store::FireReason::kPaused);
    EXPECT_EQ(store_->MessageOf(2), "job deleted");
    EXPECT_EQ(store_->ReasonOf(2), store::FireReason::kJobDeleted);
    EXPECT_EQ(executors_->Runs(), 0u);
}

// Fires planned ahead that became late while the node was stopped (here: due 10 s ago, as
// after a 10 s SIGSTOP) obey their job's misfire policy instead of all running late.
TEST_F(SlaveTest, PlannedFiresThatBecameLateObeyTheJobsMisfirePolicy) {
    config_.misfire_threshold = 1s;
    const auto job_with = [&](std::int64_t id, const std::string& policy) {
        store::Job j = store_->jobs[7];
        j.id = id;
        j.misfire_policy = policy;
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
        store_->fires[8].fire.kind = store::FireKind::kRetry;
        store_->fires[8].fire.attempt = 1;
        store_->fires[9].fire.created_at = now - 100;
    }
    StartSlave();
    ASSERT_TRUE(WaitFor([&] {
        return AllIn({1, 2, 4}, FireStatus::kSkipped) && AllIn({3, 5, 6, 7, 8, 9}, FireStatus::kRunning);
    })) << "fire 1 "
        << store::FireStatusName(store_->StatusNow(1)) << ", fire 5 " << store::FireStatusName(store_->StatusNow(5));
    for (std::int64_t id : {1, 2, 4}) {
        EXPECT_EQ(store_->ReasonOf(id), store::FireReason::kMisfire) << id;
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
    EXPECT_EQ(store_->ReasonOf(1), store::FireReason::kNoExecutor);
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

TEST_F(SlaveTest, StopHandsBackTheFiresNotYetClaimed) {
    store_->Add(1, 7, Now() + 60'000);
    store_->Add(2, 7, Now() + 60'000);
    StartSlave();
    ASSERT_TRUE(WaitFor([&] { return slave_->Scheduled() == 2; }));
    auto stopped = net::co_spawn(io_, slave_->Stop(), net::use_future);
    ASSERT_EQ(stopped.wait_for(5s), std::future_status::ready);
    EXPECT_EQ(slave_->Scheduled(), 0u);
    std::lock_guard lock(store_->mu);
    EXPECT_EQ(store_->unassigned, 2);
    EXPECT_TRUE(store_->claims.empty());
}

}  // namespace
}  // namespace sched::trigger
