#pragma once

/// How many transactions the database server aborted in this process.

#include <cstdint>

namespace sched::db {

/// Statements and commits the server aborted as deadlocks (MySQL error 1213), as ClassifyError
/// saw them; on a Galera cluster these are mostly certification failures and brute-force
/// aborts (a replicated write set that needed a row this node's transaction held). Each is
/// retried by its caller: the master's next scan, the slave's next claim round, the elector's
/// next tick. ClassifyError also maps a Galera node outside the primary component (error
/// 1047) to kUnavailable.
std::uint64_t AbortedTransactions();

namespace impl {
void CountAbortedTransaction();
}  // namespace impl

}  // namespace sched::db
