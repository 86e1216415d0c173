#pragma once

// What the protocol tests read of a parse: the field its error names and the error's message,
// or "" when the message was accepted; and the bad bodies they parse, a good one with one field
// changed or left out.

#include <string>

#include <nlohmann/json.hpp>

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

/// `wire` with `key` set to `value`, or without `key` when `value` is discarded
/// (json(json::value_t::discarded): "absent").
inline nlohmann::json WithField(nlohmann::json wire, const char* key, nlohmann::json value) {
    if (value.is_discarded()) {
        wire.erase(key);
    } else {
        wire[key] = std::move(value);
    }
    return wire;
}

}  // namespace sched::protocol::testing
