#include "sched/store/fire_claims.hpp"

#include <map>
#include <set>
#include <sstream>

#include "sched/store/concurrency_key.hpp"
#include "sched/store/job.hpp"
#include "sched/store/registry.hpp"
#include "store_test_base.hpp"

namespace sched::store {

using model::Fire;
using model::FireReason;
using model::FireStatus;
using model::Job;
namespace {

class FireClaimsTest : public StoreTest {
  protected:
    // The election's lease rows: "master" and its shards' "master/<i>" sum to the epoch 9 a claim
    // stamps; a row of another election counts for nothing.
    static inline const LeaseRows kLease{.name = "master", .pattern = "master/%"};
    void SetUpDatabase() override {
        SetLeaseEpochs({{"master", 2}, {"master/0", 3}, {"master/1", 4}, {"masters", 50}, {"other", 100}});
    }
    void SetLeaseEpochs(const std::map<std::string, std::int64_t>& epochs) {
        auto set = db().Run([&](soci::session& s) {
            s << "DELETE FROM scheduler_lock";
            for (const auto& [name, epoch] : epochs) {
                s << "INSERT INTO scheduler_lock (namespace, epoch) VALUES (:n, :e)", soci::use(name, "n"),
                    soci::use(epoch, "e");
            }
        });
        ASSERT_TRUE(set.ok()) << set.ToString();
    }
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
        auto r = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
            return FireClaims::Claim(s, node, ids, token, kLease, now).fires;
        });
        EXPECT_TRUE(r.ok()) << r.status().ToString();
        return r.ok() ? *r : std::vector<Fire>{};
    }
    // A fixed-rate job of app "app", its name `name`.
    std::int64_t NewJob(const std::string& name) {
        return CreateJob({.name = name,
                          .app = "app",
                          .handler = "h",
                          .schedule_type = sched::ScheduleType::kFixedRate,
                          .schedule_expr = "10s"})
            .id;
    }
    ClaimedFires ClaimWithJobs(const std::vector<std::int64_t>& ids, std::int64_t token) {
        auto r = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
            return FireClaims::Claim(s, "node-a", ids, token, kLease, 5000);
        });
        EXPECT_TRUE(r.ok()) << r.status().ToString();
        return r.ok() ? *r : ClaimedFires{};
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

