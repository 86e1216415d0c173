#include "sched/trigger/master.hpp"

#include <chrono>
#include <ctime>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "manual_workflow_run.hpp"
#include "scan_step_fixture.hpp"
#include "sched/cron/schedule.hpp"
#include "sched/db/migrator.hpp"
#include "sched/db/testing/test_database.hpp"
#include "sched/lock/lock_store.hpp"
#include "sched/lock/sql_lock_store.hpp"
#include "sched/model/workflow_progress.hpp"
#include "sched/protocol/testing/collecting_span_sink.hpp"
#include "sched/store/backfill.hpp"
#include "sched/store/calendar.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"
#include "sched/store/registry.hpp"
#include "sched/store/workflow.hpp"
#include "sched/store/workflow_run.hpp"
#include "sched/trigger/calendar_planner.hpp"

namespace sched::trigger {
namespace {

using namespace std::chrono_literals;

// The scan steps' fixture (this node leading, two live slaves, jobs and fires) with a whole
// Master over it.
class MasterTest : public impl::ScanStepTest {
  protected:
    void SetUpDatabase() override {
        ScanStepTest::SetUpDatabase();
        if (HasFatalFailure()) return;
        master_ = std::make_unique<Master>(pool_, *fence_, *time_, MasterConfig{}, metrics_);
    }

    // A workflow of manual step jobs named as its steps; `tweak` sets the schedule and limits.
    model::Workflow CreateWorkflow(const std::string& name, const std::vector<std::string>& steps,
                                   const std::vector<model::WorkflowEdge>& edges,
                                   const std::function<void(model::Workflow&)>& tweak = {}) {
        model::Workflow w;
        w.name = name;
        for (const auto& step : steps) {
            w.steps.push_back({step, CreateJob(name + "-" + step, "manual", "", std::nullopt).id});
        }
        w.edges = edges;
        if (tweak) tweak(w);
        auto created = store::WorkflowRepository(db()).Create(w);
        EXPECT_TRUE(created.ok()) << created.status().ToString();
        return *created;
    }

    // A run as the API's trigger makes it: the master starts it on its next scan.
    std::int64_t TriggerRun(const model::Workflow& w, std::int64_t scheduled,
                            std::optional<std::int64_t> started = {}) {
        return InsertManualRun(db(), w, scheduled, started.value_or(Now()));
    }

    // A manual fire of `job` (scheduled at 1000, this epoch's) moved from pending to `end` with a
    // follow-up due, as the scan finds a fire that ended so.
    Status EndManualFire(const model::Job& job, model::FireStatus end) {
        model::Fire f;
        f.job_id = job.id;
        f.scheduled_time = 1000;
        f.kind = model::FireKind::kManual;
        f.epoch = epoch_;
        auto id =
            **db().Run([&](soci::session& s) { return store::FireRepository::InsertIfAbsent(s, db().dialect(), f); });
        return store::FireRepository(db()).Transition(id, {model::FireStatus::kPending}, end, {.followup = true});
    }

    std::vector<model::Fire> RunFires(std::int64_t run_id) {
        auto fires =
            db().Run([&](soci::session& s) { return store::FireRepository::ListForWorkflowRuns(s, {run_id}); });
        EXPECT_TRUE(fires.ok());
        return *fires;
    }

    // The run's step fires as "step@attempt:status", in id order.
    std::vector<std::string> Steps(std::int64_t run_id) {
        std::vector<std::string> out;
        for (const auto& f : RunFires(run_id)) {
            out.push_back(f.workflow_step.value_or("?") + "@" + std::to_string(f.attempt) + ":" +
                          std::string(model::FireStatusName(f.status)));
        }
        return out;
    }

    // Ends the pending fire of `step` in the run as a slave and a callback would.
    void EndStep(std::int64_t run_id, const std::string& step, model::FireStatus status) {
        for (const auto& f : RunFires(run_id)) {
            if (f.workflow_step != step || f.status != model::FireStatus::kPending) continue;
            ASSERT_TRUE(
                store::FireRepository(db())
                    .Transition(f.id, {model::FireStatus::kPending}, status, {.finished_at = Now(), .followup = true})
                    .ok());
            return;
        }
        ADD_FAILURE() << "no pending fire of step " << step;
    }

    model::WorkflowRun GetRun(std::int64_t id) {
        auto run = store::WorkflowRunRepository(db()).Get(id);
        EXPECT_TRUE(run.ok()) << run.status().ToString();
        return *run;
    }

