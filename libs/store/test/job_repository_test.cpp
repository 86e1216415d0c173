#include "sched/store/job.hpp"

#include <algorithm>
#include <functional>

#include "created_record.hpp"
#include "store_test_base.hpp"

namespace sched::store {

using model::Job;
using model::JobPause;
using model::ShardsPerFire;
namespace {

class JobRepositoryTest : public StoreTest {
  protected:
    // The job row's text columns `a` and `b` as stored.
    std::pair<std::string, std::string> StoredNames(std::int64_t id, const std::string& a, const std::string& b) {
        std::pair<std::string, std::string> out;
        const Status read = db().Run([&](soci::session& s) {
            s << "SELECT " + a + ", " + b + " FROM job WHERE id = :id", soci::into(out.first), soci::into(out.second),
                soci::use(id);
        });
        EXPECT_TRUE(read.ok()) << read.ToString();
        return out;
    }
    // `sql` (naming :id) on the job row `id`: a hand edit, or a newer build's write.
    void EditRow(std::int64_t id, const std::string& sql) {
        const Status edited = db().Run([&](soci::session& s) { s << sql, soci::use(id); });
        ASSERT_TRUE(edited.ok()) << edited.ToString();
    }
    // The job `id` as the repository reads it once `sql` (naming :id) edited its row.
    Job ReadAfterEdit(std::int64_t id, const std::string& sql) {
        EditRow(id, sql);
        auto job = JobRepository(db()).Get(id);
        EXPECT_TRUE(job.ok()) << job.status().ToString();
        return job.ok() ? *job : Job{};
    }
    // Every job, as List reads them.
    std::vector<Job> ListAll() {
        auto listed = JobRepository(db()).List({});
        EXPECT_TRUE(listed.ok()) << listed.status().ToString();
        return listed.ok() ? *listed : std::vector<Job>{};
    }
    // `n` enabled jobs `bulk-<i>` due at `t`, job i at version `version_of(i)`.
    void InsertDueJobs(int n, std::int64_t t, const std::function<int(int)>& version_of) {
        const Status inserted = db().Run([&](soci::session& s) {
            for (int i = 0; i < n; ++i) {
                const std::string name = "bulk-" + std::to_string(i);
                const int version = version_of(i);
                s << "INSERT INTO job (name, app, handler, params, schedule_type, schedule_expr, "
                     "time_zone, misfire_policy, routing, block_strategy, concurrency_limit, timeout_ms, "
                     "retry_max, retry_backoff_ms, shard_total, at_least_once, enabled, next_fire_time, "
                     "version, created_at, updated_at, description) VALUES (:name, 'a', 'h', '{}', "
                     "'cron', '* * * * * ?', 'UTC', 'skip', 'round-robin', 'serial', 1, 0, 0, 1000, 1, "
                     "0, 1, :next, :version, 0, 0, '')",
                    soci::use(name), soci::use(t), soci::use(version);
            }
        });
        ASSERT_TRUE(inserted.ok()) << inserted.ToString();
    }
    // Each job moved from `t` (at version 1) to t + 1000.
    static std::vector<ScheduleAdvance> AdvancesFrom(const std::vector<Job>& jobs, std::int64_t t) {
        std::vector<ScheduleAdvance> advances;
        for (const auto& j : jobs) {
            advances.push_back({.id = j.id, .expected_version = 1, .expected_next = t, .next_fire_time = t + 1000});
        }
        return advances;
    }
};

Job SampleJob(const std::string& name = "nightly-report") {
    Job j;
    j.name = name;
    j.app = "billing";
    j.handler = "report";
    j.params = R"({"day":"yesterday"})";
    j.schedule_type = sched::ScheduleType::kCron;
    j.schedule_expr = "0 0 2 * * ?";
    j.time_zone = "Europe/Berlin";
    j.timeout_ms = 60000;
    j.retry_max = 2;
    j.next_fire_time = 1'700'000'000'000;
    j.description = "daily";
    return j;
}

TEST_P(JobRepositoryTest, CreateThenGetRoundTripsEveryField) {
    JobRepository jobs(db());
    Job in = SampleJob();
    in.at_least_once = true;
    in.shard_total = 3;
    in.pause_after_failures = 5;
    auto created = jobs.Create(in);
    ASSERT_NO_FATAL_FAILURE(ExpectCreated(created));
    auto got = jobs.Get(created->id);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->name, in.name);
    EXPECT_EQ(got->params, in.params);
    EXPECT_EQ(got->time_zone, "Europe/Berlin");
    EXPECT_EQ(got->timeout_ms, 60000);
    EXPECT_EQ(got->retry_max, 2);
    EXPECT_EQ(got->shard_total, 3);
    EXPECT_TRUE(got->at_least_once);
    EXPECT_TRUE(got->enabled);
    EXPECT_EQ(got->next_fire_time, in.next_fire_time);
    EXPECT_EQ(got->last_fire_time, std::nullopt);
    EXPECT_EQ(got->description, "daily");
    EXPECT_EQ(got->pause_after_failures, 5);
    Job edited = *got;
    edited.pause_after_failures = 0;
    auto updated = jobs.Update(edited, got->version);
    ASSERT_TRUE(updated.ok()) << updated.status().ToString();
    EXPECT_EQ(updated->pause_after_failures, 0);
}

TEST_P(JobRepositoryTest, ScheduleOptionsRoundTripAndDefault) {
    JobRepository jobs(db());
    auto plain = jobs.Create(SampleJob());
    ASSERT_TRUE(plain.ok()) << plain.status().ToString();
    EXPECT_EQ(plain->jitter_ms, 0);
    EXPECT_EQ(plain->dst_gap, "auto");
    EXPECT_EQ(plain->dst_overlap, "auto");
    Job in = SampleJob();
    in.name = "spread";
    in.jitter_ms = 3'600'000;
    in.dst_gap = "shift-forward";
    in.dst_overlap = "both";
    auto created = jobs.Create(in);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    EXPECT_EQ(created->jitter_ms, 3'600'000);
    EXPECT_EQ(created->dst_gap, "shift-forward");
    EXPECT_EQ(created->dst_overlap, "both");
    Job edited = *created;
    edited.jitter_ms = 250;
    edited.dst_gap = "skip";
    edited.dst_overlap = "last";
    auto updated = jobs.Update(edited, created->version);
    ASSERT_TRUE(updated.ok()) << updated.status().ToString();
    EXPECT_EQ(updated->jitter_ms, 250);
    EXPECT_EQ(updated->dst_gap, "skip");
    EXPECT_EQ(updated->dst_overlap, "last");
    auto listed = jobs.List({});
    ASSERT_TRUE(listed.ok());
    ASSERT_EQ(listed->size(), 2U);
    EXPECT_EQ(listed->back().dst_overlap, "last");
}

TEST_P(JobRepositoryTest, ManagedByRoundTripsAndClears) {
    JobRepository jobs(db());
    auto plain = jobs.Create(SampleJob());
    ASSERT_TRUE(plain.ok()) << plain.status().ToString();
    EXPECT_FALSE(plain->managed_by) << "made by hand: NULL";
    Job in = SampleJob();
    in.name = "from-file";
    in.managed_by = "jobs.yaml";
    auto created = jobs.Create(in);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    EXPECT_EQ(created->managed_by, std::optional<std::string>("jobs.yaml"));
    auto listed = jobs.List({});
    ASSERT_TRUE(listed.ok());
    ASSERT_EQ(listed->size(), 2U);
    EXPECT_EQ(listed->back().managed_by, std::optional<std::string>("jobs.yaml"));
    Job edited = *created;
    edited.managed_by.reset();
    auto updated = jobs.Update(edited, created->version);
    ASSERT_TRUE(updated.ok()) << updated.status().ToString();
    EXPECT_FALSE(updated->managed_by);
}

TEST_P(JobRepositoryTest, DuplicateNameInAppIsAlreadyExists) {
    JobRepository jobs(db());
    ASSERT_TRUE(jobs.Create(SampleJob()).ok());
    auto dup = jobs.Create(SampleJob());
    ASSERT_FALSE(dup.ok());
    EXPECT_EQ(dup.status().code(), Code::kAlreadyExists);
    EXPECT_NE(dup.status().message().find("nightly-report"), std::string::npos);
    Job other_app = SampleJob();
    other_app.app = "shipping";
    EXPECT_TRUE(jobs.Create(other_app).ok());
}

TEST_P(JobRepositoryTest, UpdateNeedsTheVersionItRead) {
    JobRepository jobs(db());
    auto job = jobs.Create(SampleJob());
    ASSERT_TRUE(job.ok());
    Job edit = *job;
    edit.schedule_expr = "0 30 2 * * ?";
    auto v2 = jobs.Update(edit, 1);
    ASSERT_TRUE(v2.ok()) << v2.status().ToString();
    EXPECT_EQ(v2->version, 2);
    EXPECT_EQ(v2->schedule_expr, "0 30 2 * * ?");

    edit.schedule_expr = "0 45 2 * * ?";
    auto stale = jobs.Update(edit, 1);
    ASSERT_FALSE(stale.ok());
    EXPECT_EQ(stale.status().code(), Code::kAborted);
    EXPECT_NE(stale.status().message().find("version 2, not 1"), std::string::npos) << stale.status().message();
    EXPECT_EQ(jobs.Get(job->id)->schedule_expr, "0 30 2 * * ?");

    edit.id = 999999;
    EXPECT_EQ(jobs.Update(edit, 1).status().code(), Code::kNotFound);
}

TEST_P(JobRepositoryTest, StringsThatLookLikeSqlAreStoredVerbatim) {
    JobRepository jobs(db());
    Job j = SampleJob("x'); DROP TABLE job; --");
    j.params = "' OR '1'='1";
    j.description = "\\'\"%_";
    auto created = jobs.Create(j);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    auto got = jobs.Get(created->id);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->name, j.name);
    EXPECT_EQ(got->params, j.params);
    EXPECT_EQ(got->description, j.description);
    auto found = jobs.List({.name_contains = "DROP TABLE"});
    ASSERT_TRUE(found.ok());
    EXPECT_EQ(found->size(), 1u);
}

