#pragma once

// The checkout's files for tests that check them against the apps (docker/, deploy/k8s/):
// the test is built with SCHED_SOURCE_DIR, the checkout's root (header-only).

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace sched::testing {

/// The checkout's root.
inline const std::filesystem::path kSourceDir = SCHED_SOURCE_DIR;

/// The whole file; throws std::runtime_error naming it when it cannot be read.
inline std::string ReadFile(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path.string());
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace sched::testing