    MetricsRegistry metrics_;
    std::unique_ptr<Master> master_;
};

TEST_P(MasterTest, DueJobGetsItsFiresOnceAndAdvances) {
    const std::int64_t start = (Now() / 1000) * 1000;  // a whole second, already due
    auto job = CreateJob("tick", "cron", "* * * * * ?", start);
    auto first = master_->Scan(epoch_);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    auto fires = FiresOf(job.id);
    // The due second plus the 3 s lookahead window (4 or 5 depending on where in the second now is).
    ASSERT_GE(fires.size(), 4u);
    std::set<std::int64_t> times;
    for (const auto& f : fires) {
        times.insert(f.scheduled_time);
        EXPECT_EQ(f.epoch, epoch_);
        EXPECT_EQ(f.status, model::FireStatus::kPending);
        ASSERT_TRUE(f.assigned_node);
        EXPECT_TRUE(*f.assigned_node == "node-a" || *f.assigned_node == "node-b");
    }
    EXPECT_EQ(times.size(), fires.size()) << "a (job, time) was created twice";
    EXPECT_EQ(*times.begin(), start);
    auto stored = store::JobRepository(db()).Get(job.id);
    EXPECT_EQ(stored->next_fire_time, *times.rbegin() + 1000);
    EXPECT_EQ(stored->last_fire_time, *times.rbegin());
    EXPECT_EQ(first->fires_created, static_cast<int>(fires.size()));
    std::size_t notified = 0;
    for (const auto& [node, ids] : first->assigned) notified += ids.size();
    EXPECT_EQ(notified, fires.size());

    // An immediate second scan creates nothing new for the same times.
    auto second = master_->Scan(epoch_);
    ASSERT_TRUE(second.ok());
    auto again = FiresOf(job.id);
    std::set<std::int64_t> times_again;
    for (const auto& f : again) times_again.insert(f.scheduled_time);
    EXPECT_EQ(times_again.size(), again.size());
}

TEST_P(MasterTest, AJitteredFireHasTheSameKeyWhenPlannedTwice) {
    const std::int64_t start = (Now() / 1000) * 1000;
    auto job = CreateJob("spread", "cron", "* * * * * ?", start, [](model::Job& j) { j.jitter_ms = 900; });
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    const auto first = FiresOf(job.id);
    ASSERT_GE(first.size(), 3u);
    bool moved = false;
    for (const auto& f : first) {
        // The fire runs at its nominal second plus the job's deterministic offset.
        const std::int64_t nominal = f.scheduled_time / 1000 * 1000;
        EXPECT_EQ(f.scheduled_time, nominal + cron::JitterOffsetMs(job.id, nominal, 900, nominal + 1000));
        moved = moved || f.scheduled_time != nominal;
    }
    EXPECT_TRUE(moved);
    auto stored = store::JobRepository(db()).Get(job.id);
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(*stored->next_fire_time % 1000, 0);  // next_fire_time stays nominal

    // A failover: another master, with an empty cache, plans the same times again from the start.
    model::Job rewound = *stored;
    rewound.next_fire_time = start;
    ASSERT_TRUE(store::JobRepository(db()).Update(rewound, stored->version).ok());
    Master other(pool_, *fence_, *time_, MasterConfig{}, metrics_);
    ASSERT_TRUE(other.Scan(epoch_).ok());
    const auto again = FiresOf(job.id);
    std::set<std::int64_t> times;
    for (const auto& f : again) times.insert(f.scheduled_time);
    EXPECT_EQ(times.size(), again.size()) << "a jittered time was planned twice under different keys";
    for (const auto& f : first) EXPECT_TRUE(times.count(f.scheduled_time)) << f.scheduled_time;
    std::set<std::int64_t> seconds;
    for (const auto& f : again) seconds.insert(f.scheduled_time / 1000);
    EXPECT_EQ(seconds.size(), again.size()) << "one nominal second got two fires";
}

TEST_P(MasterTest, ABatchOfManyDueJobsGetsOneFirePerDueTimeAndAllAdvance) {
    // 1,200 once-jobs due within the lookahead, with `batch` above that: one scan plans them all
    // (several UPDATE, INSERT and read-back statements). CAS losers inside a batch are covered by
    // the repository test (JobRepositoryTest.AdvanceMany*).
    MasterConfig config;
    config.batch = 2000;
    Master master(pool_, *fence_, *time_, config, metrics_);
    const std::int64_t t = Now() + 500;
    constexpr int kJobs = 1200;
    ASSERT_TRUE(db().Run([&](soci::session& s) {
                        for (int i = 0; i < kJobs; ++i) {
                            const std::string name = "once-" + std::to_string(i);
                            const std::int64_t at = t + i % 3;  // three due times, all in the lookahead
                            const std::string expr = std::to_string(at);
                            s << "INSERT INTO job (name, app, handler, params, schedule_type, schedule_expr, "
                                 "time_zone, misfire_policy, routing, block_strategy, concurrency_limit, timeout_ms, "
                                 "retry_max, retry_backoff_ms, shard_total, at_least_once, enabled, next_fire_time, "
                                 "version, created_at, updated_at, description) VALUES (:name, 'app', 'echo', '{}', "
                                 "'once', :expr, 'UTC', 'fire-once-now', 'round-robin', 'serial', 1, 0, 0, 1000, 1, "
                                 "0, 1, :next, 1, 0, 0, '')",
                                soci::use(name), soci::use(expr), soci::use(at);
                        }
                    })
                    .ok());
    auto scan = master.Scan(epoch_);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    EXPECT_EQ(scan->due_jobs, kJobs);
    EXPECT_EQ(scan->fires_created, kJobs);
    std::set<std::int64_t> notified;
    std::map<std::int64_t, std::int64_t> notified_due;  // the notices' due times, by fire id
    for (const auto& [node, fires] : scan->assigned) {
        for (const auto& f : fires) {
            notified.insert(f.id);
            notified_due[f.id] = f.due_at;
        }
    }
    EXPECT_EQ(notified.size(), static_cast<std::size_t>(kJobs));

    struct Row {
        std::int64_t job_id = 0;
        std::int64_t scheduled_time = 0;
        std::int64_t id = 0;
        std::int64_t due_at = 0;
    };
    auto rows = db().Run([](soci::session& s) {
        std::vector<Row> out;
        Row r;
        soci::statement st =
            (s.prepare << "SELECT f.job_id, f.scheduled_time, f.id, f.due_at FROM job_fire f", soci::into(r.job_id),
             soci::into(r.scheduled_time), soci::into(r.id), soci::into(r.due_at));
        if (st.execute(true)) {
            do {
                out.push_back(r);
            } while (st.fetch());
        }
        return out;
    });
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    ASSERT_EQ(rows->size(), static_cast<std::size_t>(kJobs));
    std::map<std::int64_t, std::int64_t> time_by_job;
    std::set<std::int64_t> ids;
    for (const auto& r : *rows) {
        EXPECT_TRUE(time_by_job.emplace(r.job_id, r.scheduled_time).second) << "job " << r.job_id << " fired twice";
        ids.insert(r.id);
        // The slave queues a noticed fire by the notice's due time, without reading its row.
        EXPECT_EQ(notified_due[r.id], r.due_at) << "fire " << r.id;
    }
    EXPECT_EQ(ids, notified);
    std::vector<model::Job> jobs;
    for (std::int64_t after = 0;;) {
        auto page = store::JobRepository(db()).List({.after_id = after, .limit = 1000});
        ASSERT_TRUE(page.ok()) << page.status().ToString();
        if (page->empty()) break;
        after = page->back().id;
        jobs.insert(jobs.end(), page->begin(), page->end());
    }
    ASSERT_EQ(jobs.size(), static_cast<std::size_t>(kJobs));
    for (const auto& j : jobs) {
        ASSERT_TRUE(time_by_job.contains(j.id)) << j.name;
        EXPECT_EQ(std::to_string(time_by_job[j.id]), j.schedule_expr) << j.name;
        EXPECT_EQ(j.next_fire_time, std::nullopt) << j.name;  // a once-job is done
        EXPECT_EQ(j.last_fire_time, time_by_job[j.id]) << j.name;
    }

    // Nothing is due any more: a second scan plans nothing.
    auto second = master.Scan(epoch_);
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(second->due_jobs, 0);
    EXPECT_EQ(second->fires_created, 0);
}

TEST_P(MasterTest, AFireThatExistsUnderAnEarlierEpochIsNeitherCountedNorNotified) {
    // Job a's fire row exists already (an earlier master planned it, then its schedule advance
    // was lost with its lease, say): the batch keeps it and still creates b's.
    const std::int64_t t = Now() + 300;
    auto a = CreateJob("a", "once", std::to_string(t), t);
    auto b = CreateJob("b", "once", std::to_string(t), t);
    model::Fire earlier;
    earlier.job_id = a.id;
    earlier.scheduled_time = t;
    earlier.epoch = epoch_ - 1;
    earlier.assigned_node = "node-b";
    ASSERT_TRUE(
        db().Run([&](soci::session& s) { return store::FireRepository::InsertIfAbsent(s, db().dialect(), earlier); })
            .ok());
    auto scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    EXPECT_EQ(scan->fires_created, 1);  // b's; a's existed under the previous epoch
    ASSERT_EQ(FiresOf(a.id).size(), 1u);
    EXPECT_EQ(FiresOf(a.id)[0].epoch, epoch_ - 1);
    ASSERT_EQ(FiresOf(b.id).size(), 1u);
    EXPECT_EQ(FiresOf(b.id)[0].epoch, epoch_);
    std::size_t notified = 0;
    for (const auto& [node, ids] : scan->assigned) notified += ids.size();
    EXPECT_EQ(notified, 1u);
}

TEST_P(MasterTest, FiresSpreadOverSlavesByCapacity) {
    const std::int64_t start = Now() - 60'000;
    // A 100 ms fixed rate over a 2 s lookahead: plenty of fires to spread.
    auto job = CreateJob("fast", "fixed-rate", "100ms", start,
                         [](model::Job& j) { j.misfire_policy = sched::MisfirePolicy::kSkip; });
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    std::map<std::string, int> per_node;
    for (const auto& f : FiresOf(job.id)) {
        if (f.reason == model::FireReason::kMisfire) continue;  // the ledger row of the skipped minute: no node
        ASSERT_TRUE(f.assigned_node) << "fire " << f.id;
        per_node[*f.assigned_node]++;
    }
    ASSERT_EQ(per_node.size(), 2u);
    EXPECT_LE(std::abs(per_node["node-a"] - per_node["node-b"]), 1);
}

TEST_P(MasterTest, AfterLosingTheLeaseAScanWritesNothing) {
    auto job = CreateJob("tick", "cron", "* * * * * ?", Now());
    // Another node takes the row over (as after our lease expired).
    ASSERT_TRUE(db().Run([](soci::session& s) {
                        s << "UPDATE scheduler_lock SET owner = 'node-b', epoch = epoch + 1 WHERE namespace = 'master'";
                    })
                    .ok());
    auto scan = master_->Scan(epoch_);
    ASSERT_FALSE(scan.ok());
    EXPECT_TRUE(lock::IsLeaseLost(scan.status())) << scan.status().ToString();
    EXPECT_TRUE(FiresOf(job.id).empty());
    EXPECT_EQ(store::JobRepository(db()).Get(job.id)->next_fire_time, job.next_fire_time);
}

// The scan's spans leave once it committed: one `planned` span per fire it created, none from a
// scan that lost its lease.
TEST_P(MasterTest, ACommittedScanPushesThePlannedSpanOfEachFireItCreated) {
    protocol::testing::ScopedSpanSink spans;
    auto job = CreateJob("tick", "cron", "* * * * * ?", Now());
    auto scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    const auto fires = FiresOf(job.id);
    ASSERT_FALSE(fires.empty());
    const auto planned = spans->Named("planned");
    ASSERT_EQ(planned.size(), fires.size());
    std::set<std::int64_t> ids;
    for (const auto& s : planned) ids.insert(protocol::testing::IntAttribute(s, "sched.fire_id"));
    for (const auto& f : fires) EXPECT_TRUE(ids.contains(f.id)) << "fire " << f.id;

    ASSERT_TRUE(db().Run([](soci::session& s) {
                        s << "UPDATE scheduler_lock SET owner = 'node-b', epoch = epoch + 1 WHERE namespace = 'master'";
                    })
                    .ok());
    CreateJob("tock", "cron", "* * * * * ?", Now());
    EXPECT_FALSE(master_->Scan(epoch_).ok());
    EXPECT_EQ(spans->Named("planned").size(), fires.size()) << "a scan without the lease pushes nothing";
}

TEST_P(MasterTest, OrphansGoToLiveSlavesAndDeadDispatchesBecomeLost) {
    auto job = CreateJob("manual", "manual", "", std::nullopt);
    auto insert = [&](std::optional<std::string> node, std::int64_t t) {
        model::Fire f;
        f.job_id = job.id;
        f.scheduled_time = t;
        f.kind = model::FireKind::kManual;
        f.epoch = epoch_;
        f.assigned_node = std::move(node);
        auto id =
            db().Run([&](soci::session& s) { return store::FireRepository::InsertIfAbsent(s, db().dialect(), f); });
        return **id;
    };
    const auto unassigned = insert(std::nullopt, 1000);
    const auto on_dead = insert("node-dead", 2000);
    const auto dispatching_on_dead = insert("node-dead", 3000);
    store::FireRepository fires(db());
    ASSERT_TRUE(
        fires.Transition(dispatching_on_dead, {model::FireStatus::kPending}, model::FireStatus::kDispatching).ok());

    // The master's time on a clock the test moves, from the database clock's reading now.
    DbTime time(clock_, [this] { return pool_->NowUs(); });
    ASSERT_TRUE(time.Refresh().ok());
    Master master(pool_, *fence_, time, MasterConfig{}, metrics_);
    auto scan = master.Scan(epoch_);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    EXPECT_EQ(scan->orphans_assigned, 2);
    // A term's first node-ttl judges no slave dead: after a database outage the slaves' first
    // heartbeats may land after the new master's first scan.
    EXPECT_EQ(scan->lost, 0);
    EXPECT_EQ(fires.Get(dispatching_on_dead)->status, model::FireStatus::kDispatching);
    clock_.Advance(std::chrono::seconds(5));  // node-ttl; the live slaves beat at the new time
    ASSERT_TRUE(
        db().Run([](soci::session& s) { s << "UPDATE trigger_node SET last_heartbeat_ms = last_heartbeat_ms + 5000"; })
            .ok());
    scan = master.Scan(epoch_);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    EXPECT_EQ(scan->lost, 1);
    for (auto id : {unassigned, on_dead}) {
        auto f = fires.Get(id);
        ASSERT_TRUE(f->assigned_node);
        EXPECT_NE(*f->assigned_node, "node-dead");
    }
    auto lost = fires.Get(dispatching_on_dead);
    EXPECT_EQ(lost->status, model::FireStatus::kLost);
    EXPECT_NE(lost->result_message->find("node-dead"), std::string::npos);
    EXPECT_EQ(lost->reason, model::FireReason::kSlaveDied);
    EXPECT_FALSE(fires.Get(unassigned)->reason) << "a fire still to run has no ledger reason";
}

TEST_P(MasterTest, ASlaveSilentForHalfTheNodeTtlLosesItsQueueButNotItsDispatches) {
    store::TriggerNodeRepository nodes(db());
    ASSERT_TRUE(nodes.Heartbeat({.node_id = "node-slow", .address = "127.0.0.1:3", .capacity = 10}).ok());
    ASSERT_TRUE(db().Run([&](soci::session& s) {
                        s << "UPDATE trigger_node SET last_heartbeat_ms = last_heartbeat_ms - 3000 "
                             "WHERE node_id = 'node-slow'";
                    })
                    .ok());  // 3 s: past node-ttl / 2 (2.5 s), within node-ttl (5 s)
    auto job = CreateJob("manual", "manual", "", std::nullopt);
    store::FireRepository fires(db());
    const auto insert = [&](std::int64_t t) {
        model::Fire f;
        f.job_id = job.id;
        f.scheduled_time = t;
        f.kind = model::FireKind::kManual;
        f.epoch = epoch_;
        f.assigned_node = "node-slow";
        return **db().Run(
            [&](soci::session& s) { return store::FireRepository::InsertIfAbsent(s, db().dialect(), f); });
    };
    const auto queued = insert(1000);
    const auto dispatching = insert(2000);
    ASSERT_TRUE(fires.Transition(dispatching, {model::FireStatus::kPending}, model::FireStatus::kDispatching).ok());

    auto scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    const auto moved = fires.Get(queued);
    EXPECT_EQ(moved->status, model::FireStatus::kPending);
    EXPECT_NE(moved->assigned_node.value_or("node-slow"), "node-slow");
    EXPECT_EQ(fires.Get(dispatching)->status, model::FireStatus::kDispatching);
    EXPECT_EQ(scan->lost, 0);
}

TEST_P(MasterTest, RunningFiresOfDeadExecutorsAreLostAndPastTimeoutsEnd) {
    auto plain = CreateJob("plain", "manual", "", std::nullopt);
    auto timed = CreateJob("timed", "manual", "", std::nullopt, [](model::Job& j) { j.timeout_ms = 1000; });
    store::ExecutorRepository executors(db());
    ASSERT_TRUE(executors.Heartbeat({.app = "app", .address = "127.0.0.1:5001", .handlers = {"echo"}}).ok());
    ASSERT_TRUE(executors.Heartbeat({.app = "app", .address = "127.0.0.1:5002", .handlers = {"echo"}}).ok());
    const auto make_stale = [&](const std::string& address) {
        ASSERT_TRUE(db().Run([&](soci::session& s) {
                            s << "UPDATE executor_instance SET last_heartbeat_ms = last_heartbeat_ms - 600000 "
                                 "WHERE address = :a",
                                soci::use(address, "a");
                        })
                        .ok());
    };
    make_stale("127.0.0.1:5002");
    store::FireRepository fires(db());
    std::int64_t next_time = 1000;
    const auto running = [&](const model::Job& job, const std::string& address, std::int64_t dispatched_ago_ms) {
        model::Fire f;
        f.job_id = job.id;
        f.scheduled_time = next_time++;
        f.kind = model::FireKind::kManual;
        f.epoch = epoch_;
        f.assigned_node = "node-a";
        auto id =
            **db().Run([&](soci::session& s) { return store::FireRepository::InsertIfAbsent(s, db().dialect(), f); });
        const std::int64_t at = Now() - dispatched_ago_ms;
        EXPECT_TRUE(fires
                        .Transition(id, {model::FireStatus::kPending}, model::FireStatus::kRunning,
                                    {.executor_address = address, .dispatched_at = at, .started_at = at})
                        .ok());
        return id;
    };
    const auto on_dead_long_ago = running(plain, "127.0.0.1:5002", 60'000);
    const auto on_dead_just_now = running(plain, "127.0.0.1:5002", 100);
    const auto on_live = running(plain, "127.0.0.1:5001", 60'000);
    const auto past_timeout = running(timed, "127.0.0.1:5001", 60'000);
    const auto within_timeout = running(timed, "127.0.0.1:5001", 0);

    auto scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    EXPECT_EQ(scan->running_lost, 1);
    EXPECT_EQ(scan->running_timed_out, 1);
    auto lost = fires.Get(on_dead_long_ago);
    EXPECT_EQ(lost->status, model::FireStatus::kLost);
    EXPECT_NE(lost->result_message.value_or("").find("127.0.0.1:5002"), std::string::npos) << *lost->result_message;
    EXPECT_EQ(lost->reason, model::FireReason::kExecutorGone);
    EXPECT_EQ(fires.Get(past_timeout)->status, model::FireStatus::kTimeout);
    EXPECT_EQ(fires.Get(past_timeout)->reason, model::FireReason::kNoResult);
    for (auto id : {on_dead_just_now, on_live, within_timeout}) {
        EXPECT_EQ(fires.Get(id)->status, model::FireStatus::kRunning) << "fire " << id;
    }
    // Both ended fires went through the follow-up like any other end (their flag was cleared).
    EXPECT_FALSE(fires.Get(on_dead_long_ago)->followup);

    // With no executor heartbeat fresh at all, the registry is what failed: nothing is concluded.
    make_stale("127.0.0.1:5001");
    const auto while_registry_down = running(plain, "127.0.0.1:5002", 60'000);
    Master fresh(pool_, *fence_, *time_, MasterConfig{}, metrics_);
    auto second = fresh.Scan(epoch_);
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    EXPECT_EQ(second->running_lost, 0);
    EXPECT_EQ(fires.Get(while_registry_down)->status, model::FireStatus::kRunning);
}

TEST_P(MasterTest, FailedFireIsRetriedWithBackoffUntilAttemptsRunOut) {
    auto job = CreateJob("flaky", "manual", "", std::nullopt, [](model::Job& j) {
        j.retry_max = 1;
        j.retry_backoff_ms = 5000;
    });
    model::Fire f;
    f.job_id = job.id;
    f.scheduled_time = 1000;
    f.kind = model::FireKind::kManual;
    f.epoch = epoch_;
    f.assigned_node = "node-a";
    auto id = **db().Run([&](soci::session& s) { return store::FireRepository::InsertIfAbsent(s, db().dialect(), f); });
    store::FireRepository fires(db());
    ASSERT_TRUE(
        fires.Transition(id, {model::FireStatus::kPending}, model::FireStatus::kFailed, {.followup = true}).ok());

    const auto before = Now();
    auto scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    EXPECT_EQ(scan->retries, 1);
    auto all = FiresOf(job.id);
    ASSERT_EQ(all.size(), 2u);
    const auto& retry = all[1];
    EXPECT_EQ(retry.kind, model::FireKind::kRetry);
    EXPECT_EQ(retry.attempt, 1);
    EXPECT_EQ(retry.scheduled_time, 1000);
    EXPECT_GE(retry.due_at, before + 2500);  // backoff 5 s with jitter in [2.5 s, 5 s]
    EXPECT_LE(retry.due_at, Now() + 5000);
    EXPECT_FALSE(fires.Get(id)->followup);

    // The retry fails too: no attempts left, no third row.
    ASSERT_TRUE(
        fires.Transition(retry.id, {model::FireStatus::kPending}, model::FireStatus::kFailed, {.followup = true}).ok());
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    EXPECT_EQ(FiresOf(job.id).size(), 2u);
}

// A workflow step's fire counts its tries in attempt % 1000 (attempt = 1000 x generation + try,
// docs/workflows.md): a re-run's first fire (attempt 2000) retries as 2001, keeps kind workflow,
// and 2001 is the last try of retry_max 1.
TEST_P(MasterTest, AWorkflowStepFireRetriesByItsTryAndKeepsItsKind) {
    auto job = CreateJob("step", "manual", "", std::nullopt, [](model::Job& j) { j.retry_max = 1; });
    model::Fire f;
    f.job_id = job.id;
    f.scheduled_time = 1000;
    f.kind = model::FireKind::kWorkflow;
    f.attempt = 2000;
    f.workflow_run_id = 77;
    f.workflow_step = "load";
    f.epoch = epoch_;
    auto id = **db().Run([&](soci::session& s) { return store::FireRepository::InsertIfAbsent(s, db().dialect(), f); });
    store::FireRepository fires(db());
    ASSERT_TRUE(
        fires.Transition(id, {model::FireStatus::kPending}, model::FireStatus::kFailed, {.followup = true}).ok());
    auto scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    EXPECT_EQ(scan->retries, 1);
    auto all = FiresOf(job.id);
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[1].kind, model::FireKind::kWorkflow);
    EXPECT_EQ(all[1].attempt, 2001);
    EXPECT_EQ(all[1].workflow_run_id, 77);
    EXPECT_EQ(all[1].workflow_step, "load");
    EXPECT_EQ(all[0].workflow_step, "load");

    ASSERT_TRUE(
        fires.Transition(all[1].id, {model::FireStatus::kPending}, model::FireStatus::kFailed, {.followup = true})
            .ok());
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    EXPECT_EQ(FiresOf(job.id).size(), 2u);
}

TEST_P(MasterTest, LostFiresAreRetriedOnlyForAtLeastOnceJobs) {
    for (bool at_least_once : {false, true}) {
        auto job = CreateJob(at_least_once ? "alo" : "amo", "manual", "", std::nullopt, [&](model::Job& j) {
            j.retry_max = 3;
            j.at_least_once = at_least_once;
        });
        ASSERT_TRUE(EndManualFire(job, model::FireStatus::kLost).ok());
        ASSERT_TRUE(master_->Scan(epoch_).ok());
        EXPECT_EQ(FiresOf(job.id).size(), at_least_once ? 2u : 1u) << "at_least_once=" << at_least_once;
    }
}

TEST_P(MasterTest, AnAtLeastOnceJobRetriesALostFireOnceEvenWithRetryMaxZero) {
    auto job = CreateJob("alo0", "manual", "", std::nullopt, [&](model::Job& j) {
        j.retry_max = 0;
        j.at_least_once = true;
    });
    ASSERT_TRUE(EndManualFire(job, model::FireStatus::kLost).ok());
    store::FireRepository fires(db());
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    auto rows = FiresOf(job.id);
    ASSERT_EQ(rows.size(), 2u) << "a lost fire of an at-least-once job is retried whatever retry_max says";
    EXPECT_EQ(rows[1].kind, model::FireKind::kRetry);
    EXPECT_EQ(rows[1].attempt, 1);

    // The retry is lost too: at least once is once, retry_max 0 allows no more.
    ASSERT_TRUE(
        fires.Transition(rows[1].id, {model::FireStatus::kPending}, model::FireStatus::kLost, {.followup = true}).ok());
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    EXPECT_EQ(FiresOf(job.id).size(), 2u);

    // A failed fire of the same job is not retried: retry_max governs failures.
    auto failing = CreateJob("alo0-fail", "manual", "", std::nullopt, [&](model::Job& j) {
        j.retry_max = 0;
        j.at_least_once = true;
    });
    ASSERT_TRUE(EndManualFire(failing, model::FireStatus::kFailed).ok());
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    EXPECT_EQ(FiresOf(failing.id).size(), 1u);
}

// Every scheduled time is fired or recorded: a run of times the misfire policy gave no fire of
// its own is one ledger row with its range and count, written once.
TEST_P(MasterTest, SkippedScheduledTimesLeaveOneLedgerRowWithTheirRangeAndCount) {
    const std::int64_t now = Now();
    const std::int64_t start = (now / 1000) * 1000 - 60'000;  // a minute of every-second times missed
    auto skip = CreateJob("skip", "cron", "* * * * * ?", start,
                          [](model::Job& j) { j.misfire_policy = sched::MisfirePolicy::kSkip; });
    auto once = CreateJob("once-now", "cron", "* * * * * ?", start,
                          [](model::Job& j) { j.misfire_policy = sched::MisfirePolicy::kFireOnceNow; });
    auto all = CreateJob("all", "cron", "* * * * * ?", start,
                         [](model::Job& j) { j.misfire_policy = sched::MisfirePolicy::kFireAll; });
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    // The scan's time lies between `now` and `scanned`, give or take the few ms by which this
    // estimate of the database's clock may miss the clock the scan reads: a bound that took
    // `now` alone failed by 1 ms when the scan read its time across a second's boundary.
    const std::int64_t scanned = Now() + 5;
    ASSERT_TRUE(master_->Scan(epoch_).ok());  // a second scan writes no second ledger row

    const auto ledger_of = [&](std::int64_t job_id) {
        std::vector<model::Fire> out;
        for (const auto& f : FiresOf(job_id)) {
            if (f.reason == model::FireReason::kMisfire) out.push_back(f);
        }
        return out;
    };
    const std::int64_t threshold = 5'000;  // MasterConfig's default
    for (const auto* job : {&skip, &once}) {
        const auto rows = ledger_of(job->id);
        ASSERT_EQ(rows.size(), 1u) << job->name;
        const auto& row = rows[0];
        EXPECT_EQ(row.status, model::FireStatus::kSkipped);
        EXPECT_EQ(row.kind, model::FireKind::kMisfire);
        EXPECT_EQ(row.scheduled_time, start);
        EXPECT_FALSE(row.followup);
        EXPECT_FALSE(row.assigned_node);
        ASSERT_TRUE(row.skipped_until && row.skipped_count && row.result_message) << job->name;
        EXPECT_EQ(*row.skipped_count, (*row.skipped_until - start) / 1000 + 1) << job->name;
        EXPECT_NE(row.result_message->find("misfire: " + std::to_string(*row.skipped_count) + " scheduled time(s)"),
                  std::string::npos)
            << *row.result_message;
        // No other row of the job lies inside the skipped range.
        for (const auto& f : FiresOf(job->id)) {
            if (f.id == row.id) continue;
            EXPECT_TRUE(f.scheduled_time > *row.skipped_until) << job->name << " fire at " << f.scheduled_time;
        }
    }
    // skip: every late time (more than the threshold behind the scan) and nothing else.
    const auto skip_row = ledger_of(skip.id)[0];
    EXPECT_LE(*skip_row.skipped_until, scanned - threshold);
    EXPECT_GE(*skip_row.skipped_until, now - threshold - 2'000);
    EXPECT_NE(skip_row.result_message->find("policy skip"), std::string::npos);
    // fire-once-now: every time up to the one misfire fire.
    const auto once_row = ledger_of(once.id)[0];
    EXPECT_NE(once_row.result_message->find("folded into one fire"), std::string::npos);
    // fire-all under its cap (100) fires every time: no ledger row.
    EXPECT_TRUE(ledger_of(all.id).empty());

    auto listed = store::FireRepository(db()).List({.reason = model::FireReason::kMisfire, .limit = 100});
    ASSERT_TRUE(listed.ok());
    EXPECT_EQ(listed->size(), 2u);
    EXPECT_NE(metrics_.Render().find("sched_master_misfire_skipped_total{policy=\"skip\"} " +
                                     std::to_string(*skip_row.skipped_count)),
              std::string::npos)
        << metrics_.Render();
}

// A scheduled time in an excluded period of the job's calendar gets no fire: one ledger row per
// run (reason calendar), written once; an edit of the calendar counts from the next planning.
TEST_P(MasterTest, CalendarExcludedTimesLeaveOneLedgerRowAndEditsTakeEffect) {
    store::CalendarRepository calendars(db());
    store::CalendarRecord record;
    record.name = "blackout";
    record.excluded_dates = {"2199-01-01"};
    auto calendar = calendars.Create(record);
    ASSERT_TRUE(calendar.ok()) << calendar.status().ToString();
    const std::int64_t start = (Now() / 1000) * 1000;
    auto job = CreateJob("tick", "cron", "* * * * * ?", start, [](model::Job& j) { j.calendar = "blackout"; });
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    const auto first = FiresOf(job.id);
    ASSERT_FALSE(first.empty());
    for (const auto& f : first) EXPECT_NE(f.status, model::FireStatus::kSkipped);

    // Exclude today and tomorrow (UTC), then make the job due again: the next planning sees the edit.
    const auto day = [](std::int64_t ms) {
        const std::time_t t = ms / 1000;
        std::tm tm{};
        gmtime_r(&t, &tm);
        char buf[16];
        std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
        return std::string(buf);
    };
    record = *calendar;
    record.excluded_dates = {day(start), day(start + 86'400'000)};
    ASSERT_TRUE(calendars.Update(record, calendar->version).ok());
    // The first job has done its part (the master cached version 1 while planning it); gone, it
    // cannot become due again during the next scan on a slow machine and add its own skips.
    ASSERT_TRUE(store::JobRepository(db()).Delete(job.id).ok());
    // A second job of the calendar, due now: planned by the same master, which cached version 1.
    const std::int64_t due = (Now() / 1000) * 1000;
    auto second = CreateJob("tock", "cron", "* * * * * ?", due, [](model::Job& j) { j.calendar = "blackout"; });
    auto scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    ASSERT_TRUE(master_->Scan(epoch_).ok());  // a second scan writes no second ledger row
    std::vector<model::Fire> rows;
    for (const auto& f : FiresOf(second.id)) {
        if (f.reason == model::FireReason::kCalendar) rows.push_back(f);
    }
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].status, model::FireStatus::kSkipped);
    EXPECT_EQ(rows[0].scheduled_time, due);
    EXPECT_EQ(rows[0].skipped_count, kMaxExcludedPerRun);  // every second, capped per planning
    EXPECT_EQ(rows[0].skipped_until, due + (kMaxExcludedPerRun - 1) * 1000);
    EXPECT_EQ(scan->calendar_skipped, kMaxExcludedPerRun);
    EXPECT_NE(rows[0].result_message->find("calendar \"blackout\""), std::string::npos) << *rows[0].result_message;
    EXPECT_EQ(store::JobRepository(db()).Get(second.id)->next_fire_time, due + kMaxExcludedPerRun * 1000);
    EXPECT_EQ(FiresOf(second.id).size(), 1u);  // no fire, only the ledger row
}

TEST_P(MasterTest, EndAtAndMaxRunsCompleteTheJob) {
    const std::int64_t start = (Now() / 1000) * 1000;
    auto ending = CreateJob("ending", "cron", "* * * * * ?", start, [&](model::Job& j) { j.end_at = start + 1500; });
    auto counted = CreateJob("counted", "cron", "* * * * * ?", start, [](model::Job& j) { j.max_runs = 2; });
    auto free = CreateJob("free", "cron", "* * * * * ?", start);
    auto scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    EXPECT_EQ(scan->jobs_completed, 2);
    store::JobRepository jobs(db());

    const auto ended = *jobs.Get(ending.id);
    EXPECT_EQ(ended.completed_reason, "end_at");
    EXPECT_TRUE(ended.completed_at);
    EXPECT_EQ(ended.next_fire_time, std::nullopt);
    EXPECT_TRUE(ended.enabled);  // completed, not paused
    std::set<std::int64_t> times;
    for (const auto& f : FiresOf(ending.id)) times.insert(f.scheduled_time);
    EXPECT_EQ(times, (std::set<std::int64_t>{start, start + 1000}));

    const auto done = *jobs.Get(counted.id);
    EXPECT_EQ(done.completed_reason, "max_runs");
    EXPECT_EQ(done.planned_runs, 2);
    EXPECT_EQ(done.next_fire_time, std::nullopt);
    EXPECT_EQ(FiresOf(counted.id).size(), 2u);

    const auto running = *jobs.Get(free.id);
    EXPECT_FALSE(running.completed_at);
    EXPECT_TRUE(running.next_fire_time);
    EXPECT_EQ(running.planned_runs, 0);  // counted only under max_runs
}

TEST_P(MasterTest, FixedDelayNextTimeFollowsTheFinish) {
    auto job = CreateJob("delay", "fixed-delay", "10s", std::nullopt);
    model::Fire f;
    f.job_id = job.id;
    f.scheduled_time = 1000;
    f.epoch = epoch_;
    auto id = **db().Run([&](soci::session& s) { return store::FireRepository::InsertIfAbsent(s, db().dialect(), f); });
    const std::int64_t finished = Now();
    ASSERT_TRUE(store::FireRepository(db())
                    .Transition(id, {model::FireStatus::kPending}, model::FireStatus::kSucceeded,
                                {.finished_at = finished, .followup = true})
                    .ok());
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    EXPECT_EQ(store::JobRepository(db()).Get(job.id)->next_fire_time, finished + 10'000);
}

TEST_P(MasterTest, ShardingBroadcastMakesOneFirePerLiveInstance) {
    store::ExecutorRepository executors(db());
    for (int i = 1; i <= 3; ++i) {
        ASSERT_TRUE(
            executors.Heartbeat({.app = "app", .address = "h:" + std::to_string(i), .handlers = {"echo"}}).ok());
    }
    const std::int64_t t = Now() + 500;
    auto job = CreateJob("bcast", "once", std::to_string(t), t,
                         [](model::Job& j) { j.routing = Routing::kShardingBroadcast; });
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    auto fires = FiresOf(job.id);
    ASSERT_EQ(fires.size(), 3u);
    std::set<int> shards;
    for (const auto& f : fires) {
        shards.insert(f.shard_index);
        EXPECT_EQ(f.shard_total, 3);
        EXPECT_EQ(f.scheduled_time, t);
    }
    EXPECT_EQ(shards, (std::set<int>{0, 1, 2}));
}

TEST_P(MasterTest, InvalidStoredScheduleIsParkedNotRescanned) {
    auto job = CreateJob("broken", "cron", "not a cron", Now() - 1000);
    auto scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    EXPECT_TRUE(FiresOf(job.id).empty());
    EXPECT_EQ(store::JobRepository(db()).Get(job.id)->next_fire_time, std::nullopt);
}

TEST_P(MasterTest, SleepsUntilTheNextJobIsWithinTheLookahead) {
    ScanReport r;
    EXPECT_EQ(master_->SleepAfter(r), 100ms);  // nothing scheduled: the scan interval
    r.earliest_due_ms = Now() + 3000 + 80;     // lookahead 3 s: plan it in ~80 ms
    const auto sleep = master_->SleepAfter(r);
    EXPECT_GT(sleep, 50ms);
    EXPECT_LE(sleep, 85ms);
    r.earliest_due_ms = Now() + 3000 + 3;  // in 3 ms: not sooner than scan-min-interval
    EXPECT_EQ(master_->SleepAfter(r), 50ms);
    r.due_jobs = MasterConfig{}.batch;  // a full batch: more are waiting, scan again at once
    EXPECT_EQ(master_->SleepAfter(r), 0ms);
}

// Backfill (step 1b): a serial backfill over 5 past minutes, one of which the schedule already
// fired: one fire at a time, each created once the previous ended, then completed; a second
// identical backfill creates nothing.
TEST_P(MasterTest, BackfillRunsEachPastTimeOnceSeriallyAndRepeatsCreateNothing) {
    constexpr std::int64_t kMinute = 60'000;
    const std::int64_t base = (Now() / kMinute - 60) * kMinute;       // an hour ago, on a minute
    auto job = CreateJob("bf", "cron", "0 * * * * ?", std::nullopt);  // never due itself
    {
        model::Fire fired;  // the schedule fired base + 2 min normally
        fired.job_id = job.id;
        fired.scheduled_time = base + 2 * kMinute;
        fired.status = model::FireStatus::kSucceeded;
        ASSERT_TRUE(db().Run([&](soci::session& s) {
                            return store::FireRepository::InsertIfAbsent(s, db().dialect(), fired).has_value();
                        })
                        .ok());
    }
    const auto add_backfill = [&](store::BackfillOverlap overlap, int max_parallel) {
        store::Backfill b;
        b.job_id = job.id;
        b.range_from = base;
        b.range_to = base + 5 * kMinute;
        b.overlap = overlap;
        b.max_parallel = max_parallel;
        b.cursor_ms = base;
        b.planned = 5;
        b.created_by = "test";
        auto id = db().Run([&](soci::session& s) { return store::BackfillRepository::Insert(s, b); });
        EXPECT_TRUE(id.ok());
        return *id;
    };
    const auto backfill_fires = [&] {
        std::vector<model::Fire> out;
        for (const auto& f : FiresOf(job.id)) {
            if (f.kind == model::FireKind::kBackfill) out.push_back(f);
        }
        return out;
    };
    const auto first = add_backfill(store::BackfillOverlap::kSerial, 1);
    store::FireRepository fires(db());
    std::vector<std::int64_t> times;
    for (int round = 0; round < 10; ++round) {
        auto scan = master_->Scan(epoch_);
        ASSERT_TRUE(scan.ok()) << scan.status().ToString();
        auto again = master_->Scan(epoch_);  // nothing more while one is unfinished
        ASSERT_TRUE(again.ok());
        EXPECT_EQ(again->backfill_fires, 0);
        int unfinished = 0;
        for (const auto& f : backfill_fires()) {
            if (model::IsFinal(f.status)) continue;
            ++unfinished;
            EXPECT_GE(f.due_at, scan->now_ms - 1000) << "due when created, not at its past time";
            ASSERT_TRUE(f.assigned_node);
            times.push_back(f.scheduled_time);
            ASSERT_TRUE(fires
                            .Transition(f.id, {model::FireStatus::kPending}, model::FireStatus::kSucceeded,
                                        {.finished_at = scan->now_ms, .followup = true})
                            .ok());
        }
        EXPECT_LE(unfinished, 1) << "serial: never two at once";
        if (store::BackfillRepository(db()).Get(first)->state != store::BackfillState::kRunning) break;
    }
    EXPECT_EQ(times, (std::vector<std::int64_t>{base, base + kMinute, base + 3 * kMinute, base + 4 * kMinute}));
    auto done = store::BackfillRepository(db()).Get(first);
    ASSERT_TRUE(done.ok());
    EXPECT_EQ(done->state, store::BackfillState::kCompleted);
    EXPECT_EQ(done->created, 4);
    EXPECT_EQ(done->existing, 1);
    EXPECT_EQ(done->cursor_ms, base + 5 * kMinute);
    EXPECT_TRUE(done->finished_at);

    const auto second = add_backfill(store::BackfillOverlap::kParallel, 5);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(master_->Scan(epoch_).ok());
    auto repeat = store::BackfillRepository(db()).Get(second);
    EXPECT_EQ(repeat->state, store::BackfillState::kCompleted);
    EXPECT_EQ(repeat->created, 0);
    EXPECT_EQ(repeat->existing, 5);
    EXPECT_EQ(backfill_fires().size(), 4u);
}

TEST_P(MasterTest, BackfillOfAPausedJobWaitsAndOfADeletedJobIsCancelled) {
    constexpr std::int64_t kMinute = 60'000;
    const std::int64_t base = (Now() / kMinute - 60) * kMinute;
    auto paused = CreateJob("paused", "cron", "0 * * * * ?", std::nullopt, [](model::Job& j) { j.enabled = false; });
    auto doomed = CreateJob("doomed", "cron", "0 * * * * ?", std::nullopt);
    std::vector<std::int64_t> ids;
    for (const auto& job : {paused, doomed}) {
        store::Backfill b;
        b.job_id = job.id;
        b.range_from = base;
        b.range_to = base + 3 * kMinute;
        b.overlap = store::BackfillOverlap::kParallel;
        b.max_parallel = 3;
        b.cursor_ms = base;
        b.planned = 3;
        b.created_by = "test";
        ids.push_back(*db().Run([&](soci::session& s) { return store::BackfillRepository::Insert(s, b); }));
    }
    ASSERT_TRUE(store::JobRepository(db()).Delete(doomed.id).ok());
    auto scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok());
    EXPECT_EQ(scan->backfill_fires, 0);
    EXPECT_EQ(store::BackfillRepository(db()).Get(ids[0])->state, store::BackfillState::kRunning);
    EXPECT_EQ(store::BackfillRepository(db()).Get(ids[0])->cursor_ms, base);
    EXPECT_EQ(store::BackfillRepository(db()).Get(ids[1])->state, store::BackfillState::kCancelled);

    auto resumed = store::JobRepository(db()).Get(paused.id);
    resumed->enabled = true;
    ASSERT_TRUE(store::JobRepository(db()).Update(*resumed, resumed->version).ok());
    scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok());
    EXPECT_EQ(scan->backfill_fires, 3);  // parallel 3: all at once
    std::size_t notified = 0;
    for (const auto& [node, fire_ids] : scan->assigned) notified += fire_ids.size();
    EXPECT_GE(notified, 3u);
}

// Between quiet scans the master asks one statement whether work waits; anything a scan step
// would act on (here an unassigned fire, a new node, a new term) makes the next scan run.
TEST_P(MasterTest, AfterAQuietScanOnlyWaitingWorkANewNodeOrANewTermRunsTheNext) {
    MasterConfig config;
    config.scan_idle_interval = 60s;
    Master master(pool_, *fence_, *time_, config, metrics_);
    EXPECT_FALSE(master.Quiet(epoch_)) << "no scan yet";
    ASSERT_TRUE(master.Scan(epoch_).ok());
    const auto sleep = master.Quiet(epoch_);
    ASSERT_TRUE(sleep) << "nothing waits after a scan that changed nothing";
    EXPECT_GE(*sleep, Micros{0});
    EXPECT_LE(*sleep, config.probe_interval);
    EXPECT_FALSE(master.Quiet(epoch_ + 1)) << "a new term scans first";

    const auto job = CreateJob("manual", "manual", "", std::nullopt);
    const auto fire = InsertFire(job, 1000, [](model::Fire& f) { f.assigned_node.reset(); });
    EXPECT_FALSE(master.Quiet(epoch_)) << "an unassigned fire waits";
    auto assigned = master.Scan(epoch_);
    ASSERT_TRUE(assigned.ok());
    EXPECT_EQ(assigned->orphans_assigned, 1);
    EXPECT_TRUE(Fire(fire).assigned_node.has_value());
    EXPECT_FALSE(master.Quiet(epoch_)) << "a scan that changed something is followed by another";
    ASSERT_TRUE(master.Scan(epoch_).ok());
    EXPECT_TRUE(master.Quiet(epoch_));

    ASSERT_TRUE(store::TriggerNodeRepository(db())
                    .Heartbeat({.node_id = "node-c", .address = "127.0.0.1:3", .capacity = 10})
                    .ok());
    EXPECT_FALSE(master.Quiet(epoch_)) << "a node that joined";
    ASSERT_TRUE(master.Scan(epoch_).ok());
    EXPECT_TRUE(master.Quiet(epoch_));

    const auto workflow = CreateWorkflow("wf", {"a"}, {});
    ASSERT_TRUE(master.Quiet(epoch_)) << "a workflow without a run waits for nothing";
    TriggerRun(workflow, Now());
    EXPECT_FALSE(master.Quiet(epoch_)) << "a run the API created";
    auto started = master.Scan(epoch_);
    ASSERT_TRUE(started.ok());
    EXPECT_EQ(started->workflow_steps_started, 1);
}

// A scan that only planned due jobs is followed by probes, not scans, until a job is due within
// lookahead - lookahead-refill: a busy master plans in blocks instead of every scan-min-interval.
TEST_P(MasterTest, AfterAScanThatOnlyPlannedTheNextWaitsUntilTheWindowShrankByTheRefill) {
    // scan-interval 5 s: so that the probe's own sleep shows, not the cap.
    MasterConfig config{.scan_interval = 5s, .scan_idle_interval = 60s, .lookahead = 3s, .lookahead_refill = 1s};
    Master master(pool_, *fence_, *time_, config, metrics_);
    const std::int64_t start = (Now() / 1000) * 1000;
    auto job = CreateJob("tick", "cron", "* * * * * ?", start);
    auto planned = master.Scan(epoch_);
    ASSERT_TRUE(planned.ok()) << planned.status().ToString();
    ASSERT_GE(planned->fires_created, 3);
    // The job's next time lies past now + 3 s, so past now + 2 s: nothing to plan yet.
    const auto next = store::JobRepository(db()).Get(job.id)->next_fire_time;
    ASSERT_TRUE(next);
    ASSERT_GT(*next, Now() + 2000);
    const auto sleep = master.Quiet(epoch_);
    ASSERT_TRUE(sleep) << "a scan that only planned is followed by a probe";
    // The next probe waits until the job is due within lookahead - lookahead-refill, not until
    // it enters the lookahead (a second earlier, when the probe would find nothing).
    const std::int64_t until_within = *next - (3000 - 1000) - Now();
    EXPECT_NEAR(static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(*sleep).count()),
                static_cast<double>(until_within), 100.0);

    // A job due within the shrunken window (its first time is the next whole second) is planned
    // by the next scan.
    CreateJob("new", "cron", "* * * * * ?", (Now() / 1000 + 1) * 1000);
    EXPECT_FALSE(master.Quiet(epoch_)) << "a job due within lookahead - lookahead-refill";
    ASSERT_TRUE(master.Scan(epoch_).ok());

    // With the whole lookahead as refill a job already planned through it waits too, and a
    // scan that filled its batch is followed by another at once.
    config.lookahead_refill = config.lookahead;
    config.batch = 1;
    Master small(pool_, *fence_, *time_, config, metrics_);
    CreateJob("third", "cron", "* * * * * ?", (Now() / 1000) * 1000);
    CreateJob("fourth", "cron", "* * * * * ?", (Now() / 1000) * 1000);
    auto full = small.Scan(epoch_);
    ASSERT_TRUE(full.ok());
    EXPECT_EQ(full->due_jobs, 1);
    EXPECT_FALSE(small.Quiet(epoch_)) << "a full batch: more due jobs wait";
}

// The scan a probe prompts runs the steps for what the probe found (here a job due) and not
// those it found nothing for: a pending fire of a node that is not alive (which the probe does
// not look for: the node set did not change) waits for the next full scan, which comes once
// scan-idle-interval has passed since the last full one, however many prompted scans ran.
TEST_P(MasterTest, AScanAProbePromptedRunsOnlyTheStepsItFoundWorkForUntilTheNextFullScan) {
    const MasterConfig config{.scan_interval = 5s, .scan_idle_interval = 1s, .lookahead = 3s, .lookahead_refill = 1s};
    Master master(pool_, *fence_, *time_, config, metrics_);
    auto first = master.Scan(epoch_);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_TRUE(first->full);
    const auto manual = CreateJob("manual", "manual", "", std::nullopt);
    const auto stray = InsertFire(manual, 1000, [](model::Fire& f) { f.assigned_node = "node-gone"; });
    ASSERT_TRUE(master.Quiet(epoch_)) << "nothing the probe looks for waits";

    std::this_thread::sleep_for(600ms);
    CreateJob("tick", "cron", "* * * * * ?", (Now() / 1000 + 1) * 1000);
    EXPECT_FALSE(master.Quiet(epoch_)) << "a job due within lookahead - lookahead-refill";
    auto prompted = master.Scan(epoch_);
    ASSERT_TRUE(prompted.ok()) << prompted.status().ToString();
    EXPECT_FALSE(prompted->full);
    EXPECT_GE(prompted->fires_created, 1);
    EXPECT_EQ(prompted->orphans_assigned, 0);
    EXPECT_EQ(Fire(stray).assigned_node, "node-gone");

    // 1.2 s after the full scan, 0.6 s after the prompted one: the idle interval counts from
    // the full scan.
    std::this_thread::sleep_for(600ms);
    EXPECT_FALSE(master.Quiet(epoch_)) << "scan-idle-interval since the last full scan";
    auto full = master.Scan(epoch_);
    ASSERT_TRUE(full.ok()) << full.status().ToString();
    EXPECT_TRUE(full->full);
    EXPECT_EQ(full->orphans_assigned, 1);
    EXPECT_NE(Fire(stray).assigned_node, "node-gone");
}

// The term's first scan that may judge slaves dead is a full one even when a probe prompted it:
// the dispatching fire of a node that died is judged at once.
TEST_P(MasterTest, TheFirstScanThatMayJudgeSlavesIsFullThoughAProbePromptedIt) {
    const MasterConfig config{.scan_idle_interval = 60s, .lookahead = 3s, .lookahead_refill = 1s, .node_ttl = 1s};
    Master master(pool_, *fence_, *time_, config, metrics_);
    ASSERT_TRUE(master.Scan(epoch_).ok());
    const auto manual = CreateJob("manual", "manual", "", std::nullopt);
    const auto in_flight = InsertFire(manual, 1000, [](model::Fire& f) { f.assigned_node = "node-dead"; });
    ASSERT_TRUE(store::FireRepository(db())
                    .Transition(in_flight, {model::FireStatus::kPending}, model::FireStatus::kDispatching)
                    .ok());
    std::this_thread::sleep_for(1100ms);  // past node-ttl: the term may judge slaves now
    store::TriggerNodeRepository nodes(db());
    for (const char* node : {"node-a", "node-b"}) {
        ASSERT_TRUE(nodes.Heartbeat({.node_id = node, .address = "127.0.0.1:1", .capacity = 10}).ok());
    }
    CreateJob("tick", "cron", "* * * * * ?", (Now() / 1000 + 1) * 1000);
    ASSERT_FALSE(master.Quiet(epoch_));
    auto scan = master.Scan(epoch_);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    EXPECT_TRUE(scan->full);
    EXPECT_EQ(scan->lost, 1);
    EXPECT_EQ(Fire(in_flight).status, model::FireStatus::kLost);
}

// Between probes the master sleeps up to probe-interval (writers wake it), but never past the
// moment a live slave's heartbeat would run out: a dead slave's fires move as soon as when it
// probed every scan-interval.
TEST_P(MasterTest, BetweenProbesTheMasterSleepsUntilASlavesHeartbeatWouldRunOutAtTheLatest) {
    const auto ms = [](Micros d) {
        return static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
    };
    store::TriggerNodeRepository nodes(db());
    const auto beat = [&nodes] {
        for (const char* node : {"node-a", "node-b"}) {
            ASSERT_TRUE(nodes.Heartbeat({.node_id = node, .address = "127.0.0.1:1", .capacity = 10}).ok());
        }
    };
    MasterConfig config{.scan_idle_interval = 60s, .probe_interval = 30s, .node_ttl = 5s};
    Master master(pool_, *fence_, *time_, config, metrics_);
    beat();
    ASSERT_TRUE(master.Scan(epoch_).ok());
    // Both slaves just beat: the first turns stale (node-ttl / 2) in about 2.5 s, well before the
    // probe-interval and not clamped to scan-interval.
    auto sleep = master.Quiet(epoch_);
    ASSERT_TRUE(sleep);
    EXPECT_NEAR(ms(*sleep), 2500.0, 300.0);
    // node-b's heartbeat 2 s old: stale in about 0.5 s.
    ASSERT_TRUE(db().Run([](soci::session& s) {
                        s << "UPDATE trigger_node SET last_heartbeat_ms = last_heartbeat_ms - 2000 WHERE node_id = "
                             "'node-b'";
                    })
                    .ok());
    sleep = master.Quiet(epoch_);
    ASSERT_TRUE(sleep);
    EXPECT_NEAR(ms(*sleep), 500.0, 300.0);

    // A shorter probe-interval bounds it; one at or below scan-interval probes every scan-interval.
    config.probe_interval = 1s;
    Master probing(pool_, *fence_, *time_, config, metrics_);
    beat();
    ASSERT_TRUE(probing.Scan(epoch_).ok());
    sleep = probing.Quiet(epoch_);
    ASSERT_TRUE(sleep);
    EXPECT_LE(*sleep, Micros(1s));
    EXPECT_GT(*sleep, Micros(500ms));
    config.probe_interval = 1ms;
    Master polling(pool_, *fence_, *time_, config, metrics_);
    ASSERT_TRUE(polling.Scan(epoch_).ok());
    sleep = polling.Quiet(epoch_);
    ASSERT_TRUE(sleep);
    EXPECT_LE(*sleep, config.scan_interval);
}

TEST_P(MasterTest, AnIdleMasterStillScansEveryIdleIntervalAndZeroTurnsTheProbeOff) {
    MasterConfig config;
    config.scan_idle_interval = 1ms;
    Master master(pool_, *fence_, *time_, config, metrics_);
    ASSERT_TRUE(master.Scan(epoch_).ok());
    std::this_thread::sleep_for(5ms);
    EXPECT_FALSE(master.Quiet(epoch_)) << "the idle interval has passed";

    config.scan_idle_interval = Micros{0};
    Master always(pool_, *fence_, *time_, config, metrics_);
    ASSERT_TRUE(always.Scan(epoch_).ok());
    EXPECT_FALSE(always.Quiet(epoch_));
}

SCHED_DB_TEST_SUITE(MasterTest);

const std::vector<model::WorkflowEdge> kDiamond = {{"a", "b", model::EdgeCondition::kOnSuccess},
                                                   {"a", "c", model::EdgeCondition::kOnSuccess},
                                                   {"b", "d", model::EdgeCondition::kOnSuccess},
                                                   {"c", "d", model::EdgeCondition::kOnSuccess}};

TEST_P(MasterTest, ADiamondRunsEachStepOnceAndTheJoinAfterBothParents) {
    const auto w = CreateWorkflow("diamond", {"a", "b", "c", "d"}, kDiamond);
    const auto run = TriggerRun(w, Now());
    auto scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    EXPECT_EQ(scan->workflow_steps_started, 1);
    EXPECT_EQ(Steps(run), (std::vector<std::string>{"a@0:pending"}));
    ASSERT_TRUE(master_->Scan(epoch_).ok());  // nothing ended: nothing new
    EXPECT_EQ(Steps(run).size(), 1u);

    EndStep(run, "a", model::FireStatus::kSucceeded);
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    EXPECT_EQ(Steps(run), (std::vector<std::string>{"a@0:succeeded", "b@0:pending", "c@0:pending"}));
    EndStep(run, "b", model::FireStatus::kSucceeded);
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    EXPECT_EQ(Steps(run).size(), 3u) << "d waits for c";
    EndStep(run, "c", model::FireStatus::kSucceeded);
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    EXPECT_EQ(Steps(run).back(), "d@0:pending");
    EXPECT_EQ(GetRun(run).status, model::WorkflowRunStatus::kRunning);
    EndStep(run, "d", model::FireStatus::kSucceeded);
    scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok());
    EXPECT_EQ(scan->workflow_runs_ended, 1);
    EXPECT_EQ(GetRun(run).status, model::WorkflowRunStatus::kSucceeded);
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    EXPECT_EQ(Steps(run).size(), 4u) << "each step once";
    for (const auto& f : RunFires(run)) EXPECT_EQ(f.kind, model::FireKind::kWorkflow);
}

TEST_P(MasterTest, AFailingStepSkipsTheJoinTheRunFailsAndARerunFromItCompletes) {
    const auto w = CreateWorkflow("fails", {"a", "b", "c", "d"}, kDiamond);
    const auto run = TriggerRun(w, Now());
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    EndStep(run, "a", model::FireStatus::kSucceeded);
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    EndStep(run, "b", model::FireStatus::kFailed);
    EndStep(run, "c", model::FireStatus::kSucceeded);
    auto scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok());
    EXPECT_EQ(scan->workflow_steps_skipped, 1);
    const auto fires = RunFires(run);
    ASSERT_EQ(fires.size(), 4u);
    EXPECT_EQ(fires.back().workflow_step, "d");
    EXPECT_EQ(fires.back().status, model::FireStatus::kSkipped);
    EXPECT_EQ(fires.back().reason, model::FireReason::kUpstream);
    EXPECT_EQ(fires.back().result_message, "parent \"b\" failed (edge on-success)");
    auto ended = GetRun(run);
    EXPECT_EQ(ended.status, model::WorkflowRunStatus::kFailed);
    EXPECT_EQ(ended.reason, "step \"b\" failed");

