#include <gtest/gtest.h>

#include "sched/model/workflow.hpp"

namespace sched::model {

namespace {

std::vector<WorkflowStep> Steps(std::initializer_list<const char*> names) {
    std::vector<WorkflowStep> out;
    std::int64_t job = 1;
    for (const char* n : names) out.push_back({n, job++});
    return out;
}

WorkflowEdge Edge(const char* parent, const char* child, EdgeCondition c = EdgeCondition::kOnSuccess) {
    return {parent, child, c};
}

// The refusal's field (WorkflowErrorField) and the message, for one assertion on both.
std::pair<std::string, std::string> Refusal(const Status& s) {
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
    return {WorkflowErrorField(s), s.message()};
}

std::vector<std::string> Names(const WorkflowGraph& g, const std::vector<std::size_t>& indices) {
    std::vector<std::string> out;
    for (const auto i : indices) out.push_back(g.step(i).name);
    return out;
}

TEST(ValidateWorkflowGraph, ADiamondPasses) {
    const auto steps = Steps({"a", "b", "c", "d"});
    const std::vector<WorkflowEdge> edges = {Edge("a", "b"), Edge("a", "c"), Edge("b", "d"), Edge("c", "d")};
    EXPECT_TRUE(ValidateWorkflowGraph(steps, edges).ok());
    EXPECT_TRUE(ValidateWorkflowGraph(Steps({"only"}), {}).ok());
}

TEST(ValidateWorkflowGraph, CyclesAreNamedWithTheirPath) {
    auto self = Refusal(ValidateWorkflowGraph(Steps({"a", "b"}), {Edge("a", "b"), Edge("b", "b")}));
    EXPECT_EQ(self.first, "edges[1].child");
    EXPECT_NE(self.second.find("cycle b -> b"), std::string::npos) << self.second;

    auto two = Refusal(ValidateWorkflowGraph(Steps({"a", "b"}), {Edge("a", "b"), Edge("b", "a")}));
    EXPECT_EQ(two.first, "edges");
    EXPECT_EQ(two.second, "edges: cycle a -> b -> a");

    // The cycle is reached from a root outside it: the path names only the steps on the cycle.
    auto three = Refusal(ValidateWorkflowGraph(
        Steps({"start", "a", "b", "c"}),
        {Edge("start", "a"), Edge("a", "b"), Edge("b", "c"), Edge("c", "a", EdgeCondition::kAlways)}));
    EXPECT_EQ(three.first, "edges");
    EXPECT_EQ(three.second, "edges: cycle a -> b -> c -> a");

    // No root at all (every step has a parent) is a cycle too.
    auto closed =
        Refusal(ValidateWorkflowGraph(Steps({"x", "y", "z"}), {Edge("z", "x"), Edge("x", "y"), Edge("y", "z")}));
    EXPECT_EQ(closed.second, "edges: cycle x -> y -> z -> x");
}

TEST(ValidateWorkflowGraph, EachRefusalNamesItsField) {
    EXPECT_EQ(Refusal(ValidateWorkflowGraph({}, {})).first, "steps");
    EXPECT_EQ(Refusal(ValidateWorkflowGraph(Steps({"a", ""}), {})).first, "steps[1].name");
    EXPECT_EQ(Refusal(ValidateWorkflowGraph(Steps({"a", "b c"}), {})).first, "steps[1].name");
    EXPECT_EQ(Refusal(ValidateWorkflowGraph(Steps({"a", "b/c"}), {})).first, "steps[1].name");
    EXPECT_TRUE(ValidateWorkflowGraph(Steps({"Load_1.v-2"}), {}).ok());

    auto duplicate = Refusal(ValidateWorkflowGraph(Steps({"a", "b", "a"}), {}));
    EXPECT_EQ(duplicate.first, "steps[2].name");
    EXPECT_NE(duplicate.second.find("steps[0].name"), std::string::npos) << duplicate.second;

    auto no_job = Steps({"a", "b"});
    no_job[1].job_id = 0;
    EXPECT_EQ(Refusal(ValidateWorkflowGraph(no_job, {})).first, "steps[1].job_id");

    const auto steps = Steps({"a", "b", "c"});
    auto parent = Refusal(ValidateWorkflowGraph(steps, {Edge("a", "b"), Edge("zz", "c")}));
    EXPECT_EQ(parent.first, "edges[1].parent");
    EXPECT_NE(parent.second.find("\"zz\""), std::string::npos) << parent.second;
    EXPECT_EQ(Refusal(ValidateWorkflowGraph(steps, {Edge("a", "b"), Edge("b", "c"), Edge("c", "nope")})).first,
              "edges[2].child");

    // The same pair twice is refused whatever the conditions.
    auto twice = Refusal(ValidateWorkflowGraph(
        steps, {Edge("a", "b"), Edge("b", "c"), Edge("a", "c"), Edge("a", "b", EdgeCondition::kOnFailure)}));
    EXPECT_EQ(twice.first, "edges[3]");
    EXPECT_NE(twice.second.find("edges[0]"), std::string::npos) << twice.second;
}

TEST(ValidateWorkflowGraph, BoundsAreChecked) {
    std::vector<WorkflowStep> many;
    for (std::size_t i = 0; i < kMaxWorkflowSteps; ++i) many.push_back({"s" + std::to_string(i), 1});
    EXPECT_TRUE(ValidateWorkflowGraph(many, {}).ok());
    many.push_back({"one-more", 1});
    auto too_many = Refusal(ValidateWorkflowGraph(many, {}));
    EXPECT_EQ(too_many.first, "steps");
    EXPECT_NE(too_many.second.find("at most 64"), std::string::npos);

    // 257 edges: refused on the count before any of them is looked at.
    std::vector<WorkflowEdge> edges(kMaxWorkflowEdges + 1, Edge("s0", "s1"));
    EXPECT_EQ(Refusal(ValidateWorkflowGraph(Steps({"s0", "s1"}), edges)).first, "edges");

    EXPECT_TRUE(ValidateWorkflowGraph({{std::string(kMaxStepNameLength, 'n'), 1}}, {}).ok());
    EXPECT_EQ(Refusal(ValidateWorkflowGraph({{std::string(kMaxStepNameLength + 1, 'n'), 1}}, {})).first,
              "steps[0].name");

    // Hostile names are shown cut and printable.
    auto shown = Refusal(ValidateWorkflowGraph(Steps({"a"}), {Edge(std::string(500, '\x01').c_str(), "a")}));
    EXPECT_EQ(shown.first, "edges[0].parent");
    EXPECT_LT(shown.second.size(), 120u);
    EXPECT_EQ(shown.second.find('\x01'), std::string::npos);
}

TEST(ValidateWorkflow, ChecksTheWorkflowFieldsAndTheGraph) {
    Workflow w;
    w.name = "nightly";
    w.steps = Steps({"a"});
    EXPECT_TRUE(ValidateWorkflow(w).ok());
    auto bad = w;
    bad.name = "";
    EXPECT_EQ(Refusal(ValidateWorkflow(bad)).first, "name");
    bad = w;
    bad.max_concurrent_runs = 0;
    EXPECT_EQ(Refusal(ValidateWorkflow(bad)).first, "max_concurrent_runs");
    bad.max_concurrent_runs = kMaxConcurrentRuns + 1;
    EXPECT_EQ(Refusal(ValidateWorkflow(bad)).first, "max_concurrent_runs");
    bad = w;
    bad.run_timeout_ms = -1;
    EXPECT_EQ(Refusal(ValidateWorkflow(bad)).first, "run_timeout_ms");
    bad = w;
    bad.description = std::string(kMaxWorkflowDescriptionLength + 1, 'd');
    EXPECT_EQ(Refusal(ValidateWorkflow(bad)).first, "description");
    bad = w;
    bad.edges = {Edge("a", "a")};
    EXPECT_EQ(Refusal(ValidateWorkflow(bad)).first, "edges[0].child");
}

TEST(WorkflowErrorField, IsTheFieldPrefixOfValidationErrorsOnly) {
    EXPECT_EQ(WorkflowErrorField(InvalidArgument("steps[2].job_id: job 9 does not exist")), "steps[2].job_id");
    EXPECT_EQ(WorkflowErrorField(FailedPrecondition("id: workflow \"w\" has 1 running run(s)")), "id");
    EXPECT_EQ(WorkflowErrorField(NotFound("steps: x")), "");
    EXPECT_EQ(WorkflowErrorField(InvalidArgument("no field here")), "");
}

TEST(WorkflowGraph, AnswersThePlannersQuestions) {
    // e -> a -> {b, c} -> d, f alone; given out of order so that step order and topology differ.
    const auto steps = Steps({"d", "c", "b", "a", "e", "f"});
    auto g = WorkflowGraph::Make(steps, {Edge("a", "b"), Edge("a", "c", EdgeCondition::kOnFailure), Edge("b", "d"),
                                         Edge("c", "d", EdgeCondition::kAlways), Edge("e", "a")});
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_EQ(g->size(), 6u);
    EXPECT_EQ(Names(*g, g->Roots()), (std::vector<std::string>{"e", "f"}));
    EXPECT_EQ(Names(*g, g->TopologicalOrder()), (std::vector<std::string>{"e", "a", "c", "b", "d", "f"}));

    const auto d = g->IndexOf("d");
    ASSERT_TRUE(d.has_value());
    ASSERT_EQ(g->Parents(*d).size(), 2u);
    EXPECT_EQ(g->step(g->Parents(*d)[0].step).name, "b");
    EXPECT_EQ(g->Parents(*d)[0].condition, EdgeCondition::kOnSuccess);
    EXPECT_EQ(g->step(g->Parents(*d)[1].step).name, "c");
    EXPECT_EQ(g->Parents(*d)[1].condition, EdgeCondition::kAlways);
    EXPECT_TRUE(g->Children(*d).empty());

    const auto a = *g->IndexOf("a");
    ASSERT_EQ(g->Children(a).size(), 2u);
    EXPECT_EQ(g->Children(a)[1].condition, EdgeCondition::kOnFailure);
    EXPECT_EQ(Names(*g, g->Descendants(a)), (std::vector<std::string>{"a", "c", "b", "d"}));
    EXPECT_EQ(Names(*g, g->Descendants(*g->IndexOf("f"))), std::vector<std::string>{"f"});
    EXPECT_FALSE(g->IndexOf("zz").has_value());

    EXPECT_EQ(WorkflowGraph::Make(steps, {Edge("a", "e"), Edge("e", "a")}).status().code(), Code::kInvalidArgument);
}

TEST(EdgeCondition, NamesRoundTrip) {
    for (auto c : {EdgeCondition::kOnSuccess, EdgeCondition::kOnFailure, EdgeCondition::kAlways}) {
        EXPECT_EQ(kEdgeConditionNames.Parse(kEdgeConditionNames.Name(c)), c);
    }
    EXPECT_EQ(kEdgeConditionNames.Name(EdgeCondition::kOnFailure), "on-failure");
    EXPECT_FALSE(kEdgeConditionNames.Parse("On-Success").has_value());
    EXPECT_EQ(kWorkflowRunStatusNames.Name(WorkflowRunStatus::kTimedOut), "timed-out");
}

}  // namespace
}  // namespace sched::model
