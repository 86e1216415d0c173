#include "chaos_env.hpp"

#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>

#include "sched/common/testing/child_process.hpp"
#include "sched/common/testing/wait_for.hpp"

namespace sched::chaos {

using namespace std::chrono_literals;

namespace {

// posix_spawn does not search PATH.
std::string Bin(const std::string& name) {
    for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
        if (std::filesystem::exists(std::string(dir) + name)) return std::string(dir) + name;
    }
    return name;
}

}  // namespace

// ---- NetnsTopology ----

std::unique_ptr<NetnsTopology> NetnsTopology::Create(std::string* why) {
    if (geteuid() != 0) {
        *why = "network namespaces need root (ip netns add); this process runs as uid " + std::to_string(geteuid());
        return nullptr;
    }
    std::random_device rd;
    std::unique_ptr<NetnsTopology> t;
    for (int attempt = 0; attempt < 5 && !t; ++attempt) {
        const int r = 1 + static_cast<int>(rd() % 250);
        const std::string n = std::to_string(r);
        if (RunCommand({Bin("ip"), "link", "show", "scd" + n + "h"}) == 0) continue;  // taken by another run
        t.reset(new NetnsTopology());
        t->ns_ = "schedchaos" + n;
        t->db_link_ = "scd" + n + "h";
        t->exec_link_ = "sce" + n + "h";
        t->db_host_ = "10.213." + n + ".1";
        t->db_peer_ = "10.213." + n + ".2";
        t->exec_host_ = "10.213." + n + ".5";
        t->exec_peer_ = "10.213." + n + ".6";
        std::vector<std::vector<std::string>> steps = {
            {Bin("ip"), "netns", "add", t->ns_},
            {Bin("ip"), "-n", t->ns_, "link", "set", "lo", "up"},
        };
        // Each link: a veth pair, its namespace end moved in, a /30 on both ends, both up.
        const struct {
            const std::string& host_link;
            std::string peer_link;
            const std::string& host;
            const std::string& peer;
        } links[] = {{t->db_link_, "scd" + n + "n", t->db_host_, t->db_peer_},
                     {t->exec_link_, "sce" + n + "n", t->exec_host_, t->exec_peer_}};
        for (const auto& l : links) {
            steps.push_back({Bin("ip"), "link", "add", l.host_link, "type", "veth", "peer", "name", l.peer_link});
            steps.push_back({Bin("ip"), "link", "set", l.peer_link, "netns", t->ns_});
            steps.push_back({Bin("ip"), "addr", "add", l.host + "/30", "dev", l.host_link});
            steps.push_back({Bin("ip"), "link", "set", l.host_link, "up"});
            steps.push_back({Bin("ip"), "-n", t->ns_, "addr", "add", l.peer + "/30", "dev", l.peer_link});
            steps.push_back({Bin("ip"), "-n", t->ns_, "link", "set", l.peer_link, "up"});
        }
        for (const auto& step : steps) {
            std::string output;
            if (RunCommand(step, &output) != 0) {
                std::string shown;
                for (const auto& a : step) shown += a + " ";
                *why = "`" + shown + "` failed: " + output;
                return nullptr;  // the destructor removes what was made
            }
        }
    }
    if (!t) *why = "no free veth name found";
    return t;
}

NetnsTopology::~NetnsTopology() {
    // Deleting one end of a veth pair deletes both; the namespace goes last.
    if (!db_link_.empty()) RunCommand({Bin("ip"), "link", "del", db_link_});
    if (!exec_link_.empty()) RunCommand({Bin("ip"), "link", "del", exec_link_});
    if (!ns_.empty()) RunCommand({Bin("ip"), "netns", "del", ns_});
}

bool NetnsTopology::CutDbLink() {
    return RunCommand({Bin("ip"), "link", "set", db_link_, "down"}) == 0;
}

bool NetnsTopology::RestoreDbLink() {
    return RunCommand({Bin("ip"), "link", "set", db_link_, "up"}) == 0;
}

std::vector<std::string> NetnsTopology::Wrap(const std::vector<std::string>& argv) const {
    std::vector<std::string> out = {Bin("ip"), "netns", "exec", ns_};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
}

// ---- processes and logs ----

std::unique_ptr<testing::ChildProcess> SpawnLogged(const std::vector<std::string>& argv,
                                                   const std::filesystem::path& log,
                                                   const std::vector<std::string>& prefix) {
    std::vector<std::string> full = prefix;
    full.insert(full.end(), argv.begin(), argv.end());
    return std::make_unique<testing::ChildProcess>(full, testing::OutputFile{log.string()});
}

std::string ReadText(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::optional<std::string> WaitForLogLine(const std::filesystem::path& path, const std::string& needle,
                                          std::chrono::milliseconds timeout) {
    std::optional<std::string> found;
    testing::WaitFor(
        [&] {
            std::istringstream in(ReadText(path));
            for (std::string line; std::getline(in, line);) {
                if (line.find(needle) != std::string::npos) {
                    found = line;
                    return true;
                }
            }
            return false;
        },
        timeout, 50ms);
    return found;
}

std::string Tail(const std::filesystem::path& path, int lines) {
    const std::string text = ReadText(path);
    std::size_t pos = text.size();
    for (int i = 0; i <= lines && pos > 0; ++i) {
        pos = text.rfind('\n', pos - 1);
        if (pos == std::string::npos) return text;
    }
    return text.substr(pos + 1);
}

std::pair<int, std::string> Get(const std::string& host, unsigned short port, const std::string& target) {
    try {
        return sched::testing::HttpCallAt(host, port, "GET", target, "", "", 2s);
    } catch (const std::exception& e) {
        return {0, e.what()};
    }
}

}  // namespace sched::chaos
