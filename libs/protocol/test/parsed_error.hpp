#pragma once

// What the protocol tests read of a parse: the field its error names and the error's message,
// or "" when the message was accepted.

#include <string>

#include "sched/protocol/parsed.hpp"

namespace sched::protocol::testing {

template <typename M>
std::string Field(const Parsed<M>& parsed) {
    return parsed.error ? parsed.error->field : "";
}

template <typename M>
std::string Message(const Parsed<M>& parsed) {
    return parsed.error ? parsed.error->message : "";
}

}  // namespace sched::protocol::testing
