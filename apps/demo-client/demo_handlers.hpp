#pragma once

/// The demo business service's job handlers:
///   echo   logs its params and returns them as the result message;
///   sleep  sleeps `params.ms` milliseconds (default 1000), stopping early when cancelled;
///   fail   fails with `params.message` (default "failed on purpose");
///   count  counts its calls (the count is the result message), for tests.

#include <atomic>
#include <cstdint>

#include "sched/client/executor.hpp"

namespace sched::demo {

Status Echo(client::JobContext& ctx);
Status Sleep(client::JobContext& ctx);
Status Fail(client::JobContext& ctx);

/// Registers the four handlers; `count` increments `calls`, which must outlive the executor.
void RegisterDemoHandlers(client::Executor& executor, std::atomic<std::int64_t>& calls);

}  // namespace sched::demo