TEST_P(FireClaimsTest, AClaimStampsTheLeaseEpochInForceWhenItMovesTheFires) {
    const auto a = Insert(1, 1000);
    const auto b = Insert(2, 1000);
    const auto c = Insert(3, 1000);
    ASSERT_EQ(Claim({a}, 111).front().dispatch_epoch, 9) << "the sum of the election's rows only";
    // A shard's take-over between two claims: the next claim stamps the new sum.
    SetLeaseEpochs({{"master", 2}, {"master/0", 3}, {"master/1", 5}});
    const auto won = Claim({a, b}, 222);
    ASSERT_EQ(won.size(), 1u);
    EXPECT_EQ(won.front().dispatch_epoch, 10);
    EXPECT_EQ(FireRepository(db()).Get(a)->dispatch_epoch, 9) << "a fire claimed before keeps its stamp";
    // No lease row at all (no master elected yet): epoch 0, as a claim under no lease.
    SetLeaseEpochs({});
    EXPECT_EQ(Claim({c}, 333).front().dispatch_epoch, 0);
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
    f.kind = model::FireKind::kWorkflow;
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
    EXPECT_EQ(*ids, (std::vector<std::int64_t>{early, middle, late, claimed}))
        << "the pending ones, then the dispatching ones (FindPending keeps the planned ones)";
    ids = db().Run([&](soci::session& s) { return FireClaims::ListPendingIds(s, "node-a", 2); });
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    EXPECT_EQ(*ids, (std::vector<std::int64_t>{early, middle, claimed})) << "the limit keeps the earliest of each";
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
    EXPECT_NE(plan.find("COVERING INDEX idx_fire_state"), std::string::npos) << plan;
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

TEST_P(FireClaimsTest, AClaimReadsTheJobsOfTheFiresItWonAndKeepsAFireWhoseJobIsGone) {
    const auto j1 = NewJob("one");
    const auto j2 = NewJob("two");
    const auto a = Insert(j1, 1000);
    const auto b = Insert(j2, 1001);
    const auto c = Insert(j1, 1002);
    auto claimed = ClaimWithJobs({a, b, c}, 121);
    EXPECT_EQ(Ids(claimed.fires), (std::set<std::int64_t>{a, b, c}));
    ASSERT_EQ(claimed.jobs.size(), 2u);
    EXPECT_EQ(claimed.jobs.at(j1).name, "one");
    EXPECT_EQ(claimed.jobs.at(j2).name, "two");
    EXPECT_EQ(claimed.jobs.at(j2).schedule_expr, "10s");
    for (const auto& f : claimed.fires) EXPECT_EQ(f.dispatch_epoch, 9);
    // The job of one fire deleted: its fire is still the claim's (the slave ends it), the other
    // fires keep their jobs; a retry with the same token learns the same.
    const auto d = Insert(j1, 1003);
    const auto e = Insert(j2, 1004);
    ASSERT_TRUE(db().Run([&](soci::session& s) { s << "DELETE FROM job WHERE id = " << j2; }).ok());
    for (int attempt = 0; attempt < 2; ++attempt) {
        claimed = ClaimWithJobs({d, e}, 242);
        EXPECT_EQ(Ids(claimed.fires), (std::set<std::int64_t>{d, e})) << "attempt " << attempt;
        ASSERT_EQ(claimed.jobs.size(), 1u);
        EXPECT_EQ(claimed.jobs.begin()->first, j1);
    }
}

TEST_P(FireClaimsTest, SqliteFindsAGroupsFiresByPrimaryKeyNotByWalkingEveryPendingFire) {
    // SQLite, without statistics, ran the claim's `id IN (...) AND status = 'pending'`
    // on its status index, walking every pending fire (every dispatching one for MarkRunning)
    // with the file's write lock held; under overload the backlog, and so each claim, grew until
    // nothing was delivered. The plans of the statements Claim and MarkRunning really run (the
    // claim's SELECT of the fires won with their jobs too).
    if (GetParam() != db::Backend::kSqlite) GTEST_SKIP() << "MariaDB plans by its statistics";
    std::vector<std::int64_t> ids;
    ids.reserve(20);
    const auto job = NewJob("planned");
    for (int i = 0; i < 20; ++i) ids.push_back(Insert(job, 1000 + i));
    std::size_t won = 0;
    const auto statements = SqlitePlansOf([&](soci::session& s) {
        won = FireClaims::Claim(s, "node-a", {ids[0], ids[1], ids[2]}, 777, kLease, 5000).fires.size();
        FireClaims::MarkRunning(s, {{.id = ids[0], .started_at = 5001}, {.id = ids[1], .started_at = 5002}}, "x:1");
    });
    ASSERT_EQ(won, 3u);
    int updates = 0;
    int selects = 0;
    for (const auto& [sql, plan] : statements) {
        ++(sql.rfind("UPDATE", 0) == 0 ? updates : selects);
        EXPECT_NE(plan.find("INTEGER PRIMARY KEY"), std::string::npos) << plan << " for " << sql;
        EXPECT_EQ(plan.find("idx_fire_state"), std::string::npos) << plan << " for " << sql;
    }
    EXPECT_EQ(updates, 2);
    EXPECT_EQ(selects, 1) << "the fires won and their jobs in one SELECT";
}

SCHED_DB_TEST_SUITE(FireClaimsTest);

// ---- planned fires: written claimed by the master, sent by the node's sent_through ----

class PlannedFiresTest : public FireClaimsTest {
  protected:
    void SetUpDatabase() override {
        FireClaimsTest::SetUpDatabase();
        for (const char* node : {"node-a", "node-b"}) {
            ASSERT_TRUE(TriggerNodeRepository(db()).Heartbeat({.node_id = node, .address = "x:1"}).ok());
        }
    }
    // A fire as the master plans it for `node`: dispatching, its epoch stamped, no claim token.
    std::int64_t Plan(std::int64_t job_id, std::int64_t due, const std::string& node = "node-a") {
        Fire f;
        f.job_id = job_id;
        f.scheduled_time = due;
        f.epoch = 3;
        f.assigned_node = node;
        f.status = FireStatus::kDispatching;
        f.dispatch_epoch = 9;
        f.dispatched_at = 100;
        auto r = db().Run([&](soci::session& s) { return FireRepository::InsertManyIfAbsent(s, db().dialect(), {f}); });
        EXPECT_TRUE(r.ok() && r->front()) << (r.ok() ? "missing" : r.status().ToString());
        return r.ok() && r->front() ? r->front()->id : 0;
    }
    std::optional<std::int64_t> Take(const std::string& node = "node-a") {
        auto r =
            db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) { return FireClaims::TakePlanned(s, node); });
        EXPECT_TRUE(r.ok()) << r.status().ToString();
        return r.ok() ? *r : std::nullopt;
    }
    ClaimedFires ClaimPlanned(const std::vector<std::int64_t>& ids, std::optional<std::int64_t> raise,
                              const std::string& node = "node-a") {
        auto r = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
            return FireClaims::Claim(s, node, ids, 4242, kLease, 5000, {.raise_sent_through = raise});
        });
        EXPECT_TRUE(r.ok()) << r.status().ToString();
        return r.ok() ? *r : ClaimedFires{};
    }
    template <typename F>
    auto Write(F&& f) {
        auto r = db().InTransaction(db::TxMode::kWrite, std::forward<F>(f));
        EXPECT_TRUE(r.ok()) << r.status().ToString();
        return r.ok() ? *r : std::remove_cvref_t<decltype(*r)>{};
    }
    Fire Get(std::int64_t id) { return *FireRepository(db()).Get(id); }
    std::optional<std::int64_t> SentThroughOf(const std::string& node) {
        const auto nodes = TriggerNodeRepository(db()).List();
        EXPECT_TRUE(nodes.ok()) << nodes.status().ToString();
        if (!nodes.ok()) return std::nullopt;
        for (const auto& n : *nodes) {
            if (n.node_id == node) return n.sent_through;
        }
        return std::nullopt;
    }
};

TEST_P(PlannedFiresTest, ANodeTakesPlannedFiresOnceItsSentThroughIsSet) {
    EXPECT_EQ(SentThroughOf("node-a"), std::nullopt) << "a node of an older build: pending fires only";
    EXPECT_EQ(Take(), 0);
    EXPECT_EQ(SentThroughOf("node-a"), 0);
    EXPECT_EQ(Take("node-gone"), std::nullopt) << "no trigger_node row yet";
}

