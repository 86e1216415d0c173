#include "cli.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace sched::ctl {
namespace {

struct Outcome {
    int code;
    std::string out;
    std::string err;
};

// Only paths that end before any HTTP call (the process test covers the others).
Outcome Schedctl(std::vector<const char*> args) {
    args.insert(args.begin(), "schedctl");
    std::ostringstream out, err;
    const int code = RunCli(static_cast<int>(args.size()), args.data(), out, err);
    return {code, out.str(), err.str()};
}

TEST(RunCli, HelpSaysWhereTheTokenComesFromAndExits0) {
    const auto r = Schedctl({"--help"});
    EXPECT_EQ(r.code, 0);
    EXPECT_NE(r.out.find("SCHED_TOKEN"), std::string::npos);
    EXPECT_NE(r.out.find("never from a command-line"), std::string::npos);
    EXPECT_NE(r.out.find("apply -f jobs.yaml"), std::string::npos);
}

TEST(RunCli, CalendarsCommandsNeedTheirArguments) {
    auto r = Schedctl({"--server", "http://127.0.0.1:1", "calendars", "frob"});
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("calendars: expected list, get, apply or delete"), std::string::npos) << r.err;
    r = Schedctl({"--server", "http://127.0.0.1:1", "calendars", "get"});
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("calendars: missing ID or NAME"), std::string::npos) << r.err;
    r = Schedctl({"--server", "http://127.0.0.1:1", "calendars", "apply"});
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("calendars apply: -f FILE is required"), std::string::npos) << r.err;
    EXPECT_NE(Schedctl({"--help"}).out.find("calendars list"), std::string::npos);
}

TEST(RunCli, BackfillNeedsARangeAndAnIntegerParallel) {
    const auto no_range = Schedctl({"--server", "http://127.0.0.1:1", "jobs", "backfill", "7", "--from", "0"});
    EXPECT_EQ(no_range.code, 1);
    EXPECT_NE(no_range.err.find("--from and --to are required"), std::string::npos) << no_range.err;
    const auto bad_parallel = Schedctl(
        {"--server", "http://127.0.0.1:1", "jobs", "backfill", "7", "--from", "0", "--to", "60000", "--parallel", "x"});
    EXPECT_EQ(bad_parallel.code, 1);
    EXPECT_NE(bad_parallel.err.find("--parallel: expected a positive integer"), std::string::npos) << bad_parallel.err;
    EXPECT_NE(Schedctl({"--help"}).out.find("jobs backfill ID --from T --to T"), std::string::npos);
}

TEST(RunCli, RefusesATokenOnTheCommandLine) {
    for (const char* arg : {"--token", "--token=secret"}) {
        const auto r = Schedctl({arg, "jobs", "list"});
        EXPECT_EQ(r.code, 1);
        EXPECT_NE(r.err.find("--token is not accepted"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("SCHED_TOKEN"), std::string::npos) << r.err;
    }
}

TEST(RunCli, UsageErrorsExit1NamingTheProblem) {
    EXPECT_NE(Schedctl({"-o", "yaml", "jobs", "list"}).err.find("-o: expected table or json"), std::string::npos);
    EXPECT_NE(Schedctl({"--frobnicate"}).err.find("unknown option --frobnicate"), std::string::npos);
    EXPECT_NE(Schedctl({"--server"}).err.find("--server needs a value"), std::string::npos);
    const auto bad_id = Schedctl({"--server", "http://127.0.0.1:1", "jobs", "get", "12x"});
    EXPECT_EQ(bad_id.code, 1);
    EXPECT_NE(bad_id.err.find("ID: expected a positive integer, got \"12x\""), std::string::npos) << bad_id.err;
    EXPECT_NE(Schedctl({"--server", "http://127.0.0.1:1", "nope"}).err.find("unknown command \"nope\""),
              std::string::npos);
    EXPECT_NE(Schedctl({"--server", "ftp://x", "jobs", "list"}).err.find("--server: "), std::string::npos);
    EXPECT_NE(Schedctl({"--server", "http://127.0.0.1:1", "--timeout", "soon", "jobs", "list"}).err.find("--timeout"),
              std::string::npos);
    const auto missing_file = Schedctl({"--server", "http://127.0.0.1:1", "apply"});
    EXPECT_EQ(missing_file.code, 1);
    EXPECT_NE(missing_file.err.find("-f FILE is required"), std::string::npos) << missing_file.err;
    const auto missing_config = Schedctl({"--config", "/nonexistent/schedctl.yaml", "jobs", "list"});
    EXPECT_EQ(missing_config.code, 1);
    EXPECT_NE(missing_config.err.find("/nonexistent/schedctl.yaml: cannot read"), std::string::npos);
}

TEST(RunCli, AuditAndPauseNoteOptionsAreCheckedBeforeAnyCall) {
    const auto since = Schedctl({"--server", "http://127.0.0.1:1", "audit", "--since", "yesterday"});
    EXPECT_EQ(since.code, 1);
    EXPECT_NE(since.err.find("--since: expected a duration such as 24h or epoch milliseconds"), std::string::npos)
        << since.err;
    const auto limit = Schedctl({"--server", "http://127.0.0.1:1", "audit", "--limit", "many"});
    EXPECT_NE(limit.err.find("--limit: expected a positive integer"), std::string::npos) << limit.err;
    EXPECT_NE(Schedctl({"--server", "http://127.0.0.1:1", "audit", "jobs"}).err.find("audit: takes no arguments"),
              std::string::npos);
    const auto note = Schedctl({"--server", "http://127.0.0.1:1", "jobs", "resume", "3", "--note", "why"});
    EXPECT_EQ(note.code, 1);
    EXPECT_NE(note.err.find("--note: only jobs pause takes a note"), std::string::npos) << note.err;
    EXPECT_NE(Schedctl({"--help"}).out.find("jobs pause ID [--note TEXT]"), std::string::npos);
}

TEST(RunCli, WorkflowsCommandsCheckTheirArgumentsBeforeAnyCall) {
    auto r = Schedctl({"--server", "http://127.0.0.1:1", "workflows", "frob", "1"});
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(
        r.err.find("workflows: expected list, get, create, update, delete, pause, resume, trigger, runs, run or rerun"),
        std::string::npos)
        << r.err;
    r = Schedctl({"--server", "http://127.0.0.1:1", "workflows", "rerun", "7"});
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("workflows rerun: --from-step NAME is required"), std::string::npos) << r.err;
    r = Schedctl({"--server", "http://127.0.0.1:1", "workflows", "run", "x7"});
    EXPECT_NE(r.err.find("ID: expected a positive integer, got \"x7\""), std::string::npos) << r.err;
    r = Schedctl({"--server", "http://127.0.0.1:1", "workflows", "get", "3", "--params", "{}"});
    EXPECT_NE(r.err.find("--params: only workflows trigger takes params"), std::string::npos) << r.err;
    r = Schedctl({"--server", "http://127.0.0.1:1", "workflows", "trigger", "3", "--from-step", "b"});
    EXPECT_NE(r.err.find("--from-step: only workflows rerun takes a step"), std::string::npos) << r.err;
    r = Schedctl({"--server", "http://127.0.0.1:1", "workflows", "runs", "3", "--limit", "lots"});
    EXPECT_NE(r.err.find("--limit: expected a positive integer"), std::string::npos) << r.err;
    EXPECT_NE(Schedctl({"--help"}).out.find("workflows rerun RUN_ID --from-step NAME"), std::string::npos);
}

}  // namespace
}  // namespace sched::ctl
