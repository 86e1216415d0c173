#include "sched/store/calendar.hpp"

#include "created_record.hpp"
#include "sched/store/job.hpp"
#include "store_test_base.hpp"

namespace sched::store {

using model::Job;
namespace {

class CalendarRepositoryTest : public StoreTest {};

CalendarRecord Holidays() {
    CalendarRecord c;
    c.name = "holidays";
    c.description = "public holidays";
    c.time_zone = "Europe/Berlin";
    c.excluded_dates = {"2026-12-25", "2026-12-31..2027-01-01"};
    c.excluded_weekdays = {"sat", "sun"};
    c.excluded_times = {"22:00-06:00"};
    return c;
}

// A job of billing's at 09:00 every day.
Job DailyReport(const std::string& name) {
    Job job;
    job.name = name;
    job.app = "billing";
    job.handler = "report";
    job.schedule_expr = "0 0 9 * * ?";
    return job;
}

TEST_P(CalendarRepositoryTest, CreateGetListRoundTripEveryField) {
    CalendarRepository calendars(db());
    auto created = calendars.Create(Holidays());
    ASSERT_NO_FATAL_FAILURE(ExpectCreated(created));
    auto got = calendars.Get(created->id);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->name, "holidays");
    EXPECT_EQ(got->description, "public holidays");
    EXPECT_EQ(got->time_zone, "Europe/Berlin");
    EXPECT_EQ(got->excluded_dates, Holidays().excluded_dates);
    EXPECT_EQ(got->excluded_weekdays, Holidays().excluded_weekdays);
    EXPECT_EQ(got->excluded_times, Holidays().excluded_times);
    EXPECT_EQ(calendars.GetByName("holidays")->id, created->id);
    EXPECT_EQ(calendars.GetByName("nope").status().code(), Code::kNotFound);

    CalendarRecord empty;
    empty.name = "none";
    auto second = calendars.Create(empty);
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    EXPECT_TRUE(second->excluded_dates.empty());
    auto listed = calendars.List(0, 10);
    ASSERT_TRUE(listed.ok());
    ASSERT_EQ(listed->size(), 2u);
    EXPECT_EQ(listed->at(1).name, "none");
    EXPECT_EQ(calendars.List(created->id, 10)->size(), 1u);
    EXPECT_EQ(*calendars.Count(), 2);
    auto versions = db().Run([](soci::session& s) { return CalendarRepository::ListVersions(s); });
    ASSERT_TRUE(versions.ok());
    ASSERT_EQ(versions->size(), 2u);
    EXPECT_EQ(versions->at(0).name, "holidays");
    EXPECT_EQ(versions->at(0).version, 1);
}

TEST_P(CalendarRepositoryTest, DuplicateNameIsAlreadyExists) {
    CalendarRepository calendars(db());
    ASSERT_TRUE(calendars.Create(Holidays()).ok());
    EXPECT_EQ(calendars.Create(Holidays()).status().code(), Code::kAlreadyExists);
}

TEST_P(CalendarRepositoryTest, UpdateNeedsTheVersionItRead) {
    CalendarRepository calendars(db());
    auto created = calendars.Create(Holidays());
    ASSERT_TRUE(created.ok());
    CalendarRecord edited = *created;
    edited.excluded_times = {"12:00-13:00"};
    edited.excluded_weekdays.clear();
    auto updated = calendars.Update(edited, 1);
    ASSERT_TRUE(updated.ok()) << updated.status().ToString();
    EXPECT_EQ(updated->version, 2);
    EXPECT_EQ(updated->excluded_times, std::vector<std::string>{"12:00-13:00"});
    EXPECT_TRUE(updated->excluded_weekdays.empty());
    auto stale = calendars.Update(edited, 1);
    EXPECT_EQ(stale.status().code(), Code::kAborted);
    EXPECT_NE(stale.status().message().find("version 2"), std::string::npos);
    edited.id = 9999;
    EXPECT_EQ(calendars.Update(edited, 1).status().code(), Code::kNotFound);
}

TEST_P(CalendarRepositoryTest, DeleteIsRefusedWhileJobsReferToIt) {
    CalendarRepository calendars(db());
    auto created = calendars.Create(Holidays());
    ASSERT_TRUE(created.ok());
    JobRepository jobs(db());
    Job job = DailyReport("report");
    job.calendar = "holidays";
    auto stored = jobs.Create(job);
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    EXPECT_EQ(stored->calendar, "holidays");
    Status refused = calendars.Delete(created->id);
    EXPECT_EQ(refused.code(), Code::kFailedPrecondition);
    EXPECT_NE(refused.message().find("used by jobs: report"), std::string::npos) << refused.message();
    ASSERT_TRUE(calendars.Get(created->id).ok());

    ASSERT_TRUE(jobs.Delete(stored->id).ok());
    EXPECT_TRUE(calendars.Delete(created->id).ok());
    EXPECT_EQ(calendars.Get(created->id).status().code(), Code::kNotFound);
    EXPECT_EQ(calendars.Delete(created->id).code(), Code::kNotFound);
}

TEST_P(CalendarRepositoryTest, JobBoundsRoundTripAndRecordRunsCompletes) {
    JobRepository jobs(db());
    Job job = DailyReport("bounded");
    job.start_at = 1'700'000'000'000;
    job.end_at = 1'800'000'000'000;
    job.max_runs = 3;
    job.next_fire_time = 1'700'000'100'000;
    auto stored = jobs.Create(job);
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    EXPECT_EQ(stored->start_at, job.start_at);
    EXPECT_EQ(stored->end_at, job.end_at);
    EXPECT_EQ(stored->max_runs, 3);
    EXPECT_EQ(stored->planned_runs, 0);
    EXPECT_EQ(stored->completed_at, std::nullopt);

    (void)db().Run([&](soci::session& s) {
        JobRepository::RecordRuns(s, {{.id = stored->id, .runs = 2}});
        return 0;
    });
    auto after = jobs.Get(stored->id);
    EXPECT_EQ(after->planned_runs, 2);
    EXPECT_EQ(after->next_fire_time, job.next_fire_time);
    EXPECT_EQ(after->completed_at, std::nullopt);
    (void)db().Run([&](soci::session& s) {
        JobRepository::RecordRuns(
            s, {{.id = stored->id, .runs = 1, .completed_at = 1'700'000'200'000, .completed_reason = "max_runs"}});
        return 0;
    });
    auto done = jobs.Get(stored->id);
    EXPECT_EQ(done->planned_runs, 3);
    EXPECT_EQ(done->completed_at, 1'700'000'200'000);
    EXPECT_EQ(done->completed_reason, "max_runs");
    EXPECT_EQ(done->next_fire_time, std::nullopt);
    EXPECT_TRUE(done->enabled);
    EXPECT_EQ(done->version, stored->version);  // the master's bookkeeping is no edit

    Job reopened = *done;
    reopened.max_runs = 5;
    reopened.completed_at.reset();
    reopened.completed_reason.clear();
    reopened.next_fire_time = 1'700'000'300'000;
    auto updated = jobs.Update(reopened, done->version);
    ASSERT_TRUE(updated.ok()) << updated.status().ToString();
    EXPECT_EQ(updated->completed_at, std::nullopt);
    EXPECT_EQ(updated->max_runs, 5);
    EXPECT_EQ(updated->planned_runs, 3);
}

SCHED_DB_TEST_SUITE(CalendarRepositoryTest);

}  // namespace
}  // namespace sched::store
