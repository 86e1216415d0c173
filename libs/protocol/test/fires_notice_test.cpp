// The peer notification: what the master writes the receiving node reads back unchanged, and
// every malformed body is refused naming its field.

#include "sched/protocol/fires_notice.hpp"

#include <span>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "sched/http/error_body.hpp"

namespace sched::protocol {
namespace {

using nlohmann::json;

// Each body is refused as an invalid argument naming its field, the message starting with it.
template <typename Parse>
void ExpectRefused(Parse parse, std::span<const std::pair<json, std::string>> cases) {
    for (const auto& [body, field] : cases) {
        auto parsed = parse(body);
        ASSERT_FALSE(parsed.ok()) << body.dump().substr(0, 80);
        EXPECT_EQ(parsed.error->code, Code::kInvalidArgument);
        EXPECT_EQ(parsed.error->field, field) << body.dump().substr(0, 80);
        EXPECT_EQ(parsed.error->message.rfind(field + ": ", 0), 0u) << parsed.error->message;
    }
}

TEST(FiresNoticeTest, RoundTripsInTheDocumentedShape) {
    const FiresNotice notice{.epoch = 12, .fire_ids = {7, 8}};
    EXPECT_EQ(ToJson(notice), (json{{"epoch", 12}, {"fire_ids", {7, 8}}}));
    auto parsed = ParseFiresNotice(ToJson(notice));
    ASSERT_TRUE(parsed.ok()) << parsed.error->message;
    EXPECT_EQ(parsed.value, notice);
    EXPECT_FALSE(NoticedFires(parsed.value)) << "an older master's notice has no due times";
}

TEST(FiresNoticeTest, CarriesEachFiresDueTimeBesideItsId) {
    const std::vector<NoticedFire> fires = {{.id = 7, .due_at = 1000}, {.id = 8, .due_at = 999}};
    const FiresNotice notice = MakeFiresNotice(12, fires);
    EXPECT_EQ(ToJson(notice), (json{{"epoch", 12}, {"fire_ids", {7, 8}}, {"due_at", {1000, 999}}}));
    auto parsed = ParseFiresNotice(ToJson(notice));
    ASSERT_TRUE(parsed.ok()) << parsed.error->message;
    EXPECT_EQ(parsed.value, notice);
    EXPECT_EQ(NoticedFires(parsed.value), fires);
}

TEST(FiresNoticeTest, NamesTheFiresThatMayFillASmallGroup) {
    const std::vector<NoticedFire> fires = {
        {.id = 7, .due_at = 1000, .fill = true}, {.id = 8, .due_at = 999}, {.id = 9, .due_at = 1001, .fill = true}};
    const FiresNotice notice = MakeFiresNotice(12, fires);
    EXPECT_EQ(ToJson(notice),
              (json{{"epoch", 12}, {"fire_ids", {7, 8, 9}}, {"due_at", {1000, 999, 1001}}, {"fill", {7, 9}}}));
    auto parsed = ParseFiresNotice(ToJson(notice));
    ASSERT_TRUE(parsed.ok()) << parsed.error->message;
    EXPECT_EQ(NoticedFires(parsed.value), fires);
    FiresNotice without = notice;
    without.fill.clear();
    EXPECT_FALSE(ToJson(without).contains("fill")) << "absent when empty: what older nodes read";
    EXPECT_FALSE(NoticedFires(without)->front().fill);
}

TEST(FiresNoticeTest, NamesTheFiresPlannedAlreadyClaimed) {
    const std::vector<NoticedFire> fires = {{.id = 7, .due_at = 1000, .planned = true},
                                            {.id = 8, .due_at = 999, .fill = true, .planned = true},
                                            {.id = 9, .due_at = 1001}};
    const FiresNotice notice = MakeFiresNotice(12, fires);
    EXPECT_EQ(ToJson(notice), (json{{"epoch", 12},
                                    {"fire_ids", {7, 8, 9}},
                                    {"due_at", {1000, 999, 1001}},
                                    {"fill", {8}},
                                    {"planned", {7, 8}}}));
    auto parsed = ParseFiresNotice(ToJson(notice));
    ASSERT_TRUE(parsed.ok()) << parsed.error->message;
    EXPECT_EQ(NoticedFires(parsed.value), fires);
    FiresNotice without = notice;
    without.planned.clear();
    EXPECT_FALSE(ToJson(without).contains("planned")) << "absent when empty: what older nodes read";
    const auto refusal = http::ErrorBody("invalid_argument", "planned: unknown field", "planned").dump();
    EXPECT_TRUE(RefusedPlanned(400, refusal));
    EXPECT_FALSE(RefusedFill(400, refusal));
}

// A node older than due_at answers a notice with it as it answers any unknown field; only that
// answer makes the master send the ids alone.
TEST(FiresNoticeTest, AnOlderNodesRefusalOfDueAtIsRecognised) {
    const auto refusal = [](const std::string& field) {
        return http::ErrorBody("invalid_argument", field + ": unknown field", field).dump();
    };
    EXPECT_TRUE(RefusedDueAt(400, refusal("due_at")));
    EXPECT_FALSE(RefusedDueAt(400, refusal("fire_ids")));
    EXPECT_FALSE(RefusedDueAt(409, refusal("due_at")));
    EXPECT_FALSE(RefusedDueAt(400, "not json"));
    EXPECT_FALSE(RefusedDueAt(400, ""));
    EXPECT_TRUE(RefusedFill(400, refusal("fill")));
    EXPECT_FALSE(RefusedFill(400, refusal("due_at")));
    EXPECT_FALSE(RefusedFill(409, refusal("fill")));
}

TEST(FiresNoticeTest, MalformedBodiesNameTheField) {
    json too_many = {{"epoch", 1}, {"fire_ids", json::array()}};
    for (std::size_t i = 0; i <= kMaxNoticeFires; ++i) too_many["fire_ids"].push_back(1);
    json too_many_times = {{"epoch", 1}, {"fire_ids", {1}}, {"due_at", json::array()}};
    for (std::size_t i = 0; i <= kMaxNoticeFires; ++i) too_many_times["due_at"].push_back(1);
    json too_many_fill = {{"epoch", 1}, {"fire_ids", {1}}, {"fill", json::array()}};
    for (std::size_t i = 0; i <= kMaxNoticeFires; ++i) too_many_fill["fill"].push_back(1);
    json too_many_planned = {{"epoch", 1}, {"fire_ids", {1}}, {"planned", json::array()}};
    for (std::size_t i = 0; i <= kMaxNoticeFires; ++i) too_many_planned["planned"].push_back(1);
    const std::pair<json, std::string> cases[] = {
        {json::parse(R"({"epoch": 1, "fire_ids": [1], "priority": 9})"), "priority"},
        {json::parse(R"({"epoch": 1, "fire_ids": "1"})"), "fire_ids"},
        {json::parse(R"({"epoch": 1, "fire_ids": [1, "2"]})"), "fire_ids"},
        {json::parse(R"({"epoch": 1, "fire_ids": [-4]})"), "fire_ids"},
        {json::parse(R"({"epoch": 0, "fire_ids": [1]})"), "epoch"},
        {json::parse(R"({"epoch": "1", "fire_ids": [1]})"), "epoch"},
        {json::parse(R"({"fire_ids": [1]})"), "epoch"},
        {json::parse(R"({"epoch": 1})"), "fire_ids"},
        {json::parse(R"([1, 2])"), "body"},
        {too_many, "fire_ids"},
        {json{{std::string(200, 'k'), 1}}, std::string(64, 'k') + "..."},
        {json::parse(R"({"epoch": 1, "fire_ids": [1, 2], "due_at": [5]})"), "due_at"},
        {json::parse(R"({"epoch": 1, "fire_ids": [1], "due_at": [5, 6]})"), "due_at"},
        {json::parse(R"({"epoch": 1, "fire_ids": [1], "due_at": [-5]})"), "due_at"},
        {json::parse(R"({"epoch": 1, "fire_ids": [1], "due_at": ["5"]})"), "due_at"},
        {json::parse(R"({"epoch": 1, "fire_ids": [1], "due_at": 5})"), "due_at"},
        {too_many_times, "due_at"},
        {json::parse(R"({"epoch": 1, "fire_ids": [1], "fill": 1})"), "fill"},
        {json::parse(R"({"epoch": 1, "fire_ids": [1], "fill": [0]})"), "fill"},
        {json::parse(R"({"epoch": 1, "fire_ids": [1], "fill": [true]})"), "fill"},
        {too_many_fill, "fill"},
        {json::parse(R"({"epoch": 1, "fire_ids": [1], "planned": 1})"), "planned"},
        {json::parse(R"({"epoch": 1, "fire_ids": [1], "planned": [0]})"), "planned"},
        {too_many_planned, "planned"},
    };
    ExpectRefused(ParseFiresNotice, cases);
}

TEST(RunsEndedTest, RoundTripsInTheDocumentedShape) {
    const RunsEnded ended{.fire_ids = {7, 8}};
    EXPECT_EQ(ToJson(ended), (json{{"fire_ids", {7, 8}}}));
    auto parsed = ParseRunsEnded(ToJson(ended));
    ASSERT_TRUE(parsed.ok()) << parsed.error->message;
    EXPECT_EQ(parsed.value, ended);
}

TEST(RunsEndedTest, MalformedBodiesNameTheField) {
    json too_many = {{"fire_ids", json::array()}};
    for (std::size_t i = 0; i <= kMaxNoticeFires; ++i) too_many["fire_ids"].push_back(1);
    const std::pair<json, std::string> cases[] = {
        {json::parse(R"({"fire_ids": [1], "epoch": 9})"), "epoch"},
        {json::parse(R"({"fire_ids": "1"})"), "fire_ids"},
        {json::parse(R"({"fire_ids": [1, 2.5]})"), "fire_ids"},
        {json::parse(R"({"fire_ids": [0]})"), "fire_ids"},
        {json::parse(R"({})"), "fire_ids"},
        {json::parse(R"("fire_ids")"), "body"},
        {too_many, "fire_ids"},
        {json{{std::string(200, 'k'), 1}}, std::string(64, 'k') + "..."},
    };
    ExpectRefused(ParseRunsEnded, cases);
}

}  // namespace
}  // namespace sched::protocol