TEST_P(PlannedFiresTest, APlannedFireIsClaimedWithoutAWriteAndReadWithTheRaisedSentThrough) {
    ASSERT_EQ(Take(), 0);
    const auto job = NewJob("planned");
    const auto planned = Plan(job, 6000);
    const auto pending = Insert(job, 6001);
    const auto theirs = Plan(job, 6002, "node-b");
    auto polled = db().Run([&](soci::session& s) { return FireClaims::ListPendingIds(s, "node-a", 10); });
    ASSERT_TRUE(polled.ok()) << polled.status().ToString();
    EXPECT_EQ(std::set<std::int64_t>(polled->begin(), polled->end()), (std::set<std::int64_t>{planned, pending}));
    auto found = db().Run([&](soci::session& s) {
        return FireClaims::FindPending(s, "node-a", {planned, pending, theirs});
    });
    ASSERT_TRUE(found.ok());
    EXPECT_EQ(Ids(*found), (std::set<std::int64_t>{planned, pending}));

    const auto claimed = ClaimPlanned({planned, pending, theirs}, 6250);
    EXPECT_EQ(Ids(claimed.fires), (std::set<std::int64_t>{planned, pending}));
    EXPECT_EQ(claimed.planned, std::set<std::int64_t>{planned});
    EXPECT_EQ(claimed.sent_through, 6250) << "raised before the read";
    EXPECT_EQ(claimed.jobs.size(), 1u);
    const Fire row = Get(planned);
    EXPECT_EQ(row.status, FireStatus::kDispatching);
    EXPECT_EQ(row.dispatched_at, 100) << "the planned row is not written by the claim";
    EXPECT_EQ(row.dispatch_epoch, 9);
    EXPECT_EQ(Get(pending).dispatched_at, 5000) << "a pending fire is claimed as before";
    EXPECT_EQ(Get(theirs).assigned_node, "node-b");

    // A raise never lowers it; without one the claim reads what is committed.
    EXPECT_EQ(ClaimPlanned({planned}, 3000).sent_through, 6250);
    EXPECT_EQ(ClaimPlanned({planned}, std::nullopt).sent_through, 6250);
    EXPECT_EQ(SentThroughOf("node-b"), std::nullopt) << "a raise writes only its own node's row";
}

TEST_P(PlannedFiresTest, AClaimOfPlannedFiresOnlyWinsNoPendingFire) {
    ASSERT_EQ(Take(), 0);
    const auto job = NewJob("planned");
    const auto planned = Plan(job, 6000);
    const auto pending = Insert(job, 6001);
    auto r = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
        return FireClaims::Claim(s, "node-a", {planned, pending}, 4242, kLease, 5000,
                                 {.raise_sent_through = 7000, .only_planned = true});
    });
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(Ids(r->fires), std::set<std::int64_t>{planned});
    EXPECT_EQ(Get(pending).status, FireStatus::kPending);
}

TEST_P(PlannedFiresTest, AClaimStampsTheEpochInForceOnPlannedFiresPlannedUnderAnother) {
    // A group is sent under one epoch and a result applies only under its fire's: fires planned
    // before a failover, claimed with fires claimed after it, must carry the new epoch.
    ASSERT_EQ(Take(), 0);
    const auto job = NewJob("planned");
    const auto before = Plan(job, 6000);
    const auto current = Plan(job, 6001);
    const auto pending = Insert(job, 6002);
    EXPECT_EQ(ClaimPlanned({current}, 7000).fires.front().dispatch_epoch, 9) << "planned under the epoch in force";
    SetLeaseEpochs({{"master", 3}, {"master/0", 3}, {"master/1", 4}});
    const auto claimed = ClaimPlanned({before, pending}, std::nullopt);
    ASSERT_EQ(claimed.fires.size(), 2u);
    for (const auto& f : claimed.fires) EXPECT_EQ(f.dispatch_epoch, 10) << f.id;
    EXPECT_EQ(Get(before).dispatch_epoch, 10);
    EXPECT_EQ(Get(before).dispatched_at, 100) << "only the epoch is written";
}

TEST_P(PlannedFiresTest, ReleaseUnsentHandsBackOnlyTheFiresDueAfterTheSentThrough) {
    ASSERT_EQ(Take(), 0);
    const auto job = NewJob("planned");
    const auto sent = Plan(job, 1000);
    const auto at = Plan(job, 2000);
    const auto unsent = Plan(job, 3000);
    const auto claimed = Insert(job, 500);
    ASSERT_EQ(ClaimPlanned({claimed}, std::nullopt).fires.size(), 1u);
    ASSERT_EQ(ClaimPlanned({sent}, 1500).sent_through, 1500);
    ASSERT_EQ(ClaimPlanned({sent}, 2000).sent_through, 2000);

    EXPECT_EQ(Write([](soci::session& s) { return FireClaims::ReleaseUnsent(s, "node-a"); }), 1);
    const Fire back = Get(unsent);
    EXPECT_EQ(back.status, FireStatus::kPending);
    EXPECT_EQ(back.assigned_node, std::nullopt);
    EXPECT_EQ(back.dispatch_epoch, std::nullopt);
    EXPECT_EQ(back.dispatched_at, std::nullopt);
    for (const auto id : {sent, at, claimed}) EXPECT_EQ(Get(id).status, FireStatus::kDispatching) << id;
    EXPECT_EQ(SentThroughOf("node-a"), 2001) << "moved by the release's CAS";
    EXPECT_EQ(Write([](soci::session& s) { return FireClaims::ReleaseUnsent(s, "node-a"); }), 0);
    EXPECT_EQ(Write([](soci::session& s) { return FireClaims::ReleaseUnsent(s, "node-never"); }), 0);
}

