// The slave's view of executor instances, with the registry read from a function.
#include "sched/trigger/executor_directory.hpp"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "sched/common/testing/wait_for.hpp"

namespace sched::trigger {
namespace {

using namespace std::chrono_literals;

store::ExecutorInstance Instance(std::string app, std::string address, std::vector<std::string> handlers) {
    store::ExecutorInstance e;
    e.app = std::move(app);
    e.address = std::move(address);
    e.handlers = std::move(handlers);
    return e;
}

class ExecutorDirectoryTest : public ::testing::Test {
  protected:
    ExecutorDirectoryTest() : work_(net::make_work_guard(io_)) {
        for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
    }
    ~ExecutorDirectoryTest() override {
        work_.reset();
        for (auto& t : threads_) t.join();
        pool_.join();
    }

    ExecutorDirectory Make(ExecutorDirectoryConfig config) {
        return ExecutorDirectory(
            io_.get_executor(), pool_,
            [this]() -> Result<std::vector<store::ExecutorInstance>> {
                std::lock_guard lock(mu_);
                ++reads_;
                if (fail_) return Unavailable("database down");
                return live_;
            },
            config, "n1");
    }
    template <typename T>
    T Await(net::awaitable<T> a) {
        return net::co_spawn(io_, std::move(a), net::use_future).get();
    }
    int Reads() {
        std::lock_guard lock(mu_);
        return reads_;
    }

    net::io_context io_;
    net::executor_work_guard<net::io_context::executor_type> work_;
    std::vector<std::thread> threads_;
    net::thread_pool pool_{1};
    std::mutex mu_;
    std::vector<store::ExecutorInstance> live_{Instance("billing", "10.0.0.1:9000", {"charge", "refund"}),
                                               Instance("billing", "10.0.0.2:9000", {"refund"}),
                                               Instance("mail", "10.0.0.3:9000", {"send"})};
    int reads_ = 0;
    bool fail_ = false;
};

TEST_F(ExecutorDirectoryTest, ServingListsTheInstancesOfTheAppThatServeTheHandler) {
    auto directory = Make({});
    const auto registry = Await(directory.ForClaim(std::chrono::steady_clock::now(), {"billing"}));
    EXPECT_EQ(Serving(*registry, "billing", "refund"), (std::vector<std::string>{"10.0.0.1:9000", "10.0.0.2:9000"}));
    EXPECT_EQ(Serving(*registry, "billing", "charge"), (std::vector<std::string>{"10.0.0.1:9000"}));
    EXPECT_TRUE(Serving(*registry, "billing", "send").empty());
    EXPECT_TRUE(Serving(*registry, "nobody", "charge").empty());
}

TEST_F(ExecutorDirectoryTest, TheRegistryIsReadOncePerRefreshAndAgainForAnAppMissingFromAnOlderCopy) {
    auto directory = Make({.refresh = 60s});
    Await(directory.ForClaim(std::chrono::steady_clock::now(), {"billing"}));
    Await(directory.ForClaim(std::chrono::steady_clock::now(), {"billing", "mail"}));
    EXPECT_EQ(Reads(), 1) << "every app is in the copy: no read";
    const auto claim_started = std::chrono::steady_clock::now();
    Await(directory.ForClaim(claim_started, {"reports"}));
    EXPECT_EQ(Reads(), 2) << "an app missing from a copy older than the claim: read again";
    Await(directory.ForClaim(std::chrono::steady_clock::now() - 1h, {"reports"}));
    EXPECT_EQ(Reads(), 2) << "a copy read after the claim began is believed";
    EXPECT_EQ(Await(directory.LiveCandidates("billing", "charge", 0s)).size(), 1u);
    EXPECT_EQ(Reads(), 3) << "LiveCandidates re-reads a copy older than max_age";
}

TEST_F(ExecutorDirectoryTest, AReadErrorKeepsThePreviousCopy) {
    auto directory = Make({.refresh = 0s});
    ASSERT_EQ(Await(directory.LiveCandidates("mail", "send", 0s)).size(), 1u);
    {
        std::lock_guard lock(mu_);
        fail_ = true;
    }
    EXPECT_EQ(Await(directory.LiveCandidates("mail", "send", 0s)).size(), 1u);
    EXPECT_EQ(Reads(), 2);
}

TEST_F(ExecutorDirectoryTest, CallsBeyondTheCapWaitForASlotAndGiveUpAfterTheCallWait) {
    auto directory = Make({.max_calls_per_executor = 2, .call_wait = 200ms});
    EXPECT_TRUE(Await(directory.AcquireCall("a")));
    EXPECT_TRUE(Await(directory.AcquireCall("a")));
    EXPECT_TRUE(Await(directory.AcquireCall("b"))) << "the cap is per instance";
    auto waiting = net::co_spawn(io_, directory.AcquireCall("a"), net::use_future);
    EXPECT_EQ(waiting.wait_for(50ms), std::future_status::timeout) << "the third call waits";
    directory.ReleaseCall("a");
    ASSERT_EQ(waiting.wait_for(5s), std::future_status::ready);
    EXPECT_TRUE(waiting.get()) << "a released slot passes to the waiter";
    const auto asked = std::chrono::steady_clock::now();
    EXPECT_FALSE(Await(directory.AcquireCall("a"))) << "no slot frees up within call-wait";
    EXPECT_GE(std::chrono::steady_clock::now() - asked, 200ms);
}

TEST_F(ExecutorDirectoryTest, ARefusedBatchRouteIsNotTriedUntilTheRefusalExpires) {
    auto directory = Make({.batch_refusal = 100ms});
    EXPECT_FALSE(directory.RefusesBatch("a", BatchRoute::kRuns));
    directory.RefuseBatch("a", BatchRoute::kRuns);
    EXPECT_TRUE(directory.RefusesBatch("a", BatchRoute::kRuns));
    EXPECT_FALSE(directory.RefusesBatch("a", BatchRoute::kRunsAhead)) << "per route";
    EXPECT_FALSE(directory.RefusesBatch("b", BatchRoute::kRuns)) << "per instance";
    const auto refused_at = std::chrono::steady_clock::now();
    ASSERT_TRUE(sched::testing::WaitFor([&] { return !directory.RefusesBatch("a", BatchRoute::kRuns); }, 5s))
        << "tried again after the refusal period";
    EXPECT_GE(std::chrono::steady_clock::now() - refused_at, 90ms);
}

}  // namespace
}  // namespace sched::trigger
