#include "apply.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <vector>

namespace sched::ctl {
namespace {

struct Recorded {
    http::Method method;
    std::string path;
    std::optional<nlohmann::json> body;
};

ApiReply Reply(int status, const std::string& body) {
    ApiReply r;
    r.status = status;
    r.body = body;
    r.json = nlohmann::json::parse(body);
    return r;
}

Plan ThreeChanges() {
    Plan plan;
    plan.changes.push_back({ChangeKind::kCreate, "new", 0, 0, {}, {{"name", "new"}}});
    plan.changes.push_back({ChangeKind::kUnchanged, "same", 3, 1, {}, nullptr});
    plan.changes.push_back({ChangeKind::kUpdate, "edited", 7, 4, {{"retry_max", 0, 1}}, {{"version", 4}}});
    plan.changes.push_back({ChangeKind::kDelete, "old", 9, 0, {}, nullptr});
    return plan;
}

TEST(ApplyPlan, MakesOnlyTheChangesWithTheVersionRead) {
    std::vector<Recorded> calls;
    std::ostringstream out, err;
    const int failures = ApplyPlan(
        ThreeChanges(),
        [&](http::Method m, const std::string& path, const std::optional<nlohmann::json>& body) -> Result<ApiReply> {
            calls.push_back({m, path, body});
            return Reply(m == http::Method::kPost ? 201 : 200, "{}");
        },
        out, err);
    EXPECT_EQ(failures, 0);
    ASSERT_EQ(calls.size(), 3u);
    EXPECT_EQ(calls[0].method, http::Method::kPost);
    EXPECT_EQ(calls[0].path, "/api/v1/jobs");
    EXPECT_EQ(calls[1].method, http::Method::kPut);
    EXPECT_EQ(calls[1].path, "/api/v1/jobs/7");
    EXPECT_EQ((*calls[1].body)["version"], 4);
    EXPECT_EQ(calls[2].method, http::Method::kDelete);
    EXPECT_EQ(calls[2].path, "/api/v1/jobs/9");
    EXPECT_EQ(out.str(), "new: created\nedited: updated\nold: deleted\n");
    EXPECT_EQ(err.str(), "");
}

TEST(ApplyPlan, AConflictIsReportedNotRetriedAndTheRestStillRuns) {
    int puts = 0;
    std::ostringstream out, err;
    const int failures = ApplyPlan(
        ThreeChanges(),
        [&](http::Method m, const std::string&, const std::optional<nlohmann::json>&) -> Result<ApiReply> {
            if (m == http::Method::kPut) {
                ++puts;
                return Reply(409, R"({"error":{"code":"aborted","message":"version 4 is stale","field":"version"}})");
            }
            return Reply(200, "{}");
        },
        out, err);
    EXPECT_EQ(failures, 1);
    EXPECT_EQ(puts, 1);
    EXPECT_EQ(out.str(), "new: created\nold: deleted\n");
    EXPECT_EQ(err.str(),
              "schedctl: edited: not updated: the job changed since it was read (version 4): HTTP 409 aborted: "
              "version 4 is stale (field: version); run diff again\n");
}

TEST(ApplyPlan, ATransportFailureStopsAndCountsWhatWasNotDone) {
    int calls = 0;
    std::ostringstream out, err;
    const int failures = ApplyPlan(
        ThreeChanges(),
        [&](http::Method, const std::string&, const std::optional<nlohmann::json>&) -> Result<ApiReply> {
            ++calls;
            return Status(Code::kUnavailable, "cannot reach http://h:1/api/v1/jobs: refused");
        },
        out, err);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(failures, 3);
    EXPECT_NE(err.str().find("cannot reach http://h:1/api/v1/jobs"), std::string::npos) << err.str();
}

TEST(DescribeError, ReadsTheApiErrorBodyOrFallsBackToTheStatus) {
    EXPECT_EQ(DescribeError(Reply(400, R"({"error":{"code":"invalid_argument","message":"bad","field":"name"}})")),
              "HTTP 400 invalid_argument: bad (field: name)");
    ApiReply plain;
    plain.status = 502;
    plain.body = "Bad Gateway\n\x1b[31m";
    EXPECT_EQ(DescribeError(plain), "HTTP 502: Bad Gateway??[31m");
}

}  // namespace
}  // namespace sched::ctl