// The orphan step's candidates for ReleaseUnsent: nodes that take planned fires, are not live and
// hold dispatching fires, whatever the number of fires planned for the live ones.
TEST_P(PlannedFiresTest, SilentDispatchingNamesTheNodesNotLiveThatTakePlannedFiresAndHoldSome) {
    ASSERT_EQ(Take("node-a"), 0);
    ASSERT_EQ(Take("node-b"), 0);
    ASSERT_TRUE(TriggerNodeRepository(db()).Heartbeat({.node_id = "node-c", .address = "x:1"}).ok());
    ASSERT_TRUE(TriggerNodeRepository(db()).Heartbeat({.node_id = "node-old", .address = "x:1"}).ok());
    const auto job = NewJob("planned");
    for (std::int64_t due = 1000; due < 1010; ++due) Plan(job, due, "node-a");
    Plan(job, 2000, "node-b");
    Plan(job, 2001, "node-old");  // an older build's node (no sent_through): nothing to release
    const auto silent = [this](std::vector<std::string> live) {
        auto nodes = db().Run([&](soci::session& s) { return FireClaims::SilentDispatching(s, live); });
        EXPECT_TRUE(nodes.ok()) << nodes.status().ToString();
        return nodes.ok() ? *nodes : std::vector<std::string>{};
    };
    EXPECT_EQ(silent({"node-a", "node-b", "node-c"}), std::vector<std::string>{});
    EXPECT_EQ(silent({"node-a", "node-c"}), std::vector<std::string>{"node-b"});
    EXPECT_EQ(silent({"node-c"}), (std::vector<std::string>{"node-a", "node-b"}));
    EXPECT_EQ(silent({}), (std::vector<std::string>{"node-a", "node-b"})) << "node-c holds no dispatching fire";
}

TEST_P(PlannedFiresTest, ARestartedNodeEndsLostThePlannedFiresItsPreviousProcessMayHaveSent) {
    ASSERT_EQ(Take(), 0);
    const auto job = NewJob("planned");
    const auto sent = Plan(job, 1000);
    const auto unsent = Plan(job, 3000);
    const auto claimed = Insert(job, 500);
    ASSERT_EQ(ClaimPlanned({claimed, sent}, 2000).sent_through, 2000);
    const auto through = Take();
    ASSERT_EQ(through, 2000) << "kept by the next process";
    auto ids = db().Run([](soci::session& s) { return FireClaims::ClaimedBefore(s, "node-a", 5001, 10); });
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, std::vector<std::int64_t>{claimed}) << "the claimed ones are judged by their claim time";
    EXPECT_EQ(Write([&](soci::session& s) { return FireClaims::LoseSentBefore(s, "node-a", *through, 7000); }), 1);
    const Fire lost = Get(sent);
    EXPECT_EQ(lost.status, FireStatus::kLost);
    EXPECT_EQ(lost.reason, FireReason::kSlaveRestarted);
    EXPECT_EQ(Get(unsent).status, FireStatus::kDispatching) << "due after it: never sent, still the node's";
    EXPECT_EQ(Get(claimed).status, FireStatus::kDispatching) << "not LoseSentBefore's";
}

TEST_P(PlannedFiresTest, AStoppingNodeHandsBackThePlannedFiresItHasNotSent) {
    ASSERT_EQ(Take(), 0);
    const auto job = NewJob("planned");
    const auto sent = Plan(job, 1000);
    const auto unsent = Plan(job, 1001);
    const auto pending = Insert(job, 1002);
    const auto theirs = Plan(job, 1003, "node-b");
    EXPECT_EQ(Write([](soci::session& s) { return FireClaims::HandBack(s, "node-a", std::nullopt); }), 1)
        << "without the sent ones known, only the pending fires";
    EXPECT_EQ(Get(unsent).status, FireStatus::kDispatching);
    EXPECT_EQ(Write([&](soci::session& s) { return FireClaims::HandBack(s, "node-a", std::set<std::int64_t>{sent}); }),
              1);
    EXPECT_EQ(Get(unsent).status, FireStatus::kPending);
    EXPECT_EQ(Get(unsent).assigned_node, std::nullopt);
    EXPECT_EQ(Get(sent).status, FireStatus::kDispatching);
    EXPECT_EQ(Get(sent).assigned_node, "node-a");
    EXPECT_EQ(Get(pending).assigned_node, std::nullopt);
    EXPECT_EQ(Get(theirs).assigned_node, "node-b");
}

SCHED_DB_TEST_SUITE(PlannedFiresTest);

// ---- concurrency limits at the claim (FireClaims::Admit) ----