TEST_P(JobRepositoryTest, ListFiltersAndPagesByCursor) {
    JobRepository jobs(db());
    for (int i = 0; i < 5; ++i) {
        Job j = SampleJob("job-" + std::to_string(i));
        j.app = i % 2 == 0 ? "even" : "odd";
        j.enabled = i != 4;
        ASSERT_TRUE(jobs.Create(j).ok());
    }
    Job pct = SampleJob("50%_off");
    ASSERT_TRUE(jobs.Create(pct).ok());

    auto even = jobs.List({.app = "even"});
    ASSERT_TRUE(even.ok());
    EXPECT_EQ(even->size(), 3u);
    auto enabled_even = jobs.List({.app = "even", .enabled = true});
    EXPECT_EQ(enabled_even->size(), 2u);
    auto disabled = jobs.List({.enabled = false});
    ASSERT_EQ(disabled->size(), 1u);
    EXPECT_EQ(disabled->front().name, "job-4");
    // % and _ are literal in a name search.
    auto literal = jobs.List({.name_contains = "%_"});
    ASSERT_EQ(literal->size(), 1u);
    EXPECT_EQ(literal->front().name, "50%_off");

    auto page1 = jobs.List({.limit = 4});
    ASSERT_EQ(page1->size(), 4u);
    auto page2 = jobs.List({.after_id = page1->back().id, .limit = 4});
    ASSERT_EQ(page2->size(), 2u);
    EXPECT_GT(page2->front().id, page1->back().id);
}

