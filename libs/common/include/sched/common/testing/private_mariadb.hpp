#pragma once

/// Test toolbox (target sched::common_testing: the tests and apps/scheduler-bench, never
/// installed): a private, throw-away MariaDB started by scripts/mariadb.sh in its own directory,
/// which a test can really stop and restart (same data dir, port and bind addresses), as an
/// operator would.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace sched::testing {

/// How PrivateMariaDb::Start sets a server up and what its destructor leaves behind.
struct PrivateMariaDbOptions {
    /// Addresses to listen on: "127.0.0.1" or "127.0.0.1,10.x.y.1" (a test's veth).
    std::string bind = "127.0.0.1";
    /// The server's directory (data dir, socket, logs, url); created, must not hold a server
    /// yet. "": a fresh directory under the system's temporary directory.
    std::filesystem::path dir = {};
    /// What stays of `dir` once the destructor stopped the server.
    enum class Keep {
        kNothing,  ///< the whole directory is removed
        kLogs,     ///< the data dir (`dir`/data, ~150 MB) is removed, the logs and url stay
        kAll,      ///< everything stays (the data too: to look into it, or to start it again)
    };
    Keep keep = Keep::kNothing;
};

class PrivateMariaDb {
  public:
    /// Starts one with `script` (the path of scripts/mariadb.sh) as `options` say. nullptr and
    /// `*why` (with the script's output) when it cannot start (mariadbd missing, ...).
    static std::unique_ptr<PrivateMariaDb> Start(const std::string& script, const PrivateMariaDbOptions& options,
                                                 std::string* why);
    /// The same in a fresh directory under /tmp, listening on `bind`, removed at the end.
    static std::unique_ptr<PrivateMariaDb> Start(const std::string& script, const std::string& bind, std::string* why);
    /// Stops the server by its PID (the script's pid file) and removes what options.keep says
    /// (Keep::kLogs leaves the data dir too when the server could not be stopped).
    ~PrivateMariaDb();
    PrivateMariaDb(const PrivateMariaDb&) = delete;
    PrivateMariaDb& operator=(const PrivateMariaDb&) = delete;

    /// mysql://sched:...@127.0.0.1:port/sched_test
    const std::string& url() const { return url_; }
    /// Stops the server by its PID (SIGTERM; SIGKILL after 10 s); the data stays. True when no
    /// server of this directory runs any more (also when it was stopped already).
    bool Stop(std::string* output = nullptr);
    /// Starts it again on the same data dir, port and bind addresses (stopping it first if it
    /// runs); returns once it answers.
    bool Restart(std::string* output = nullptr);
    const std::filesystem::path& dir() const { return dir_; }

  private:
    PrivateMariaDb() = default;
    std::string script_;
    std::filesystem::path dir_;
    PrivateMariaDbOptions::Keep keep_ = PrivateMariaDbOptions::Keep::kNothing;
    std::string url_;
};

}  // namespace sched::testing