class FireAdmissionTest : public FireClaimsTest {
  protected:
    Job MakeJob(BlockStrategy policy, int limit) {
        return CreateJob({.name = "job-" + std::to_string(++jobs_made_),
                          .app = "app",
                          .handler = "h",
                          .schedule_type = ScheduleType::kManual,
                          .block_strategy = policy,
                          .concurrency_limit = limit});
    }
    // Claims `ids` and admits them, as the slave's claim does, in one transaction.
    Admission ClaimAndAdmit(const std::vector<std::int64_t>& ids, std::int64_t token, const Job& job) {
        auto r = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
            auto claimed = FireClaims::Claim(s, "node-a", ids, token, kLease, 5000);
            return FireClaims::Admit(s, db().dialect(), std::move(claimed.fires), {{job.id, job}}, token, 5000);
        });
        EXPECT_TRUE(r.ok()) << r.status().ToString();
        return r.ok() ? *r : Admission{};
    }
    Fire Get(std::int64_t id) { return *FireRepository(db()).Get(id); }
    void End(std::int64_t id) {
        ASSERT_TRUE(FireRepository(db())
                        .Transition(id, {FireStatus::kDispatching, FireStatus::kRunning}, FireStatus::kSucceeded,
                                    {.finished_at = 6000})
                        .ok());
    }
    static std::set<std::int64_t> Admitted(const Admission& a) { return Ids(a.admitted); }
    // Claims `ids` of several jobs at DB time `now` and admits them.
    Admission ClaimAndAdmitAt(const std::vector<std::int64_t>& ids, std::int64_t token, const std::vector<Job>& of,
                              std::int64_t now) {
        std::map<std::int64_t, Job> jobs;
        for (const auto& j : of) jobs.emplace(j.id, j);
        auto r = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
            auto claimed = FireClaims::Claim(s, "node-a", ids, token, kLease, now);
            return FireClaims::Admit(s, db().dialect(), std::move(claimed.fires), jobs, token, now);
        });
        EXPECT_TRUE(r.ok()) << r.status().ToString();
        return r.ok() ? *r : Admission{};
    }
    Job KeyedJob(BlockStrategy policy, int limit, const std::string& key) {
        Job j = MakeJob(policy, limit);
        j.concurrency_key = key;
        EXPECT_TRUE(JobRepository(db()).Update(j, j.version).ok());
        return *JobRepository(db()).Get(j.id);
    }
    void PutKey(const std::string& name, int max_running, int rate_starts = 0, std::int64_t rate_window_ms = 0) {
        auto put = ConcurrencyKeyRepository(db()).Put(
            {.name = name, .max_running = max_running, .rate_starts = rate_starts, .rate_window_ms = rate_window_ms});
        ASSERT_TRUE(put.ok()) << put.status().ToString();
    }

    int jobs_made_ = 0;
};

TEST_P(FireAdmissionTest, AJobsLimitAdmitsThatManyRunsAtOnceAndHoldsTheRestUntilASeatFrees) {
    const Job job = MakeJob(BlockStrategy::kBufferAll, 2);
    const auto a = Insert(job.id, 1000);
    const auto b = Insert(job.id, 2000);
    const auto c = Insert(job.id, 3000);
    const auto first = ClaimAndAdmit({a, b, c}, 1, job);
    EXPECT_EQ(Admitted(first), (std::set<std::int64_t>{a, b})) << "two seats";
    EXPECT_EQ(first.held, std::vector<std::int64_t>{c});
    const Fire waiting = Get(c);
    EXPECT_EQ(waiting.status, FireStatus::kPending) << "held back, not ended";
    EXPECT_EQ(waiting.reason, FireReason::kConcurrency);
    EXPECT_NE(waiting.result_message.value_or("").find("concurrency_limit 2"), std::string::npos);
    EXPECT_FALSE(waiting.dispatched_at);
    // Another claim of it while both seats are taken holds it again.
    EXPECT_EQ(ClaimAndAdmit({c}, 2, job).held, std::vector<std::int64_t>{c});
    End(a);
    const auto later = ClaimAndAdmit({c}, 3, job);
    ASSERT_EQ(Admitted(later), std::set<std::int64_t>{c}) << "a seat freed when a ended";
    EXPECT_EQ(later.admitted[0].reason, FireReason::kConcurrency) << "the slave knows it waited";
    EXPECT_FALSE(Get(c).reason) << "its stored reason is cleared";
    EXPECT_EQ(Get(c).status, FireStatus::kDispatching);
}

TEST_P(FireAdmissionTest, SkipEndsTheNewFireAndBufferOneKeepsOneWaiting) {
    const Job skip = MakeJob(BlockStrategy::kDiscardLater, 1);  // the alias of skip
    const auto a = Insert(skip.id, 1000);
    const auto b = Insert(skip.id, 2000);
    const auto first = ClaimAndAdmit({a, b}, 1, skip);
    EXPECT_EQ(Admitted(first), std::set<std::int64_t>{a});
    EXPECT_EQ(first.skipped, std::vector<std::int64_t>{b});
    EXPECT_EQ(Get(b).status, FireStatus::kSkipped);
    EXPECT_EQ(Get(b).reason, FireReason::kBlocked);

    const Job one = MakeJob(BlockStrategy::kBufferOne, 1);
    const auto x = Insert(one.id, 1000);
    const auto y = Insert(one.id, 2000);
    const auto z = Insert(one.id, 3000);
    const auto second = ClaimAndAdmit({x, y, z}, 2, one);
    EXPECT_EQ(Admitted(second), std::set<std::int64_t>{x});
    EXPECT_EQ(second.held, std::vector<std::int64_t>{y}) << "one waits";
    EXPECT_EQ(second.skipped, std::vector<std::int64_t>{z}) << "a second waiting fire is skipped";
    EXPECT_EQ(ClaimAndAdmit({y}, 3, one).held, std::vector<std::int64_t>{y}) << "the waiting one keeps its place";
}

TEST_P(FireAdmissionTest, TerminateOtherKillsTheRunningFireAndCancelOtherWaitsForIt) {
    const Job terminate = MakeJob(BlockStrategy::kCoverEarly, 1);  // the alias of terminate-other
    const auto a = Insert(terminate.id, 1000);
    ASSERT_EQ(Admitted(ClaimAndAdmit({a}, 1, terminate)), std::set<std::int64_t>{a});
    const auto b = Insert(terminate.id, 2000);
    const auto newer = ClaimAndAdmit({b}, 2, terminate);
    EXPECT_EQ(Admitted(newer), std::set<std::int64_t>{b}) << "starts at once";
    ASSERT_EQ(newer.stop.size(), 1u);
    EXPECT_EQ(newer.stop[0].id, a) << "the older one is killed";
    EXPECT_EQ(Get(a).status, FireStatus::kKilled);

    const Job cancel = MakeJob(BlockStrategy::kCancelOther, 1);
    const auto x = Insert(cancel.id, 1000);
    ASSERT_EQ(Admitted(ClaimAndAdmit({x}, 3, cancel)), std::set<std::int64_t>{x});
    const auto y = Insert(cancel.id, 2000);
    const auto waits = ClaimAndAdmit({y}, 4, cancel);
    EXPECT_EQ(waits.held, std::vector<std::int64_t>{y});
    ASSERT_EQ(waits.stop.size(), 1u);
    EXPECT_EQ(waits.stop[0].id, x);
    EXPECT_EQ(Get(x).status, FireStatus::kDispatching) << "asked to stop, still going until it ends";
    End(x);
    EXPECT_EQ(Admitted(ClaimAndAdmit({y}, 5, cancel)), std::set<std::int64_t>{y});
}

