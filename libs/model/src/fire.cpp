#include "sched/model/fire.hpp"

namespace sched::model {

std::string_view FireStatusName(FireStatus s) {
    return kFireStatusNames.Name(s);
}

std::optional<FireStatus> ParseFireStatus(std::string_view name) {
    return kFireStatusNames.Parse(name);
}

bool IsFinal(FireStatus s) {
    switch (s) {
        case FireStatus::kSucceeded:
        case FireStatus::kFailed:
        case FireStatus::kTimeout:
        case FireStatus::kKilled:
        case FireStatus::kLost:
        case FireStatus::kSkipped:
            return true;
        default:
            return false;
    }
}

namespace {

// Pending, dispatching, running, then every final state: the order a fire moves in.
int Rank(FireStatus s) {
    switch (s) {
        case FireStatus::kPending:
            return 0;
        case FireStatus::kDispatching:
            return 1;
        case FireStatus::kRunning:
            return 2;
        default:
            return 3;
    }
}

}  // namespace

bool MayMove(FireStatus from, FireStatus to) {
    if (from == FireStatus::kDispatching && to == FireStatus::kPending) return true;
    if (from == FireStatus::kLost && to == FireStatus::kSucceeded) return true;
    return Rank(to) > Rank(from);
}

std::string_view FireReasonName(FireReason r) {
    return kFireReasonNames.Name(r);
}

std::optional<FireReason> ParseFireReason(std::string_view name) {
    return kFireReasonNames.Parse(name);
}

std::string_view FireKindName(FireKind k) {
    return kFireKindNames.Name(k);
}

std::optional<FireKind> ParseFireKind(std::string_view name) {
    return kFireKindNames.Parse(name);
}

}  // namespace sched::model
