#include "sched/common/status.hpp"

namespace sched {

std::string_view CodeName(Code code) {
    switch (code) {
        case Code::kOk:
            return "ok";
        case Code::kCancelled:
            return "cancelled";
        case Code::kInvalidArgument:
            return "invalid_argument";
        case Code::kDeadlineExceeded:
            return "deadline_exceeded";
        case Code::kNotFound:
            return "not_found";
        case Code::kAlreadyExists:
            return "already_exists";
        case Code::kPermissionDenied:
            return "permission_denied";
        case Code::kResourceExhausted:
            return "resource_exhausted";
        case Code::kFailedPrecondition:
            return "failed_precondition";
        case Code::kAborted:
            return "aborted";
        case Code::kOutOfRange:
            return "out_of_range";
        case Code::kUnimplemented:
            return "unimplemented";
        case Code::kInternal:
            return "internal";
        case Code::kUnavailable:
            return "unavailable";
        case Code::kUnauthenticated:
            return "unauthenticated";
    }
    return "unknown";
}

std::string Status::ToString() const {
    if (ok()) return "ok";
    std::string out(CodeName(code_));
    if (!message_.empty()) {
        out += ": ";
        out += message_;
    }
    return out;
}

}  // namespace sched
