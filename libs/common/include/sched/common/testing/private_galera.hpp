#pragma once

/// Test toolbox: a private, throw-away three-node MariaDB Galera cluster on loopback, started by
/// scripts/galera.sh in its own directory; a test can kill -9 one node and let it rejoin.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

namespace sched::testing {

class PrivateGalera {
  public:
    /// Starts one in `dir` ("": a fresh directory under the system's temporary directory) with
    /// `script` (the path of scripts/galera.sh). nullptr and `*why` (with the script's output)
    /// when it cannot start (galera-4 missing, ...); what it left running is stopped.
    static std::unique_ptr<PrivateGalera> Start(const std::string& script, std::string* why,
                                                std::filesystem::path dir = {});
    /// Stops the three servers by their PIDs and removes the directory.
    ~PrivateGalera();
    PrivateGalera(const PrivateGalera&) = delete;
    PrivateGalera& operator=(const PrivateGalera&) = delete;

    /// The sched user's URL on Galera node `n` (1..3): mysql://sched:...@127.0.0.1:port/sched_test
    const std::string& url(int n) const { return urls_.at(static_cast<std::size_t>(n - 1)); }
    /// The running nodes' server PIDs.
    std::vector<pid_t> Pids() const;
    /// kill -9 of node `n`.
    bool Kill(int n, std::string* output = nullptr);
    /// Starts node `n` again from its recovered position; returns once it is Synced.
    bool Rejoin(int n, std::string* output = nullptr);

  private:
    PrivateGalera() = default;
    std::string script_;
    std::filesystem::path dir_;
    std::vector<std::string> urls_;
};

}  // namespace sched::testing
