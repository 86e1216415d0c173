#include "sched/lock/testing/redis_server.hpp"

#include "sched/common/testing/child_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace sched::lock::testing {

namespace {

int FreeLoopbackPort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        ::close(fd);
        throw std::runtime_error(std::string("bind 127.0.0.1:0: ") + std::strerror(errno));
    }
    ::close(fd);
    return ntohs(addr.sin_port);
}

std::string Render(const redisReply* r) {
    switch (r->type) {
        case REDIS_REPLY_INTEGER:
            return std::to_string(r->integer);
        case REDIS_REPLY_NIL:
            return "(nil)";
        case REDIS_REPLY_ERROR:
            return "(error) " + std::string(r->str, r->len);
        case REDIS_REPLY_ARRAY: {
            std::string out;
            for (std::size_t i = 0; i < r->elements; ++i) out += (i ? " " : "") + Render(r->element[i]);
            return out;
        }
        default:
            return std::string(r->str, r->len);
    }
}

// Runs commands on a fresh connection; empty optional when the server cannot be reached.
std::optional<std::string> Run(int port, const std::string& password, const std::vector<std::string>& args) {
    timeval tv{1, 0};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (c == nullptr || c->err != 0) {
        if (c != nullptr) redisFree(c);
        return std::nullopt;
    }
    redisSetTimeout(c, tv);
    const auto command = [&](const std::vector<std::string>& a) -> std::optional<std::string> {
        std::vector<const char*> argv;
        std::vector<std::size_t> lens;
        for (const auto& s : a) {
            argv.push_back(s.data());
            lens.push_back(s.size());
        }
        auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(a.size()), argv.data(), lens.data()));
        if (r == nullptr) return std::nullopt;
        std::string out = Render(r);
        freeReplyObject(r);
        return out;
    };
    std::optional<std::string> out;
    if (!password.empty()) {
        out = command({"AUTH", password});
        if (!out || *out != "OK") {
            redisFree(c);
            return out ? out : std::nullopt;
        }
    }
    out = command(args);
    redisFree(c);
    return out;
}

std::string LogTail(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    return s.size() > 2000 ? s.substr(s.size() - 2000) : s;
}

}  // namespace

RedisServer::RedisServer(Options options) : options_(std::move(options)) {
    const char* env = std::getenv("SCHED_REDIS_SERVER");
    binary_ = env != nullptr && env[0] != '\0' ? env : "/usr/bin/redis-server";
    if (::access(binary_.c_str(), X_OK) != 0) {
        throw std::runtime_error("redis-server not found at " + binary_ +
                                 ": the Redis lock tests need a real server (install it with scripts/deps.sh, "
                                 "Debian package redis-server, or point SCHED_REDIS_SERVER at one)");
    }
    char tmpl[] = "/tmp/sched-redis-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    dir_ = tmpl;
    // A port found free may be taken by someone else before redis binds it: try a few.
    for (int attempt = 0;; ++attempt) {
        port_ = FreeLoopbackPort();
        try {
            Start();
            return;
        } catch (const std::runtime_error&) {
            if (attempt >= 4) {
                std::error_code ec;
                std::filesystem::remove_all(dir_, ec);
                throw;
            }
        }
    }
}

RedisServer::~RedisServer() {
    Kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

pid_t RedisServer::pid() const {
    return process_ ? process_->pid() : -1;
}

void RedisServer::Kill() {
    process_.reset();  // SIGKILL by PID and waitpid
}

void RedisServer::Start() {
    if (process_) return;
    Spawn();
    try {
        WaitUntilReady();
    } catch (...) {
        Kill();
        throw;
    }
}

void RedisServer::Spawn() {
    std::vector<std::string> args{
        binary_, "--port", std::to_string(port_), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
        "--dir", dir_,     "--daemonize",         "no"};
    if (!options_.password.empty()) {
        args.push_back("--requirepass");
        args.push_back(options_.password);
    }
    process_ = std::make_unique<sched::testing::ChildProcess>(args, sched::testing::OutputFile{dir_ + "/redis.log"});
}

void RedisServer::WaitUntilReady() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
        if (!process_->Running()) {
            process_.reset();
            throw std::runtime_error("redis-server on port " + std::to_string(port_) +
                                     " exited: " + LogTail(dir_ + "/redis.log"));
        }
        auto pong = Run(port_, options_.password, {"PING"});
        if (pong && *pong == "PONG") return;
        if (std::chrono::steady_clock::now() >= deadline) {
            throw std::runtime_error("redis-server on port " + std::to_string(port_) +
                                     " does not answer PING after 10 s: " + LogTail(dir_ + "/redis.log"));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

std::string RedisServer::Command(const std::vector<std::string>& args) const {
    auto out = Run(port_, options_.password, args);
    if (!out) throw std::runtime_error("redis-server on port " + std::to_string(port_) + " unreachable");
    return *out;
}

}  // namespace sched::lock::testing
