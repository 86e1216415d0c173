#pragma once

/// The audit log as the API answers it (schema AuditEntry; docs/api.md "Audit log").

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "sched/api/view.hpp"

namespace sched::api {

/// Who made a change: a token's name and role (0 for the cluster token and the scheduler).
struct AuditActorView {
    std::string name;
    std::string role;
    std::int64_t token_id = 0;

    SCHED_API_FIELDS(AuditActorView, name, role, token_id)
};

/// What a change was made to.
struct AuditTargetView {
    std::string kind;
    std::string id;
    std::string name;

    SCHED_API_FIELDS(AuditTargetView, kind, id, name)
};

/// Schema AuditEntry: one change, with the target's API view before and after it (null: it did
/// not exist, or no longer does).
struct AuditEntryView {
    std::int64_t id = 0;
    std::int64_t at = 0;
    AuditActorView actor;
    std::string action;
    AuditTargetView target;
    nlohmann::json before;
    nlohmann::json after;

    SCHED_API_FIELDS(AuditEntryView, id, at, actor, action, target, before, after)
};

}  // namespace sched::api