TEST_P(JobRepositoryTest, PauseNoteIsRecordedAndClearedWithoutMovingTheVersion) {
    JobRepository jobs(db());
    auto created = jobs.Create(SampleJob());
    ASSERT_TRUE(created.ok());
    EXPECT_FALSE(created->paused.has_value());
    ASSERT_TRUE(jobs.SetPaused(created->id, JobPause{"alice", 0, "db migration until 14:00"}).ok());
    auto paused = jobs.Get(created->id);
    ASSERT_TRUE(paused->paused.has_value());
    EXPECT_EQ(paused->paused->by, "alice");
    EXPECT_EQ(paused->paused->note, "db migration until 14:00");
    EXPECT_GT(paused->paused->at, 1'600'000'000'000);
    EXPECT_EQ(paused->version, created->version);
    ASSERT_TRUE(jobs.SetPaused(created->id, std::nullopt).ok());
    EXPECT_FALSE(jobs.Get(created->id)->paused.has_value());
    EXPECT_EQ(jobs.SetPaused(created->id + 100, std::nullopt).code(), Code::kNotFound);

    // The master's automatic pause names the scheduler.
    auto now = db().Run([](soci::session& s) {
        std::int64_t t = 0;
        s << "SELECT MAX(updated_at) FROM job", soci::into(t);
        return t;
    });
    auto by_master = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
        return JobRepository::Pause(s, db().dialect(), created->id, *now, "3 failed runs in a row");
    });
    ASSERT_TRUE(by_master.ok());
    EXPECT_TRUE(*by_master);
    auto after = jobs.Get(created->id);
    EXPECT_FALSE(after->enabled);
    ASSERT_TRUE(after->paused.has_value());
    EXPECT_EQ(after->paused->by, "scheduler");
    EXPECT_EQ(after->paused->note, "3 failed runs in a row");
}

