#pragma once

/// The uniform error body every route of ours answers with (docs/api.md "Errors"), written in
/// one place (Response::Error) and read in one place (ParseErrorBody) by every client of our
/// own services: the trigger nodes reading an executor's refusal, the SDK reading the web
/// module's, schedctl reading the API's.
///
///     {"error": {"code": "not_found", "message": "no handler \"x\"", "field": "runs[1].handler"}}
///
/// `field` is null when the error is not about one field. `code` is a canonical code name
/// (sched/common/status.hpp) or, for failures that exist only in HTTP, one of its own
/// ("method_not_allowed", "payload_too_large", ...).

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sched/common/status.hpp"

namespace sched::http {

struct ErrorReply {
    std::string code;  ///< as sent ("" when the body had none)
    std::string message;
    std::string field;  ///< "" when null or absent

    /// `code` as a canonical code, nullopt for an HTTP-only or unknown name.
    std::optional<Code> Canonical() const;

    friend bool operator==(const ErrorReply&, const ErrorReply&) = default;
};

/// The body for an error.
nlohmann::json ErrorBody(std::string_view code, std::string message, std::string field);

/// The error of a response body, or nullopt when `body` is not the uniform error shape (an
/// answer from something else: a proxy's page, an older peer). Lenient: a missing or non-string
/// member reads as "".
std::optional<ErrorReply> ParseErrorBody(const nlohmann::json& body);

}  // namespace sched::http
