#include "sched/protocol/trace_context.hpp"

#include <gtest/gtest.h>

namespace sched::protocol {
namespace {

TEST(FireTrace, IsDerivedFromTheFireAndItsAttempt) {
    const TraceContext a = FireTrace(42, 7, 1764000000000, 0);
    EXPECT_EQ(a.trace_id.size(), 32u);
    EXPECT_EQ(a.span_id.size(), 16u);
    EXPECT_EQ(a, FireTrace(42, 7, 1764000000000, 0));  // any node derives the same
    const TraceContext retry = FireTrace(42, 7, 1764000000000, 1);
    EXPECT_EQ(retry.trace_id, a.trace_id);  // one trace per fire
    EXPECT_NE(retry.span_id, a.span_id);    // one span per attempt
    EXPECT_NE(FireTrace(43, 7, 1764000000000, 0).trace_id, a.trace_id);
    EXPECT_NE(FireTrace(42, 7, 1764000000001, 0).trace_id, a.trace_id);
    EXPECT_EQ(a.TraceParent(), "00-" + a.trace_id + "-" + a.span_id + "-01");
    EXPECT_EQ(ParseTraceParent(a.TraceParent()), a);
}

TEST(ParseTraceParent, ReadsTheSpecificationsExample) {
    const auto t = ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    EXPECT_EQ(t->span_id, "00f067aa0ba902b7");
    EXPECT_TRUE(t->sampled);
    const auto unsampled = ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
    ASSERT_TRUE(unsampled);
    EXPECT_FALSE(unsampled->sampled);
    // A later version's extra fields are ignored; its first 55 characters read as version 00.
    EXPECT_TRUE(ParseTraceParent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next"));
}

TEST(ParseTraceParent, RefusesWhatTheSpecificationRefuses) {
    for (const char* bad : {
             "",
             "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",       // no flags
             "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",    // upper case
             "00-00000000000000000000000000000000-00f067aa0ba902b7-01",    // zero trace id
             "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",    // zero span id
             "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // forbidden version
             "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  // version 00 is 55 long
             "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // separator
             "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",    // not hex
             "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",   // later version, no dash
         }) {
        EXPECT_FALSE(ParseTraceParent(bad)) << bad;
    }
}

TEST(CheckTraceState, AcceptsTheSpecificationsListsAndNamesWhatIsWrong) {
    EXPECT_FALSE(CheckTraceState("congo=t61rcWkgMzE"));
    EXPECT_FALSE(CheckTraceState("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"));
    EXPECT_FALSE(CheckTraceState(" rojo=1 , ,fw529a3039@dt=x"));  // spaces and empty members
    EXPECT_TRUE(CheckTraceState("Rojo=1"));                       // upper-case key
    EXPECT_TRUE(CheckTraceState("rojo"));                         // no value
    EXPECT_TRUE(CheckTraceState("rojo="));
    EXPECT_TRUE(CheckTraceState("rojo=a=b"));
    EXPECT_TRUE(CheckTraceState("a@b@c=1"));
    EXPECT_TRUE(CheckTraceState("rojo=\x01"));
    EXPECT_TRUE(CheckTraceState("k=" + std::string(kMaxTraceStateLength, 'v')));
    std::string many;
    for (int i = 0; i < 33; ++i) many += (i ? ",k" : "k") + std::to_string(i) + "=v";
    EXPECT_EQ(CheckTraceState(many), "at most 32 list members");
}

}  // namespace
}  // namespace sched::protocol
