#pragma once

/// Kept so that the web module's existing callers compile unchanged: SHA-256 now comes from
/// libcrypto through sched/common/crypto.hpp, which new code includes directly.

#include "sched/common/crypto.hpp"

namespace sched::web {

using crypto::Sha256;
using crypto::Sha256Hex;

}  // namespace sched::web
