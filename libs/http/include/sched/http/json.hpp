#pragma once

/// Reading request fields out of JSON with errors that name the field (never assert on external
/// input; answer 4xx with the field name).
///
///     JsonFields f(*body);
///     const auto fire_id = f.Int("fire_id", {.min = 0});
///     const auto handler = f.String("handler");
///     const auto timeout_ms = f.Int("timeout_ms", 0, {.min = 0});
///     if (f.error()) co_return Response::Error(*f.error());
///
/// Getters never throw: after the first problem they keep returning fallbacks and error() holds
/// that first problem (kInvalidArgument, with the field's path).

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/http/message.hpp"

namespace sched::http {

/// Inclusive bounds for JsonFields::Int.
struct IntRange {
    std::int64_t min = std::numeric_limits<std::int64_t>::min();
    std::int64_t max = std::numeric_limits<std::int64_t>::max();
};

/// `value` serialised (compact, invalid UTF-8 replaced), or nullopt when the text would exceed
/// `max_bytes`. An iterative walk bounds the size before anything is serialised, so a large
/// document costs at most that walk, never a large string.
std::optional<std::string> DumpWithin(const nlohmann::json& value, std::size_t max_bytes);

class JsonFields {
  public:
    /// `value` must be a JSON object (else error() says so, with `prefix` as the field).
    /// `prefix` names nested objects in errors: JsonFields(params, "params") reports
    /// "params.ms". `value` must outlive this reader.
    explicit JsonFields(const nlohmann::json& value, std::string prefix = "");

    /// A required integer (JSON integers only: 1.5, "1" and true are wrong types).
    std::int64_t Int(std::string_view key, IntRange range = {});
    /// An optional integer: `fallback` when absent or null.
    std::int64_t Int(std::string_view key, std::int64_t fallback, IntRange range = {});
    /// A required, non-empty string.
    std::string String(std::string_view key);
    /// An optional string: `fallback` when absent or null.
    std::string String(std::string_view key, std::string fallback);
    /// An optional boolean.
    bool Bool(std::string_view key, bool fallback);
    /// An optional string that must be one of `allowed`.
    std::string Enum(std::string_view key, std::string fallback, std::initializer_list<std::string_view> allowed);
    /// An optional value of any JSON type, returned as is.
    nlohmann::json Value(std::string_view key, nlohmann::json fallback);
    /// A required array of strings.
    std::vector<std::string> StringList(std::string_view key);

    /// Records a problem found by the caller's own checks (kept only if it is the first).
    void Fail(std::string_view key, std::string message);

    /// The first problem, if any.
    const std::optional<ApiError>& error() const { return error_; }
    bool ok() const { return !error_.has_value(); }

  private:
    const nlohmann::json* Find(std::string_view key, bool required);
    std::string FieldPath(std::string_view key) const;

    const nlohmann::json& value_;
    std::string prefix_;
    std::optional<ApiError> error_;
};

}  // namespace sched::http
