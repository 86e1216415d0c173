// The peer notification: what the master writes the receiving node reads back unchanged, and
// every malformed body is refused naming its field.

#include "sched/protocol/fires_notice.hpp"

#include <gtest/gtest.h>

namespace sched::protocol {
namespace {

using nlohmann::json;

TEST(FiresNoticeTest, RoundTripsInTheDocumentedShape) {
    const FiresNotice notice{.epoch = 12, .fire_ids = {7, 8}};
    EXPECT_EQ(ToJson(notice), (json{{"epoch", 12}, {"fire_ids", {7, 8}}}));
    auto parsed = ParseFiresNotice(ToJson(notice));
    ASSERT_TRUE(parsed.ok()) << parsed.error->message;
    EXPECT_EQ(parsed.value, notice);
}

TEST(FiresNoticeTest, MalformedBodiesNameTheField) {
    json too_many = {{"epoch", 1}, {"fire_ids", json::array()}};
    for (std::size_t i = 0; i <= kMaxNoticeFires; ++i) too_many["fire_ids"].push_back(1);
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
    };
    for (const auto& [body, field] : cases) {
        auto parsed = ParseFiresNotice(body);
        ASSERT_FALSE(parsed.ok()) << body.dump().substr(0, 80);
        EXPECT_EQ(parsed.error->code, Code::kInvalidArgument);
        EXPECT_EQ(parsed.error->field, field) << body.dump().substr(0, 80);
        EXPECT_EQ(parsed.error->message.rfind(field + ": ", 0), 0u) << parsed.error->message;
    }
}

}  // namespace
}  // namespace sched::protocol
