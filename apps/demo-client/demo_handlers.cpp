#include "demo_handlers.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "sched/http/json.hpp"

namespace sched::demo {

Status Echo(client::JobContext& ctx) {
    const std::string params = ctx.params().dump();
    ctx.Log("echo: {}", params);
    ctx.SetResultMessage(params);
    return Status::Ok();
}

Status Sleep(client::JobContext& ctx) {
    const auto params = ctx.params().is_null() ? nlohmann::json::object() : ctx.params();
    http::JsonFields f(params, "params");
    const auto ms = f.Int("ms", 1000, {.min = 0, .max = 24LL * 3600 * 1000});
    if (f.error()) return InvalidArgument(f.error()->message);
    ctx.Log("sleeping {} ms", ms);
    if (!ctx.SleepFor(std::chrono::milliseconds(ms))) return Cancelled("interrupted while sleeping");
    ctx.SetResultMessage("slept " + std::to_string(ms) + " ms");
    return Status::Ok();
}

Status Fail(client::JobContext& ctx) {
    const auto params = ctx.params().is_null() ? nlohmann::json::object() : ctx.params();
    http::JsonFields f(params, "params");
    const auto message = f.String("message", "failed on purpose");
    if (f.error()) return InvalidArgument(f.error()->message);
    ctx.Log("failing: {}", message);
    return Status(Code::kInternal, message);
}

void RegisterDemoHandlers(client::Executor& executor, std::atomic<std::int64_t>& calls) {
    executor.Handle("echo", Echo);
    executor.Handle("sleep", Sleep);
    executor.Handle("fail", Fail);
    executor.Handle("count", [&calls](client::JobContext& ctx) {
        const auto n = ++calls;
        ctx.Log("call #{}", n);
        ctx.SetResultMessage(std::to_string(n));
        return Status::Ok();
    });
}

void RegisterConformanceHandlers(client::Executor& executor) {
    executor.Handle("conformance.echo", Echo);
    executor.Handle("conformance.sleep", Sleep);
    executor.Handle("conformance.fail", Fail);
}

DemoOptions DemoOptions::FromYaml(const ConfigNode& node) {
    DemoOptions o;
    o.ledger_dir = node.String("ledger-dir", o.ledger_dir.string());
    if (o.ledger_dir.empty()) throw ConfigError(node.path() + ".ledger-dir", "must not be empty");
    return o;
}

Status Pay(client::Executor& executor, const DemoOptions& options, client::JobContext& ctx) {
    const auto params = ctx.params().is_null() ? nlohmann::json::object() : ctx.params();
    http::JsonFields f(params, "params");
    const auto order = f.Int("order", {.min = 0});
    const auto amount = f.Int("amount", 100, {.min = 1});
    const bool use_lock = f.Bool("lock", true);
    const auto lease_ms = f.Int("lease_ms", 10000, {.min = 1, .max = 3'600'000});
    const auto wait_ms = f.Int("wait_ms", 10000, {.min = 0, .max = 600'000});
    const auto delay_ms = f.Int("delay_ms", 5, {.min = 0, .max = 60'000});
    if (f.error()) return InvalidArgument(f.error()->message);

    const std::string key = "order-" + std::to_string(order);
    std::optional<client::LockGuard> lock;
    if (use_lock) {
        auto acquired = executor.Lock(key, std::chrono::milliseconds(lease_ms), std::chrono::milliseconds(wait_ms));
        if (!acquired.ok()) return acquired.status();
        lock.emplace(std::move(*acquired));
        ctx.Log("locked {} at epoch {}", key, lock->epoch());
    }
    // Read, check, write: exactly the sequence that needs the lock.
    const auto ledger = options.ledger_dir / (key + ".ledger");
    std::error_code ec;
    if (std::filesystem::exists(ledger, ec) && std::filesystem::file_size(ledger, ec) > 0) {
        ctx.SetResultMessage("already charged");
        return Status::Ok();
    }
    if (!ctx.SleepFor(std::chrono::milliseconds(delay_ms))) return Cancelled("cancelled before charging");
    if (lock && !lock->Held()) return Aborted("lock " + key + " lost before charging; not charged");
    const std::string line = "charged " + std::to_string(amount) + " epoch " +
                             std::to_string(lock ? lock->epoch() : 0) + " by " + std::to_string(::getpid()) + "\n";
    std::filesystem::create_directories(options.ledger_dir, ec);
    const int fd = ::open(ledger.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return Internal("open " + ledger.string() + ": " + std::strerror(errno));
    // One write of a short line with O_APPEND: concurrent appends never interleave.
    const auto written = ::write(fd, line.data(), line.size());
    const int write_errno = errno;
    ::close(fd);
    if (written != static_cast<ssize_t>(line.size())) {
        return Internal("write " + ledger.string() + ": " + std::strerror(write_errno));
    }
    ctx.Log("charged {} for {}", amount, key);
    ctx.SetResultMessage("charged");
    return Status::Ok();
}

void RegisterPayHandler(client::Executor& executor, const DemoOptions& options) {
    executor.Handle("pay", [&executor, &options](client::JobContext& ctx) { return Pay(executor, options, ctx); });
}

}  // namespace sched::demo
