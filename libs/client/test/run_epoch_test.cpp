// A run sent again to the instance that already holds it, after the instance saw a newer master's
// epoch: the node's first answer was lost (a timeout), so it does not know the instance took the
// run. The repeat must be a duplicate, not a 409 that makes the node re-stamp the fire with the
// newer epoch; and when the node does re-stamp it (another instance refused the older epoch), the
// run's result must carry the epoch the fire now records, or the cluster refuses it
// (stale_epoch) and the fire stays `running` forever.

#include <atomic>

#include <gtest/gtest.h>

#include "impl/run_registry.hpp"
#include "sched/client/executor.hpp"
#include "sched/client/testing/fake_web.hpp"
#include "sched/http/testing/test_server.hpp"

#include "executor_fixture.hpp"
#include "fast_executor_options.hpp"

namespace sched::client {
namespace {

using namespace std::chrono_literals;
using http::testing::WaitFor;
using impl::Admission;
using impl::RunRegistry;
using testing::SignedRequest;
using testing::TestSigningKey;

RunRequest MakeRun(std::int64_t fire_id, std::int64_t job_id, std::int64_t epoch) {
    RunRequest r;
    r.fire_id = fire_id;
    r.job_id = job_id;
    r.epoch = epoch;
    r.handler = "h";
    return r;
}

TEST(RunRegistryEpoch, ARunHeldHereIsADuplicateWhateverItsEpoch) {
    RunRegistry reg(8, 100);
    const auto first = reg.Admit(MakeRun(1, 10, 4));
    ASSERT_EQ(first.admission, Admission::kAccepted);
    ASSERT_EQ(reg.Admit(MakeRun(2, 11, 5)).admission, Admission::kAccepted);  // a newer master
    // Fire 1 again at the epoch it was admitted with: nothing new would start.
    const auto again = reg.Admit(MakeRun(1, 10, 4));
    EXPECT_EQ(again.admission, Admission::kDuplicate) << again.message;
    EXPECT_EQ(reg.InFlight(), 2u);
    // A fire this instance never had is still fenced.
    EXPECT_EQ(reg.Admit(MakeRun(3, 12, 4)).admission, Admission::kStaleEpoch);
    EXPECT_EQ(reg.MaxEpoch(), 5);
    EXPECT_EQ(first.run->ResultEpoch(), 4);
}

TEST(RunRegistryEpoch, ARepeatUnderANewerEpochMovesTheResultToThatEpoch) {
    RunRegistry reg(8, 100);
    const auto first = reg.Admit(MakeRun(1, 10, 4));
    ASSERT_EQ(first.admission, Admission::kAccepted);
    // The node re-stamped fire 1 with epoch 6 and sent it here again.
    EXPECT_EQ(reg.Admit(MakeRun(1, 10, 6)).admission, Admission::kDuplicate);
    EXPECT_EQ(first.run->ResultEpoch(), 6);
    EXPECT_EQ(reg.MaxEpoch(), 6);
    // An older repeat never moves it back.
    EXPECT_EQ(reg.Admit(MakeRun(1, 10, 5)).admission, Admission::kDuplicate);
    EXPECT_EQ(first.run->ResultEpoch(), 6);
    EXPECT_EQ(reg.Finish(first.run), nullptr);
    // Finished and reported: a later repeat is a duplicate that changes nothing.
    EXPECT_EQ(reg.Admit(MakeRun(1, 10, 7)).admission, Admission::kDuplicate);
    EXPECT_EQ(first.run->ResultEpoch(), 6);
}

class RunEpochTest : public testing::ExecutorFixture {
  protected:
    RunEpochTest() : ExecutorFixture("sched-run-epoch-test-") {}
    void ReleaseHandlers() override { open_ = true; }

    void Start() {
        executor_ =
            std::make_unique<Executor>(testing::FastExecutorOptions({web_->Url()}, testing::kToken, spool_dir_));
        executor_->Handle("gate", [this](JobContext& ctx) {
            while (!open_.load() && !ctx.cancelled()) ctx.SleepFor(2ms);
            return Status::Ok();
        });
        executor_->Start();
        ASSERT_TRUE(WaitFor([&] { return executor_->Stats().signing_keys > 0; }));
    }

    Result<http::ClientResponse> Run(std::int64_t fire_id, std::int64_t job_id, std::int64_t epoch) {
        const nlohmann::json body = {{"fire_id", fire_id}, {"job_id", job_id},  {"attempt", 0},
                                     {"epoch", epoch},     {"handler", "gate"}, {"params", nlohmann::json::object()}};
        const std::string url = "http://127.0.0.1:" + std::to_string(executor_->port()) + "/v1/run";
        return client_.Send(SignedRequest(TestSigningKey(), http::Method::kPost, url, body.dump()));
    }

    std::atomic<bool> open_{false};  // the gate handler's, until TearDown() stops the executor
};

TEST_F(RunEpochTest, ARunSentAgainAfterAFailoverIsADuplicateAndItsResultCarriesTheFiresEpoch) {
    Start();
    auto first = Run(1, 10, 4);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ASSERT_EQ(first->status, 202) << first->body;
    auto newer = Run(2, 11, 5);  // another node's run, from the new master
    ASSERT_TRUE(newer.ok());
    ASSERT_EQ(newer->status, 202) << newer->body;

    // The node's first answer for fire 1 was lost: it sends it again at the claim's epoch.
    auto again = Run(1, 10, 4);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->status, 202) << again->body;
    EXPECT_TRUE(nlohmann::json::parse(again->body).value("duplicate", false)) << again->body;
    // Re-stamped by the node (another instance refused epoch 4) and sent here once more.
    auto restamped = Run(1, 10, 6);
    ASSERT_TRUE(restamped.ok());
    EXPECT_EQ(restamped->status, 202) << restamped->body;
    EXPECT_TRUE(nlohmann::json::parse(restamped->body).value("duplicate", false)) << restamped->body;

    open_ = true;
    ASSERT_TRUE(WaitFor([&] { return !web_->ResultsFor(1).empty() && !web_->ResultsFor(2).empty(); }));
    const auto results = web_->ResultsFor(1);
    ASSERT_EQ(results.size(), 1u);  // ran once
    EXPECT_EQ(results.front()["epoch"], 6) << results.front().dump();
    EXPECT_EQ(web_->ResultsFor(2).front()["epoch"], 5);
}

}  // namespace
}  // namespace sched::client
