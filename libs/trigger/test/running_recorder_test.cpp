// The slave's `running` records on a real I/O context and thread pool; the store is a fake that
// records MarkRunning calls (and fails the first ones when asked).
#include "sched/trigger/running_recorder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <thread>

#include "sched/common/testing/io_thread.hpp"
#include "sched/common/testing/wait_for.hpp"

namespace sched::trigger {
namespace {

using namespace std::chrono_literals;

// Only MarkRunning is the recorder's; the rest refuses.
class MarkingStore final : public FireClaimStore {
  public:
    struct Call {
        std::string address;
        std::vector<store::StartedFire> fires;
    };
    std::vector<Call> Calls() const {
        std::lock_guard lock(mu_);
        return calls_;
    }
    void FailNext(int n) {
        std::lock_guard lock(mu_);
        fail_ = n;
    }

    Result<int> MarkRunning(const std::vector<store::StartedFire>& fires, const std::string& address) override {
        std::lock_guard lock(mu_);
        if (fail_ > 0) {
            --fail_;
            return Unavailable("database gone");
        }
        calls_.push_back({address, fires});
        return static_cast<int>(fires.size());
    }
    Result<std::vector<std::int64_t>> ListPendingIds(const std::string&, int) override { return Refused(); }
    Result<std::vector<model::Fire>> FindPending(const std::string&, const std::vector<std::int64_t>&) override {
        return Refused();
    }
    Result<ClaimedGroup> Claim(const std::string&, const std::vector<std::int64_t>&, std::int64_t, std::int64_t,
                               const store::ClaimOptions&) override {
        return Refused();
    }
    Result<std::optional<std::int64_t>> Restamp(std::int64_t, std::int64_t) override { return Refused(); }
    Result<std::vector<store::ExecutorInstance>> LiveExecutors(std::int64_t) override { return Refused(); }
    Result<std::vector<std::int64_t>> Finish(const std::vector<FireEnding>&) override { return Refused(); }
    Result<model::FireStatus> StatusOf(std::int64_t) override { return Refused(); }
    Result<int> EndEarlierDispatches(const std::string&, std::int64_t, std::int64_t) override { return Refused(); }
    Result<std::optional<PlannedTaken>> TakePlanned(const std::string&, std::int64_t) override { return Refused(); }
    Result<int> HandBack(const std::string&, const std::optional<std::set<std::int64_t>>&) override {
        return Refused();
    }

  private:
    static Status Refused() { return FailedPrecondition("not the recorder's"); }

    mutable std::mutex mu_;
    std::vector<Call> calls_;
    int fail_ = 0;
};

class RunningRecorderTest : public ::testing::Test {
  protected:
    ~RunningRecorderTest() override { loop_.Join(); }

    // A recorder is destroyed only once no flush is writing (the slave's Stop waits the same way):
    // a flush still on the pool would finish its write through a destroyed recorder.
    struct DrainThenDelete {
        void operator()(RunningRecorder* recorder) const {
            EXPECT_TRUE(sched::testing::WaitFor([recorder] { return !recorder->Busy(); }, 5s)) << "a flush never ended";
            delete recorder;
        }
    };
    using Recorder = std::unique_ptr<RunningRecorder, DrainThenDelete>;

    Recorder Make(Micros window, Micros after) {
        return Recorder(new RunningRecorder(
            io_.get_executor(), pool_,
            RunningRecorder::Options{.record_window = window,
                                     .record_running_after = after,
                                     .retry = {.first_pause = 10ms, .max_pause = 20ms, .give_up_after = 5s}},
            store_, "n1", metrics_));
    }
    static AcceptedRun Run(std::int64_t fire, std::string address, bool stoppable = false) {
        return {.fire_id = fire,
                .app = "app",
                .address = std::move(address),
                .started_at = 1000 + fire,
                .stoppable = stoppable};
    }
    double Statements() { return metrics_.Counter("sched_slave_running_batches_total", "").Labels({}).Value(); }