    // Re-run from b (as the API does): b and d run again in generation 1, a and c do not.
    const std::int64_t now = Now();
    auto rerun = db().Run([&](soci::session& s) { return store::WorkflowRunRepository::Rerun(s, run, 0, "b", now); });
    ASSERT_TRUE(rerun.ok() && *rerun);
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    EXPECT_EQ(Steps(run).back(), "b@1000:pending");
    EndStep(run, "b", model::FireStatus::kSucceeded);
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    EXPECT_EQ(Steps(run).back(), "d@1000:pending");
    EndStep(run, "d", model::FireStatus::kSucceeded);
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    EXPECT_EQ(GetRun(run).status, model::WorkflowRunStatus::kSucceeded);
    EXPECT_EQ(RunFires(run).size(), 6u);
}

TEST_P(MasterTest, AStepRetriesBeforeItFailsItsRun) {
    const auto w = CreateWorkflow("retries", {"a", "b"}, {{"a", "b", model::EdgeCondition::kOnSuccess}});
    ASSERT_TRUE(db().Run([&](soci::session& s) {
                        s << "UPDATE job SET retry_max = 1, retry_backoff_ms = 0 WHERE id = :id",
                            soci::use(w.steps[0].job_id);
                    })
                    .ok());
    const auto run = TriggerRun(w, Now());
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    EndStep(run, "a", model::FireStatus::kFailed);
    auto scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok());
    EXPECT_EQ(scan->retries, 1);
    EXPECT_EQ(Steps(run), (std::vector<std::string>{"a@0:failed", "a@1:pending"}));
    EXPECT_EQ(GetRun(run).status, model::WorkflowRunStatus::kRunning);
    EndStep(run, "a", model::FireStatus::kSucceeded);
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    EXPECT_EQ(Steps(run).back(), "b@0:pending");
}

