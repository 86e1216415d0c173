#pragma once

/// Test toolbox (target sched::common_testing: the tests and apps/scheduler-bench, never
/// installed): a child process started with posix_spawn, its stdout and stderr captured (or
/// written to files), and always stopped by its PID (SIGCONT + SIGKILL + waitpid in the destructor
/// if still running), also when an assertion fails half-way through a test.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace sched::testing {

/// Where a ChildProcess started with it writes stdout and stderr (created if missing), so a long
/// run never blocks on a full pipe.
struct OutputFile {
    std::string path;              ///< stdout, and stderr unless `stderr_path` is set
    std::string stderr_path = {};  ///< stderr apart from stdout ("": into `path` too)
    bool truncate = false;         ///< start the files empty instead of appending to them
};

/// How a ChildProcess starts, besides its argv.
struct SpawnOptions {
    std::string cwd = {};  ///< "": inherit
    /// Extra "KEY=value" entries added to this process's environment (replacing an entry of the
    /// same name; a bare "KEY" removes KEY).
    std::vector<std::string> env = {};
    std::optional<OutputFile> output = {};  ///< files instead of pipes (WaitFor*Line then see nothing)
    /// Its own process group: a Ctrl-C at the terminal then reaches only the parent, which stops
    /// the child by its PID (an interactive tool such as scheduler-bench).
    bool own_process_group = false;
};

class ChildProcess {
  public:
    /// Starts `argv[0]` (a path: PATH is not searched) with `argv` as `options` say, with an empty
    /// signal mask. Throws std::runtime_error on failure.
    ChildProcess(const std::vector<std::string>& argv, const SpawnOptions& options);
    /// The same in `cwd` (empty: inherit) with extra `env` entries (SpawnOptions::env).
    ChildProcess(const std::vector<std::string>& argv, const std::string& cwd = "",
                 const std::vector<std::string>& env = {});
    /// The same with stdout and stderr written to `output` (WaitFor*Line then see nothing).
    ChildProcess(const std::vector<std::string>& argv, const OutputFile& output,
                 const std::vector<std::string>& env = {});
    ~ChildProcess();
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    pid_t pid() const { return pid_; }

    /// Waits up to `timeout` for a stdout line containing `needle`; returns the line.
    std::optional<std::string> WaitForStdoutLine(const std::string& needle, std::chrono::milliseconds timeout);
    /// The same on stderr (where spdlog's console sink writes).
    std::optional<std::string> WaitForStderrLine(const std::string& needle, std::chrono::milliseconds timeout);
    /// Sends `signo` unless the process is known to have exited.
    void Signal(int signo);
    /// False once the process has exited (reaps it; WaitForExit then returns at once).
    bool Running();
    /// Waits up to `timeout` for the exit; returns the exit code (128+signal when killed).
    std::optional<int> WaitForExit(std::chrono::milliseconds timeout);
    /// A graceful stop: SIGTERM, then SIGKILL when it has not exited after `grace`; returns the
    /// exit code (nullopt only if it outlives SIGKILL by 10 s). At once when it already exited.
    std::optional<int> Stop(std::chrono::milliseconds grace);
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

/// VmHWM (peak resident set) of the process `pid` (0: this process), in bytes; 0 when unreadable.
std::size_t PeakRss(pid_t pid = 0);

/// The port of the "listening on http://127.0.0.1:<port>" line `process` prints within
/// `timeout` (an app's first line once it serves); 0 when none came.
unsigned short ListeningPort(ChildProcess& process, std::chrono::milliseconds timeout);

/// Runs `argv` to completion (at most 120 s); returns its exit code (-1 when it cannot start or
/// times out) and appends its stdout and stderr to `*output`. `env` entries ("KEY=value") replace
/// inherited ones.
int RunCommand(const std::vector<std::string>& argv, std::string* output = nullptr,
               const std::vector<std::string>& env = {});

/// Performs one HTTP/1.1 GET against 127.0.0.1:port and returns {status, body}; throws on
/// connection failure.
std::pair<int, std::string> HttpGet(unsigned short port, const std::string& target);

/// One HTTP/1.1 request to 127.0.0.1:port with an optional JSON body and bearer token; returns
/// {status, body}; throws on connection failure or after 5 s without an answer.
std::pair<int, std::string> HttpCall(unsigned short port, const std::string& method, const std::string& target,
                                     const std::string& json_body = "", const std::string& bearer = "");
/// An HTTP answer: status, the Content-Type header and the body.
struct HttpReply {
    int status = 0;
    std::string content_type;
    std::string body;
};

/// HttpCall's request, answering also the Content-Type (16 MiB body limit).
HttpReply HttpRequest(unsigned short port, const std::string& method, const std::string& target,
                      const std::string& json_body = "", const std::string& bearer = "");

/// The same to any IPv4/IPv6 address (a test's network namespace, say) with its own timeout
/// (for connecting, for sending the request and for reading the answer).
std::pair<int, std::string> HttpCallAt(const std::string& host, unsigned short port, const std::string& method,
                                       const std::string& target, const std::string& json_body = "",
                                       const std::string& bearer = "",
                                       std::chrono::milliseconds timeout = std::chrono::seconds(5));

/// A loopback TCP port that no socket is bound to right now (bound to port 0 and released): for
/// a process that must listen on a port known before it starts, or the same one across a
/// restart. Another process may take it in between; throws when none can be had.
std::uint16_t FreeLoopbackPort();

}  // namespace sched::testing
