#pragma once

#include <string>

namespace sched {

/// A process identity for lease ownership and logs: "<host>-<pid>-<6 random hex digits>".
/// The random part keeps two processes distinct even when a PID is reused after a restart.
std::string MakeNodeId();

/// Six random lower-case hex digits (or `n`), from a non-deterministic source.
std::string RandomHex(int n = 6);

}  // namespace sched