TEST_P(MasterTest, ScheduledRunsAreCreatedOnceAndOverlapIsASkippedRunDecidedAtItsTime) {
    const std::int64_t t0 = (Now() / 1000 + 1) * 1000;
    const auto w = CreateWorkflow("every-second", {"a"}, {}, [&](model::Workflow& x) {
        x.schedule_type = ScheduleType::kCron;
        x.schedule_expr = "* * * * * ?";
        x.next_fire_time = t0;
    });
    auto scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    // The lookahead (3 s) reaches t0 and the next seconds: t0 gets its run ahead; the next time
    // finds that run holding the slot, and is not judged before it comes (docs/workflows.md).
    EXPECT_EQ(scan->workflow_runs_created, 1);
    EXPECT_EQ(scan->workflow_runs_overlapped, 0);
    auto runs = store::WorkflowRunRepository(db()).ListForWorkflow(w.id, 0, 100);
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 1u);
    const auto first = runs->front();
    EXPECT_EQ(first.scheduled_time, t0);
    EXPECT_EQ(first.status, model::WorkflowRunStatus::kRunning);
    EXPECT_EQ(Steps(first.id), (std::vector<std::string>{"a@0:pending"}));
    EXPECT_EQ(RunFires(first.id).front().scheduled_time, t0);
    EXPECT_EQ(store::WorkflowRepository(db()).Get(w.id)->next_fire_time, t0 + 1000);

    // At t0 + 1 s the first run still runs: that time gets its run skipped (overlap), once.
    while (Now() < t0 + 1000) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    EXPECT_GE(scan->workflow_runs_overlapped, 1);
    auto again = store::WorkflowRunRepository(db()).ListForWorkflow(w.id, 0, 100);
    ASSERT_TRUE(again.ok());
    ASSERT_EQ(again->size(), static_cast<std::size_t>(1 + scan->workflow_runs_overlapped));
    EXPECT_EQ(again->back().id, first.id);  // newest first
    const auto& skipped = (*again)[again->size() - 2];
    EXPECT_EQ(skipped.scheduled_time, t0 + 1000);
    EXPECT_EQ(skipped.status, model::WorkflowRunStatus::kSkipped);
    EXPECT_EQ(skipped.reason.value_or("").rfind("overlap", 0), 0u) << skipped.reason.value_or("");
    EXPECT_GE(skipped.ended_at.value_or(0), skipped.started_at.value_or(1)) << "a run never ends before it starts";
    // The next_fire_time CAS plans each time once: the workflow has moved past every time it judged.
    EXPECT_GT(store::WorkflowRepository(db()).Get(w.id)->next_fire_time.value_or(0), again->front().scheduled_time);
}

