#pragma once

/// Expected failures as values: a Status with Abseil's canonical codes and a
/// Result<T> that holds either a value or a non-OK Status. Broken invariants are exceptions.

#include <cassert>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace sched {

/// Canonical error codes (same meanings as absl::StatusCode).
enum class Code {
    kOk = 0,
    kCancelled,           ///< the caller cancelled the work
    kInvalidArgument,     ///< the input is wrong; retrying will not help
    kDeadlineExceeded,    ///< the deadline passed before the work finished
    kNotFound,            ///< the entity does not exist
    kAlreadyExists,       ///< the entity exists already
    kPermissionDenied,    ///< authenticated but not allowed
    kResourceExhausted,   ///< out of capacity or quota
    kFailedPrecondition,  ///< the system is not in the state the call needs
    kAborted,             ///< a conflict (CAS lost, lease lost): retry at a higher level
    kOutOfRange,
    kUnimplemented,
    kInternal,     ///< an invariant broke somewhere we could not throw
    kUnavailable,  ///< transient (DB or peer down): retry the same call with backoff
    kUnauthenticated,
};

/// Short, stable, lower-case name of a code ("unavailable", "not_found", ...).
std::string_view CodeName(Code code);

class [[nodiscard]] Status {
  public:
    Status() = default;
    Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

    static Status Ok() { return {}; }

    bool ok() const { return code_ == Code::kOk; }
    Code code() const { return code_; }
    const std::string& message() const { return message_; }
    /// "unavailable: connection refused"
    std::string ToString() const;

    friend bool operator==(const Status&, const Status&) = default;

  private:
    Code code_ = Code::kOk;
    std::string message_;
};

inline Status InvalidArgument(std::string m) {
    return {Code::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) {
    return {Code::kNotFound, std::move(m)};
}
inline Status AlreadyExists(std::string m) {
    return {Code::kAlreadyExists, std::move(m)};
}
inline Status Aborted(std::string m) {
    return {Code::kAborted, std::move(m)};
}
inline Status FailedPrecondition(std::string m) {
    return {Code::kFailedPrecondition, std::move(m)};
}
inline Status Unavailable(std::string m) {
    return {Code::kUnavailable, std::move(m)};
}
inline Status DeadlineExceeded(std::string m) {
    return {Code::kDeadlineExceeded, std::move(m)};
}
inline Status Internal(std::string m) {
    return {Code::kInternal, std::move(m)};
}
inline Status Cancelled(std::string m) {
    return {Code::kCancelled, std::move(m)};
}

/// Thrown by Result<T>::value() on an error result: using a value that is not there is a bug.
class BadResultAccess : public std::logic_error {
  public:
    explicit BadResultAccess(const Status& s) : std::logic_error("value() on error result: " + s.ToString()) {}
};

/// Either a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
  public:
    Result(T value) : value_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
    Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
        if (status_.ok()) throw std::logic_error("Result constructed from an OK status without a value");
    }

    bool ok() const { return value_.has_value(); }
    explicit operator bool() const { return ok(); }

    const Status& status() const { return status_; }
    T& value() & {
        if (!ok()) throw BadResultAccess(status_);
        return *value_;
    }
    const T& value() const& {
        if (!ok()) throw BadResultAccess(status_);
        return *value_;
    }
    T&& value() && {
        if (!ok()) throw BadResultAccess(status_);
        return std::move(*value_);
    }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

  private:
    // A plain pair rather than std::variant: g++ 12 reports false -Wmaybe-uninitialized on
    // variants holding strings, and -Werror would turn that into a broken CI build.
    Status status_;
    std::optional<T> value_;
};

}  // namespace sched
