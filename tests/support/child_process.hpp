#pragma once

/// Test support: a child process started with posix_spawn, its stdout and stderr captured,
/// and always stopped by its PID (SIGKILL in the destructor if still running).

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace sched::testing {

class ChildProcess {
  public:
    /// Starts `argv[0]` with `argv`, in `cwd` (empty: inherit), with extra `env` entries
    /// ("KEY=value") added to this process's environment (replacing an entry of the same name). Throws
    /// std::runtime_error on failure.
    ChildProcess(const std::vector<std::string>& argv, const std::string& cwd = "",
                 const std::vector<std::string>& env = {});
    ~ChildProcess();
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    pid_t pid() const { return pid_; }

    /// Waits up to `timeout` for a stdout line containing `needle`; returns the line.
    std::optional<std::string> WaitForStdoutLine(const std::string& needle, std::chrono::milliseconds timeout);
    /// The same on stderr (where spdlog's console sink writes).
    std::optional<std::string> WaitForStderrLine(const std::string& needle, std::chrono::milliseconds timeout);
    /// Sends `signo`.
    void Signal(int signo);
    /// Waits up to `timeout` for the exit; returns the exit code (128+signal when killed).
    std::optional<int> WaitForExit(std::chrono::milliseconds timeout);
    /// Everything read so far (after WaitForExit: everything).
    const std::string& stdout_text() const { return out_; }
    const std::string& stderr_text() const { return err_; }

  private:
    std::optional<std::string> WaitForLine(const std::string& text, const std::string& needle,
                                           std::chrono::milliseconds timeout);
    void Pump(int timeout_ms);

    pid_t pid_ = -1;
    int out_fd_ = -1;
    int err_fd_ = -1;
    std::string out_;
    std::string err_;
    std::optional<int> exit_code_;
};

/// Performs one HTTP/1.1 GET against 127.0.0.1:port and returns {status, body}; throws on
/// connection failure.
std::pair<int, std::string> HttpGet(unsigned short port, const std::string& target);

/// One HTTP/1.1 request to 127.0.0.1:port with an optional JSON body and bearer token; returns
/// {status, body}; throws on connection failure or after 5 s without an answer.
std::pair<int, std::string> HttpCall(unsigned short port, const std::string& method, const std::string& target,
                                     const std::string& json_body = "", const std::string& bearer = "");
/// The same to any IPv4/IPv6 address (a test's network namespace, say) with its own timeout.
std::pair<int, std::string> HttpCallAt(const std::string& host, unsigned short port, const std::string& method,
                                       const std::string& target, const std::string& json_body = "",
                                       const std::string& bearer = "",
                                       std::chrono::seconds timeout = std::chrono::seconds(5));

}  // namespace sched::testing
