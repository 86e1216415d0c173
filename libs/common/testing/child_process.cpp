#include "sched/common/testing/child_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "sched/common/beast.hpp"

namespace sched::testing {

namespace {

// argv[0] is a path (posix_spawn does not search PATH); `env` entries replace inherited ones.
pid_t Spawn(const std::vector<std::string>& argv, const SpawnOptions& options, posix_spawn_file_actions_t* actions) {
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
    // An extra entry replaces an inherited (or earlier) one of the same name: getenv returns the
    // first match, so a duplicate appended after it would be ignored.
    for (const auto& extra : options.env) {
        const auto eq = extra.find('=');
        const std::string key = eq == std::string::npos ? extra + "=" : extra.substr(0, eq + 1);
        std::erase_if(env_strings, [&](const std::string& e) { return e.rfind(key, 0) == 0; });
        if (eq != std::string::npos) env_strings.push_back(extra);  // "KEY" alone only removes KEY
    }
    std::vector<char*> envp;
    envp.reserve(env_strings.size() + 1);
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = argv;
    std::vector<char*> argp;
    argp.reserve(args.size() + 1);
    for (auto& a : args) argp.push_back(a.data());
    argp.push_back(nullptr);

    // A signal the spawning thread blocks would stay blocked in the child (SIGTERM ignored).
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    short flags = POSIX_SPAWN_SETSIGMASK;
    if (options.own_process_group) {
        flags |= POSIX_SPAWN_SETPGROUP;
        posix_spawnattr_setpgroup(&attr, 0);
    }
    posix_spawnattr_setflags(&attr, flags);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(actions, options.cwd.c_str());

    pid_t pid = -1;
    const int rc = posix_spawn(&pid, argp[0], actions, &attr, argp.data(), envp.data());
    posix_spawn_file_actions_destroy(actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) throw std::runtime_error("posix_spawn " + argv[0] + ": " + std::strerror(rc));
    return pid;
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const SpawnOptions& options) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (options.output) {
        const OutputFile& output = *options.output;
        const int mode = O_WRONLY | O_CREAT | (output.truncate ? O_TRUNC : O_APPEND);
        posix_spawn_file_actions_addopen(&actions, 1, output.path.c_str(), mode, 0644);
        if (output.stderr_path.empty()) {
            posix_spawn_file_actions_adddup2(&actions, 1, 2);
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, output.stderr_path.c_str(), mode, 0644);
        }
        pid_ = Spawn(argv, options, &actions);
        return;
    }
    int out_pipe[2];
    int err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
        const int error = errno;
        close(out_pipe[0]);
        close(out_pipe[1]);
        posix_spawn_file_actions_destroy(&actions);
        throw std::runtime_error("pipe: " + std::string(std::strerror(error)));
    }
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    out_fd_ = out_pipe[0];
    err_fd_ = err_pipe[0];
    try {
        pid_ = Spawn(argv, options, &actions);
    } catch (...) {
        close(out_pipe[1]);
        close(err_pipe[1]);
        close(out_fd_);
        close(err_fd_);
        throw;
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& cwd,
                           const std::vector<std::string>& env)
    : ChildProcess(argv, SpawnOptions{.cwd = cwd, .env = env}) {}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const OutputFile& output,
                           const std::vector<std::string>& env)
    : ChildProcess(argv, SpawnOptions{.env = env, .output = output}) {}

