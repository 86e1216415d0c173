// The executor's answers: what the SDK writes, the node reads back unchanged, in the documented
// shapes (docs/protocol.md), and the node reads what an older or foreign executor answers
// without mistaking it for an acceptance.

#include "sched/protocol/run_answer.hpp"

#include "sched/protocol/run.hpp"

#include <gtest/gtest.h>

namespace sched::protocol {
namespace {

using nlohmann::json;

TEST(RunAnswerTest, AcceptedAndDuplicateAreTheDocumentedBodies) {
    EXPECT_EQ(ToJson(RunAnswer::Accepted(7, RunState::kRunning)),
              (json{{"accepted", true}, {"fire_id", 7}, {"state", "running"}}));
    EXPECT_EQ(ToJson(RunAnswer::Accepted(7, RunState::kQueued)),
              (json{{"accepted", true}, {"fire_id", 7}, {"state", "queued"}}));
    EXPECT_EQ(ToJson(RunAnswer::Duplicate(7)), (json{{"accepted", true}, {"duplicate", true}, {"fire_id", 7}}));
}

TEST(RunAnswerTest, ARefusalIsTheUniformErrorBodyWithItsStatus) {
    const RunAnswer stale = RunAnswer::Refused(http::ApiError{Code::kAborted, "epoch 3 < 5", "runs[2].epoch"});
    EXPECT_EQ(stale.status, 409);
    EXPECT_FALSE(stale.accepted());
    EXPECT_EQ(stale.field(), "runs[2].epoch");
    EXPECT_EQ(ToJson(stale),
              (json{{"error", {{"code", "aborted"}, {"message", "epoch 3 < 5"}, {"field", "runs[2].epoch"}}}}));
    const RunAnswer full = RunAnswer::Refused(http::ApiError{Code::kResourceExhausted, "no capacity", ""});
    EXPECT_EQ(full.status, 429);
    EXPECT_EQ(ToJson(full)["error"]["field"], nullptr);
}

TEST(RunAnswerTest, WhatTheExecutorWritesTheNodeReadsBack) {
    for (const RunAnswer& answer :
         {RunAnswer::Accepted(7, RunState::kRunning), RunAnswer::Accepted(8, RunState::kQueued),
          RunAnswer::Duplicate(9), RunAnswer::Refused(http::ApiError{Code::kNotFound, "no handler \"x\"", "handler"}),
          RunAnswer::Refused(http::ApiError{Code::kUnavailable, "the executor is stopping", ""})}) {
        EXPECT_EQ(ReadRunAnswer(answer.status, ToJson(answer)), answer) << ToJson(answer).dump();
    }
}

TEST(RunAnswerTest, ARefusalWithoutTheErrorShapeIsStillARefusal) {
    const RunAnswer proxy = ReadRunAnswer(502, json("bad gateway"));
    EXPECT_FALSE(proxy.accepted());
    EXPECT_EQ(proxy.status, 502);
    EXPECT_EQ(proxy.field(), "");
    const RunAnswer odd = ReadRunAnswer(409, json{{"error", {{"field", 5}}}});
    EXPECT_FALSE(odd.accepted());
    EXPECT_EQ(odd.field(), "");
}

TEST(RunAnswerTest, TheBatchBodyCarriesEachStatusInOrder) {
    const std::vector<RunAnswer> answers = {
        RunAnswer::Accepted(7, RunState::kRunning),
        RunAnswer::Refused(http::ApiError{Code::kAborted, "busy", "runs[1].block_strategy"})};
    const json body = ToBatchJson(answers);
    ASSERT_EQ(body["results"].size(), 2u);
    EXPECT_EQ(body["results"][0]["status"], 202);
    EXPECT_EQ(body["results"][1]["status"], 409);
    EXPECT_EQ(body["results"][1]["error"]["field"], "runs[1].block_strategy");
    const auto back = ReadBatchAnswer(body, 2);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, answers);
}

TEST(RunAnswerTest, ABatchBodyOfTheWrongShapeIsNotReadAsAnswers) {
    const json one = ToBatchJson({RunAnswer::Accepted(7, RunState::kRunning)});
    EXPECT_FALSE(ReadBatchAnswer(one, 2).has_value()) << "one result for two runs";
    EXPECT_FALSE(ReadBatchAnswer(json{{"results", json::array({json{{"accepted", true}}})}}, 1).has_value())
        << "an item without its status";
    EXPECT_FALSE(ReadBatchAnswer(json{{"results", json::array({7})}}, 1).has_value());
    EXPECT_FALSE(ReadBatchAnswer(json::array(), 0).has_value());
    EXPECT_FALSE(ReadBatchAnswer(json{{"results", "x"}}, 1).has_value());
}

TEST(KillAnswerTest, TheDocumentedBody) {
    EXPECT_EQ(ToJson(KillAnswer{.fire_id = 7, .state = RunState::kQueued}),
              (json{{"fire_id", 7}, {"state", "queued"}}));
    EXPECT_EQ(ToJson(KillAnswer{.fire_id = 7, .state = RunState::kRunning, .timeout_in_ms = 1500}),
              (json{{"fire_id", 7}, {"state", "running"}, {"timeout_in_ms", 1500}}));
}

TEST(KillAnswerTest, WhatTheExecutorWritesTheNodeReadsBack) {
    for (const KillAnswer& answer : {KillAnswer{.fire_id = 7, .state = RunState::kQueued},
                                     KillAnswer{.fire_id = 7, .state = RunState::kRunning, .timeout_in_ms = 0},
                                     KillAnswer{.fire_id = 7, .state = RunState::kQueued, .timeout_in_ms = 2000}}) {
        const auto back = ReadKillAnswer(ToJson(answer));
        ASSERT_TRUE(back.ok()) << back.error->message;
        EXPECT_EQ(back.value, answer);
    }
    // An older executor's answer has no timeout_in_ms; a newer one may say more.
    const auto older = ReadKillAnswer(json{{"fire_id", 7}, {"state", "running"}, {"note", "x"}});
    ASSERT_TRUE(older.ok());
    EXPECT_FALSE(older.value.timeout_in_ms);
}

TEST(KillAnswerTest, AMalformedAnswerIsRefusedByName) {
    const auto field = [](const json& body) {
        const auto read = ReadKillAnswer(body);
        return read.ok() ? std::string() : read.error->field;
    };
    EXPECT_EQ(field(json{{"state", "running"}}), "fire_id");
    EXPECT_EQ(field(json{{"fire_id", 7}, {"state", "gone"}}), "state");
    EXPECT_EQ(field(json{{"fire_id", 7}, {"state", "running"}, {"timeout_in_ms", -1}}), "timeout_in_ms");
    EXPECT_EQ(field(json{{"fire_id", 7}, {"state", "running"}, {"timeout_in_ms", "5"}}), "timeout_in_ms");
    EXPECT_EQ(field(json{{"fire_id", 7}, {"state", "running"}, {"timeout_in_ms", kMaxTimeoutMs + 1}}), "timeout_in_ms");
    EXPECT_EQ(field(json::array()), "body");
}

TEST(IdleBeatTest, RoundTripAndRange) {
    const auto back = ParseIdleBeatRequest(ToJson(IdleBeatRequest{.job_id = 3}));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back.value.job_id, 3);
    ASSERT_FALSE(ParseIdleBeatRequest(json{{"job_id", -1}}).ok());
    EXPECT_EQ(ParseIdleBeatRequest(json{{"job_id", -1}}).error->field, "job_id");
    EXPECT_EQ(ParseIdleBeatRequest(json{{"job", 3}}).error->field, "job_id");
    EXPECT_EQ(ToJson(IdleBeatAnswer{.job_id = 3}), (json{{"job_id", 3}, {"idle", true}}));
}

TEST(ErrorBodyTest, WrittenOnceReadBack) {
    const json body = http::ErrorBody("not_found", "no such job", "id");
    EXPECT_EQ(body, (json{{"error", {{"code", "not_found"}, {"message", "no such job"}, {"field", "id"}}}}));
    const auto back = http::ParseErrorBody(body);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->field, "id");
    EXPECT_EQ(back->Canonical(), Code::kNotFound);
    EXPECT_EQ(http::ParseErrorBody(http::ErrorBody("payload_too_large", "x", ""))->Canonical(), std::nullopt);
    EXPECT_EQ(http::ParseErrorBody(http::ErrorBody("ok", "x", ""))->Canonical(), std::nullopt);
    EXPECT_FALSE(http::ParseErrorBody(json{{"message", "x"}}).has_value());
    EXPECT_FALSE(http::ParseErrorBody(json("text")).has_value());
}

}  // namespace
}  // namespace sched::protocol
