#pragma once

/// Test support (target sched::common_testing, tests only): a private, throw-away MariaDB
/// started by scripts/mariadb.sh in its own directory, which a test can really stop and restart
/// (same data dir, port and bind addresses), as an operator would.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace sched::testing {

class PrivateMariaDb {
  public:
    /// Starts one with `script` (the path of scripts/mariadb.sh) in a fresh directory under
    /// /tmp, listening on `bind` ("127.0.0.1" or "127.0.0.1,10.x.y.1"). nullptr and `*why` when it
    /// cannot start (mariadbd missing, ...).
    static std::unique_ptr<PrivateMariaDb> Start(const std::string& script, const std::string& bind, std::string* why);
    /// Stops the server by its PID (the script's pid file) and removes the directory.
    ~PrivateMariaDb();
    PrivateMariaDb(const PrivateMariaDb&) = delete;
    PrivateMariaDb& operator=(const PrivateMariaDb&) = delete;

    /// mysql://sched:...@127.0.0.1:port/sched_test
    const std::string& url() const { return url_; }
    /// Stops the server by its PID (SIGTERM; SIGKILL after 10 s); the data stays.
    bool Stop(std::string* output = nullptr);
    /// Starts it again on the same data dir, port and bind addresses (stopping it first if it
    /// runs); returns once it answers.
    bool Restart(std::string* output = nullptr);
    const std::filesystem::path& dir() const { return dir_; }

  private:
    PrivateMariaDb() = default;
    std::string script_;
    std::filesystem::path dir_;
    std::string url_;
};

}  // namespace sched::testing
