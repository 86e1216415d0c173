#include "sched/common/app_main.hpp"

#include "sched/common/config.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace sched {
namespace {

const AppSpec kSpec{.name = "scheduler-test",
                    .version = "9.8.7",
                    .usage = "usage: scheduler-test [--config FILE]\n",
                    .default_config = "config/test.yaml",
                    .flags = {"--demo"}};

struct Run {
    ParsedArgs parsed;
    std::string out;
    std::string err;
};

Run Parse(const std::vector<std::string>& args, const AppSpec& spec = kSpec) {
    std::ostringstream out;
    std::ostringstream err;
    Run run{ParseAppArgs(spec, args, out, err), "", ""};
    run.out = out.str();
    run.err = err.str();
    return run;
}

TEST(ParseAppArgs, NoArgumentsUseTheDefaultConfig) {
    auto run = Parse({});
    EXPECT_FALSE(run.parsed.exit_code);
    EXPECT_EQ(run.parsed.args.config_path, "config/test.yaml");
    EXPECT_FALSE(run.parsed.args.check_config);
    EXPECT_FALSE(run.parsed.args.Has("--demo"));
    EXPECT_EQ(run.out + run.err, "");
}

TEST(ParseAppArgs, ConfigInBothSpellingsCheckConfigAndAppFlags) {
    auto spaced = Parse({"--config", "/etc/sched/a.yaml", "--check-config", "--demo"});
    EXPECT_FALSE(spaced.parsed.exit_code) << spaced.err;
    EXPECT_EQ(spaced.parsed.args.config_path, "/etc/sched/a.yaml");
    EXPECT_TRUE(spaced.parsed.args.check_config);
    EXPECT_TRUE(spaced.parsed.args.Has("--demo"));

    auto joined = Parse({"--config=b.yaml"});
    EXPECT_FALSE(joined.parsed.exit_code) << joined.err;
    EXPECT_EQ(joined.parsed.args.config_path, "b.yaml");
    EXPECT_FALSE(joined.parsed.args.check_config);
}

TEST(ParseAppArgs, UnknownFlagExitsWith2NamingIt) {
    auto run = Parse({"--config", "a.yaml", "--frobnicate"});
    ASSERT_TRUE(run.parsed.exit_code);
    EXPECT_EQ(*run.parsed.exit_code, 2);
    EXPECT_EQ(run.err, "scheduler-test: unknown argument \"--frobnicate\" (see --help)\n");
    EXPECT_EQ(run.out, "");
    // An app flag of another app is unknown here.
    AppSpec no_demo = kSpec;
    no_demo.flags.clear();
    EXPECT_EQ(Parse({"--demo"}, no_demo).parsed.exit_code, 2);
    // Positional arguments are not accepted either.
    auto positional = Parse({"a.yaml"});
    EXPECT_EQ(positional.parsed.exit_code, 2);
    EXPECT_NE(positional.err.find("unknown argument \"a.yaml\""), std::string::npos) << positional.err;
}

TEST(ParseAppArgs, ConfigWithoutValueExitsWith2) {
    for (const std::vector<std::string>& args :
         std::vector<std::vector<std::string>>{{"--config"}, {"--config="}, {"--config", "--check-config"}}) {
        auto run = Parse(args);
        ASSERT_TRUE(run.parsed.exit_code) << args.front();
        EXPECT_EQ(*run.parsed.exit_code, 2);
        EXPECT_EQ(run.err, "scheduler-test: --config needs a FILE (see --help)\n");
    }
}

TEST(ParseAppArgs, HelpPrintsUsageAndExits0WhereverItStands) {
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"--help"}, {"-h"}, {"--config", "x.yaml", "--help"}, {"--help", "--frobnicate"}}) {
        auto run = Parse(args);
        ASSERT_TRUE(run.parsed.exit_code);
        EXPECT_EQ(*run.parsed.exit_code, 0);
        EXPECT_EQ(run.out, kSpec.usage);
        EXPECT_EQ(run.err, "");
    }
}

TEST(ParseAppArgs, VersionPrintsNameAndVersionAndExits0) {
    auto run = Parse({"--version"});
    ASSERT_TRUE(run.parsed.exit_code);
    EXPECT_EQ(*run.parsed.exit_code, 0);
    EXPECT_EQ(run.out, "scheduler-test 9.8.7\n");
    EXPECT_EQ(run.err, "");
}

// A configuration file of this test's, removed with the test.
class ConfigFile {
  public:
    explicit ConfigFile(const std::string& text)
        : path_(std::filesystem::temp_directory_path() / ("app_main_test_" + std::to_string(::getpid()) + ".yaml")) {
        std::ofstream(path_) << text;
    }
    ~ConfigFile() { std::filesystem::remove(path_); }
    std::string path() const { return path_.string(); }

  private:
    std::filesystem::path path_;
};

