#pragma once

/// The demo business service's job handlers:
///   echo   logs its params and returns them as the result message;
///   sleep  sleeps `params.ms` milliseconds (default 1000), stopping early when cancelled;
///   fail   fails with `params.message` (default "failed on purpose");
///   count  counts its calls (the count is the result message), for tests;
///   pay    charges an order once (see Pay below);
///   conformance.echo, conformance.sleep, conformance.fail: echo, sleep and fail under the
///          names of the protocol's conformance handler set (docs/protocol.md "Conformance kit").

#include <atomic>
#include <cstdint>
#include <filesystem>

#include "sched/client/executor.hpp"

namespace sched::demo {

Status Echo(client::JobContext& ctx);
Status Sleep(client::JobContext& ctx);
Status Fail(client::JobContext& ctx);

/// Registers the four handlers; `count` increments `calls`, which must outlive the executor.
void RegisterDemoHandlers(client::Executor& executor, std::atomic<std::int64_t>& calls);

/// Registers the conformance handler set (docs/protocol.md), which the conformance kit drives.
void RegisterConformanceHandlers(client::Executor& executor);

/// The `demo` section of demo-client.yaml.
///
///     demo:
///       ledger-dir: "data/demo-ledger"   # where `pay` records charges (shared by instances)
struct DemoOptions {
    std::filesystem::path ledger_dir = "data/demo-ledger";
    static DemoOptions FromYaml(const ConfigNode& node);
};

/// `pay`: charges order `params.order` (an integer >= 0) at most once, however many instances
/// run it at the same time. Under the distributed lock `order-<id>` (lease `params.lease_ms`,
/// default 10000; waiting `params.wait_ms`, default 10000) it reads the order's ledger file
/// `<ledger-dir>/order-<id>.ledger`: if a charge is there, nothing more ("already charged");
/// otherwise it waits `params.delay_ms` (default 5: the payment provider's round trip, the
/// window in which a second charger would slip in) and appends one line
/// "charged <amount> epoch <fencing epoch> by <pid>". `params.lock: false` skips the lock (to
/// show the double charges it prevents). The result message is "charged" or "already charged".
Status Pay(client::Executor& executor, const DemoOptions& options, client::JobContext& ctx);

/// Registers `pay`; `executor` and `options` must outlive it.
void RegisterPayHandler(client::Executor& executor, const DemoOptions& options);

}  // namespace sched::demo
