#include "sched/common/status.hpp"

#include "sched/common/name_table.hpp"

namespace sched {

namespace {

// Spellings in Code's declaration order (kOk = 0 ... kUnauthenticated); they appear in logs and
// error bodies, so they never change.
constexpr auto kCodeNames = MakeNameTable<Code>({
    "ok",
    "cancelled",
    "invalid_argument",
    "deadline_exceeded",
    "not_found",
    "already_exists",
    "permission_denied",
    "resource_exhausted",
    "failed_precondition",
    "aborted",
    "out_of_range",
    "unimplemented",
    "internal",
    "unavailable",
    "unauthenticated",
});

}  // namespace

std::string_view CodeName(Code code) {
    return kCodeNames.Name(code);
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
