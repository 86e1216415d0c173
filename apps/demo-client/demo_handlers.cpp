#include "demo_handlers.hpp"

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
    rest::JsonFields f(params, "params");
    const auto ms = f.Int("ms", 1000, {.min = 0, .max = 24LL * 3600 * 1000});
    if (f.error()) return InvalidArgument(f.error()->message);
    ctx.Log("sleeping {} ms", ms);
    if (!ctx.SleepFor(std::chrono::milliseconds(ms))) return Cancelled("interrupted while sleeping");
    ctx.SetResultMessage("slept " + std::to_string(ms) + " ms");
    return Status::Ok();
}

Status Fail(client::JobContext& ctx) {
    const auto params = ctx.params().is_null() ? nlohmann::json::object() : ctx.params();
    rest::JsonFields f(params, "params");
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

}  // namespace sched::demo
