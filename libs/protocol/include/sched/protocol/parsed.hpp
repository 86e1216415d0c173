#pragma once

/// The result of reading one protocol message from JSON: the message, or the first problem as
/// a 4xx error naming the field (`runs[2].epoch`, `[0].status`). Expected failures as values:
/// parsers never throw on input, whatever its shape.
///
///     auto run = protocol::ParseRunRequest(body, "runs[2]");
///     if (!run.ok()) return Refuse(*run.error);
///     Admit(std::move(run.value));

#include <optional>

#include "sched/http/message.hpp"

namespace sched::protocol {

template <typename Message>
struct Parsed {
    Message value;                        ///< meaningful only when ok()
    std::optional<http::ApiError> error;  ///< the first problem (kInvalidArgument, field named)

    bool ok() const { return !error.has_value(); }
};

}  // namespace sched::protocol
