// `schedctl cluster status` as text, from the API's answer.

#include <gtest/gtest.h>

#include "commands.hpp"

namespace sched::ctl {
namespace {

api::ClusterView Answer(const nlohmann::json& body) {
    auto view = api::FromJson<api::ClusterView>(body);
    EXPECT_TRUE(view.ok()) << view.status().ToString();
    return view.ok() ? *view : api::ClusterView{};
}

nlohmann::json Node(const std::string& id, const nlohmann::json& led) {
    return {{"node_id", id},       {"address", "10.0.0.1:7070"}, {"state", "running"},    {"capacity", 1000},
            {"started_at_ms", 0},  {"last_heartbeat_ms", 0},     {"heartbeat_age_ms", 0}, {"alive", true},
            {"leader", id == "a"}, {"shards_led", led}};
}

nlohmann::json Shard(int index, const std::string& lease, const nlohmann::json& leader, std::int64_t epoch,
                     const nlohmann::json& since) {
    return {{"shard", index},      {"lease", lease},
            {"leader", leader},    {"epoch", epoch},
            {"held_since", since}, {"lease_remaining_ms", leader.is_null() ? nlohmann::json() : nlohmann::json(9000)}};
}

TEST(ClusterStatusText, ListsEveryShardsLeaderEpochAndSinceWhenTheClusterIsSharded) {
    const nlohmann::json body = {{"leader", "a"},
                                 {"epoch", 4},
                                 {"lease_age_ms", 100},
                                 {"lease_remaining_ms", 9000},
                                 {"node_ttl_ms", 15000},
                                 {"now", 1764151260000},
                                 {"nodes", {Node("a", {0, 2})}},
                                 {"shard_count", 3},
                                 {"shards",
                                  {Shard(0, "master", "a", 4, 1764151200000), Shard(1, "master/1", nullptr, 7, nullptr),
                                   Shard(2, "master/2", "a", 12, 1764151230000)}}};
    EXPECT_EQ(ClusterStatusText(Answer(body)),
              "leader: a  epoch: 4  lease remaining ms: 9000\n"
              "shards: 3\n"
              "SHARD  LEADER  EPOCH  SINCE\n"
              "0      a       4      2025-11-26T10:00:00Z\n"
              "1      -       7      -\n"
              "2      a       12     2025-11-26T10:00:30Z\n"
              "NODE  ADDRESS        STATE    ALIVE  STARTED               LAST HEARTBEAT\n"
              "a     10.0.0.1:7070  running  true   1970-01-01T00:00:00Z  1970-01-01T00:00:00Z\n");
}

TEST(ClusterStatusText, ShowsNoShardsTableForOneShard) {
    const nlohmann::json body = {{"leader", nullptr},
                                 {"epoch", 2},
                                 {"lease_age_ms", nullptr},
                                 {"lease_remaining_ms", nullptr},
                                 {"node_ttl_ms", 15000},
                                 {"now", 1764151260000},
                                 {"nodes", nlohmann::json::array()},
                                 {"shard_count", 1},
                                 {"shards", {Shard(0, "master", nullptr, 2, nullptr)}}};
    EXPECT_EQ(ClusterStatusText(Answer(body)),
              "leader: -  epoch: 2  lease remaining ms: -\n"
              "NODE  ADDRESS  STATE  ALIVE  STARTED  LAST HEARTBEAT\n");
}

TEST(ClusterStatusText, AHostileLeaderNameCannotDriveTheTerminal) {
    const nlohmann::json body = {
        {"leader", "a"},
        {"epoch", 1},
        {"lease_age_ms", 0},
        {"lease_remaining_ms", 1},
        {"node_ttl_ms", 15000},
        {"now", 0},
        {"nodes", nlohmann::json::array()},
        {"shard_count", 2},
        {"shards", {Shard(0, "master", "a", 1, nullptr), Shard(1, "master/1", "b\x1b[31m\n", 1, nullptr)}}};
    const std::string text = ClusterStatusText(Answer(body));
    EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
    EXPECT_NE(text.find("1      b?[31m?  1      -\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace sched::ctl
