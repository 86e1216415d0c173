#include "impl/job_input.hpp"

#include <gtest/gtest.h>

namespace sched::web::impl {
namespace {

nlohmann::json Body(const nlohmann::json& overrides = nlohmann::json::object()) {
    nlohmann::json body = {{"name", "nightly"},
                           {"app", "billing"},
                           {"handler", "report"},
                           {"schedule_type", "cron"},
                           {"schedule_expr", "0 * * * * ?"}};
    body.update(overrides);
    return body;
}

std::string FieldOf(const nlohmann::json& body, const model::Job* current = nullptr) {
    JobInput in;
    const auto invalid = ReadJobInput(body, current, in);
    return invalid ? invalid->field : "";
}

TEST(ReadJobInput, ACreateWithTheRequiredFieldsGetsDefaultsAndASchedule) {
    JobInput in;
    ASSERT_FALSE(ReadJobInput(Body(), nullptr, in));
    EXPECT_EQ(in.job.name, "nightly");
    EXPECT_EQ(in.job.time_zone, "UTC");
    EXPECT_EQ(in.job.routing, Routing::kRoundRobin);
    EXPECT_TRUE(in.schedule_changed);
    ASSERT_TRUE(in.schedule);
    EXPECT_EQ(in.schedule->NextFireTime(0), 60'000);
}

TEST(ReadJobInput, ManagedByIsSetOnCreateKeptWhenLeftOutAndClearedByNull) {
    JobInput in;
    ASSERT_FALSE(ReadJobInput(Body(), nullptr, in));
    EXPECT_FALSE(in.job.managed_by) << "made by hand";
    ASSERT_FALSE(ReadJobInput(Body({{"managed_by", "jobs.yaml"}}), nullptr, in));
    ASSERT_TRUE(in.job.managed_by);
    EXPECT_EQ(*in.job.managed_by, "jobs.yaml");

    model::Job current = in.job;
    current.id = 7;
    JobInput update;
    ASSERT_FALSE(ReadJobInput({{"version", 1}, {"description", "x"}}, &current, update));
    EXPECT_EQ(update.job.managed_by, std::optional<std::string>("jobs.yaml"));
    ASSERT_FALSE(ReadJobInput({{"version", 1}, {"managed_by", nullptr}}, &current, update));
    EXPECT_FALSE(update.job.managed_by);

    EXPECT_EQ(FieldOf(Body({{"managed_by", ""}})), "managed_by");
    EXPECT_EQ(FieldOf(Body({{"managed_by", 5}})), "managed_by");
    EXPECT_EQ(FieldOf(Body({{"managed_by", std::string(kMaxManagedBy + 1, 'f')}})), "managed_by");
    EXPECT_EQ(FieldOf(Body({{"managed_by", std::string(kMaxManagedBy, 'f')}})), "");
}

TEST(ReadJobInput, EachBadFieldIsNamed) {
    const nlohmann::json no_name = [] {
        auto b = Body();
        b.erase("name");
        return b;
    }();
    EXPECT_EQ(FieldOf(no_name), "name");
    EXPECT_EQ(FieldOf(Body({{"name", ""}})), "name");
    EXPECT_EQ(FieldOf(Body({{"name", std::string(kMaxName + 1, 'n')}})), "name");
    EXPECT_EQ(FieldOf(Body({{"name", std::string(kMaxName, 'n')}})), "");
    EXPECT_EQ(FieldOf(Body({{"app", std::string(kMaxApp + 1, 'a')}})), "app");
    EXPECT_EQ(FieldOf(Body({{"routing", "random-ish"}})), "routing");
    EXPECT_EQ(FieldOf(Body({{"block_strategy", "queue"}})), "block_strategy");
    EXPECT_EQ(FieldOf(Body({{"misfire_policy", "later"}})), "misfire_policy");
    EXPECT_EQ(FieldOf(Body({{"schedule_type", "hourly"}})), "schedule_type");
    EXPECT_EQ(FieldOf(Body({{"schedule_expr", "0 * 32 * * ?"}})), "schedule_expr");
    EXPECT_EQ(FieldOf(Body({{"time_zone", "Mars/Olympus"}})), "time_zone");
    EXPECT_EQ(FieldOf(Body({{"concurrency_limit", 0}})), "concurrency_limit");
    EXPECT_EQ(FieldOf(Body({{"params", std::string(kMaxParamsBytes + 1, 'p')}})), "params");
    EXPECT_EQ(FieldOf(Body({{"params", {{"x", std::string(kMaxParamsBytes, 'p')}}}})), "params");
}

TEST(ReadJobInput, AnUpdateKeepsLeftOutFieldsAndNoticesScheduleChanges) {
    JobInput created;
    ASSERT_FALSE(ReadJobInput(Body({{"description", "d"}}), nullptr, created));
    model::Job current = created.job;
    current.id = 7;

    JobInput same;
    ASSERT_FALSE(ReadJobInput({{"handler", "report2"}, {"version", 3}}, &current, same));
    EXPECT_EQ(same.job.description, "d");
    EXPECT_EQ(same.job.handler, "report2");
    EXPECT_FALSE(same.schedule_changed);
    EXPECT_EQ(same.version, 3);
    EXPECT_EQ(FieldOf({{"handler", "report2"}}, &current), "version");  // an update names the version it read

    JobInput moved;
    ASSERT_FALSE(ReadJobInput({{"time_zone", "Europe/Berlin"}, {"version", 3}}, &current, moved));
    EXPECT_TRUE(moved.schedule_changed);
}

TEST(PlanNextFire, ADisabledJobHasNoNextFireAndAnEnabledOneTheScheduleNext) {
    JobInput in;
    ASSERT_FALSE(ReadJobInput(Body({{"enabled", false}}), nullptr, in));
    in.job.next_fire_time = 123;
    ASSERT_TRUE(PlanNextFire(in, nullptr, 0).ok());
    EXPECT_FALSE(in.job.next_fire_time);

    JobInput on;
    ASSERT_FALSE(ReadJobInput(Body(), nullptr, on));
    ASSERT_TRUE(PlanNextFire(on, nullptr, 90'000).ok());
    EXPECT_EQ(on.job.next_fire_time, 120'000);
}

TEST(FieldFor, MapsRepositoryErrorsToTheFieldTheyAreAbout) {
    EXPECT_EQ(FieldFor(AlreadyExists("job exists")), "name");
    EXPECT_EQ(FieldFor(Status(Code::kAborted, "stale")), "version");
    EXPECT_EQ(FieldFor(Status(Code::kNotFound, "no job")), "id");
    EXPECT_EQ(FieldFor(InvalidArgument("end_at: is in the past")), "end_at");
    EXPECT_EQ(FieldFor(InvalidArgument("no time left")), "schedule_expr");
    EXPECT_EQ(FieldFor(Status(Code::kUnavailable, "db")), "");
}

}  // namespace
}  // namespace sched::web::impl
