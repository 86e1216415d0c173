#include "cli.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
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

// schedctl with `args` fails with exit code 1, saying each of `said` on stderr.
void ExpectRefused(std::vector<const char*> args, std::initializer_list<std::string_view> said) {
    const auto r = Schedctl(std::move(args));
    EXPECT_EQ(r.code, 1);
    for (const auto part : said) EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
}

TEST(RunCli, HelpSaysWhereTheTokenComesFromAndExits0) {
    const auto r = Schedctl({"--help"});
    EXPECT_EQ(r.code, 0);
    EXPECT_NE(r.out.find("SCHED_TOKEN"), std::string::npos);
    EXPECT_NE(r.out.find("never from a command-line"), std::string::npos);
    EXPECT_NE(r.out.find("apply -f jobs.yaml"), std::string::npos);
}

TEST(RunCli, CalendarsCommandsNeedTheirArguments) {
    ExpectRefused({"--server", "http://127.0.0.1:1", "calendars", "frob"},
                  {"calendars: expected list, get, apply or delete"});
    ExpectRefused({"--server", "http://127.0.0.1:1", "calendars", "get"}, {"calendars: missing ID or NAME"});
    ExpectRefused({"--server", "http://127.0.0.1:1", "calendars", "apply"}, {"calendars apply: -f FILE is required"});
    EXPECT_NE(Schedctl({"--help"}).out.find("calendars list"), std::string::npos);
}

TEST(RunCli, BackfillNeedsARangeAndAnIntegerParallel) {
    ExpectRefused({"--server", "http://127.0.0.1:1", "jobs", "backfill", "7", "--from", "0"},
                  {"--from and --to are required"});
    ExpectRefused(
        {"--server", "http://127.0.0.1:1", "jobs", "backfill", "7", "--from", "0", "--to", "60000", "--parallel", "x"},
        {"--parallel: expected a positive integer"});
    EXPECT_NE(Schedctl({"--help"}).out.find("jobs backfill ID --from T --to T"), std::string::npos);
}

TEST(RunCli, RefusesATokenOnTheCommandLine) {
    for (const char* arg : {"--token", "--token=secret"}) {
        ExpectRefused({arg, "jobs", "list"}, {"--token is not accepted", "SCHED_TOKEN"});
    }
}

TEST(RunCli, UsageErrorsExit1NamingTheProblem) {
    EXPECT_NE(Schedctl({"-o", "yaml", "jobs", "list"}).err.find("-o: expected table or json"), std::string::npos);
    EXPECT_NE(Schedctl({"--frobnicate"}).err.find("unknown option --frobnicate"), std::string::npos);
    EXPECT_NE(Schedctl({"--server"}).err.find("--server needs a value"), std::string::npos);
    ExpectRefused({"--server", "http://127.0.0.1:1", "jobs", "get", "12x"},
                  {"ID: expected a positive integer, got \"12x\""});
    EXPECT_NE(Schedctl({"--server", "http://127.0.0.1:1", "nope"}).err.find("unknown command \"nope\""),
              std::string::npos);
    EXPECT_NE(Schedctl({"--server", "ftp://x", "jobs", "list"}).err.find("--server: "), std::string::npos);
    EXPECT_NE(Schedctl({"--server", "http://127.0.0.1:1", "--timeout", "soon", "jobs", "list"}).err.find("--timeout"),
              std::string::npos);
    ExpectRefused({"--server", "http://127.0.0.1:1", "apply"}, {"-f FILE is required"});
    ExpectRefused({"--config", "/nonexistent/schedctl.yaml", "jobs", "list"},
                  {"/nonexistent/schedctl.yaml: cannot read"});
}

TEST(RunCli, AuditAndPauseNoteOptionsAreCheckedBeforeAnyCall) {
    ExpectRefused({"--server", "http://127.0.0.1:1", "audit", "--since", "yesterday"},
                  {"--since: expected a duration such as 24h or epoch milliseconds"});
    const auto limit = Schedctl({"--server", "http://127.0.0.1:1", "audit", "--limit", "many"});
    EXPECT_NE(limit.err.find("--limit: expected a positive integer"), std::string::npos) << limit.err;
    EXPECT_NE(Schedctl({"--server", "http://127.0.0.1:1", "audit", "jobs"}).err.find("audit: takes no arguments"),
              std::string::npos);
    ExpectRefused({"--server", "http://127.0.0.1:1", "jobs", "resume", "3", "--note", "why"},
                  {"--note: only jobs pause takes a note"});
    EXPECT_NE(Schedctl({"--help"}).out.find("jobs pause ID [--note TEXT]"), std::string::npos);
}

TEST(RunCli, WorkflowsCommandsCheckTheirArgumentsBeforeAnyCall) {
    ExpectRefused(
        {"--server", "http://127.0.0.1:1", "workflows", "frob", "1"},
        {"workflows: expected list, get, create, update, delete, pause, resume, trigger, runs, run or rerun"});
    ExpectRefused({"--server", "http://127.0.0.1:1", "workflows", "rerun", "7"},
                  {"workflows rerun: --from-step NAME is required"});
    auto r = Schedctl({"--server", "http://127.0.0.1:1", "workflows", "run", "x7"});
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
