#include "sched/common/node_id.hpp"

#include <unistd.h>

#include <array>
#include <random>

namespace sched {

std::string RandomHex(int n) {
    static constexpr char kHex[] = "0123456789abcdef";
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::string out;
    out.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) out += kHex[rng() & 0xf];
    return out;
}

std::string MakeNodeId() {
    std::array<char, 256> host{};
    if (gethostname(host.data(), host.size() - 1) != 0 || host[0] == '\0') {
        std::string fallback = "node";
        return fallback + "-" + std::to_string(getpid()) + "-" + RandomHex();
    }
    return std::string(host.data()) + "-" + std::to_string(getpid()) + "-" + RandomHex();
}

}  // namespace sched
