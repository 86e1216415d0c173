// The windowed writer on a real I/O context and thread pool; the "database" is a function.
#include "sched/trigger/windowed_writer.hpp"

#include <gtest/gtest.h>

#include "sched/common/testing/io_thread.hpp"
#include "sched/common/testing/wait_for.hpp"

namespace sched::trigger {
namespace {

using namespace std::chrono_literals;

class WindowedWriterTest : public ::testing::Test {
  protected:
    ~WindowedWriterTest() override { loop_.Join(); }

    // Calls of `write`, each with the items it was given.
    std::vector<std::vector<int>> Calls() {
        std::lock_guard lock(mu_);
        return calls_;
    }
    WindowedWriter<int>::Write Recording(std::function<Status(std::vector<int>&)> then) {
        return [this, then = std::move(then)](std::vector<int>& batch) {
            {
                std::lock_guard lock(mu_);
                calls_.push_back(batch);
            }
            return then(batch);
        };
    }

    sched::testing::IoThread loop_;
    net::io_context& io_ = loop_.io;
    net::thread_pool& pool_ = loop_.pool;
    std::mutex mu_;
    std::vector<std::vector<int>> calls_;
};

TEST_F(WindowedWriterTest, ItemsAddedWithinAWindowAreWrittenInOneCall) {
    WindowedWriter<int> w(io_.get_executor(), pool_, 50ms, {.max_attempts = 1}, Recording([](auto& b) {
                              b.clear();
                              return Status::Ok();
                          }),
                          {});
    for (int i = 0; i < 100; ++i) w.Add(i);
    EXPECT_TRUE(w.Busy());
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !w.Busy(); }, 5s));
    const auto calls = Calls();
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].size(), 100u);
    w.Add(100);
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !w.Busy(); }, 5s));
    EXPECT_EQ(Calls().size(), 2u) << "a later item starts a new window";
}

// An item added with a hold waits for it (a later flush writes it) and can be taken back
// until then; the items of the window whose hold is over go first.
TEST_F(WindowedWriterTest, AHeldItemIsWrittenAfterItsHoldAndCanBeWithdrawnUntilThen) {
    WindowedWriter<int> w(io_.get_executor(), pool_, 10ms, {.max_attempts = 1}, Recording([](auto& b) {
                              b.clear();
                              return Status::Ok();
                          }),
                          {});
    const auto added = std::chrono::steady_clock::now();
    w.Add(2);
    w.Add(1, 300ms);
    w.Add(3, 300ms);
    ASSERT_TRUE(sched::testing::WaitFor([&] { return Calls().size() == 1; }, 5s));
    EXPECT_EQ(Calls()[0], std::vector<int>{2}) << "a held item went in the first window";
    EXPECT_EQ(w.Withdraw([](int i) { return i == 3; }), std::vector<int>{3});
    EXPECT_TRUE(w.Withdraw([](int i) { return i == 2; }).empty()) << "a written item was withdrawn";
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !w.Busy(); }, 5s));
    EXPECT_GE(std::chrono::steady_clock::now() - added, 300ms);
    const auto calls = Calls();
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[1], std::vector<int>{1}) << "the withdrawn item was written";
}

TEST_F(WindowedWriterTest, AFailedWriteIsRetriedForWhatItDidNotWriteUntilTheAttemptLimit) {
    std::vector<bool> gave_up;
    // Writes the first item of the batch, then fails.
    WindowedWriter<int> w(io_.get_executor(), pool_, 1ms, {.first_pause = 1ms, .max_pause = 2ms, .max_attempts = 3},
                          Recording([](std::vector<int>& b) {
                              b.erase(b.begin());
                              return Unavailable("connection lost");
                          }),
                          [&](const Status& error, const std::vector<int>& left, bool giving_up) {
                              EXPECT_EQ(error.code(), Code::kUnavailable);
                              EXPECT_FALSE(left.empty());
                              gave_up.push_back(giving_up);
                          });
    for (int i = 0; i < 5; ++i) w.Add(i);
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !w.Busy(); }, 5s));
    const auto calls = Calls();
    ASSERT_EQ(calls.size(), 3u);
    EXPECT_EQ(calls[1], (std::vector<int>{1, 2, 3, 4})) << "the retry carries only the rest";
    EXPECT_EQ(calls[2], (std::vector<int>{2, 3, 4}));
    EXPECT_EQ(gave_up, (std::vector<bool>{false, false, true}));
}

TEST_F(WindowedWriterTest, AWriterGivesUpAfterItsTimeLimitAndAfterStopTriesOnce) {
    WindowedWriter<int> timed(io_.get_executor(), pool_, 1ms,
                              {.first_pause = 20ms, .max_pause = 20ms, .give_up_after = 100ms},
                              Recording([](auto&) { return Unavailable("down"); }), {});
    timed.Add(1);
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !timed.Busy(); }, 5s));
    const auto attempts = Calls().size();
    EXPECT_GE(attempts, 3u);
    EXPECT_LE(attempts, 6u) << "about 100 ms of 20 ms pauses";

    WindowedWriter<int> stopping(io_.get_executor(), pool_, 1ms, {.first_pause = 20ms},
                                 Recording([](auto&) { return Unavailable("down"); }), {});
    stopping.Stop();
    stopping.Add(2);
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !stopping.Busy(); }, 5s));
    EXPECT_EQ(Calls().size(), attempts + 1) << "one attempt once stopped";
}

// A node that stops writes what it holds at once: Hurry() ends a flush's wait for its window
// and for its items' holds, and later items go within a window, held or not. A failed write is
// still retried (Stop() is what ends that).
TEST_F(WindowedWriterTest, HurryWritesHeldItemsNowAndKeepsRetrying) {
    std::atomic<int> failures{1};
    WindowedWriter<int> w(io_.get_executor(), pool_, 2s, {.first_pause = 10ms, .max_pause = 10ms},
                          Recording([&failures](auto& b) {
                              if (failures.fetch_sub(1) > 0) return Unavailable("down");
                              b.clear();
                              return Status::Ok();
                          }),
                          {});
    w.Add(1, 60s);
    w.Add(2);
    const auto hurried = std::chrono::steady_clock::now();
    w.Hurry();
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !w.Busy(); }, 10s));
    EXPECT_LT(std::chrono::steady_clock::now() - hurried, 1s) << "a flush waited for its window";
    auto calls = Calls();
    ASSERT_EQ(calls.size(), 2u) << "the failed write is retried";
    EXPECT_EQ(calls[1], (std::vector<int>{1, 2})) << "the held item went with the first flush";
    w.Add(3, 60s);
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !w.Busy(); }, 10s)) << "a later held item waited for its hold";
    calls = Calls();
    ASSERT_EQ(calls.size(), 3u);
    EXPECT_EQ(calls[2], std::vector<int>{3});
}

}  // namespace
}  // namespace sched::trigger
