#pragma once

/// Alert rules and their deliveries as the API answers them (schemas AlertRule, AlertRulePage,
/// AlertDelivery; docs/api.md "Alerts").

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/api/view.hpp"

namespace sched::api {

/// Schema AlertRule: the secret never comes out, only whether there is one.
struct AlertRuleView {
    std::int64_t id = 0;
    std::string name;
    std::optional<std::int64_t> job_id;  ///< null: every job
    std::vector<std::string> events;
    std::int64_t consecutive_failures = 1;
    std::optional<std::int64_t> no_success_within_ms;
    std::string url;
    bool has_secret = false;
    bool enabled = true;
    std::int64_t created_at_ms = 0;
    std::int64_t version = 0;
    std::optional<std::string> managed_by;  ///< the file that declares the rule; null: made by hand

    SCHED_API_FIELDS(AlertRuleView, id, name, job_id, events, consecutive_failures, no_success_within_ms, url,
                     has_secret, enabled, created_at_ms, version, managed_by)
};

/// Schema AlertRulePage: unlike api::Page, its cursor is the last rule's id as a number.
struct AlertRulePageView {
    std::vector<AlertRuleView> items;
    std::optional<std::int64_t> next_cursor;

    SCHED_API_FIELDS(AlertRulePageView, items, next_cursor)
};

/// Schema AlertDelivery: one webhook call of a rule, a fire's or a test's (`test`, negative
/// fire_id).
struct AlertDeliveryView {
    std::int64_t id = 0;
    std::int64_t rule_id = 0;
    std::int64_t job_id = 0;
    std::int64_t fire_id = 0;
    std::string event;
    std::string status;  ///< pending, delivered, failed
    std::int64_t attempts = 0;
    std::int64_t next_attempt_at_ms = 0;
    std::optional<std::string> last_error;
    std::int64_t created_at_ms = 0;
    std::optional<std::int64_t> delivered_at_ms;
    bool test = false;
    nlohmann::json payload;  ///< the body as sent (null when the stored text is not JSON)

    SCHED_API_FIELDS(AlertDeliveryView, id, rule_id, job_id, fire_id, event, status, attempts, next_attempt_at_ms,
                     last_error, created_at_ms, delivered_at_ms, test, payload)
};

}  // namespace sched::api
