#pragma once

/// The chaos suite's environment: a private MariaDB it can stop and restart (scripts/mariadb.sh)
/// or a Galera cluster (scripts/galera.sh),
/// a network-namespace topology it can cut (ip netns / ip link), processes whose output goes to
/// log files (so a long run never blocks on a full pipe), and a tiny HTTP GET to any address.
/// Everything is torn down by its destructor, also when a test fails.

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sched/common/testing/child_process.hpp"
#include "sched/common/testing/private_galera.hpp"
#include "sched/common/testing/private_mariadb.hpp"

namespace sched::chaos {

// A command run to completion and the private MariaDB are the shared test toolbox's.
using testing::PrivateGalera;
using testing::PrivateMariaDb;
using testing::RunCommand;

/// One network namespace holding a trigger node, joined to the root namespace by two veth pairs:
///   db link:       root `<db_host>` <-> ns `<db_peer>` (the node reaches MariaDB at db_host)
///   executor link: root `<exec_host>` <-> ns `<exec_peer>` (executors listen on exec_host; the
///                  node listens on exec_peer)
/// CutDbLink() downs the root side of the db link (the namespace keeps its route, so packets to
/// the database vanish, as in a real partition); the executor link stays up.
class NetnsTopology {
  public:
    /// nullptr and `*why` when namespaces cannot be made here (not root, no `ip`).
    static std::unique_ptr<NetnsTopology> Create(std::string* why);
    ~NetnsTopology();  ///< deletes the namespace and both veth pairs

    const std::string& ns() const { return ns_; }
    const std::string& db_host() const { return db_host_; }
    const std::string& db_peer() const { return db_peer_; }
    const std::string& exec_host() const { return exec_host_; }
    const std::string& exec_peer() const { return exec_peer_; }
    bool CutDbLink();
    bool RestoreDbLink();
    /// `argv` run inside the namespace.
    std::vector<std::string> Wrap(const std::vector<std::string>& argv) const;

  private:
    NetnsTopology() = default;
    std::string ns_;
    std::string db_link_;    // root-side interface of the db link
    std::string exec_link_;  // root-side interface of the executor link
    std::string db_host_, db_peer_, exec_host_, exec_peer_;
};

/// Starts `argv` with stdout and stderr appended to `log`; `prefix` (e.g. `ip netns exec NS`)
/// goes in front (it execs the program, so the PID is the program's own).
std::unique_ptr<testing::ChildProcess> SpawnLogged(const std::vector<std::string>& argv,
                                                   const std::filesystem::path& log,
                                                   const std::vector<std::string>& prefix = {});

/// The file's text ("" when missing).
std::string ReadText(const std::filesystem::path& path);
/// Waits up to `timeout` for a line of `path` containing `needle`; returns the line.
std::optional<std::string> WaitForLogLine(const std::filesystem::path& path, const std::string& needle,
                                          std::chrono::milliseconds timeout);
/// The last `lines` lines of the file.
std::string Tail(const std::filesystem::path& path, int lines = 30);

/// One HTTP/1.1 GET to host:port; {status, body}, or {0, error} when it fails (timeout 2 s).
std::pair<int, std::string> Get(const std::string& host, unsigned short port, const std::string& target);

}  // namespace sched::chaos
