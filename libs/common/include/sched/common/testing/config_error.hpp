#pragma once

/// Test toolbox (see wait_for.hpp): what a configuration reader refuses, as a value a test can
/// compare.

#include <functional>
#include <string>

#include "sched/common/config.hpp"

namespace sched::testing {

/// The message of the ConfigError `read` throws ("<path>: <problem>"), or "" when it throws none.
/// Any other exception goes through to the test.
inline std::string ConfigErrorOf(const std::function<void()>& read) {
    try {
        read();
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

}  // namespace sched::testing
