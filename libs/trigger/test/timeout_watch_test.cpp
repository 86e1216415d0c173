// The node's timeout watch against a fake executor and a status read from the test.
#include "sched/trigger/timeout_watch.hpp"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "fake_executors.hpp"
#include "sched/common/testing/wait_for.hpp"
#include "sched/protocol/testing/collecting_span_sink.hpp"

namespace sched::trigger {
namespace {

using protocol::testing::IntAttribute;
using protocol::testing::ScopedSpanSink;

using namespace std::chrono_literals;
using model::FireStatus;

class TimeoutWatchTest : public ::testing::Test {
  protected:
    TimeoutWatchTest()
        : work_(net::make_work_guard(io_)),
          executors_(io_.get_executor()),
          watch_(io_.get_executor(), pool_, executors_, 1s,
                 {.status_of = [this](std::int64_t id) -> Result<FireStatus> {
                      return finished_.contains(id) ? FireStatus::kSucceeded : FireStatus::kRunning;
                  },
                  .ended =
                      [this](FireEnding e) {
                          std::lock_guard lock(mu_);
                          ended_.push_back(std::move(e));
                      },
                  .now_ms =
                      [] {
                          return std::int64_t{1234};
                      }},
                 "n1") {
        thread_ = std::thread([this] { io_.run(); });
    }
    ~TimeoutWatchTest() override {
        work_.reset();
        thread_.join();
        pool_.join();
    }
    std::vector<FireEnding> Ended() {
        std::lock_guard lock(mu_);
        return ended_;
    }

    net::io_context io_;
    net::executor_work_guard<net::io_context::executor_type> work_;
    std::thread thread_;
    net::thread_pool pool_{1};
    trigger_testing::FakeExecutors executors_;
    std::set<std::int64_t> finished_;  // fires whose result came (set before their watch starts)
    std::mutex mu_;
    std::vector<FireEnding> ended_;
    TimeoutWatch watch_;
};

TEST_F(TimeoutWatchTest, ARunStillGoingAfterItsHoldAndTimeoutIsKilledAndEndedTimeout) {
    const auto watched_at = std::chrono::steady_clock::now();
    watch_.Watch(7, "billing", "10.0.0.1:9000", 100, 50);
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !Ended().empty(); }, 5s));
    EXPECT_GE(std::chrono::steady_clock::now() - watched_at, 150ms) << "the hold, then the timeout";
    const auto ended = Ended();
    ASSERT_EQ(ended.size(), 1u);
    EXPECT_EQ(ended[0].id, 7);
    EXPECT_EQ(ended[0].from, FireStatus::kRunning) << "a CAS from the status it saw";
    EXPECT_EQ(ended[0].to, FireStatus::kTimeout);
    EXPECT_EQ(ended[0].message, "timed out after 100 ms");
    EXPECT_FALSE(ended[0].reason) << "it ran: no ledger reason";
    EXPECT_EQ(ended[0].finished_at, 1234);
    std::lock_guard lock(executors_.mu);
    ASSERT_EQ(executors_.calls.size(), 1u);
    EXPECT_EQ(executors_.calls[0].url, "http://10.0.0.1:9000/v1/kill");
    EXPECT_EQ(nlohmann::json::parse(executors_.calls[0].body)["fire_id"], 7);
}