TEST_P(FireAdmissionTest, AllowAllTakesNoSeatAndTheShardsOfOneRunShareOne) {
    const Job all = MakeJob(BlockStrategy::kAllowAll, 1);
    const auto a = Insert(all.id, 1000);
    const auto b = Insert(all.id, 2000);
    EXPECT_EQ(Admitted(ClaimAndAdmit({a, b}, 1, all)), (std::set<std::int64_t>{a, b}));

    const Job sharded = MakeJob(BlockStrategy::kSerial, 1);
    std::vector<std::int64_t> shards;
    for (int i = 0; i < 3; ++i) {
        Fire f;
        f.job_id = sharded.id;
        f.scheduled_time = 1000;
        f.shard_index = i;
        f.shard_total = 3;
        f.assigned_node = "node-a";
        auto id = db().Run([&](soci::session& s) { return FireRepository::InsertIfAbsent(s, db().dialect(), f); });
        ASSERT_TRUE(id.ok() && *id);
        shards.push_back(**id);
    }
    const auto next = Insert(sharded.id, 2000);
    shards.push_back(next);
    const auto admitted = ClaimAndAdmit(shards, 2, sharded);
    EXPECT_EQ(Admitted(admitted), (std::set<std::int64_t>{shards[0], shards[1], shards[2]})) << "one run, three shards";
    EXPECT_EQ(admitted.held, std::vector<std::int64_t>{next});
}

TEST_P(FireAdmissionTest, ARetriedClaimFindsItsOwnSeatAndASeatOfAVanishedFireIsFree) {
    const Job job = MakeJob(BlockStrategy::kBufferAll, 1);
    const auto a = Insert(job.id, 1000);
    ASSERT_EQ(Admitted(ClaimAndAdmit({a}, 7, job)), std::set<std::int64_t>{a});
    // The same claim again (its commit was hidden by an error): a holds its own seat.
    EXPECT_EQ(Admitted(ClaimAndAdmit({a}, 7, job)), std::set<std::int64_t>{a});
    ASSERT_TRUE(db().Run([&](soci::session& s) { s << "DELETE FROM job_fire WHERE id = " + std::to_string(a); }).ok());
    const auto b = Insert(job.id, 2000);
    EXPECT_EQ(Admitted(ClaimAndAdmit({b}, 8, job)), std::set<std::int64_t>{b}) << "a purged holder frees its seat";
}

TEST_P(FireAdmissionTest, ALateFireIsJudgedBeforeItMayWaitForASeat) {
    const Job job = MakeJob(BlockStrategy::kBufferAll, 1);
    const auto a = Insert(job.id, 1000);
    const auto b = Insert(job.id, 2000);
    const auto c = Insert(job.id, 3000);
    // A judge that finds fires planned before 2500 late.
    const LateJudge late = [](const Fire& f, const Job&, const std::vector<Fire>&) -> std::optional<std::string> {
        if (f.scheduled_time < 2500) return std::string("misfire: late");
        return std::nullopt;
    };
    auto r = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
        auto claimed = FireClaims::Claim(s, "node-a", {a, b, c}, 1, kLease, 5000);
        return FireClaims::Admit(s, db().dialect(), std::move(claimed.fires), {{job.id, job}}, 1, 5000, late);
    });
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->late, (std::vector<std::int64_t>{a, b}));
    EXPECT_EQ(Admitted(*r), std::set<std::int64_t>{c}) << "the seat goes to the one that is not late";
    for (auto id : {a, b}) {
        EXPECT_EQ(Get(id).status, FireStatus::kSkipped);
        EXPECT_EQ(Get(id).reason, FireReason::kMisfire);
    }
}

TEST_P(FireAdmissionTest, AFireLostWithItsNodeKeepsItsSeatForItsJobsTimeout) {
    Job job = MakeJob(BlockStrategy::kBufferAll, 1);
    job.timeout_ms = 3000;
    const auto a = Insert(job.id, 1000);
    ASSERT_EQ(Admitted(ClaimAndAdmit({a}, 1, job)), std::set<std::int64_t>{a});
    // Its node died while dispatching it: lost at 5000, its run may go on until 8000.
    ASSERT_TRUE(FireRepository(db())
                    .Transition(a, {FireStatus::kDispatching}, FireStatus::kLost,
                                {.finished_at = 5000, .reason = FireReason::kSlaveDied})
                    .ok());
    const auto b = Insert(job.id, 2000);
    const auto at = [&](std::int64_t now) {
        auto r = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
            auto claimed = FireClaims::Claim(s, "node-a", {b}, now, kLease, now);
            return FireClaims::Admit(s, db().dialect(), std::move(claimed.fires), {{job.id, job}}, now, now);
        });
        EXPECT_TRUE(r.ok()) << r.status().ToString();
        return r.ok() ? Admitted(*r) : std::set<std::int64_t>{};
    };
    EXPECT_TRUE(at(7000).empty()) << "its run may still be going";
    EXPECT_EQ(at(8001), std::set<std::int64_t>{b}) << "past the job's timeout the seat is free";
}