TEST_P(JobRepositoryTest, DeleteRemovesAndReportsMissing) {
    JobRepository jobs(db());
    auto job = jobs.Create(SampleJob());
    ASSERT_TRUE(jobs.Delete(job->id).ok());
    EXPECT_EQ(jobs.Get(job->id).status().code(), Code::kNotFound);
    EXPECT_EQ(jobs.Delete(job->id).code(), Code::kNotFound);
}

TEST_P(JobRepositoryTest, SelectDueReturnsEnabledDueJobsInTimeOrder) {
    JobRepository jobs(db());
    const std::int64_t t0 = 1'700'000'000'000;
    const std::pair<const char*, std::int64_t> specs[] = {{"late", t0 + 5000}, {"soon", t0 + 1000}, {"now", t0}};
    for (const auto& [name, t] : specs) {
        Job j = SampleJob(name);
        j.next_fire_time = t;
        ASSERT_TRUE(jobs.Create(j).ok());
    }
    Job off = SampleJob("off");
    off.next_fire_time = t0;
    off.enabled = false;
    ASSERT_TRUE(jobs.Create(off).ok());
    Job never = SampleJob("never");
    never.next_fire_time.reset();
    ASSERT_TRUE(jobs.Create(never).ok());

    auto due = db().Run([&](soci::session& s) { return JobRepository::SelectDue(s, t0 + 2000, 10); });
    ASSERT_TRUE(due.ok()) << due.status().ToString();
    ASSERT_EQ(due->size(), 2u);
    EXPECT_EQ((*due)[0].name, "now");
    EXPECT_EQ((*due)[1].name, "soon");
    auto earliest = db().Run([](soci::session& s) { return JobRepository::EarliestDue(s); });
    EXPECT_EQ(*earliest, t0);
}

