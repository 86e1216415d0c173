#include "sched/common/testing/private_mariadb.hpp"

#include <fstream>
#include <random>

#include "sched/common/testing/child_process.hpp"

namespace sched::testing {

std::unique_ptr<PrivateMariaDb> PrivateMariaDb::Start(const std::string& script, const PrivateMariaDbOptions& options,
                                                      std::string* why) {
    std::unique_ptr<PrivateMariaDb> db(new PrivateMariaDb());
    db->script_ = script;
    db->keep_ = options.keep;
    db->dir_ = options.dir;
    if (db->dir_.empty()) {
        std::random_device rd;
        db->dir_ = std::filesystem::temp_directory_path() / ("sched-mdb-" + std::to_string(rd() % 1000000));
    }
    std::string output;
    const int rc =
        RunCommand({"/bin/bash", script, "start", db->dir_.string()}, &output, {"SCHED_MARIADB_BIND=" + options.bind});
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

std::unique_ptr<PrivateMariaDb> PrivateMariaDb::Start(const std::string& script, const std::string& bind,
                                                      std::string* why) {
    return Start(script, PrivateMariaDbOptions{.bind = bind}, why);
}

PrivateMariaDb::~PrivateMariaDb() {
    if (dir_.empty()) return;
    const bool stopped = Stop();
    std::error_code ignored;
    switch (keep_) {
        case PrivateMariaDbOptions::Keep::kNothing:
            std::filesystem::remove_all(dir_, ignored);
            break;
        case PrivateMariaDbOptions::Keep::kLogs:
            // Removing the files of a server still running would leave it writing into nothing.
            if (stopped) std::filesystem::remove_all(dir_ / "data", ignored);
            break;
        case PrivateMariaDbOptions::Keep::kAll:
            break;
    }
}

bool PrivateMariaDb::Stop(std::string* output) {
    return RunCommand({"/bin/bash", script_, "stop", dir_.string()}, output) == 0;
}

bool PrivateMariaDb::Restart(std::string* output) {
    return RunCommand({"/bin/bash", script_, "restart", dir_.string()}, output) == 0;
}

}  // namespace sched::testing
