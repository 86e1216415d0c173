// The slave's `running` record of an accepted fire through a database outage longer than a few
// hundred milliseconds (a Galera node killed: connection errors until the node's connections
// move on): the record is retried until it lands, within dispatch-timeout, not dropped after
// three attempts, which left the fire `dispatching` with nothing to end it but its result.
#include "sched/trigger/slave.hpp"

#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "fake_executors.hpp"
#include "sched/common/clock.hpp"
#include "sched/common/testing/io_thread.hpp"
#include "sched/common/testing/wait_for.hpp"

namespace sched::trigger {
namespace {

using namespace std::chrono_literals;
using model::FireStatus;
using trigger_testing::FakeExecutors;

// One job's fires, claimed and recorded in memory; MarkRunning fails while `fail_running` > 0.
class OutageStore final : public FireClaimStore {
  public:
    mutable std::mutex mu;
    std::map<std::int64_t, model::Fire> fires;
    model::Job job;
    store::ExecutorInstance executor;
    int fail_running = 0;  // the next MarkRunning calls fail (the database unreachable)
    int running_calls = 0;

    FireStatus StatusNow(std::int64_t id) const {
        std::lock_guard lock(mu);
        return fires.at(id).status;
    }
    int RunningCalls() const {
        std::lock_guard lock(mu);
        return running_calls;
    }

    Result<std::vector<std::int64_t>> ListPendingIds(const std::string&, int) override {
        std::lock_guard lock(mu);
        std::vector<std::int64_t> out;
        for (const auto& [id, f] : fires) {
            if (f.status == FireStatus::kPending) out.push_back(id);
        }
        return out;
    }
    Result<std::vector<model::Fire>> FindPending(const std::string&, const std::vector<std::int64_t>& ids) override {
        std::lock_guard lock(mu);
        std::vector<model::Fire> out;
        for (auto id : ids) {
            if (fires.contains(id) && fires.at(id).status == FireStatus::kPending) out.push_back(fires.at(id));
        }
        return out;
    }
    Result<ClaimedGroup> Claim(const std::string&, const std::vector<std::int64_t>& ids, std::int64_t, std::int64_t now,
                               const store::ClaimOptions&) override {
        std::lock_guard lock(mu);
        ClaimedGroup g;
        g.epoch = 3;
        for (auto id : ids) {
            auto& f = fires.at(id);
            if (f.status != FireStatus::kPending) continue;
            f.status = FireStatus::kDispatching;
            f.dispatched_at = now;
            g.fires.push_back(f);
        }
        if (!g.fires.empty()) g.jobs.push_back(job);
        return g;
    }
    Result<std::optional<std::int64_t>> Restamp(std::int64_t, std::int64_t) override {
        return std::optional<std::int64_t>();
    }
    Result<std::vector<store::ExecutorInstance>> LiveExecutors(std::int64_t) override {
        return std::vector<store::ExecutorInstance>{executor};
    }
    Result<int> MarkRunning(const std::vector<store::StartedFire>& started, const std::string&) override {
        std::lock_guard lock(mu);
        ++running_calls;
        if (fail_running > 0) {
            --fail_running;
            return Unavailable("Lost connection to server during query");
        }
        int moved = 0;
        for (const auto& s : started) {
            auto& f = fires.at(s.id);
            if (f.status != FireStatus::kDispatching) continue;
            f.status = FireStatus::kRunning;
            ++moved;
        }
        return moved;
    }
    Result<std::vector<std::int64_t>> Finish(const std::vector<FireEnding>& endings) override {
        std::lock_guard lock(mu);
        std::vector<std::int64_t> moved;
        for (const auto& e : endings) {
            auto& f = fires.at(e.id);
            if (f.status != e.from) continue;
            f.status = e.to;
            moved.push_back(e.id);
        }
        return moved;
    }
    Result<FireStatus> StatusOf(std::int64_t id) override {
        std::lock_guard lock(mu);
        return fires.at(id).status;
    }
    Result<int> EndEarlierDispatches(const std::string&, std::int64_t, std::int64_t) override { return 0; }
    Result<std::optional<PlannedTaken>> TakePlanned(const std::string&, std::int64_t) override {
        return std::optional<PlannedTaken>(PlannedTaken{});
    }
    Result<int> HandBack(const std::string&, const std::optional<std::set<std::int64_t>>&) override { return 0; }
};

TEST(SlaveRecordRetry, AnAcceptedFireIsRecordedRunningThroughADatabaseOutageOfAFewSeconds) {
    sched::testing::IoThread rt(2);
    DbTime time(SystemClock::Instance(), []() -> Result<std::int64_t> { return Unavailable("no database here"); });
    MetricsRegistry metrics;

    auto store = std::make_unique<OutageStore>();
    OutageStore& s = *store;
    s.job.id = 7;
    s.job.app = "billing";
    s.job.handler = "charge";
    s.executor.app = "billing";
    s.executor.address = "10.0.0.1:9000";
    s.executor.handlers = {"charge"};
    model::Fire fire;
    fire.id = 1;
    fire.job_id = 7;
    fire.scheduled_time = fire.due_at = time.NowMs() + 100;
    fire.assigned_node = "n1";
    s.fires[1] = fire;
    // Five failed writes: 100 + 200 + 400 + 800 ms of pauses before the sixth, well inside
    // dispatch-timeout; three attempts (100 and 200 ms) gave up after the third.
    s.fail_running = 5;

    SlaveConfig config;
    config.poll_interval = 100ms;
    config.dispatch_timeout = 5s;
    config.record_window = 5ms;
    auto slave =
        std::make_unique<Slave>(rt.io.get_executor(), rt.pool, std::move(store),
                                std::make_unique<FakeExecutors>(rt.io.get_executor()), time, "n1", config, metrics);
    slave->Start();

    const bool recorded = sched::testing::WaitFor([&] { return s.StatusNow(1) == FireStatus::kRunning; }, 8s);
    EXPECT_TRUE(recorded) << "fire 1 is still " << model::FireStatusName(s.StatusNow(1)) << " after "
                          << s.RunningCalls() << " attempts to record it running";
    EXPECT_EQ(s.RunningCalls(), 6);

    auto stopped = net::co_spawn(rt.io, slave->Stop(), net::use_future);
    stopped.wait_for(10s);
    rt.Join();
}

}  // namespace
}  // namespace sched::trigger