TEST_P(JobRepositoryTest, AdvanceManyAdvancesExactlyTheJobsWhoseCasHolds) {
    JobRepository jobs(db());
    const std::int64_t t = 1'700'000'000'000;
    std::vector<Job> created;
    for (int i = 0; i < 7; ++i) {
        Job j = SampleJob("job-" + std::to_string(i));
        j.next_fire_time = t + i;
        if (i == 5) j.next_fire_time.reset();  // CASed from NULL
        auto c = jobs.Create(j);
        ASSERT_TRUE(c.ok()) << c.status().ToString();
        created.push_back(*c);
    }
    // Job 3 is edited after the master read it (its version moves on): its advance must lose.
    ASSERT_TRUE(jobs.Update(created[3], created[3].version).ok());
    std::vector<ScheduleAdvance> advances;
    for (const auto& j : created) {
        advances.push_back({.id = j.id,
                            .expected_version = j.version,
                            .expected_next = j.next_fire_time,
                            .next_fire_time = t + 1000 + j.id,
                            .last_fire_time = j.next_fire_time});
    }
    advances[1].expected_next = t + 999;  // stale next time: loses
    advances[4].next_fire_time.reset();   // parked
    advances[6].last_fire_time.reset();   // last unchanged
    auto advanced = db().Run([&](soci::session& s) { return JobRepository::AdvanceMany(s, advances); });
    ASSERT_TRUE(advanced.ok()) << advanced.status().ToString();
    EXPECT_EQ(*advanced, (std::vector<bool>{true, false, true, false, true, true, true}));

    for (std::size_t i = 0; i < created.size(); ++i) {
        auto after = jobs.Get(created[i].id);
        ASSERT_TRUE(after.ok());
        if (i == 1 || i == 3) {
            EXPECT_EQ(after->next_fire_time, created[i].next_fire_time) << i;
            EXPECT_EQ(after->last_fire_time, std::nullopt) << i;
            continue;
        }
        EXPECT_EQ(after->next_fire_time, advances[i].next_fire_time) << i;
        EXPECT_EQ(after->last_fire_time, advances[i].last_fire_time) << i;
        EXPECT_EQ(after->version, created[i].version) << i;  // a schedule advance is not a user edit
    }

    // The same batch again: every next time moved on, so every CAS loses (no double advance).
    auto again = db().Run([&](soci::session& s) { return JobRepository::AdvanceMany(s, advances); });
    EXPECT_EQ(*again, std::vector<bool>(created.size(), false));
}

// The vocabulary is parsed where a row is read; a name this build does not know (a newer build's,
// a hand edit) must not fail the read of every job beside it.
TEST_P(JobRepositoryTest, StoresTheVocabularyByNameAndReadsUnknownNamesAsTheSafeDefault) {
    JobRepository jobs(db());
    Job in = SampleJob();
    in.schedule_type = sched::ScheduleType::kFixedDelay;
    in.schedule_expr = "5s";
    in.misfire_policy = sched::MisfirePolicy::kFireAll;
    auto created = jobs.Create(in);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    const auto [type, policy] = StoredNames(created->id, "schedule_type", "misfire_policy");
    EXPECT_EQ(type, "fixed-delay");  // the stored text is the API's spelling
    EXPECT_EQ(policy, "fire-all");
    auto got = jobs.Get(created->id);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->schedule_type, sched::ScheduleType::kFixedDelay);
    EXPECT_EQ(got->misfire_policy, sched::MisfirePolicy::kFireAll);

    const Job odd =
        ReadAfterEdit(created->id, "UPDATE job SET schedule_type = 'hourly', misfire_policy = 'later' WHERE id = :id");
    EXPECT_EQ(odd.schedule_type, sched::ScheduleType::kManual);
    EXPECT_EQ(odd.misfire_policy, sched::MisfirePolicy::kFireOnceNow);
    EXPECT_EQ(ListAll().size(), 1u) << "the job beside it is read as well";
}