TEST_P(MasterTest, AStaleMasterNeitherStartsNorAdvancesARun) {
    const auto w = CreateWorkflow("fenced", {"a", "b"}, {{"a", "b", model::EdgeCondition::kOnSuccess}});
    const auto run = TriggerRun(w, Now());
    ASSERT_TRUE(db().Run([](soci::session& s) {
                        s << "UPDATE scheduler_lock SET owner = 'node-b', epoch = epoch + 1 WHERE namespace = 'master'";
                    })
                    .ok());
    auto scan = master_->Scan(epoch_);
    ASSERT_FALSE(scan.ok());
    EXPECT_TRUE(lock::IsLeaseLost(scan.status()));
    EXPECT_TRUE(RunFires(run).empty());
}

TEST_P(MasterTest, ARunPastItsTimeoutEndsTimedOutAndSkipsWhatHasNotRun) {
    const auto w = CreateWorkflow("slow", {"a", "b"}, {{"a", "b", model::EdgeCondition::kOnSuccess}},
                                  [](model::Workflow& x) { x.run_timeout_ms = 1000; });
    const auto run = TriggerRun(w, Now() - 5000, Now() - 5000);
    auto scan = master_->Scan(epoch_);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    EXPECT_EQ(scan->workflow_runs_timed_out, 1);
    auto ended = GetRun(run);
    EXPECT_EQ(ended.status, model::WorkflowRunStatus::kTimedOut);
    EXPECT_EQ(Steps(run), (std::vector<std::string>{"a@0:skipped", "b@0:skipped"}));
    for (const auto& f : RunFires(run)) EXPECT_EQ(f.reason, model::FireReason::kRunTimeout);
    ASSERT_TRUE(master_->Scan(epoch_).ok());
    EXPECT_EQ(RunFires(run).size(), 2u);
}

}  // namespace
}  // namespace sched::trigger
