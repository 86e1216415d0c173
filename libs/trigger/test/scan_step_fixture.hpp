#pragma once

// What the tests of the master's scan steps share: a migrated database on both backends, this
// node holding the lease, two live slaves, and a way to run steps as Master::Scan does (in one
// fenced transaction, with an Assigner over the slaves).

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "master_lease_fixture.hpp"
#include "scan/scan_step.hpp"
#include "sched/common/clock.hpp"
#include "sched/db/migrator.hpp"
#include "sched/db/testing/test_database.hpp"
#include "sched/lock/fenced.hpp"
#include "sched/lock/lock_store.hpp"
#include "sched/lock/sql_lock_store.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"
#include "sched/store/registry.hpp"
#include "sched/trigger/db_time.hpp"

namespace sched::trigger::impl {

class ScanStepTest : public MasterLeaseTest {
  protected:
    void SetUpDatabase() override {
        MasterLeaseTest::SetUpDatabase();
        if (HasFatalFailure()) return;
        store::TriggerNodeRepository nodes(db());
        for (const char* node : {"node-a", "node-b"}) {
            ASSERT_TRUE(nodes.Heartbeat({.node_id = node, .address = "127.0.0.1:1", .capacity = 10}).ok());
        }
    }

    // Runs `steps` in order in one fenced transaction, as Master::Scan does, with the slaves
    // `live` (default: both) getting fires and the same ones counted alive; `now` in place of the
    // database clock when given; `judges_slaves` false as in a term's first node-ttl.
    Result<ScanReport> Run(const std::vector<ScanStep*>& steps, std::vector<std::string> live = {"node-a", "node-b"},
                           std::optional<std::int64_t> now = std::nullopt, bool judges_slaves = true) {
        std::vector<SlaveWeight> weights;
        for (const auto& node : live) weights.push_back({node, 10});
        return fence_->RunFenced(epoch_, [&](soci::session& s) -> Result<ScanReport> {
            ScanReport r;
            Assigner assigner(weights);
            ScanContext ctx(s, pool_->dialect(), epoch_, now.value_or(Now()), assigner, live, 30000, r);
            ctx.judges_slaves = judges_slaves;
            for (auto* step : steps) step->Run(ctx);
            return r;
        });
    }

    model::Job CreateJob(const std::string& name, const std::string& type, const std::string& expr,
                         std::optional<std::int64_t> next, const std::function<void(model::Job&)>& tweak = {}) {
        model::Job j;
        j.name = name;
        j.app = "app";
        j.handler = "echo";
        j.schedule_type = *sched::ParseScheduleType(type);
        j.schedule_expr = expr;
        j.next_fire_time = next;
        if (tweak) tweak(j);
        auto created = store::JobRepository(db()).Create(j);
        EXPECT_TRUE(created.ok()) << created.status().ToString();
        return *created;
    }

    std::vector<model::Fire> FiresOf(std::int64_t job_id) {
        auto fires = store::FireRepository(db()).List({.job_id = job_id, .limit = 1000});
        EXPECT_TRUE(fires.ok());
        auto out = *fires;
        std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
        return out;
    }

    // A fire of `job` as the master would have planned it, inserted directly.
    std::int64_t InsertFire(const model::Job& job, std::int64_t scheduled,
                            const std::function<void(model::Fire&)>& tweak = {}) {
        model::Fire f;
        f.job_id = job.id;
        f.scheduled_time = scheduled;
        f.epoch = epoch_;
        f.assigned_node = "node-a";
        if (tweak) tweak(f);
        auto id =
            db().Run([&](soci::session& s) { return store::FireRepository::InsertIfAbsent(s, db().dialect(), f); });
        EXPECT_TRUE(id.ok() && id->has_value());
        return id.ok() && id->has_value() ? **id : 0;
    }

    // A pending fire ended failed with its follow-up due, as a slave's end leaves it.
    void FailWithFollowup(std::int64_t id) {
        EXPECT_TRUE(store::FireRepository(db())
                        .Transition(id, {model::FireStatus::kPending}, model::FireStatus::kFailed,
                                    {.finished_at = Now(), .followup = true})
                        .ok());
    }

    model::Fire Fire(std::int64_t id) {
        auto f = store::FireRepository(db()).Get(id);
        EXPECT_TRUE(f.ok()) << f.status().ToString();
        return *f;
    }

    std::int64_t Now() { return time_->NowMs(); }

    // The scan reads the database's own clock, as Master::Scan does.
    std::unique_ptr<DbTime> MakeTime() override {
        return std::make_unique<DbTime>(SystemClock::Instance(), [this] { return pool_->NowUs(); });
    }
};

}  // namespace sched::trigger::impl
