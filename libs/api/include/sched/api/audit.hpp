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

    static constexpr auto Fields() {
        return std::tuple{Field("name", &AuditActorView::name), Field("role", &AuditActorView::role),
                          Field("token_id", &AuditActorView::token_id)};
    }
};

/// What a change was made to.
struct AuditTargetView {
    std::string kind;
    std::string id;
    std::string name;

    static constexpr auto Fields() {
        return std::tuple{Field("kind", &AuditTargetView::kind), Field("id", &AuditTargetView::id),
                          Field("name", &AuditTargetView::name)};
    }
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

    static constexpr auto Fields() {
        return std::tuple{Field("id", &AuditEntryView::id),         Field("at", &AuditEntryView::at),
                          Field("actor", &AuditEntryView::actor),   Field("action", &AuditEntryView::action),
                          Field("target", &AuditEntryView::target), Field("before", &AuditEntryView::before),
                          Field("after", &AuditEntryView::after)};
    }
};

}  // namespace sched::api
