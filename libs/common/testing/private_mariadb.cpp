#include "sched/common/testing/private_mariadb.hpp"

#include <fstream>
#include <random>

#include "sched/common/testing/child_process.hpp"

namespace sched::testing {

std::unique_ptr<PrivateMariaDb> PrivateMariaDb::Start(const std::string& script, const std::string& bind,
                                                      std::string* why) {
    std::unique_ptr<PrivateMariaDb> db(new PrivateMariaDb());
    db->script_ = script;
    std::random_device rd;
    db->dir_ = std::filesystem::temp_directory_path() / ("sched-mdb-" + std::to_string(rd() % 1000000));
    std::string output;
    const int rc =
        RunCommand({"/bin/bash", script, "start", db->dir_.string()}, &output, {"SCHED_MARIADB_BIND=" + bind});
    if (rc != 0) {
        *why = "scripts/mariadb.sh start failed (" + std::to_string(rc) + "): " + output;
        return nullptr;  // the destructor stops whatever the script left running
    }
    std::ifstream(db->dir_ / "url") >> db->url_;
    if (db->url_.empty()) {
        *why = "scripts/mariadb.sh wrote no url";
        return nullptr;
    }
    return db;
}

PrivateMariaDb::~PrivateMariaDb() {
    if (dir_.empty()) return;
    RunCommand({"/bin/bash", script_, "stop", dir_.string()});
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
}

bool PrivateMariaDb::Stop(std::string* output) {
    return RunCommand({"/bin/bash", script_, "stop", dir_.string()}, output) == 0;
}

bool PrivateMariaDb::Restart(std::string* output) {
    return RunCommand({"/bin/bash", script_, "restart", dir_.string()}, output) == 0;
}

}  // namespace sched::testing
