#pragma once

/// schedctl's command line (docs/schedctl.md): option parsing, configuration and the commands.

#include <iosfwd>

namespace sched::ctl {

/// Runs schedctl with `argv`, writing results to `out` and problems to `err`. Returns the exit
/// code: 0 ok (and, for diff, no drift), 1 an error, 2 diff found drift.
int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace sched::ctl
