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

    static constexpr auto Fields() {
        return std::tuple{Field("id", &AlertRuleView::id),
                          Field("name", &AlertRuleView::name),
                          Field("job_id", &AlertRuleView::job_id),
                          Field("events", &AlertRuleView::events),
                          Field("consecutive_failures", &AlertRuleView::consecutive_failures),
                          Field("no_success_within_ms", &AlertRuleView::no_success_within_ms),
                          Field("url", &AlertRuleView::url),
                          Field("has_secret", &AlertRuleView::has_secret),
                          Field("enabled", &AlertRuleView::enabled),
                          Field("created_at_ms", &AlertRuleView::created_at_ms),
                          Field("version", &AlertRuleView::version),
                          Field("managed_by", &AlertRuleView::managed_by)};
    }
};

/// Schema AlertRulePage: unlike api::Page, its cursor is the last rule's id as a number.
struct AlertRulePageView {
    std::vector<AlertRuleView> items;
    std::optional<std::int64_t> next_cursor;

    static constexpr auto Fields() {
        return std::tuple{Field("items", &AlertRulePageView::items),
                          Field("next_cursor", &AlertRulePageView::next_cursor)};
    }
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

    static constexpr auto Fields() {
        return std::tuple{Field("id", &AlertDeliveryView::id),
                          Field("rule_id", &AlertDeliveryView::rule_id),
                          Field("job_id", &AlertDeliveryView::job_id),
                          Field("fire_id", &AlertDeliveryView::fire_id),
                          Field("event", &AlertDeliveryView::event),
                          Field("status", &AlertDeliveryView::status),
                          Field("attempts", &AlertDeliveryView::attempts),
                          Field("next_attempt_at_ms", &AlertDeliveryView::next_attempt_at_ms),
                          Field("last_error", &AlertDeliveryView::last_error),
                          Field("created_at_ms", &AlertDeliveryView::created_at_ms),
                          Field("delivered_at_ms", &AlertDeliveryView::delivered_at_ms),
                          Field("test", &AlertDeliveryView::test),
                          Field("payload", &AlertDeliveryView::payload)};
    }
};

}  // namespace sched::api