TEST(ShardsPerFire, IsTheShardTotalOrForShardingBroadcastTheLiveInstancesAndAtLeastOne) {
    Job job;
    job.shard_total = 3;
    int counted = 0;
    const auto five_live = [&] {
        ++counted;
        return 5;
    };
    EXPECT_EQ(ShardsPerFire(job, five_live), 3);
    EXPECT_EQ(counted, 0);  // the instances are counted only for sharding-broadcast
    job.routing = sched::Routing::kShardingBroadcast;
    EXPECT_EQ(ShardsPerFire(job, five_live), 5);
    EXPECT_EQ(counted, 1);
    EXPECT_EQ(ShardsPerFire(job, [] { return 0; }), 1);  // no live instance: still one fire
    job.routing = sched::Routing::kRoundRobin;
    job.shard_total = 0;
    EXPECT_EQ(ShardsPerFire(job, five_live), 1);
}

// Routing and block strategy likewise: stored by name, an unknown stored name read as the API's
// default (round-robin, serial) so that the job and the jobs beside it stay readable.
TEST_P(JobRepositoryTest, StoresRoutingAndBlockStrategyByNameAndReadsUnknownNamesAsTheDefaults) {
    JobRepository jobs(db());
    Job in = SampleJob();
    in.routing = sched::Routing::kShardingBroadcast;
    in.block_strategy = sched::BlockStrategy::kCoverEarly;
    auto created = jobs.Create(in);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    EXPECT_EQ(StoredNames(created->id, "routing", "block_strategy"),
              std::make_pair(std::string("sharding-broadcast"), std::string("cover-early")));  // the API's spelling
    auto got = jobs.Get(created->id);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->routing, sched::Routing::kShardingBroadcast);
    EXPECT_EQ(got->block_strategy, sched::BlockStrategy::kCoverEarly);

    Job other = SampleJob("other");
    other.routing = sched::Routing::kFailover;
    other.block_strategy = sched::BlockStrategy::kDiscardLater;
    ASSERT_TRUE(jobs.Create(other).ok());
    const Job odd =
        ReadAfterEdit(created->id, "UPDATE job SET routing = 'nearest', block_strategy = 'newest-wins' WHERE id = :id");
    EXPECT_EQ(odd.routing, sched::Routing::kRoundRobin);
    EXPECT_EQ(odd.block_strategy, sched::BlockStrategy::kSerial);
    const std::vector<Job> listed = ListAll();
    ASSERT_EQ(listed.size(), 2u);
    EXPECT_EQ(listed[1].routing, sched::Routing::kFailover);  // its neighbour reads as stored
    EXPECT_EQ(listed[1].block_strategy, sched::BlockStrategy::kDiscardLater);
    // An update writes the names back: the odd text is replaced by the default's spelling.
    ASSERT_TRUE(jobs.Update(odd, odd.version).ok());
    EXPECT_EQ(StoredNames(created->id, "routing", "block_strategy"),
              std::make_pair(std::string("round-robin"), std::string("serial")));
}

TEST_P(JobRepositoryTest, AdvanceManyHandlesBatchesLargerThanOneStatement) {
    // 1,100 jobs: 18 UPDATE chunks; every tenth job has been edited and loses.
    const std::int64_t t = 1'700'000'000'000;
    InsertDueJobs(1100, t, [](int i) { return i % 10 == 0 ? 2 : 1; });
    auto listed = db().Run([&](soci::session& s) { return JobRepository::SelectDue(s, t, 2000); });
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    ASSERT_EQ(listed->size(), 1100u);
    auto advanced = db().Run([&](soci::session& s) { return JobRepository::AdvanceMany(s, AdvancesFrom(*listed, t)); });
    ASSERT_TRUE(advanced.ok()) << advanced.status().ToString();
    for (std::size_t i = 0; i < listed->size(); ++i) {
        EXPECT_EQ((*advanced)[i], (*listed)[i].version == 1) << (*listed)[i].name;
    }
    auto left = db().Run([&](soci::session& s) { return JobRepository::SelectDue(s, t, 2000); });
    EXPECT_EQ(left->size(), 110u);  // the edited ones keep their time
}