ChildProcess::~ChildProcess() {
    if (!exit_code_ && pid_ > 0) {
        ::kill(pid_, SIGCONT);  // a SIGSTOPped child must not stay stopped if SIGKILL races
        ::kill(pid_, SIGKILL);
        int status = 0;
        waitpid(pid_, &status, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (err_fd_ >= 0) close(err_fd_);
}

void ChildProcess::Pump(int timeout_ms) {
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    if (poll(fds, 2, timeout_ms) <= 0) return;
    char buf[4096];
    for (int i = 0; i < 2; ++i) {
        if ((fds[i].revents & (POLLIN | POLLHUP)) == 0) continue;
        const ssize_t n = read(fds[i].fd, buf, sizeof buf);
        if (n > 0) (i == 0 ? out_ : err_).append(buf, static_cast<std::size_t>(n));
    }
}

std::optional<std::string> ChildProcess::WaitForStdoutLine(const std::string& needle,
                                                           std::chrono::milliseconds timeout) {
    return WaitForLine(out_, needle, timeout);
}

std::optional<std::string> ChildProcess::WaitForStderrLine(const std::string& needle,
                                                           std::chrono::milliseconds timeout) {
    return WaitForLine(err_, needle, timeout);
}

std::optional<std::string> ChildProcess::WaitForLine(const std::string& text, const std::string& needle,
                                                     std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        std::size_t start = 0;
        for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
            std::string line = text.substr(start, nl - start);
            if (line.find(needle) != std::string::npos) return line;
        }
        int status = 0;
        if (!exit_code_ && waitpid(pid_, &status, WNOHANG) == pid_) {
            exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        if (exit_code_) {
            Pump(0);
            if (text.find(needle) == std::string::npos) return std::nullopt;
            continue;
        }
        Pump(50);
    }
    return std::nullopt;
}

void ChildProcess::Signal(int signo) {
    if (!exit_code_) ::kill(pid_, signo);
}

int RunCommand(const std::vector<std::string>& argv, std::string* output, const std::vector<std::string>& env) {
    try {
        ChildProcess p(argv, "", env);
        auto code = p.WaitForExit(std::chrono::seconds(120));
        if (output) *output += p.stdout_text() + p.stderr_text();
        return code.value_or(-1);
    } catch (const std::exception& e) {
        if (output) *output += e.what();
        return -1;
    }
}

bool ChildProcess::Running() {
    int status = 0;
    if (!exit_code_ && waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return !exit_code_;
}

std::optional<int> ChildProcess::Stop(std::chrono::milliseconds grace) {
    if (!Running()) return exit_code_;
    ::kill(pid_, SIGTERM);
    if (auto code = WaitForExit(grace)) return code;
    Signal(SIGCONT);  // a SIGSTOPped child must not stay stopped if SIGKILL races
    Signal(SIGKILL);
    return WaitForExit(std::chrono::seconds(10));
}

std::optional<int> ChildProcess::WaitForExit(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!exit_code_) {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
        if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        Pump(20);
    }
    // Drain what the child wrote before it exited.
    for (int i = 0; i < 100; ++i) {
        const auto before = out_.size() + err_.size();
        Pump(0);
        if (out_.size() + err_.size() == before) break;
    }
    return exit_code_;
}

std::size_t PeakRss(pid_t pid) {
    std::ifstream in(pid == 0 ? std::string("/proc/self/status") : "/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmHWM:", 0) == 0) return std::stoul(line.substr(6)) * 1024;
    }
    return 0;
}

unsigned short ListeningPort(ChildProcess& process, std::chrono::milliseconds timeout) {
    const auto line = process.WaitForStdoutLine("listening on http://127.0.0.1:", timeout);
    return line ? static_cast<unsigned short>(std::stoi(line->substr(line->rfind(':') + 1))) : 0;
}

std::pair<int, std::string> HttpGet(unsigned short port, const std::string& target) {
    return HttpCall(port, "GET", target);
}

std::pair<int, std::string> HttpCall(unsigned short port, const std::string& method, const std::string& target,
                                     const std::string& json_body, const std::string& bearer) {
    return HttpCallAt("127.0.0.1", port, method, target, json_body, bearer);
}

namespace {

HttpReply Exchange(const std::string& host, unsigned short port, const std::string& method, const std::string& target,
                   const std::string& json_body, const std::string& bearer, std::chrono::milliseconds timeout) {
    bhttp::request<bhttp::string_body> req{bhttp::string_to_verb(method), target, 11};
    req.set(bhttp::field::host, host);
    if (!bearer.empty()) req.set(bhttp::field::authorization, "Bearer " + bearer);
    if (!json_body.empty()) {
        req.set(bhttp::field::content_type, "application/json");
        req.body() = json_body;
    }
    req.prepare_payload();
    // Asynchronous, each step under `timeout`: Asio's synchronous reads wait in poll() without
    // a timeout once a socket timeout (SO_RCVTIMEO) expires, so a peer that accepts and never
    // answers (a paused node) would hang the caller.
    net::io_context io;
    beast::tcp_stream stream(io);
    beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(std::uint64_t{16} * 1024 * 1024);
    beast::error_code result = net::error::timed_out;
    stream.expires_after(timeout);
    stream.async_connect(tcp::endpoint(net::ip::make_address(host), port), [&](beast::error_code connected) {
        if (connected) {
            result = connected;
            return;
        }
        stream.expires_after(timeout);
        bhttp::async_write(stream, req, [&](beast::error_code written, std::size_t) {
            if (written) {
                result = written;
                return;
            }
            stream.expires_after(timeout);
            bhttp::async_read(stream, buffer, parser, [&](beast::error_code read, std::size_t) { result = read; });
        });
    });
    io.run();
    if (result) throw beast::system_error(result, method + " " + target);
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    const auto& res = parser.get();
    return {static_cast<int>(res.result_int()), std::string(res[bhttp::field::content_type]), res.body()};
}

}  // namespace

std::pair<int, std::string> HttpCallAt(const std::string& host, unsigned short port, const std::string& method,
                                       const std::string& target, const std::string& json_body,
                                       const std::string& bearer, std::chrono::milliseconds timeout) {
    auto reply = Exchange(host, port, method, target, json_body, bearer, timeout);
    return {reply.status, std::move(reply.body)};
}

HttpReply HttpRequest(unsigned short port, const std::string& method, const std::string& target,
                      const std::string& json_body, const std::string& bearer) {
    return Exchange("127.0.0.1", port, method, target, json_body, bearer, std::chrono::seconds(5));
}

std::uint16_t FreeLoopbackPort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                       ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
    const int error = errno;
    ::close(fd);
    if (!bound) throw std::runtime_error(std::string("no free loopback port: ") + std::strerror(error));
    return ntohs(addr.sin_port);
}

}  // namespace sched::testing
