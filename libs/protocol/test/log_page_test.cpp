// GET /v1/log's page and GET /v1/beat's answer (sched/protocol/log_page.hpp, registry.hpp): the
// executor writes them, the web module and the nodes read them; documented bodies, round trips,
// and every bad field named.

#include <gtest/gtest.h>

#include "parsed_error.hpp"
#include "sched/protocol/log_page.hpp"
#include "sched/protocol/registry.hpp"
#include "sched/protocol/run_batch.hpp"

namespace sched::protocol {
namespace {

using nlohmann::json;
using testing::Field;
using testing::WithField;

TEST(LogPageTest, DocumentedBodyAndRoundTrip) {
    const auto doc = ReadLogPage(
        json::parse(R"({"fire_id": 7, "from_line": 0, "to_line": 2, "lines": ["a", ""], "finished": true})"));
    ASSERT_TRUE(doc.ok()) << doc.error->message;
    const LogPage want{.fire_id = 7, .from_line = 0, .to_line = 2, .lines = {"a", ""}, .finished = true};
    EXPECT_EQ(doc.value, want);
    EXPECT_EQ(ReadLogPage(ToJson(want)).value, want);
    const LogPage empty{.fire_id = 3, .from_line = 5, .to_line = 5, .lines = {}, .finished = false};
    const auto back = ReadLogPage(ToJson(empty));
    ASSERT_TRUE(back.ok()) << back.error->message;
    EXPECT_EQ(back.value, empty);
    json more = ToJson(want);
    more["executor_address"] = "10.0.0.9:9100";  // lenient about fields it does not know
    EXPECT_EQ(ReadLogPage(more).value, want);
}

TEST(LogPageTest, EachBadFieldIsNamedAndPagesAreBounded) {
    const LogPage page{.fire_id = 7, .from_line = 1, .to_line = 3, .lines = {"b", "c"}, .finished = false};
    const auto bad = [&](const char* key, json value) {
        return Field(ReadLogPage(WithField(ToJson(page), key, std::move(value))));
    };
    const json absent(json::value_t::discarded);
    EXPECT_EQ(bad("fire_id", absent), "fire_id");
    EXPECT_EQ(bad("fire_id", -1), "fire_id");
    EXPECT_EQ(bad("from_line", "1"), "from_line");
    EXPECT_EQ(bad("from_line", -1), "from_line");
    EXPECT_EQ(bad("to_line", absent), "to_line");
    EXPECT_EQ(bad("to_line", 4), "to_line");  // two lines from line 1 end at 3
    EXPECT_EQ(bad("lines", absent), "lines");
    EXPECT_EQ(bad("lines", "b\nc"), "lines");
    EXPECT_EQ(bad("lines", json::array({"b", 3})), "lines[1]");
    EXPECT_EQ(bad("finished", "yes"), "finished");
    EXPECT_EQ(bad("finished", absent), "");
    json huge = ToJson(page);
    huge["lines"] = std::vector<std::string>(kMaxLogPageLines + 1, "x");
    huge["to_line"] = 1 + static_cast<std::int64_t>(kMaxLogPageLines) + 1;
    EXPECT_EQ(Field(ReadLogPage(huge)), "lines");
    EXPECT_FALSE(ReadLogPage(json::array()).ok());
}

TEST(BeatAnswerTest, DocumentedBodyRoundTripAndBadFields) {
    const auto doc = ReadBeatAnswer(json::parse(R"({"app": "billing", "address": "10.0.0.9:9100",
        "handlers": ["report"], "capacity": 16, "running": 2, "epoch": 12})"));
    ASSERT_TRUE(doc.ok()) << doc.error->message;
    const BeatAnswer want{.heartbeat = {.app = "billing",
                                        .address = "10.0.0.9:9100",
                                        .handlers = {"report"},
                                        .capacity = 16,
                                        .running = 2},
                          .epoch = 12};
    EXPECT_EQ(doc.value, want);
    EXPECT_EQ(ToJson(want).at("epoch"), 12);
    EXPECT_EQ(ReadBeatAnswer(ToJson(want)).value, want);
    // The heartbeat itself never carries the epoch.
    EXPECT_FALSE(ToJson(want.heartbeat).contains("epoch"));

    const auto bad = [&](const char* key, json value) {
        return Field(ReadBeatAnswer(WithField(ToJson(want), key, std::move(value))));
    };
    EXPECT_EQ(bad("epoch", -1), "epoch");
    EXPECT_EQ(bad("epoch", "12"), "epoch");
    EXPECT_EQ(bad("running", -1), "running");
    EXPECT_EQ(bad("address", "nowhere"), "address");
    EXPECT_EQ(bad("extra", 1), "extra");
    json before = ToJson(want);
    before.erase("epoch");
    const auto old = ReadBeatAnswer(before);
    ASSERT_TRUE(old.ok()) << old.error->message;
    EXPECT_EQ(old.value.epoch, 0);
}

TEST(RunsBatchBodyTest, WrapsTheJoinedRunsUnderTheRunsField) {
    const json body = json::parse(RunsBatchBody(R"({"fire_id": 1},{"fire_id": 2})"));
    ASSERT_TRUE(body.contains(std::string(kRunsField)));
    EXPECT_EQ(body.size(), 1u);
    EXPECT_EQ(body.at(std::string(kRunsField)), json::parse(R"([{"fire_id": 1}, {"fire_id": 2}])"));
}

}  // namespace
}  // namespace sched::protocol
