#pragma once

// A child process for the multi-process lock tests: started with posix_spawn, stdout and stderr
// appended to a file, and always stopped by its PID (SIGKILL + waitpid) when the object goes
// away, also when an assertion fails half-way through a test.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace sched::lock::testing {

class TestProcess {
  public:
    TestProcess(const std::vector<std::string>& argv, const std::string& output_path);
    ~TestProcess();
    TestProcess(const TestProcess&) = delete;
    TestProcess& operator=(const TestProcess&) = delete;

    pid_t pid() const { return pid_; }
    bool Running();
    void Signal(int signo);
    /// The exit status (exit code, or 128 + signal), or nullopt if still running at `timeout`.
    std::optional<int> WaitForExit(std::chrono::milliseconds timeout);

  private:
    pid_t pid_ = -1;
    std::optional<int> exit_status_;
};

}  // namespace sched::lock::testing