// A planning scan's batch of up to 120 jobs (a second's due jobs at 100 fires/s) is one UPDATE;
// a larger one is cut at 64 jobs a statement.
TEST_P(JobRepositoryTest, AdvanceManyOfUpTo120JobsIsOneStatement) {
    if (db().backend() != db::Backend::kMySql) GTEST_SKIP() << "counts the server's UPDATE statements";
    const std::int64_t t = 1'700'000'000'000;
    InsertDueJobs(121, t, [](int) { return 1; });
    auto listed = db().Run([&](soci::session& s) { return JobRepository::SelectDue(s, t, 200); });
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    ASSERT_EQ(listed->size(), 121u);
    const auto updates = [](soci::session& s) {
        std::string name;
        long long n = 0;
        s << "SHOW SESSION STATUS LIKE 'Com_update'", soci::into(name), soci::into(n);
        return n;
    };
    const auto statements_for = [&](std::vector<Job> jobs) {
        return db().Run([&](soci::session& s) {
            const long long before = updates(s);
            const auto advanced = JobRepository::AdvanceMany(s, AdvancesFrom(jobs, t));
            EXPECT_EQ(std::count(advanced.begin(), advanced.end(), true), static_cast<long>(jobs.size()));
            return updates(s) - before;
        });
    };
    auto one = statements_for({listed->begin(), listed->begin() + 120});
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    EXPECT_EQ(*one, 1);
    auto last = statements_for({listed->begin() + 120, listed->end()});
    ASSERT_TRUE(last.ok()) << last.status().ToString();
    EXPECT_EQ(*last, 1);
    // The 120 are at t + 1000 now; 121 at their time are two chunks (64 + 57).
    auto due_again = db().Run([&](soci::session& s) {
        s << "UPDATE job SET next_fire_time = :t", soci::use(t);
        return JobRepository::SelectDue(s, t, 200);
    });
    ASSERT_TRUE(due_again.ok()) << due_again.status().ToString();
    auto two = statements_for(*due_again);
    ASSERT_TRUE(two.ok()) << two.status().ToString();
    EXPECT_EQ(*two, 2);
}

TEST_P(JobRepositoryTest, AdvanceScheduleIsACasThatLosesToEditsButKeepsTheVersion) {
    JobRepository jobs(db());
    auto job = jobs.Create(SampleJob());
    ASSERT_TRUE(job.ok());
    const auto t = *job->next_fire_time;
    auto advanced =
        db().Run([&](soci::session& s) { return JobRepository::AdvanceSchedule(s, job->id, 1, t, t + 1000, t); });
    ASSERT_TRUE(advanced.ok());
    EXPECT_TRUE(*advanced);
    auto after = jobs.Get(job->id);
    EXPECT_EQ(after->next_fire_time, t + 1000);
    EXPECT_EQ(after->last_fire_time, t);
    EXPECT_EQ(after->version, 1);  // a schedule advance is not a user edit

    // The same advance again: next_fire_time moved on, so the CAS fails (no double advance).
    auto again =
        db().Run([&](soci::session& s) { return JobRepository::AdvanceSchedule(s, job->id, 1, t, t + 1000, t); });
    EXPECT_FALSE(*again);

    // A user edit in between makes the master's stale CAS fail.
    Job edit = *after;
    ASSERT_TRUE(jobs.Update(edit, 1).ok());
    auto stale = db().Run(
        [&](soci::session& s) { return JobRepository::AdvanceSchedule(s, job->id, 1, t + 1000, t + 2000, t + 1000); });
    EXPECT_FALSE(*stale);

    // A job with no next time (once, already fired) can be CASed from NULL.
    Job done = SampleJob("once");
    done.next_fire_time.reset();
    auto once = jobs.Create(done);
    auto from_null = db().Run([&](soci::session& s) {
        return JobRepository::AdvanceSchedule(s, once->id, 1, std::nullopt, t, std::nullopt);
    });
    EXPECT_TRUE(*from_null);
    EXPECT_EQ(jobs.Get(once->id)->next_fire_time, t);
}