TEST(LoadAppConfig, AFileThatDoesNotLoadExits2NamingTheApp) {
    ConfigFile file("port: [unclosed\n");
    bool loaded = false;
    ::testing::internal::CaptureStderr();
    const auto code = LoadAppConfig(kSpec, {.config_path = file.path()}, [&](const ConfigNode&) { loaded = true; });
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, 2);
    EXPECT_FALSE(loaded);
    EXPECT_EQ(err.rfind("scheduler-test: ", 0), 0u) << err;

    // The app's own reading refuses a key: the same exit, its message.
    ConfigFile bad_key("port: 70000\n");
    ::testing::internal::CaptureStderr();
    const auto refused = LoadAppConfig(kSpec, {.config_path = bad_key.path()},
                                       [](const ConfigNode&) { throw ConfigError("port", "at most 65535"); });
    EXPECT_EQ(refused, 2);
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "scheduler-test: port: at most 65535\n");
}

TEST(LoadAppConfig, CheckConfigExits0AfterLoadingAndAStartGoesOn) {
    ConfigFile file("port: 8080\n");
    int loads = 0;
    ::testing::internal::CaptureStdout();
    EXPECT_EQ(
        LoadAppConfig(kSpec, {.config_path = file.path(), .check_config = true}, [&](const ConfigNode&) { ++loads; }),
        0);
    EXPECT_EQ(::testing::internal::GetCapturedStdout(), "config ok\n");
    EXPECT_EQ(LoadAppConfig(kSpec, {.config_path = file.path()}, [&](const ConfigNode&) { ++loads; }), std::nullopt);
    EXPECT_EQ(loads, 2);
}

TEST(StartFailureExitCode, ACancelledStartIsACleanStopAnyOtherFailureExits1) {
    EXPECT_EQ(StartFailureExitCode(Cancelled("stop requested while connecting")), 0);
    EXPECT_EQ(StartFailureExitCode(Unavailable("database unreachable")), 1);
    EXPECT_EQ(StartFailureExitCode(InvalidArgument("bad listen address")), 1);
}

// Signals are process-wide, so these run in a child process (gtest death-test machinery), where
// blocking SIGTERM cannot disturb the rest of the test binary.
TEST(StopSignalsDeathTest, WaitReturnsTheSignalSentToTheProcess) {
    ::testing::FLAGS_gtest_death_test_style = "threadsafe";
    EXPECT_EXIT(
        {
            StopSignals signals;
            if (signals.stop_requested()) std::_Exit(3);
            kill(getpid(), SIGTERM);
            const int signo = signals.Wait();
            std::_Exit(signo == SIGTERM && signals.stop_requested() ? 0 : 4);
        },
        ::testing::ExitedWithCode(0), "");
}

TEST(StopSignalsDeathTest, HangupRunsTheCallbackAndKeepsWaiting) {
    ::testing::FLAGS_gtest_death_test_style = "threadsafe";
    EXPECT_EXIT(
        {
            StopSignals signals;
            std::atomic<int> hangups{0};
            signals.OnHangup([&] { ++hangups; });
            kill(getpid(), SIGHUP);
            for (int i = 0; i < 2000 && hangups.load() == 0; ++i) usleep(1000);
            kill(getpid(), SIGHUP);
            for (int i = 0; i < 2000 && hangups.load() < 2; ++i) usleep(1000);
            if (hangups.load() != 2 || signals.stop_requested()) std::_Exit(6);
            kill(getpid(), SIGTERM);
            std::_Exit(signals.Wait() == SIGTERM && hangups.load() == 2 ? 0 : 7);
        },
        ::testing::ExitedWithCode(0), "");
}

TEST(StopSignalsDeathTest, DestructorWithoutSignalReturnsAndLeavesNoStopRequest) {
    ::testing::FLAGS_gtest_death_test_style = "threadsafe";
    EXPECT_EXIT(
        {
            { StopSignals signals; }
            // The signals stay blocked: a later SIGINT is pending, not fatal.
            kill(getpid(), SIGINT);
            std::_Exit(5);
        },
        ::testing::ExitedWithCode(5), "");
}

TEST(StopSignalsDeathTest, ServeUntilStoppedStopsTheServiceOnTheSignalAndExits0) {
    ::testing::FLAGS_gtest_death_test_style = "threadsafe";
    EXPECT_EXIT(
        {
            StopSignals signals;
            int stops = 0;
            kill(getpid(), SIGTERM);
            const int code = ServeUntilStopped(signals, "scheduler-x", [&] { ++stops; });
            std::_Exit(code == 0 && stops == 1 && signals.stop_requested() ? 0 : 8);
        },
        ::testing::ExitedWithCode(0), "");
}

// The line scripts and tests wait for: the scheme follows the TLS setting, the authority is kept
// as given (an IPv6 host in brackets).
TEST(AnnounceListening, WritesWhoAndTheUrlItListensOn) {
    ::testing::internal::CaptureStdout();
    AnnounceListening("scheduler-web", false, "127.0.0.1:8080");
    AnnounceListening("scheduler-trigger node-1", true, "[::1]:8443");
    EXPECT_EQ(::testing::internal::GetCapturedStdout(),
              "scheduler-web listening on http://127.0.0.1:8080\n"
              "scheduler-trigger node-1 listening on https://[::1]:8443\n");
}

}  // namespace
}  // namespace sched