TEST_P(FireAdmissionTest, AConcurrencyKeyLimitsEveryJobThatNamesItTogether) {
    PutKey("warehouse", 1);
    const Job a = KeyedJob(BlockStrategy::kBufferAll, 5, "warehouse");
    const Job b = KeyedJob(BlockStrategy::kAllowAll, 1, "warehouse");  // no limit of its own, only the key's
    const Job skip = KeyedJob(BlockStrategy::kSkip, 5, "warehouse");
    const Job free = MakeJob(BlockStrategy::kAllowAll, 1);  // names no key
    const auto a1 = Insert(a.id, 1000);
    const auto b1 = Insert(b.id, 2000);
    const auto a2 = Insert(a.id, 3000);
    const auto s1 = Insert(skip.id, 3500);
    const auto f1 = Insert(free.id, 4000);
    const auto first = ClaimAndAdmitAt({a1, b1, a2, s1, f1}, 1, {a, b, skip, free}, 5000);
    EXPECT_EQ(Admitted(first), (std::set<std::int64_t>{a1, f1})) << "one seat for both jobs; the other job is free";
    EXPECT_EQ(first.held, (std::vector<std::int64_t>{b1, a2}));
    EXPECT_EQ(first.skipped, std::vector<std::int64_t>{s1}) << "the job's own policy says what waiting means";
    EXPECT_TRUE(first.first_in_line.contains(b1)) << "the key's earliest waiting fire is asked again soon";
    EXPECT_NE(Get(b1).result_message.value_or("").find("concurrency key \"warehouse\""), std::string::npos);
    EXPECT_EQ(Get(b1).reason, FireReason::kConcurrency);
    EXPECT_EQ(Admitted(ClaimAndAdmitAt({b1, a2}, 2, {a, b}, 5000)), std::set<std::int64_t>{}) << "a1 still runs";
    End(a1);
    const auto next = ClaimAndAdmitAt({b1, a2}, 3, {a, b}, 6000);
    EXPECT_EQ(Admitted(next), std::set<std::int64_t>{b1}) << "the freed seat goes to the key's next fire, of b";
    EXPECT_EQ(next.held, std::vector<std::int64_t>{a2});
}