// Each shard's master sees only its jobs (id % total == index): due jobs and the earliest due.
TEST_P(JobRepositoryTest, DueJobsAndTheEarliestDueArePerShard) {
    JobRepository jobs(db());
    std::vector<std::int64_t> ids;
    for (int i = 0; i < 6; ++i) {
        Job j = SampleJob("sharded-" + std::to_string(i));
        j.next_fire_time = 1'000 + i;
        auto created = jobs.Create(j);
        ASSERT_TRUE(created.ok()) << created.status().ToString();
        ids.push_back(created->id);
    }
    for (int index = 0; index < 3; ++index) {
        const JobShard shard{.index = index, .total = 3};
        auto due = db().Run([&](soci::session& s) { return JobRepository::SelectDue(s, 10'000, 100, shard); });
        ASSERT_TRUE(due.ok()) << due.status().ToString();
        std::vector<std::int64_t> expected;
        std::optional<std::int64_t> earliest;
        for (std::size_t i = 0; i < ids.size(); ++i) {
            if (ids[i] % 3 != index) continue;
            expected.push_back(ids[i]);
            if (!earliest) earliest = 1'000 + static_cast<std::int64_t>(i);
        }
        std::vector<std::int64_t> got;
        for (const auto& j : *due) got.push_back(j.id);
        EXPECT_EQ(got, expected) << "shard " << index;
        auto first = db().Run([&](soci::session& s) { return JobRepository::EarliestDue(s, shard); });
        ASSERT_TRUE(first.ok());
        EXPECT_EQ(*first, earliest) << "shard " << index;
    }
    auto all = db().Run([](soci::session& s) { return JobRepository::SelectDue(s, 10'000, 100); });
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(all->size(), 6u);
}

// The cluster's shard count: absent until recorded, then what was written last.
TEST_P(JobRepositoryTest, TheShardCountIsRecordedAndReplaced) {
    auto none = db().Run([](soci::session& s) { return ReadShardCount(s); });
    ASSERT_TRUE(none.ok()) << none.status().ToString();
    EXPECT_EQ(*none, std::nullopt);
    ASSERT_TRUE(db().InTransaction(db::TxMode::kWrite, [](soci::session& s) { WriteShardCount(s, 6, 1); }).ok());
    ASSERT_TRUE(db().InTransaction(db::TxMode::kWrite, [](soci::session& s) { WriteShardCount(s, 6, 2); }).ok());
    EXPECT_EQ(*db().Run([](soci::session& s) { return ReadShardCount(s); }), 6);
    ASSERT_TRUE(db().InTransaction(db::TxMode::kWrite, [](soci::session& s) { WriteShardCount(s, 3, 3); }).ok());
    EXPECT_EQ(*db().Run([](soci::session& s) { return ReadShardCount(s); }), 3);
}

TEST(JobShardTest, LeaseNamesAndFilters) {
    EXPECT_EQ(ShardLeaseName("master", 0), "master");
    EXPECT_EQ(ShardLeaseName("master", 5), "master/5");
    EXPECT_EQ(ShardLeasePattern("master"), "master/%");
    EXPECT_EQ(JobShard{}.JobFilter("id"), "");
    EXPECT_EQ(JobShard{}.FollowupFilter(), "");
    EXPECT_EQ((JobShard{.index = 2, .total = 4}.JobFilter("job_id")), " AND (job_id % 4) = 2");
    EXPECT_TRUE((JobShard{.index = 2, .total = 4}.Owns(6)));
    EXPECT_FALSE((JobShard{.index = 2, .total = 4}.Owns(7)));
    EXPECT_TRUE(JobShard{}.Owns(7));
}

SCHED_DB_TEST_SUITE(JobRepositoryTest);

}  // namespace
}  // namespace sched::store