    sched::testing::IoThread loop_;
    net::io_context& io_ = loop_.io;
    net::thread_pool& pool_ = loop_.pool;
    MetricsRegistry metrics_;
    MarkingStore store_;
};

TEST_F(RunningRecorderTest, HeldRecordsAreWrittenAfterTheHoldInOneStatementPerInstance) {
    auto recorder = Make(20ms, 150ms);
    const auto added = std::chrono::steady_clock::now();
    recorder->Add(Run(1, "a:1"));
    recorder->Add(Run(2, "b:2"));
    recorder->Add(Run(3, "a:1"));
    EXPECT_EQ(recorder->QueuedAddress(2), "b:2");
    ASSERT_TRUE(sched::testing::WaitFor([&] { return store_.Calls().size() == 2; }, 5s));
    EXPECT_GE(std::chrono::steady_clock::now() - added, 150ms) << "written before record-running-after";
    const auto calls = store_.Calls();
    ASSERT_EQ(calls[0].address, "a:1");
    ASSERT_EQ(calls[0].fires.size(), 2U);
    EXPECT_EQ(calls[0].fires[0].id, 1);
    EXPECT_EQ(calls[0].fires[0].started_at, 1001);
    EXPECT_EQ(calls[0].fires[1].id, 3);
    EXPECT_EQ(calls[1].address, "b:2");
    EXPECT_EQ(Statements(), 2);
    EXPECT_FALSE(recorder->QueuedAddress(2)) << "written: no longer queued";
    EXPECT_FALSE(recorder->Withdraw(2)) << "written: nothing to take back";
}

TEST_F(RunningRecorderTest, AWithdrawnRecordIsNeverWritten) {
    auto recorder = Make(20ms, 200ms);
    recorder->Add(Run(1, "a:1"));
    recorder->Add(Run(2, "a:1"));
    const auto taken = recorder->Withdraw(1);
    ASSERT_TRUE(taken);
    EXPECT_EQ(taken->address, "a:1");
    EXPECT_EQ(taken->fire.started_at, 1001);
    EXPECT_FALSE(recorder->Withdraw(1)) << "taken once";
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !store_.Calls().empty(); }, 5s));
    std::this_thread::sleep_for(300ms);  // a later flush would have come by now
    const auto calls = store_.Calls();
    ASSERT_EQ(calls.size(), 1U);
    ASSERT_EQ(calls[0].fires.size(), 1U);
    EXPECT_EQ(calls[0].fires[0].id, 2);
}

// Results applied in this process (the executor API's callback) take back the records of their
// fires, held or prompt, in one call; the others are written as usual.
TEST_F(RunningRecorderTest, RecordsOfFiresWhoseResultsWereAppliedAreNeverWritten) {
    auto recorder = Make(20ms, 200ms);
    recorder->Add(Run(1, "a:1"));
    recorder->Add(Run(2, "a:1"));
    recorder->Add(Run(3, "a:1", /*stoppable=*/true));
    recorder->Add(Run(4, "b:2"));
    EXPECT_EQ(recorder->WithdrawEnded({1, 3, 99}), 2U) << "fire 99 had no record";
    EXPECT_FALSE(recorder->QueuedAddress(1));
    EXPECT_FALSE(recorder->QueuedAddress(3));
    ASSERT_TRUE(sched::testing::WaitFor([&] { return store_.Calls().size() == 2; }, 5s));
    std::this_thread::sleep_for(300ms);  // a later flush would have come by now
    std::vector<std::int64_t> written;
    for (const auto& call : store_.Calls()) {
        for (const auto& f : call.fires) written.push_back(f.id);
    }
    std::sort(written.begin(), written.end());
    EXPECT_EQ(written, (std::vector<std::int64_t>{2, 4}));
    EXPECT_EQ(recorder->WithdrawEnded({2, 4}), 0U) << "written: nothing to take back";
}

TEST_F(RunningRecorderTest, ARunALaterFireMayStopIsWrittenAtTheRecordWindowNotHeld) {
    auto recorder = Make(20ms, 10s);
    recorder->Add(Run(7, "a:1", /*stoppable=*/true));
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !store_.Calls().empty(); }, 3s))
        << "held for record-running-after (10 s) like an ordinary run";
    EXPECT_EQ(store_.Calls()[0].fires[0].id, 7);
}

TEST_F(RunningRecorderTest, ADatabaseErrorIsRetriedUntilTheRecordLands) {
    store_.FailNext(3);
    auto recorder = Make(20ms, 20ms);
    recorder->Add(Run(1, "a:1"));
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !store_.Calls().empty(); }, 5s));
    EXPECT_EQ(store_.Calls()[0].fires[0].id, 1);
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !recorder->Busy(); }, 5s));
}

}  // namespace
}  // namespace sched::trigger