// The end it records is the fire's last step: it carries the `ended` span and the attempt's
// root, status timeout, pushed at the end's time once the end moved the fire (PushEndedSpans); a
// run that ended meanwhile queues no end and so no span.
TEST_F(TimeoutWatchTest, TheEndItRecordsCarriesTheEndedSpanAndTheRoot) {
    ScopedSpanSink spans;
    model::Fire fire;
    fire.id = 7;
    fire.job_id = 3;
    fire.scheduled_time = 1000;
    fire.created_at = 900;
    finished_.insert(8);
    fire.id = 8;
    watch_.Watch(8, "billing", "10.0.0.1:9000", 10, 0,
                 PendingFireSpan::Ended(fire, "billing", 0, FireStatus::kTimeout));
    fire.id = 7;
    watch_.Watch(7, "billing", "10.0.0.1:9000", 50, 0,
                 PendingFireSpan::Ended(fire, "billing", 0, FireStatus::kTimeout));
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !Ended().empty(); }, 5s));
    const auto endings = Ended();
    ASSERT_EQ(endings.size(), 1u);
    ASSERT_TRUE(endings[0].span);
    EXPECT_TRUE(spans->Named("ended").empty()) << "not before the end is written";
    PushEndedSpans(endings, {});
    EXPECT_TRUE(spans->Named("ended").empty()) << "an end that moved nothing pushes nothing";
    PushEndedSpans(endings, {7});
    const auto ended = spans->Named("ended");
    const auto root = spans->Named("fire");
    ASSERT_EQ(ended.size(), 1u);
    ASSERT_EQ(root.size(), 1u);
    const protocol::TraceContext run = protocol::RunTrace(FireRefOf(fire, "billing"));
    EXPECT_EQ(ended[0].trace_id, run.trace_id);
    EXPECT_EQ(ended[0].parent_span_id, run.span_id);
    EXPECT_EQ(ended[0].end_ns, 1234 * kNanosPerMs) << "the end's time";
    EXPECT_TRUE(ended[0].error);
    EXPECT_EQ(ended[0].status_message, "timeout");
    EXPECT_EQ(root[0].span_id, run.span_id);
    EXPECT_EQ(root[0].start_ns, 900 * kNanosPerMs) << "from the fire row's creation";
    EXPECT_EQ(IntAttribute(root[0], "sched.fire_id"), 7);
}

// The kill says why: the executor reports the fire `timeout`, not `killed`.
TEST_F(TimeoutWatchTest, TheKillCarriesTheReasonTimeout) {
    watch_.Watch(7, "billing", "10.0.0.1:9000", 10, 0);
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !Ended().empty(); }, 5s));
    std::lock_guard lock(executors_.mu);
    ASSERT_EQ(executors_.calls.size(), 1u);
    EXPECT_EQ(nlohmann::json::parse(executors_.calls[0].body), (nlohmann::json{{"fire_id", 7}, {"reason", "timeout"}}));
}

// A run that waited behind its job's running fire started later than the watch: the executor
// leaves it and says how long its own timeout still gives it; the watch asks again then, and
// ends the fire only once the executor acted on the kill.
TEST_F(TimeoutWatchTest, ARunWhoseOwnTimeoutHasNotPassedIsAskedAgainWhenItHas) {
    {
        std::lock_guard lock(executors_.mu);
        executors_.kill_answers = {R"({"fire_id": 7, "state": "queued", "timeout_in_ms": 200})",
                                   R"({"fire_id": 7, "state": "running", "timeout_in_ms": 100})"};
    }
    const auto watched_at = std::chrono::steady_clock::now();
    watch_.Watch(7, "billing", "10.0.0.1:9000", 100, 0);
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !Ended().empty(); }, 5s));
    // 100 ms, then 200 + 50, then 100 + 50: the fire was not ended before its own timeout.
    EXPECT_GE(std::chrono::steady_clock::now() - watched_at, 500ms);
    EXPECT_EQ(Ended().size(), 1u);
    std::lock_guard lock(executors_.mu);
    EXPECT_EQ(executors_.calls.size(), 3u);
}

// Fire 8 succeeded before its watch ran out; fire 9, watched later, did not.
TEST_F(TimeoutWatchTest, ARunThatEndedMeanwhileIsNeitherKilledNorEnded) {
    finished_.insert(8);
    watch_.Watch(8, "billing", "10.0.0.1:9000", 10, 0);
    watch_.Watch(9, "billing", "10.0.0.1:9000", 200, 0);
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !Ended().empty(); }, 5s));
    const auto ended = Ended();
    ASSERT_EQ(ended.size(), 1u);
    EXPECT_EQ(ended[0].id, 9);
    std::lock_guard lock(executors_.mu);
    ASSERT_EQ(executors_.calls.size(), 1u);
    EXPECT_EQ(nlohmann::json::parse(executors_.calls[0].body)["fire_id"], 9);
}

}  // namespace
}  // namespace sched::trigger
