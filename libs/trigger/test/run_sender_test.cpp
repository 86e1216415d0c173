// How runs reach executors, against a fake executor client and a registry from the test.
#include "sched/trigger/run_sender.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "fake_executors.hpp"
#include "sched/common/clock.hpp"
#include "sched/common/testing/io_thread.hpp"
#include "sched/common/testing/wait_for.hpp"
#include "sched/cron/misfire.hpp"
#include "sched/trigger/misfire_verdict.hpp"

namespace sched::trigger {
namespace {

using namespace std::chrono_literals;
using model::FireStatus;
using trigger_testing::FakeExecutors;

class RunSenderTest : public ::testing::Test {
  protected:
    RunSenderTest()
        : time_(SystemClock::Instance(), []() -> Result<std::int64_t> { return Unavailable("no database here"); }),
          executors_(io_.get_executor()),
          queue_(std::make_shared<FireQueue>(0)),
          directory_(
              io_.get_executor(), pool_, [this] { return Live(); }, {.call_wait = 1s}, "n1") {
        job_.id = 7;
        job_.app = "billing";
        job_.handler = "charge";
        store::ExecutorInstance e;
        e.app = "billing";
        e.address = "10.0.0.1:9000";
        e.handlers = {"charge"};
        live_.push_back(e);
    }
    ~RunSenderTest() override { loop_.Join(); }

    Result<std::vector<store::ExecutorInstance>> Live() {
        std::lock_guard lock(mu_);
        return live_;
    }
    RunSender& Sender() {
        sender_ = std::make_unique<RunSender>(
            io_.get_executor(), pool_, queue_, executors_, directory_, time_, config_,
            RunSender::Ports{.accepted =
                                 [this](AcceptedRun run) {
                                     std::lock_guard lock(mu_);
                                     accepted_.push_back(std::move(run));
                                 },
                             .ended =
                                 [this](FireEnding e) {
                                     std::lock_guard lock(mu_);
                                     ended_.push_back(std::move(e));
                                 },
                             .restamp = [this](std::int64_t id, std::int64_t) -> Result<std::optional<std::int64_t>> {
                                 std::lock_guard lock(mu_);
                                 restamped_.push_back(id);
                                 return std::optional<std::int64_t>(restamp_epoch_);
                             }},
            "n1", metrics_);
        return *sender_;
    }
    // A group of `count` fires of job 7 due at `due`, claimed at epoch 42, routed with the live set.
    std::shared_ptr<DispatchGroup> Group(int count, std::int64_t due) {
        auto g = std::make_shared<DispatchGroup>();
        g->epoch = 42;
        g->token = 99;
        g->jobs[job_.id] = job_;
        auto registry = std::make_shared<Registry>();
        for (const auto& e : live_) (*registry)[e.app].push_back(e);
        g->registry = registry;
        std::vector<protocol::NoticedFire> queued;
        for (int i = 1; i <= count; ++i) {
            model::Fire f;
            f.id = i;
            f.job_id = job_.id;
            f.scheduled_time = due;
            f.due_at = due;
            f.created_at = due;
            g->fires.push_back(f);
            queued.push_back({.id = i, .due_at = due});
        }
        queue_->Admit(queued);
        return g;
    }
    std::size_t Reported() {
        std::lock_guard lock(mu_);
        return accepted_.size() + ended_.size();
    }
    bool AllReported(std::size_t n) {
        return sched::testing::WaitFor([&] { return Reported() == n && sender_->InFlight() == 0; }, 5s);
    }
    // Sends one fire that its instance refuses with `status`, naming `field`: `ended` is how it ended.
    void EndOneRefused(int status, const std::string& field, FireEnding& ended) {
        executors_.refuse_first = 1;
        executors_.refuse_status = status;
        executors_.refuse_field = field;
        Sender().Send(Group(1, time_.NowMs()));
        ASSERT_TRUE(AllReported(1));
        std::lock_guard lock(mu_);
        ASSERT_EQ(ended_.size(), 1u);
        ended = ended_[0];
        ended_.clear();
    }