TEST_P(FireAdmissionTest, AConcurrencyKeysRateLimitHoldsStartsUntilItsWindowPassed) {
    PutKey("partner-api", 100, 2, 10'000);
    const Job job = KeyedJob(BlockStrategy::kAllowAll, 1, "partner-api");
    const auto x = Insert(job.id, 1000);
    const auto y = Insert(job.id, 2000);
    const auto z = Insert(job.id, 3000);
    const auto first = ClaimAndAdmitAt({x, y, z}, 1, {job}, 5000);
    EXPECT_EQ(Admitted(first), (std::set<std::int64_t>{x, y})) << "two starts per 10 s";
    EXPECT_EQ(first.held, std::vector<std::int64_t>{z});
    EXPECT_NE(Get(z).result_message.value_or("").find("rate limit"), std::string::npos);
    End(x);
    End(y);
    EXPECT_TRUE(Admitted(ClaimAndAdmitAt({z}, 2, {job}, 14'999)).empty()) << "ended, but started within the window";
    EXPECT_EQ(Admitted(ClaimAndAdmitAt({z}, 3, {job}, 15'000)), std::set<std::int64_t>{z});
}

TEST_P(FireAdmissionTest, AConcurrencyKeyIsDeletedOnlyOnceNoJobNamesIt) {
    ConcurrencyKeyRepository keys(db());
    EXPECT_EQ(keys.Put({.name = "bad name", .max_running = 1}).status().code(), Code::kInvalidArgument);
    PutKey("etl", 2);
    PutKey("etl", 3, 5, 60'000);  // replaced, not added
    auto stored = keys.Get("etl");
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(stored->max_running, 3);
    EXPECT_EQ(stored->rate_starts, 5);
    EXPECT_EQ(keys.List("", 10)->size(), 1u);
    Job job = KeyedJob(BlockStrategy::kBufferAll, 1, "etl");
    const Status refused = keys.Delete("etl");
    EXPECT_EQ(refused.code(), Code::kFailedPrecondition);
    EXPECT_NE(refused.message().find(job.name), std::string::npos) << refused.ToString();
    job.concurrency_key.clear();
    ASSERT_TRUE(JobRepository(db()).Update(job, job.version).ok());
    EXPECT_TRUE(keys.Delete("etl").ok());
    EXPECT_EQ(keys.Get("etl").status().code(), Code::kNotFound);
}

// The seats' read brings each holder's status: holders seen ended for good are not read again,
// any other (running, or not seen: a seat another claim may just have given) is, and decides.
TEST_P(FireAdmissionTest, OnlyHoldersNotSeenEndedAreReadAgain) {
    const Job job = MakeJob(BlockStrategy::kSkip, 1);  // no wait seat: only the job's own
    const auto a = Insert(job.id, 1000);
    const auto b = Insert(job.id, 2000);
    const auto c = Insert(job.id, 3000);
    const auto d = Insert(job.id, 4000);
    const auto claim_logged = [&](std::int64_t id, std::int64_t token, std::string& log) {
        auto r = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
            auto claimed = FireClaims::Claim(s, "node-a", {id}, token, kLease, 5000);
            return Logged(s, log, [&] {
                return FireClaims::Admit(s, db().dialect(), std::move(claimed.fires), {{job.id, job}}, token, 5000);
            });
        });
        EXPECT_TRUE(r.ok()) << r.status().ToString();
        return r.ok() ? *r : Admission{};
    };
    const auto holders_read = [](const std::string& log) {
        return log.find("FROM job_fire WHERE id IN") != std::string::npos;
    };
    std::string log;
    ASSERT_EQ(Admitted(claim_logged(a, 1, log)), std::set<std::int64_t>{a});
    EXPECT_FALSE(holders_read(log)) << "no seat yet: " << log;
    EXPECT_EQ(claim_logged(b, 2, log).skipped, std::vector<std::int64_t>{b}) << "a holds the seat";
    EXPECT_TRUE(holders_read(log)) << "a, dispatching, is read whole: " << log;
    End(a);
    ASSERT_EQ(Admitted(claim_logged(c, 3, log)), std::set<std::int64_t>{c});
    EXPECT_FALSE(holders_read(log)) << "a ended for good: its status alone frees the seat: " << log;
    End(c);
    // A holder the seats' read cannot see (a seat naming a fire another claim just inserted and
    // seated, or one purged) is read again; not found, it holds nothing.
    ASSERT_TRUE(
        db().Run([&](soci::session& s) {
                s << "UPDATE concurrency_slot SET fire_id = 987654 WHERE scope = 'job:" + std::to_string(job.id) + "'";
            })
            .ok());
    ASSERT_EQ(Admitted(claim_logged(d, 4, log)), std::set<std::int64_t>{d});
    EXPECT_TRUE(holders_read(log)) << "an unseen holder is read again: " << log;
}

TEST_P(FireAdmissionTest, TheSeatReadOfALargeGroupLocksOnlyItsJobsSeats) {
    // Past eq_range_index_dive_limit (200) scopes, MariaDB costs an IN list on the seat table's
    // key by its statistics, and on a small table (1,000 seats here, 8,000 in the bench) it chose
    // a full scan: FOR UPDATE then locked every job's seat, so every claim of every node waited
    // for every other. The plan of the SELECT the claim really runs, on such a table.
    if (GetParam() != db::Backend::kMySql) GTEST_SKIP() << "SQLite locks the whole file anyway";
    constexpr int kSeats = 1000;
    constexpr int kClaimed = 250;
    auto seated = db().Run([&](soci::session& s) {
        std::string rows;
        for (int i = 1; i <= kSeats; ++i)
            rows += (i > 1 ? ", " : "") + std::string("('job:") + std::to_string(1000 + i) + "', 0, NULL, 0)";
        s << "INSERT INTO concurrency_slot (scope, slot, fire_id, taken_at) VALUES " + rows;
        s << "ANALYZE TABLE concurrency_slot";
    });
    ASSERT_TRUE(seated.ok()) << seated.ToString();
    std::map<std::int64_t, Job> jobs;
    std::vector<Fire> fires;
    for (int i = 1; i <= kClaimed; ++i) {
        Job j;
        j.id = 1000 + i;
        j.block_strategy = BlockStrategy::kSerial;
        j.concurrency_limit = 1;
        jobs.emplace(j.id, j);
        Fire f;
        f.job_id = j.id;
        f.scheduled_time = 1000;
        f.epoch = 3;
        f.assigned_node = "node-a";
        fires.push_back(f);
    }
    auto inserted = db().Run([&](soci::session& s) {
        std::vector<std::int64_t> ids;
        for (const auto& stored : FireRepository::InsertManyIfAbsent(s, db().dialect(), fires))
            ids.push_back(stored->id);
        return ids;
    });
    ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
    std::string log;
    auto admitted = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
        auto claimed = FireClaims::Claim(s, "node-a", *inserted, 1, kLease, 5000);
        return Logged(s, log, [&] {
            return FireClaims::Admit(s, db().dialect(), std::move(claimed.fires), jobs, 1, 5000).admitted.size();
        });
    });
    ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
    EXPECT_EQ(*admitted, static_cast<std::size_t>(kClaimed)) << "one free seat each";
    std::istringstream lines(log);
    int seat_reads = 0;
    for (std::string sql; std::getline(lines, sql);) {
        if (sql.rfind("SELECT", 0) != 0 || sql.find("FROM concurrency_slot") == std::string::npos) continue;
        ++seat_reads;
        std::map<std::string, std::pair<std::string, std::string>> plan;  // table -> (access, key)
        auto explained = db().Run([&](soci::session& s) {
            soci::rowset<soci::row> rows = (s.prepare << "EXPLAIN " + sql);
            for (const auto& row : rows) {
                plan[row.get<std::string>(2)] = {
                    row.get<std::string>(3), row.get_indicator(5) == soci::i_ok ? row.get<std::string>(5) : "(none)"};
            }
        });
        ASSERT_TRUE(explained.ok()) << explained.ToString();
        EXPECT_EQ(plan["concurrency_slot"].first, "range") << "a full scan locks every seat: " << sql.substr(0, 120);
        EXPECT_EQ(plan["concurrency_slot"].second, "PRIMARY");
        // The holders' statuses, one row each by its primary key.
        EXPECT_EQ(plan["job_fire"].first, "eq_ref");
        EXPECT_EQ(plan["job_fire"].second, "PRIMARY");
    }
    EXPECT_EQ(seat_reads, 1) << log.substr(0, 2000);
}

SCHED_DB_TEST_SUITE(FireAdmissionTest);

}  // namespace
}  // namespace sched::store
