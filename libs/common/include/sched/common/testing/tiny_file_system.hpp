#pragma once

/// A small tmpfs for the tests of a full disk (header only; mounting needs root, so a test skips
/// when mounted() is false, naming error()).

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

namespace sched::testing {

class TinyFileSystem {
  public:
    /// Mounts a tmpfs of `size` ("2m") on `dir`, created if missing; `remove_dir`: the directory
    /// is removed again once unmounted.
    TinyFileSystem(std::filesystem::path dir, const std::string& size, bool remove_dir = false)
        : dir_(std::move(dir)), remove_dir_(remove_dir) {
        std::filesystem::create_directories(dir_);
        const std::string options = "size=" + size + ",mode=0700";
        if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, options.c_str()) == 0) {
            mounted_ = true;
        } else {
            error_ = std::string("mount tmpfs: ") + std::strerror(errno);
        }
    }
    ~TinyFileSystem() {
        if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
        if (remove_dir_) {
            std::error_code ec;
            std::filesystem::remove_all(dir_, ec);
        }
    }
    TinyFileSystem(const TinyFileSystem&) = delete;
    TinyFileSystem& operator=(const TinyFileSystem&) = delete;

    bool mounted() const { return mounted_; }
    const std::string& error() const { return error_; }
    const std::filesystem::path& dir() const { return dir_; }

    /// Writes a filler file until the file system is full; false if it could not be created.
    [[nodiscard]] bool Fill() {
        const int fd = ::open((dir_ / "filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0) return false;
        const std::string chunk(4096, 'x');
        while (::write(fd, chunk.data(), chunk.size()) > 0) {
        }
        ::close(fd);
        return true;
    }
    void Free() { std::filesystem::remove(dir_ / "filler"); }

  private:
    std::filesystem::path dir_;
    bool remove_dir_ = false;
    bool mounted_ = false;
    std::string error_;
};

}  // namespace sched::testing