    sched::testing::IoThread loop_{2};
    net::io_context& io_ = loop_.io;
    net::thread_pool& pool_ = loop_.pool;
    DbTime time_;
    MetricsRegistry metrics_;
    FakeExecutors executors_;
    std::shared_ptr<FireQueue> queue_;
    ExecutorDirectory directory_;
    RunSenderConfig config_{.dispatch_timeout = 2s, .send_ahead = false};
    model::Job job_;
    std::mutex mu_;
    std::vector<store::ExecutorInstance> live_;
    std::vector<AcceptedRun> accepted_;
    std::vector<FireEnding> ended_;
    std::vector<std::int64_t> restamped_;
    std::int64_t restamp_epoch_ = 43;
    std::unique_ptr<RunSender> sender_;
};

TEST_F(RunSenderTest, TheFiresOfOneDueTimeGoToTheirInstanceInOneBatchAtTheirDueTime) {
    const std::int64_t due = time_.NowMs() + 100;
    Sender().Send(Group(3, due));
    ASSERT_TRUE(AllReported(3));
    EXPECT_EQ(executors_.Batches("/v1/runs"), 1u);
    EXPECT_EQ(executors_.Runs(), 3u);
    {
        std::lock_guard lock(executors_.mu);
        EXPECT_GE(executors_.calls[0].at_ms, due) << "not before its due time";
    }
    std::lock_guard lock(mu_);
    for (const auto& run : accepted_) {
        EXPECT_EQ(run.address, "10.0.0.1:9000");
        EXPECT_EQ(run.app, "billing");
        EXPECT_GE(run.started_at, due);
        EXPECT_EQ(run.held_ms, 0);
    }
    EXPECT_EQ(queue_->Known(), 0u) << "every fire is forgotten once sent";
}

TEST_F(RunSenderTest, ASerialJobsRunsGoAheadWithTheTimeLeftAndAreHeld) {
    config_.send_ahead = true;
    const std::int64_t due = time_.NowMs() + 300;
    Sender().Send(Group(2, due));
    ASSERT_TRUE(AllReported(2));
    EXPECT_EQ(executors_.Batches("/v1/runs-ahead"), 1u);
    std::lock_guard lock(mu_);
    for (const auto& run : accepted_) {
        EXPECT_EQ(run.started_at, due) << "a held run starts at its due time";
        EXPECT_GT(run.held_ms, 200) << "its timeout watch counts from then";
    }
}

TEST_F(RunSenderTest, ARunRefusedForItsBlockStrategyEndsSkippedAndOthersFailWithTheirReason) {
    FireEnding blocked;
    ASSERT_NO_FATAL_FAILURE(EndOneRefused(409, "block_strategy", blocked));
    EXPECT_EQ(blocked.to, FireStatus::kSkipped);
    EXPECT_EQ(blocked.reason, model::FireReason::kBlocked);
    EXPECT_EQ(blocked.from, FireStatus::kDispatching);
    FireEnding refused;
    ASSERT_NO_FATAL_FAILURE(EndOneRefused(400, "params", refused));
    EXPECT_EQ(refused.to, FireStatus::kFailed);
    EXPECT_EQ(refused.reason, model::FireReason::kNoExecutor);
    EXPECT_NE(refused.message.find("HTTP 400 (params)"), std::string::npos) << refused.message;
}

TEST_F(RunSenderTest, AFireWithNoLiveInstanceWaitsForOneUntilTheDispatchTimeoutThenFails) {
    config_.dispatch_timeout = 400ms;
    auto group = Group(1, time_.NowMs());
    {
        std::lock_guard lock(mu_);
        live_.clear();  // the group's copy has the instance; the registry no longer does
    }
    auto copy = std::make_shared<DispatchGroup>(*group);
    copy->registry = std::make_shared<Registry>();
    const auto sent_at = std::chrono::steady_clock::now();
    Sender().Send(copy);
    ASSERT_TRUE(AllReported(1));
    EXPECT_GE(std::chrono::steady_clock::now() - sent_at, 200ms) << "it waited for an instance";
    std::lock_guard lock(mu_);
    ASSERT_EQ(ended_.size(), 1u);
    EXPECT_EQ(ended_[0].to, FireStatus::kFailed);
    EXPECT_EQ(ended_[0].message, "no live executor of app billing serves handler charge");
}

TEST_F(RunSenderTest, ARunRefusedForAStaleEpochIsReStampedAndSentOnceMore) {
    executors_.newest_epoch = 43;  // the executor has seen a newer master
    Sender().Send(Group(1, time_.NowMs()));
    ASSERT_TRUE(AllReported(1));
    std::lock_guard lock(mu_);
    EXPECT_EQ(restamped_, std::vector<std::int64_t>{1});
    ASSERT_EQ(accepted_.size(), 1u);
    std::lock_guard calls(executors_.mu);
    ASSERT_EQ(executors_.calls.size(), 2u);
    EXPECT_EQ(nlohmann::json::parse(executors_.calls[1].body)["epoch"], 43);
}

TEST(MisfireVerdict, APlannedFireLaterThanTheThresholdObeysItsJobsPolicy) {
    DispatchGroup group;
    model::Job job;
    job.id = 7;
    auto fire = [](std::int64_t id, std::int64_t at, model::FireKind kind = model::FireKind::kSchedule) {
        model::Fire f;
        f.id = id;
        f.job_id = 7;
        f.scheduled_time = at;
        f.created_at = at;
        f.kind = kind;
        return f;
    };
    group.fires = {fire(1, 1000), fire(2, 2000), fire(3, 9000)};
    const std::int64_t now = 10'000;
    job.misfire_policy = cron::MisfirePolicy::kSkip;
    EXPECT_TRUE(MisfireVerdict(group.fires, group.fires[0], job, now, 5000)) << "9 s late: skipped";
    EXPECT_FALSE(MisfireVerdict(group.fires, group.fires[2], job, now, 5000)) << "1 s late: on time";
    EXPECT_FALSE(MisfireVerdict(group.fires, fire(4, 0, model::FireKind::kManual), job, now, 5000))
        << "manual fires always run";
    job.misfire_policy = cron::MisfirePolicy::kFireAll;
    EXPECT_FALSE(MisfireVerdict(group.fires, group.fires[0], job, now, 5000));
    job.misfire_policy = cron::MisfirePolicy::kFireOnceNow;
    const auto folded = MisfireVerdict(group.fires, group.fires[0], job, now, 5000);
    ASSERT_TRUE(folded);
    EXPECT_NE(folded->find("folded into fire 2"), std::string::npos) << *folded;
    EXPECT_FALSE(MisfireVerdict(group.fires, group.fires[1], job, now, 5000)) << "the latest late one runs";
    model::Fire planned_late = fire(5, 1000);
    planned_late.created_at = 9500;  // the master planned it already due: late from then
    EXPECT_FALSE(MisfireVerdict(group.fires, planned_late, job, now, 5000));
}

}  // namespace
}  // namespace sched::trigger
