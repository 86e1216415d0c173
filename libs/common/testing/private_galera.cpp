#include "sched/common/testing/private_galera.hpp"

#include <cstdlib>
#include <fstream>
#include <random>

#include "sched/common/testing/child_process.hpp"

namespace sched::testing {

std::unique_ptr<PrivateGalera> PrivateGalera::Start(const std::string& script, std::string* why,
                                                    std::filesystem::path dir) {
    std::unique_ptr<PrivateGalera> g(new PrivateGalera());
    g->script_ = script;
    g->dir_ = dir.empty() ? std::filesystem::temp_directory_path() /
                                ("sched-galera-" + std::to_string(std::random_device{}() % 1000000))
                          : std::move(dir);
    std::string output;
    const int rc = RunCommand({"/bin/bash", script, "start", g->dir_.string()}, &output);
    if (rc != 0) {
        *why = "scripts/galera.sh start failed (" + std::to_string(rc) + "): " + output;
        return nullptr;  // the destructor stops whatever the script left running
    }
    for (int n = 1; n <= 3; ++n) {
        std::string url;
        std::ifstream(g->dir_ / ("url" + std::to_string(n))) >> url;
        if (url.empty()) {
            *why = "scripts/galera.sh wrote no url for node " + std::to_string(n);
            return nullptr;
        }
        g->urls_.push_back(url);
    }
    return g;
}

PrivateGalera::~PrivateGalera() {
    if (dir_.empty()) return;
    const bool stopped = RunCommand({"/bin/bash", script_, "stop", dir_.string()}) == 0;
    std::error_code ignored;
    if (stopped) std::filesystem::remove_all(dir_, ignored);
}

std::vector<pid_t> PrivateGalera::Pids() const {
    std::vector<pid_t> out;
    for (int n = 1; n <= 3; ++n) {
        long pid = 0;
        std::ifstream(dir_ / ("node" + std::to_string(n)) / "mariadbd.pid") >> pid;
        if (pid > 0) out.push_back(static_cast<pid_t>(pid));
    }
    return out;
}

bool PrivateGalera::Kill(int n, std::string* output) {
    return RunCommand({"/bin/bash", script_, "kill", dir_.string(), std::to_string(n)}, output) == 0;
}

bool PrivateGalera::Rejoin(int n, std::string* output) {
    return RunCommand({"/bin/bash", script_, "rejoin", dir_.string(), std::to_string(n)}, output) == 0;
}

}  // namespace sched::testing
