// The view machinery: what ToJson writes, what FromJson accepts and how it names a wrong field.

#include "sched/api/view.hpp"

#include <gtest/gtest.h>

#include "sched/api/jobs.hpp"
#include "sched/api/page.hpp"
#include "sched/api/workflows.hpp"

namespace sched::api {
namespace {

JobView SomeJob() {
    JobView job;
    job.id = 7;
    job.name = "nightly";
    job.params = {{"report", "sales"}};
    job.next_fire_time = 1764160000000;
    job.paused = JobPauseView{"ops", 1764150000000, "migration"};
    return job;
}

TEST(ToJson, EveryFieldIsWrittenAnEmptyOptionalAsNullAndAWhenSetOneLeftOut) {
    const nlohmann::json j = ToJson(SomeJob());
    EXPECT_EQ(j["id"], 7);
    EXPECT_EQ(j["params"], nlohmann::json({{"report", "sales"}}));
    EXPECT_EQ(j["paused"], nlohmann::json({{"by", "ops"}, {"at", 1764150000000}, {"note", "migration"}}));
    ASSERT_TRUE(j.contains("last_fire_time"));
    EXPECT_TRUE(j["last_fire_time"].is_null());
    EXPECT_FALSE(j.contains("last_fire")) << "kWhenSet: absent when empty";
    EXPECT_EQ(j.size(), std::tuple_size_v<decltype(JobView::Fields())> - 1);

    JobView fired = SomeJob();
    fired.last_fire = LastFireView{.id = 3, .status = "succeeded", .kind = "schedule", .scheduled_time = 5};
    EXPECT_EQ(ToJson(fired)["last_fire"]["finished_at"], nullptr);
}

// A table written by SCHED_API_FIELDS: each member under its own name, in order, always present.
struct ThreeFields {
    std::int64_t count = 0;
    std::string label;
    std::optional<std::int64_t> ended_at;

    SCHED_API_FIELDS(ThreeFields, count, label, ended_at)
};

TEST(SchedApiFields, NamesEachMemberAfterItselfInOrderAlwaysPresent) {
    constexpr auto fields = ThreeFields::Fields();
    static_assert(std::tuple_size_v<decltype(fields)> == 3);
    EXPECT_EQ(std::get<0>(fields).name, "count");
    EXPECT_EQ(std::get<1>(fields).name, "label");
    EXPECT_EQ(std::get<2>(fields).name, "ended_at");
    EXPECT_EQ(std::get<0>(fields).member, &ThreeFields::count);
    EXPECT_EQ(std::get<2>(fields).member, &ThreeFields::ended_at);
    EXPECT_EQ(std::get<2>(fields).presence, Presence::kAlways);

    const nlohmann::json j = ToJson(ThreeFields{.count = 2, .label = "x"});
    EXPECT_EQ(j, nlohmann::json({{"count", 2}, {"label", "x"}, {"ended_at", nullptr}}));
    EXPECT_EQ(FromJson<ThreeFields>(nlohmann::json({{"count", 2}, {"label", "x"}})).status().message(),
              "ended_at: missing");
}

TEST(FromJson, ReadsWhatToJsonWroteAndIgnoresFieldsItDoesNotKnow) {
    nlohmann::json j = ToJson(SomeJob());
    j["added_by_a_newer_server"] = true;
    auto read = FromJson<JobView>(j);
    ASSERT_TRUE(read.ok()) << read.status().message();
    EXPECT_EQ(read->name, "nightly");
    EXPECT_EQ(read->next_fire_time, 1764160000000);
    ASSERT_TRUE(read->paused);
    EXPECT_EQ(read->paused->note, "migration");
    EXPECT_FALSE(read->last_fire);
    EXPECT_EQ(ToJson(*read), ToJson(SomeJob()));
}

TEST(FromJson, AMissingOrMistypedFieldIsNamedWithItsPath) {
    nlohmann::json j = ToJson(SomeJob());
    j.erase("version");
    EXPECT_EQ(FromJson<JobView>(j).status().message(), "version: missing");
    j = ToJson(SomeJob());
    j["next_fire_time"] = "soon";
    EXPECT_EQ(FromJson<JobView>(j).status().message(), "next_fire_time: expected an integer");
    j["next_fire_time"] = 18446744073709551615u;
    EXPECT_EQ(FromJson<JobView>(j).status().message(), "next_fire_time: expected an integer");

    Page<JobView> page;
    page.items = {SomeJob(), SomeJob()};
    nlohmann::json p = ToJson(page);
    EXPECT_TRUE(p["next_cursor"].is_null());
    p["items"][1]["paused"]["at"] = true;
    EXPECT_EQ(FromJson<Page<JobView>>(p).status().message(), "items[1].paused.at: expected an integer");
    EXPECT_EQ(FromJson<Page<JobView>>(nlohmann::json::array()).status().message(), "the answer: expected an object");
}

TEST(FromJson, ADerivedViewReadsItsBaseFieldsToo) {
    WorkflowRunDetailView run;
    run.id = 4;
    run.status = "failed";
    run.steps.push_back({.name = "load", .job_id = 12, .state = "failed", .attempts = 2});
    run.edges.push_back({.parent = "extract", .child = "load", .condition = "on-success"});
    const nlohmann::json j = ToJson(run);
    EXPECT_EQ(j["status"], "failed");
    EXPECT_EQ(j["steps"][0]["attempts"], 2);
    auto read = FromJson<WorkflowRunDetailView>(j);
    ASSERT_TRUE(read.ok()) << read.status().message();
    EXPECT_EQ(read->id, 4);
    EXPECT_EQ(read->edges[0].child, "load");
    EXPECT_EQ(ToJson(*read), j);
}

}  // namespace
}  // namespace sched::api
