#include "impl/spool.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <spdlog/spdlog.h>

namespace sched::client::impl {

namespace {

std::string Errno() {
    return std::strerror(errno);
}

bool WriteAll(int fd, std::string_view data) {
    while (!data.empty()) {
        const auto n = ::write(fd, data.data(), data.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

// A rename or a new file is durable only once its directory is synced.
void SyncDir(const std::filesystem::path& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
}

}  // namespace

nlohmann::json CallbackResult::ToJson() const {
    protocol::RunResult r;
    r.fire_id = fire_id;
    r.attempt = attempt;
    r.epoch = epoch;
    r.outcome = outcome;
    r.code = code;
    r.message = message;
    r.started_ms = started_ms;
    r.finished_ms = finished_ms;
    if (!address.empty()) r.address = address;
    r.log = log;
    r.log_truncated_bytes = log_truncated_bytes;
    r.traceparent = traceparent;
    return protocol::ToJson(r);
}

std::size_t CallbackResult::WireBytes() const {
    // JSON escapes a control character as \u00XX (6 bytes), '"' and '\\' as 2.
    const auto escaped = [](std::string_view text) {
        std::size_t n = 0;
        for (const char c : text) {
            const auto u = static_cast<unsigned char>(c);
            n += u < 0x20 ? 6 : (c == '"' || c == '\\') ? 2 : 1;
        }
        return n;
    };
    return 256 + escaped(message) + escaped(address) + escaped(callback_url) + (log ? escaped(*log) : 0);
}

std::string CallbackResult::ToSpoolLine() const {
    auto j = ToJson();
    if (!callback_url.empty()) j["callback_url"] = callback_url;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<CallbackResult> CallbackResult::FromSpoolLine(std::string_view line) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return std::nullopt;
    CallbackResult r;
    if (const auto url = j.find("callback_url"); url != j.end()) {
        if (!url->is_string()) return std::nullopt;
        r.callback_url = url->get<std::string>();
        j.erase(url);
    }
    // A line spooled by a newer SDK may carry fields this one does not know: they are dropped
    // from the resend rather than the result with them.
    for (auto it = j.begin(); it != j.end();) {
        const bool known = std::find(protocol::kRunResultFields.begin(), protocol::kRunResultFields.end(), it.key()) !=
                           protocol::kRunResultFields.end();
        it = known ? std::next(it) : j.erase(it);
    }
    auto parsed = protocol::ParseRunResult(j, "", /*require_fencing=*/false);
    if (!parsed.ok() || !parsed.value.epoch) return std::nullopt;
    protocol::RunResult& w = parsed.value;
    r.fire_id = w.fire_id;
    r.attempt = w.attempt;
    r.epoch = *w.epoch;
    r.outcome = w.outcome;
    r.code = std::move(w.code);
    r.message = std::move(w.message);
    r.started_ms = w.started_ms;
    r.finished_ms = w.finished_ms;
    r.address = w.address.value_or("");
    r.log = std::move(w.log);
    r.log_truncated_bytes = w.log_truncated_bytes;
    r.traceparent = std::move(w.traceparent);
    return r;
}

ResultSpool::ResultSpool(std::filesystem::path dir)
    : dir_(std::move(dir)), data_path_(dir_ / "results.jsonl"), acked_path_(dir_ / "results.acked") {
    std::error_code ec;
    const bool existed = std::filesystem::exists(dir_, ec);
    std::filesystem::create_directories(dir_, ec);
    if (ec) throw std::runtime_error("spool-dir " + dir_.string() + ": cannot create: " + ec.message());
    // Spooled results carry handler messages: a directory this process creates is private (0700)
    // and so are its files (0600); an existing directory keeps the mode its operator gave it.
    if (!existed) std::filesystem::permissions(dir_, std::filesystem::perms::owner_all, ec);
    const auto lock_path = dir_ / "lock";
    lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd_ < 0) throw std::runtime_error("spool-dir " + dir_.string() + ": cannot open lock file: " + Errno());
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
        ::close(lock_fd_);
        lock_fd_ = -1;
        throw std::runtime_error("spool-dir " + dir_.string() + ": in use by another executor process");
    }
    Load();
}

ResultSpool::~ResultSpool() {
    if (data_fd_ >= 0) ::close(data_fd_);
    if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

void ResultSpool::Load() {
    std::uint64_t acked = 0;
    if (std::ifstream in(acked_path_); in) in >> acked;
    std::ifstream in(data_path_, std::ios::binary);
    if (!in) {
        // Delivered everything and crashed before removing the marker: start clean.
        std::filesystem::remove(acked_path_);
        return;
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string data = buffer.str();
    if (acked > data.size()) acked = 0;
    std::set<std::pair<std::int64_t, std::int64_t>> keys;
    std::uint64_t pos = acked;
    std::uint64_t complete_end = acked;
    std::size_t skipped = 0;
    while (pos < data.size()) {
        const auto nl = data.find('\n', pos);
        if (nl == std::string::npos) break;  // torn last line: dropped below
        const auto line = std::string_view(data).substr(pos, nl - pos);
        pos = nl + 1;
        complete_end = pos;
        auto result = CallbackResult::FromSpoolLine(line);
        if (!result) {
            ++skipped;
            continue;
        }
        if (!keys.emplace(result->fire_id, result->attempt).second) continue;
        pending_.push_back({std::move(*result), pos});
    }
    if (skipped > 0) spdlog::warn("spool {}: skipped {} unreadable line(s)", data_path_.string(), skipped);
    data_size_ = complete_end;
    if (complete_end < data.size()) {
        spdlog::warn("spool {}: dropping a torn last line ({} bytes)", data_path_.string(), data.size() - complete_end);
        std::filesystem::resize_file(data_path_, complete_end);
    }
    if (!pending_.empty()) {
        spdlog::info("spool {}: {} undelivered result(s) to send", data_path_.string(), pending_.size());
    }
}

Status ResultSpool::Append(const std::vector<CallbackResult>& results) {
    if (results.empty()) return Status::Ok();
    if (data_fd_ < 0) {
        const bool existed = std::filesystem::exists(data_path_);
        data_fd_ = ::open(data_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (data_fd_ < 0) return Internal("spool " + data_path_.string() + ": cannot open: " + Errno());
        if (!existed) SyncDir(dir_);
    }
    std::string text;
    std::vector<std::uint64_t> ends;
    for (const auto& r : results) {
        text += r.ToSpoolLine();
        text += '\n';
        ends.push_back(data_size_ + text.size());
    }
    if (!WriteAll(data_fd_, text) || ::fdatasync(data_fd_) != 0) {
        const std::string why = Errno();
        // Cut back to the last whole line so that a retry appends after good data.
        if (::ftruncate(data_fd_, static_cast<off_t>(data_size_)) != 0) {
            spdlog::error("spool {}: cannot truncate after a failed write: {}", data_path_.string(), Errno());
        }
        return Internal("spool " + data_path_.string() + ": write failed: " + why);
    }
    for (std::size_t i = 0; i < results.size(); ++i) pending_.push_back({results[i], ends[i]});
    data_size_ += text.size();
    return Status::Ok();
}

std::vector<CallbackResult> ResultSpool::Peek(std::size_t max, std::size_t max_bytes) const {
    std::vector<CallbackResult> out;
    std::size_t bytes = 0;
    for (const auto& e : pending_) {
        if (out.size() >= max || (!out.empty() && e.result.callback_url != out.front().callback_url)) break;
        bytes += e.result.WireBytes();
        if (!out.empty() && bytes > max_bytes) break;
        out.push_back(e.result);
    }
    return out;
}

Status ResultSpool::Ack(std::size_t n) {
    n = std::min(n, pending_.size());
    if (n == 0) return Status::Ok();
    const std::uint64_t offset = pending_[n - 1].end_offset;
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
    if (pending_.empty()) {
        // Data first: a leftover marker without data is recognised at load; the reverse
        // would replay everything.
        if (data_fd_ >= 0) {
            ::close(data_fd_);
            data_fd_ = -1;
        }
        std::error_code ec;
        std::filesystem::remove(data_path_, ec);
        if (ec) return Internal("spool " + data_path_.string() + ": cannot remove: " + ec.message());
        std::filesystem::remove(acked_path_, ec);
        SyncDir(dir_);
        data_size_ = 0;
        return Status::Ok();
    }
    const auto tmp = acked_path_.string() + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return Internal("spool " + tmp + ": cannot open: " + Errno());
    const std::string text = std::to_string(offset) + "\n";
    const bool ok = WriteAll(fd, text) && ::fsync(fd) == 0;
    ::close(fd);
    if (!ok || ::rename(tmp.c_str(), acked_path_.c_str()) != 0) {
        return Internal("spool " + acked_path_.string() + ": cannot record delivery: " + Errno());
    }
    SyncDir(dir_);
    return Status::Ok();
}

}  // namespace sched::client::impl
