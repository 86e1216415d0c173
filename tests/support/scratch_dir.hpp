#pragma once

// A test's own folder under the temp directory (header-only).

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "sched/common/node_id.hpp"

namespace sched::testing {

/// A fresh folder, `prefix` and ten random hex digits under the temp directory, created at once
/// and removed with everything in it when the object goes.
class ScratchDir {
  public:
    explicit ScratchDir(const std::string& prefix)
        : path_(std::filesystem::temp_directory_path() / (prefix + RandomHex(10))) {
        std::filesystem::create_directories(path_);
    }
    ~ScratchDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;

    const std::filesystem::path& path() const { return path_; }

    /// Writes `text` to the file `name` in the folder; returns the file's path.
    std::string Write(const std::string& name, const std::string& text) const {
        const auto file = path_ / name;
        std::ofstream(file) << text;
        return file.string();
    }

  private:
    std::filesystem::path path_;
};

}  // namespace sched::testing
