// The executor protocol's messages: what one side writes, the other reads back unchanged, and
// every malformed field is refused by name. Both the node and the SDK use these functions, so a
// field renamed on one side fails here rather than as a silent protocol bug between processes.

#include <gtest/gtest.h>

#include "parsed_error.hpp"
#include "sched/protocol/registry.hpp"
#include "sched/protocol/run.hpp"
#include "sched/protocol/run_batch.hpp"
#include "sched/protocol/run_result.hpp"
#include "sched/protocol/trace_context.hpp"

namespace sched::protocol {
namespace {

using nlohmann::json;
using testing::Field;
using testing::WithField;

RunRequest SampleRun() {
    RunRequest run;
    run.fire_id = 7;
    run.job_id = 3;
    run.attempt = 2;
    run.epoch = 12;
    run.handler = "report";
    run.params = {{"day", "2026-11-26"}, {"parts", {1, 2}}};
    run.scheduled_ms = 1'764'000'000'000;
    run.timeout_ms = 60'000;
    run.shard_index = 1;
    run.shard_total = 4;
    run.block_strategy = BlockStrategy::kCoverEarly;
    run.callback_url = "http://10.0.0.5:7071";
    run.start_in_ms = 140;
    run.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    run.tracestate = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";
    return run;
}

TEST(RunRequestTest, WhatTheNodeWritesTheSdkReadsBackUnchanged) {
    const RunRequest run = SampleRun();
    const json wire = ToJson(run);
    EXPECT_EQ(wire["block_strategy"], "cover-early");
    const auto back = ParseRunRequest(wire);
    ASSERT_TRUE(back.ok()) << back.error->message;
    EXPECT_EQ(back.value, run);
}

TEST(RunRequestTest, TheWireNamesAreTheDocumentedOnes) {
    RunRequest run = SampleRun();
    run.callback_url.clear();
    run.start_in_ms = 0;  // absent when 0: an executor before the field never sees it
    run.traceparent.clear();
    run.tracestate = "vendor=x";  // never without its traceparent
    std::vector<std::string> keys;
    const json wire = ToJson(run);
    for (const auto& [key, value] : wire.items()) keys.push_back(key);
    EXPECT_EQ(keys, (std::vector<std::string>{"attempt", "block_strategy", "epoch", "fire_id", "handler", "job_id",
                                              "params", "scheduled_ms", "shard_index", "shard_total", "timeout_ms"}));
}

// A tracestate travels only with its traceparent (a node before the field sends neither; one
// without a traceparent is dropped on reading, as the trigger route ignores it).
TEST(RunRequestTest, ATracestateIsForwardedOnlyWithItsTraceparent) {
    const RunRequest run = SampleRun();
    EXPECT_EQ(ToJson(run)["tracestate"], "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7");
    json orphan = ToJson(run);
    orphan.erase("traceparent");
    const auto read = ParseRunRequest(orphan);
    ASSERT_TRUE(read.ok()) << read.error->message;
    EXPECT_EQ(read.value.tracestate, "");
    json old_node = ToJson(run);
    old_node.erase("tracestate");
    EXPECT_EQ(ParseRunRequest(old_node).value.tracestate, "");
}

// The node writes a run's text once and stamps start_in_ms into it just before it sends the
// batch: the stamped text reads back as the run with that field.
TEST(RunRequestTest, ARunStampedWithStartInReadsBackWithIt) {
    RunRequest run = SampleRun();
    run.start_in_ms = 0;
    const std::string stamped = WithStartIn(ToJson(run).dump(), 1'234);
    const auto back = ParseRunRequest(json::parse(stamped));
    ASSERT_TRUE(back.ok()) << back.error->message;
    run.start_in_ms = 1'234;
    EXPECT_EQ(back.value, run);
}

TEST(RunRequestTest, OptionalFieldsTakeTheirDefaultsAndUnknownOnesAreIgnored) {
    const json wire = {{"fire_id", 1}, {"job_id", 2},    {"attempt", 0},
                       {"epoch", 5},   {"handler", "h"}, {"from_a_newer_node", true}};
    const auto run = ParseRunRequest(wire);
    ASSERT_TRUE(run.ok()) << run.error->message;
    EXPECT_EQ(run.value.block_strategy, BlockStrategy::kSerial);
    EXPECT_EQ(run.value.shard_total, 1);
    EXPECT_EQ(run.value.params, json::object());
    EXPECT_EQ(run.value.start_in_ms, 0);
}

TEST(RunRequestTest, EachBadFieldIsNamedWithTheBatchPrefix) {
    const auto bad = [](const char* key, json value) {
        return Field(ParseRunRequest(WithField(ToJson(SampleRun()), key, std::move(value)), "runs[3]"));
    };
    EXPECT_EQ(bad("fire_id", -1), "runs[3].fire_id");
    EXPECT_EQ(bad("epoch", "12"), "runs[3].epoch");
    EXPECT_EQ(bad("handler", ""), "runs[3].handler");
    EXPECT_EQ(bad("timeout_ms", kMaxTimeoutMs + 1), "runs[3].timeout_ms");
    EXPECT_EQ(bad("shard_index", 4), "runs[3].shard_index");  // not below shard_total
    EXPECT_EQ(bad("block_strategy", "newest-wins"), "runs[3].block_strategy");
    EXPECT_EQ(bad("callback_url", "not a url"), "runs[3].callback_url");
    EXPECT_EQ(bad("start_in_ms", -1), "runs[3].start_in_ms");
    EXPECT_EQ(bad("start_in_ms", kMaxStartInMs + 1), "runs[3].start_in_ms");
    EXPECT_EQ(bad("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"), "runs[3].traceparent");
    EXPECT_EQ(bad("traceparent", 7), "runs[3].traceparent");
    EXPECT_EQ(bad("tracestate", "Upper=x"), "runs[3].tracestate");
    EXPECT_EQ(bad("tracestate", "k=" + std::string(kMaxTraceStateLength, 'v')), "runs[3].tracestate");
    EXPECT_EQ(bad("tracestate", 7), "runs[3].tracestate");
    EXPECT_EQ(Field(ParseRunRequest(json::array(), "runs[3]")), "runs[3]");
    json missing = ToJson(SampleRun());
    missing.erase("attempt");
    EXPECT_EQ(Field(ParseRunRequest(missing)), "attempt");
}

TEST(BlockStrategyTest, EveryValueTravelsByItsVocabularyNameAndAnOtherNameIsRefusedAsBefore) {
    for (const auto s : {BlockStrategy::kSerial, BlockStrategy::kDiscardLater, BlockStrategy::kCoverEarly,
                         BlockStrategy::kSkip, BlockStrategy::kBufferOne, BlockStrategy::kBufferAll,
                         BlockStrategy::kCancelOther, BlockStrategy::kTerminateOther, BlockStrategy::kAllowAll}) {
        RunRequest run = SampleRun();
        run.block_strategy = ExecutorStrategy(s);
        run.overlap = s;
        const json wire = ToJson(run);
        EXPECT_EQ(wire["block_strategy"], BlockStrategyName(ExecutorStrategy(s)));
        EXPECT_EQ(wire["overlap"], BlockStrategyName(s));
        const auto back = ParseRunRequest(wire);
        EXPECT_EQ(back.value.block_strategy, ExecutorStrategy(s));
        EXPECT_EQ(back.value.overlap, s);
    }
    EXPECT_FALSE(ToJson(SampleRun()).contains("overlap")) << "absent unless the cluster enforced it";
    EXPECT_FALSE(ParseRunRequest(ToJson(SampleRun())).value.overlap);
    json wire = ToJson(SampleRun());
    wire["block_strategy"] = "Serial";
    const auto refused = ParseRunRequest(wire);
    ASSERT_TRUE(refused.error);
    EXPECT_EQ(refused.error->field, "block_strategy");
    EXPECT_EQ(refused.error->message,
              "block_strategy: expected one of serial, discard-later, cover-early, skip, buffer-one, buffer-all, "
              "cancel-other, terminate-other, allow-all, got \"Serial\"");
    for (const json& bad : {json("everything"), json(3), json(std::string(100000, 'a'))}) {
        json with = ToJson(SampleRun());
        with["overlap"] = bad;
        const auto no = ParseRunRequest(with);
        ASSERT_TRUE(no.error) << bad.dump().substr(0, 40);
        EXPECT_EQ(no.error->field, "overlap");
    }
}

TEST(BlockStrategyTest, TheOldNamesAreAliasesOfTheOverlapPolicies) {
    EXPECT_EQ(OverlapPolicy(BlockStrategy::kSerial), BlockStrategy::kBufferAll);
    EXPECT_EQ(OverlapPolicy(BlockStrategy::kDiscardLater), BlockStrategy::kSkip);
    EXPECT_EQ(OverlapPolicy(BlockStrategy::kCoverEarly), BlockStrategy::kTerminateOther);
    EXPECT_EQ(OverlapPolicy(BlockStrategy::kBufferOne), BlockStrategy::kBufferOne);
    EXPECT_EQ(ExecutorStrategy(BlockStrategy::kAllowAll), BlockStrategy::kSerial);
    EXPECT_EQ(ExecutorStrategy(BlockStrategy::kCancelOther), BlockStrategy::kCoverEarly);
    EXPECT_EQ(ExecutorStrategy(BlockStrategy::kSkip), BlockStrategy::kDiscardLater);
}

TEST(KillRequestTest, RoundTripAndRange) {
    const auto back = ParseKillRequest(ToJson(KillRequest{.fire_id = 9}));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back.value.fire_id, 9);
    EXPECT_EQ(Field(ParseKillRequest(json{{"fire_id", -3}})), "fire_id");
    EXPECT_EQ(Field(ParseKillRequest(json{{"fire", 3}})), "fire_id");
}

TEST(KillRequestTest, AReasonTravelsOnlyWhenItIsNotAPlainKill) {
    // A kill by request is the body an executor older than the reason always read.
    EXPECT_EQ(ToJson(KillRequest{.fire_id = 9}), (json{{"fire_id", 9}}));
    const KillRequest timeout{.fire_id = 9, .reason = KillReason::kTimeout};
    EXPECT_EQ(ToJson(timeout), (json{{"fire_id", 9}, {"reason", "timeout"}}));
    const auto back = ParseKillRequest(ToJson(timeout));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back.value, timeout);
    EXPECT_EQ(ParseKillRequest(json{{"fire_id", 9}}).value.reason, KillReason::kRequest);
    EXPECT_EQ(ParseKillRequest(json{{"fire_id", 9}, {"reason", nullptr}}).value.reason, KillReason::kRequest);
}

TEST(KillRequestTest, AnUnknownReasonStillKillsAndAHostileOneIsRefusedByName) {
    // A newer node's reason: read leniently, the fire still stops.
    const auto newer = ParseKillRequest(json{{"fire_id", 9}, {"reason", "drain"}, {"by", "operator"}});
    ASSERT_TRUE(newer.ok());
    EXPECT_EQ(newer.value.reason, KillReason::kRequest);
    EXPECT_EQ(Field(ParseKillRequest(json{{"fire_id", 9}, {"reason", 1}})), "reason");
    EXPECT_EQ(Field(ParseKillRequest(json{{"fire_id", 9}, {"reason", json::array({"timeout"})}})), "reason");
    EXPECT_EQ(Field(ParseKillRequest(json{{"fire_id", 9}, {"reason", std::string(kMaxKillReasonLength + 1, 't')}})),
              "reason");
    EXPECT_TRUE(ParseKillRequest(json{{"fire_id", 9}, {"reason", std::string(kMaxKillReasonLength, 't')}}).ok());
}

RunResult SampleResult() {
    RunResult r;
    r.fire_id = 7;
    r.attempt = 1;
    r.epoch = 12;
    r.outcome = RunOutcome::kTimeout;
    r.code = "deadline_exceeded";
    r.message = "timed out after 60000 ms";
    r.started_ms = 1'764'000'000'012;
    r.finished_ms = 1'764'000'060'012;
    r.address = "10.0.0.9:9100";
    r.log = "line 1\nline 2";
    r.log_truncated_bytes = 40;
    return r;
}

TEST(RunResultTest, WhatTheSdkWritesTheWebReadsBackUnchanged) {
    const RunResult r = SampleResult();
    const auto back = ParseRunResult(ToJson(r), "[0]", /*require_fencing=*/true);
    ASSERT_TRUE(back.ok()) << back.error->message;
    EXPECT_EQ(back.value, r);
    // An older SDK's item: no epoch, no address, no log.
    RunResult old = r;
    old.epoch.reset();
    old.address.reset();
    old.log.reset();
    old.log_truncated_bytes = 0;
    const json wire = ToJson(old);
    EXPECT_FALSE(wire.contains("epoch"));
    EXPECT_FALSE(wire.contains("log_truncated_bytes"));
    const auto lenient = ParseRunResult(wire, "[0]", false);
    ASSERT_TRUE(lenient.ok());
    EXPECT_EQ(lenient.value, old);
    // From an app-scoped token the fencing fields are required.
    EXPECT_EQ(Field(ParseRunResult(wire, "[0]", true)), "[0].epoch");
    EXPECT_FALSE(wire.contains("traceparent")) << "absent unless the node advertised it";
    // A newer SDK's item to a node that advertised result-traceparent.
    RunResult traced = r;
    traced.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const auto with_trace = ParseRunResult(ToJson(traced), "[0]", true);
    ASSERT_TRUE(with_trace.ok()) << with_trace.error->message;
    EXPECT_EQ(with_trace.value, traced);
}

TEST(RunResultTest, UnknownFieldsAndBadValuesAreRefusedByName) {
    const auto bad = [](const char* key, json value) {
        return Field(ParseRunResult(WithField(ToJson(SampleResult()), key, std::move(value)), "[4]", true));
    };
    EXPECT_EQ(bad("epoc", 12), "[4].epoc");
    EXPECT_EQ(bad("status", "done"), "[4].status");
    EXPECT_EQ(bad("fire_id", 0), "[4].fire_id");
    EXPECT_EQ(bad("code", std::string(kMaxResultCodeChars + 1, 'x')), "[4].code");
    EXPECT_EQ(bad("address", "no-port"), "[4].address");
    EXPECT_EQ(bad("log", std::string(kMaxResultLogBytes + 1, 'x')), "[4].log");
    EXPECT_EQ(bad("log_truncated_bytes", -1), "[4].log_truncated_bytes");
    EXPECT_EQ(bad("traceparent", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"), "[4].traceparent");
    EXPECT_EQ(bad("traceparent", 7), "[4].traceparent");
    EXPECT_EQ(Field(ParseRunResult(json{{"fire_id", 1}, {"attempt", 0}}, "[0]", false)), "[0].status");
    json done = ToJson(SampleResult());
    done["status"] = "done";
    EXPECT_EQ(ParseRunResult(done, "[4]", true).error->message,
              "[4].status: expected one of succeeded, failed, timeout, killed, got \"done\"");
}

TEST(RunOutcomeTest, EveryValueHasOneNameAndBack) {
    for (const auto o : {RunOutcome::kSucceeded, RunOutcome::kFailed, RunOutcome::kTimeout, RunOutcome::kKilled}) {
        EXPECT_EQ(ParseRunOutcome(Name(o)), o);
    }
    EXPECT_FALSE(ParseRunOutcome("lost"));  // the cluster's own verdict, never an executor's
}

TEST(HeartbeatTest, RoundTripAndStrictFields) {
    const Heartbeat beat{
        .app = "billing", .address = "10.0.0.9:9100", .handlers = {"report", "sync"}, .capacity = 16, .running = 2};
    const auto back = ParseHeartbeat(ToJson(beat));
    ASSERT_TRUE(back.ok()) << back.error->message;
    EXPECT_EQ(back.value, beat);

    const auto bad = [&](const char* key, json value) {
        return Field(ParseHeartbeat(WithField(ToJson(beat), key, std::move(value))));
    };
    EXPECT_EQ(bad("epoch", 3), "epoch");  // /v1/beat's extra field is not a heartbeat's
    EXPECT_EQ(bad("address", "10.0.0.9:0"), "address");
    EXPECT_EQ(bad("address", std::string(300, 'a') + ":1"), "address");
    EXPECT_EQ(bad("capacity", kMaxCapacity + 1), "capacity");
    EXPECT_EQ(bad("handlers", json::array({"ok", 3})), "handlers[1]");
    EXPECT_EQ(bad("handlers", json::array({std::string(kMaxHandlerNameBytes + 1, 'h')})), "handlers");
    EXPECT_EQ(bad("handlers", json(std::vector<std::string>(kMaxHandlers + 1, "h"))), "handlers");
}

TEST(DeregisterTest, RoundTripAndStrictFields) {
    const Deregister d{.app = "billing", .address = "10.0.0.9:9100"};
    const auto back = ParseDeregister(ToJson(d));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back.value, d);
    EXPECT_EQ(Field(ParseDeregister(json{{"app", "a"}, {"address", "h:1"}, {"x", 1}})), "x");
    EXPECT_EQ(Field(ParseDeregister(json{{"app", "a"}})), "address");
}

}  // namespace
}  // namespace sched::protocol
