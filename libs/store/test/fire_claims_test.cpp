#include "sched/store/fire_claims.hpp"

#include <set>
#include <sstream>

#include "sched/store/job.hpp"
#include "store_test_base.hpp"

namespace sched::store {
namespace {

class FireClaimsTest : public StoreTest {
  protected:
    std::int64_t Insert(std::int64_t job_id, std::int64_t t, const std::string& node = "node-a") {
        Fire f;
        f.job_id = job_id;
        f.scheduled_time = t;
        f.epoch = 3;
        f.assigned_node = node;
        auto r = db().Run([&](soci::session& s) { return FireRepository::InsertIfAbsent(s, db().dialect(), f); });
        EXPECT_TRUE(r.ok() && *r) << (r.ok() ? "duplicate" : r.status().ToString());
        return r.ok() && *r ? **r : 0;
    }
    std::vector<Fire> Claim(const std::vector<std::int64_t>& ids, std::int64_t token, std::int64_t now = 5000,
                            const std::string& node = "node-a") {
        auto r = db().InTransaction(db::TxMode::kWrite,
                                    [&](soci::session& s) { return FireClaims::Claim(s, node, ids, token, 9, now); });
        EXPECT_TRUE(r.ok()) << r.status().ToString();
        return r.ok() ? *r : std::vector<Fire>{};
    }
    static std::set<std::int64_t> Ids(const std::vector<Fire>& fires) {
        std::set<std::int64_t> out;
        for (const auto& f : fires) out.insert(f.id);
        return out;
    }
};

TEST_P(FireClaimsTest, AGroupClaimWinsOnlyThePendingFiresAndStampsThem) {
    const auto a = Insert(1, 1000);
    const auto b = Insert(2, 1000);
    const auto c = Insert(3, 1000);
    // c was claimed by another slave first.
    ASSERT_EQ(Ids(Claim({c}, 111)), std::set<std::int64_t>{c});

    const auto won = Claim({a, b, c}, 222);
    EXPECT_EQ(Ids(won), (std::set<std::int64_t>{a, b}));
    for (const auto& f : won) {
        EXPECT_EQ(f.status, FireStatus::kDispatching);
        EXPECT_EQ(f.dispatch_epoch, 9);
        EXPECT_EQ(f.dispatched_at, 5000);
        EXPECT_EQ(f.epoch, 3);
        EXPECT_EQ(f.assigned_node, "node-a");
        EXPECT_EQ(f.scheduled_time, 1000);
    }
    // A third claimer wins nothing.
    EXPECT_TRUE(Claim({a, b, c}, 333).empty());
}

TEST_P(FireClaimsTest, AClaimWinsNoFireAssignedToAnotherNode) {
    // A notice names ids the slave has not read: one naming another node's fire (a stale or
    // forged notice) must not hand it over.
    const auto mine = Insert(1, 1000);
    const auto theirs = Insert(2, 1000, "node-b");
    EXPECT_EQ(Ids(Claim({mine, theirs}, 555)), std::set<std::int64_t>{mine});
    EXPECT_EQ(FireRepository(db()).Get(theirs)->status, FireStatus::kPending);
    EXPECT_EQ(Ids(Claim({theirs}, 556, 5000, "node-b")), std::set<std::int64_t>{theirs});
}

TEST_P(FireClaimsTest, AClaimedStepFireCarriesItsWorkflowRun) {
    Fire f;
    f.job_id = 4;
    f.scheduled_time = 1000;
    f.kind = FireKind::kWorkflow;
    f.epoch = 3;
    f.assigned_node = "node-a";
    f.workflow_run_id = 77;
    f.workflow_step = "load";
    auto step = db().Run([&](soci::session& s) { return FireRepository::InsertIfAbsent(s, db().dialect(), f); });
    ASSERT_TRUE(step.ok() && *step);
    const auto plain = Insert(5, 1000);
    const auto won = Claim({**step, plain}, 444);
    ASSERT_EQ(won.size(), 2u);
    for (const auto& w : won) {
        // The slave reads the run's params by it (a manual run's params go to every step).
        EXPECT_EQ(w.workflow_run_id, w.id == plain ? std::nullopt : std::optional<std::int64_t>(77)) << w.id;
    }
}

TEST_P(FireClaimsTest, ARetriedClaimWithItsTokenFindsWhatItWonBefore) {
    const auto a = Insert(1, 1000);
    const auto b = Insert(2, 1000);
    ASSERT_EQ(Claim({a, b}, 444).size(), 2u);
    // The commit's answer was lost; the retry of the same claim learns it won both.
    EXPECT_EQ(Ids(Claim({a, b}, 444)), (std::set<std::int64_t>{a, b}));
    // Once a fire is running it is no longer the claim's to dispatch.
    auto moved = db().Run(
        [&](soci::session& s) { return FireClaims::MarkRunning(s, {{.id = a, .started_at = 5005}}, "10.0.0.1:1"); });
    ASSERT_TRUE(moved.ok());
    EXPECT_EQ(*moved, 1);
    EXPECT_EQ(Ids(Claim({a, b}, 444)), std::set<std::int64_t>{b});
}

TEST_P(FireClaimsTest, RestampChangesTheEpochOnlyOfAFireTheClaimStillHolds) {
    const auto a = Insert(1, 1000);
    const auto b = Insert(2, 1000);
    const auto c = Insert(3, 1000);  // never claimed
    ASSERT_EQ(Claim({a, b}, 666).size(), 2u);
    ASSERT_TRUE(FireRepository(db()).Transition(b, {FireStatus::kDispatching}, FireStatus::kLost, {}).ok());
    const auto restamp = [&](std::int64_t id, std::int64_t token) {
        auto r = db().Run([&](soci::session& s) { return FireClaims::Restamp(s, id, token, 10); });
        EXPECT_TRUE(r.ok()) << r.status().ToString();
        return r.ok() && *r;
    };
    EXPECT_FALSE(restamp(a, 777)) << "another claim's token";
    EXPECT_FALSE(restamp(b, 666)) << "no longer dispatching";
    EXPECT_FALSE(restamp(c, 666)) << "never claimed";
    EXPECT_TRUE(restamp(a, 666));
    FireRepository fires(db());
    EXPECT_EQ(fires.Get(a)->dispatch_epoch, 10);
    EXPECT_EQ(fires.Get(b)->dispatch_epoch, 9);
    EXPECT_EQ(fires.Get(a)->status, FireStatus::kDispatching);
}

TEST_P(FireClaimsTest, MarkRunningMovesOnlyDispatchingFires) {
    const auto a = Insert(1, 1000);
    const auto b = Insert(2, 1000);
    const auto c = Insert(3, 1000);  // never claimed: stays pending
    ASSERT_EQ(Claim({a, b}, 555).size(), 2u);
    FireRepository fires(db());
    // b's callback came first.
    ASSERT_TRUE(fires.Transition(b, {FireStatus::kDispatching}, FireStatus::kSucceeded, {.finished_at = 5003}).ok());
    auto moved = db().Run([&](soci::session& s) {
        return FireClaims::MarkRunning(
            s, {{.id = a, .started_at = 5004}, {.id = b, .started_at = 5004}, {.id = c, .started_at = 5004}},
            "10.0.0.2:7");
    });
    ASSERT_TRUE(moved.ok()) << moved.status().ToString();
    EXPECT_EQ(*moved, 1);
    auto ra = fires.Get(a);
    ASSERT_TRUE(ra.ok());
    EXPECT_EQ(ra->status, FireStatus::kRunning);
    EXPECT_EQ(ra->executor_address, "10.0.0.2:7");
    EXPECT_EQ(ra->started_at, 5004);
    EXPECT_EQ(fires.Get(b)->status, FireStatus::kSucceeded);
    EXPECT_EQ(fires.Get(c)->status, FireStatus::kPending);
    EXPECT_EQ(fires.Get(c)->executor_address, std::nullopt);
}

TEST_P(FireClaimsTest, MarkRunningGivesEachFireItsOwnStartInOneStatement) {
    const auto a = Insert(1, 1000);
    const auto b = Insert(2, 1000);
    const auto c = Insert(3, 1000);
    const auto d = Insert(4, 1000);
    ASSERT_EQ(Claim({a, b, c, d}, 556).size(), 4u);
    FireRepository fires(db());
    // d's result landed before the window's record (it was started by the executor at 6100).
    ASSERT_TRUE(fires
                    .Transition(d, {FireStatus::kDispatching}, FireStatus::kSucceeded,
                                {.started_at = 6100, .finished_at = 6101})
                    .ok());
    auto moved = db().Run([&](soci::session& s) {
        return FireClaims::MarkRunning(s,
                                       {{.id = a, .started_at = 6001},
                                        {.id = b, .started_at = 6042},
                                        {.id = c, .started_at = 6001},
                                        {.id = d, .started_at = 6042}},
                                       "10.0.0.3:7");
    });
    ASSERT_TRUE(moved.ok()) << moved.status().ToString();
    EXPECT_EQ(*moved, 3);
    EXPECT_EQ(fires.Get(a)->started_at, 6001);
    EXPECT_EQ(fires.Get(b)->started_at, 6042);
    EXPECT_EQ(fires.Get(c)->started_at, 6001);
    EXPECT_EQ(fires.Get(b)->status, FireStatus::kRunning);
    EXPECT_EQ(fires.Get(b)->executor_address, "10.0.0.3:7");
    EXPECT_EQ(fires.Get(d)->status, FireStatus::kSucceeded);
    EXPECT_EQ(fires.Get(d)->started_at, 6100);
}

TEST_P(FireClaimsTest, FindPendingReturnsOnlyThisNodesPendingFires) {
    const auto a = Insert(1, 1000, "node-a");
    const auto b = Insert(2, 1000, "node-b");
    const auto c = Insert(3, 1000, "node-a");
    ASSERT_EQ(Claim({c}, 666).size(), 1u);
    auto found = db().Run([&](soci::session& s) { return FireClaims::FindPending(s, "node-a", {a, b, c, 999999}); });
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_EQ(Ids(*found), std::set<std::int64_t>{a});
}

TEST_P(FireClaimsTest, ThePollListsTheIdsOfThisNodesPendingFiresEarliestFirst) {
    const auto late = Insert(1, 3000, "node-a");
    const auto early = Insert(2, 1000, "node-a");
    Insert(3, 500, "node-b");
    const auto claimed = Insert(4, 200, "node-a");
    const auto middle = Insert(5, 2000, "node-a");
    ASSERT_EQ(Claim({claimed}, 666).size(), 1u);
    auto ids = db().Run([&](soci::session& s) { return FireClaims::ListPendingIds(s, "node-a", 10); });
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    EXPECT_EQ(*ids, (std::vector<std::int64_t>{early, middle, late}));
    ids = db().Run([&](soci::session& s) { return FireClaims::ListPendingIds(s, "node-a", 2); });
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    EXPECT_EQ(*ids, (std::vector<std::int64_t>{early, middle})) << "the limit keeps the earliest";
    if (GetParam() != db::Backend::kSqlite) return;
    // Read from the index alone (MariaDB's plan depends on its statistics; SQLite's is fixed).
    std::string plan;
    auto explained = db().Run([&](soci::session& s) {
        soci::rowset<soci::row> rows =
            (s.prepare << "EXPLAIN QUERY PLAN SELECT id FROM job_fire WHERE assigned_node = 'node-a' AND status = "
                          "'pending' ORDER BY scheduled_time, id LIMIT 10");
        for (const auto& row : rows) plan += row.get<std::string>(3) + "; ";
    });
    ASSERT_TRUE(explained.ok()) << explained.ToString();
    EXPECT_NE(plan.find("COVERING INDEX idx_fire_node"), std::string::npos) << plan;
    EXPECT_EQ(plan.find("TEMP B-TREE"), std::string::npos) << "no sort: " << plan;
}

TEST_P(FireClaimsTest, JobsAreReadManyAtATime) {
    JobRepository jobs(db());
    std::vector<std::int64_t> ids;
    for (int i = 0; i < 3; ++i) {
        Job j;
        j.name = "j" + std::to_string(i);
        j.app = "app";
        j.handler = "h";
        j.schedule_type = sched::ScheduleType::kFixedRate;
        j.schedule_expr = "10s";
        auto made = jobs.Create(j);
        ASSERT_TRUE(made.ok()) << made.status().ToString();
        ids.push_back(made->id);
    }
    auto found = db().Run([&](soci::session& s) { return JobRepository::FindMany(s, {ids[0], ids[2], 424242}); });
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    std::set<std::string> names;
    for (const auto& j : *found) names.insert(j.name);
    EXPECT_EQ(names, (std::set<std::string>{"j0", "j2"}));
}

TEST_P(FireClaimsTest, SqliteFindsAGroupsFiresByPrimaryKeyNotByWalkingEveryPendingFire) {
    // SQLite, without statistics, ran the claim's `id IN (...) AND status = 'pending'`
    // on idx_fire_status, walking every pending fire (every dispatching one for MarkRunning)
    // with the file's write lock held; under overload the backlog, and so each claim, grew until
    // nothing was delivered. The plans of the statements Claim and MarkRunning really run.
    if (GetParam() != db::Backend::kSqlite) GTEST_SKIP() << "MariaDB plans by its statistics";
    std::vector<std::int64_t> ids;
    ids.reserve(20);
    for (int i = 0; i < 20; ++i) ids.push_back(Insert(1 + i, 1000));
    std::ostringstream log;
    auto ran = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
        s.set_log_stream(&log);
        const auto won = FireClaims::Claim(s, "node-a", {ids[0], ids[1], ids[2]}, 777, 9, 5000);
        FireClaims::MarkRunning(s, {{.id = ids[0], .started_at = 5001}, {.id = ids[1], .started_at = 5002}}, "x:1");
        s.set_log_stream(nullptr);
        return won.size();
    });
    ASSERT_TRUE(ran.ok()) << ran.status().ToString();
    ASSERT_EQ(*ran, 3u);
    std::istringstream lines(log.str());
    int updates = 0;
    for (std::string sql; std::getline(lines, sql);) {
        if (sql.rfind("UPDATE", 0) != 0) continue;
        ++updates;
        std::string plan;
        auto explained = db().Run([&](soci::session& s) {
            soci::rowset<soci::row> rows = (s.prepare << "EXPLAIN QUERY PLAN " + sql);
            for (const auto& row : rows) plan += row.get<std::string>(3) + "; ";
        });
        ASSERT_TRUE(explained.ok()) << explained.ToString();
        EXPECT_NE(plan.find("INTEGER PRIMARY KEY"), std::string::npos) << plan << " for " << sql;
        EXPECT_EQ(plan.find("idx_fire_status"), std::string::npos) << plan << " for " << sql;
    }
    EXPECT_EQ(updates, 2) << log.str();
}

SCHED_DB_TEST_SUITE(FireClaimsTest);

}  // namespace
}  // namespace sched::store
