#pragma once

// A loopback listener that never answers (header-only).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace sched::testing {

/// A receiver on 127.0.0.1 and a free port that takes connections (the kernel's backlog accepts
/// them) and never reads or answers: holds a caller's request open until its own timeout. The
/// socket is close-on-exec, so child processes do not keep it listening. Throws
/// std::runtime_error when the socket cannot be bound.
class SilentListener {
  public:
    SilentListener() {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 64) != 0 ||
            ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
            const std::string why = std::strerror(errno);
            if (fd_ >= 0) ::close(fd_);
            throw std::runtime_error("silent listener: " + why);
        }
        port_ = ntohs(addr.sin_port);
    }
    ~SilentListener() { ::close(fd_); }
    SilentListener(const SilentListener&) = delete;
    SilentListener& operator=(const SilentListener&) = delete;

    unsigned short port() const { return port_; }
    /// "127.0.0.1:<port>".
    std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  private:
    int fd_ = -1;
    unsigned short port_ = 0;
};

}  // namespace sched::testing
