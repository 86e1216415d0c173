// The test toolbox itself (sched::common_testing): what scheduler-bench and the process tests rely
// on - output files, process groups, a graceful stop, a child's signal mask, HTTP timeouts below a
// second, and a private MariaDB that leaves its logs behind.

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "sched/common/testing/child_process.hpp"
#include "sched/common/testing/private_mariadb.hpp"
#include "sched/common/testing/wait_for.hpp"

namespace sched::testing {
namespace {

using namespace std::chrono_literals;

std::string ReadAll(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

class TestingToolboxTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ =
            std::filesystem::temp_directory_path() / ("toolbox-" + std::to_string(::getpid()) + "-" +
                                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::filesystem::path dir_;
};

TEST_F(TestingToolboxTest, OutputFileWithStderrPathAndTruncateKeepsOnlyThisRunApart) {
    const auto out = dir_ / "p.out";
    const auto err = dir_ / "p.err";
    std::ofstream(out) << "old out\n";
    std::ofstream(err) << "old err\n";
    ChildProcess p(
        {"/bin/sh", "-c", "echo to-out; echo to-err >&2"},
        SpawnOptions{.output = OutputFile{.path = out.string(), .stderr_path = err.string(), .truncate = true}});
    ASSERT_EQ(p.WaitForExit(10s), 0);
    EXPECT_EQ(ReadAll(out), "to-out\n");
    EXPECT_EQ(ReadAll(err), "to-err\n");
}

TEST_F(TestingToolboxTest, OutputFileAppendsBothStreamsToOneFileByDefault) {
    const auto log = dir_ / "p.log";
    std::ofstream(log) << "earlier\n";
    ChildProcess p({"/bin/sh", "-c", "echo to-out; echo to-err >&2"}, OutputFile{log.string()});
    ASSERT_EQ(p.WaitForExit(10s), 0);
    EXPECT_EQ(ReadAll(log), "earlier\nto-out\nto-err\n");
}

TEST_F(TestingToolboxTest, OwnProcessGroupOnlyWhenAsked) {
    ChildProcess own({"/bin/sh", "-c", "sleep 30"}, SpawnOptions{.own_process_group = true});
    ChildProcess shared({"/bin/sh", "-c", "sleep 30"});
    EXPECT_EQ(::getpgid(own.pid()), own.pid());
    EXPECT_EQ(::getpgid(shared.pid()), ::getpgrp());
}

TEST_F(TestingToolboxTest, ChildStartsWithAnEmptySignalMaskWhateverTheParentBlocks) {
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigset_t before;
    ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &term, &before), 0);
    ChildProcess p({"/bin/sh", "-c", "grep SigBlk /proc/self/status"});
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    ASSERT_EQ(p.WaitForExit(10s), 0);
    EXPECT_NE(p.stdout_text().find("SigBlk:\t0000000000000000"), std::string::npos) << p.stdout_text();
}

TEST_F(TestingToolboxTest, StopEndsWithSigtermWhenTheChildHonoursIt) {
    ChildProcess p({"/bin/sh", "-c", "trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done"});
    ASSERT_TRUE(p.WaitForStdoutLine("ready", 10s));
    EXPECT_EQ(p.Stop(10s), 7);
    EXPECT_FALSE(p.Running());
    EXPECT_EQ(p.Stop(10s), 7);  // again: at once, the same code
}

TEST_F(TestingToolboxTest, StopKillsAChildThatIgnoresSigtermAfterTheGrace) {
    ChildProcess p({"/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"});
    ASSERT_TRUE(p.WaitForStdoutLine("ready", 10s));
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(p.Stop(300ms), 128 + SIGKILL);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 300ms);
}

TEST_F(TestingToolboxTest, HttpCallAtGivesUpAfterAMillisecondTimeout) {
    // A listener that accepts (the kernel's backlog) but never answers.
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(fd, 4), 0);
    socklen_t len = sizeof addr;
    ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    const auto port = ntohs(addr.sin_port);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_ANY_THROW(HttpCallAt("127.0.0.1", port, "GET", "/", "", "", 200ms));
    const auto took = std::chrono::steady_clock::now() - t0;
    ::close(fd);
    EXPECT_GE(took, 150ms);
    EXPECT_LT(took, 3s);  // not the 5 s default, nor rounded up to whole seconds
}

bool HaveMariaDb() {
    return std::filesystem::exists("/usr/sbin/mariadbd") || std::system("command -v mariadbd >/dev/null 2>&1") == 0;
}

TEST_F(TestingToolboxTest, PrivateMariaDbInAGivenDirKeepsItsLogsButNotItsData) {
    if (!HaveMariaDb()) {
        if (std::getenv("SCHED_REQUIRE_MYSQL") != nullptr) FAIL() << "mariadbd not installed";
        GTEST_SKIP() << "mariadbd not installed";
    }
    const auto dir = dir_ / "mariadb";
    std::string why;
    auto db =
        PrivateMariaDb::Start(std::string(SCHED_SOURCE_DIR) + "/scripts/mariadb.sh",
                              PrivateMariaDbOptions{.dir = dir, .keep = PrivateMariaDbOptions::Keep::kLogs}, &why);
    ASSERT_TRUE(db) << why;
    EXPECT_EQ(db->dir(), dir);
    EXPECT_EQ(db->url().rfind("mysql://sched:", 0), 0u) << db->url();
    pid_t pid = 0;
    std::ifstream(dir / "mariadbd.pid") >> pid;
    ASSERT_GT(pid, 0);
    ASSERT_EQ(::kill(pid, 0), 0);
    ASSERT_TRUE(std::filesystem::exists(dir / "data"));
    db.reset();
    EXPECT_TRUE(WaitFor([&] { return ::kill(pid, 0) != 0; }, 10s)) << "mariadbd " << pid << " still runs";
    EXPECT_FALSE(std::filesystem::exists(dir / "data"));
    EXPECT_TRUE(std::filesystem::exists(dir / "error.log"));
    EXPECT_TRUE(std::filesystem::exists(dir / "url"));
}

TEST(FreeLoopbackPort, IsAPortAServerCanListenOnAtOnce) {
    const std::uint16_t port = FreeLoopbackPort();
    ASSERT_NE(port, 0);
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << std::strerror(errno);
    ::close(fd);
}

}  // namespace
}  // namespace sched::testing
