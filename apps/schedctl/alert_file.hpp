#pragma once

/// The alert rule file of `schedctl alerts create -f` / `alerts update ID -f` (docs/schedctl.md
/// "Alert rules"): one YAML (or JSON) mapping of the API's rule fields.
///
///     name: pager
///     job_id: 7            # absent: every job
///     events: [failed, timeout]
///     consecutive_failures: 3
///     url: http://hooks.internal:8080/sched
///     secret: at-least-16-bytes
///     enabled: true

#include <string_view>

#include <nlohmann/json.hpp>

#include "sched/common/status.hpp"

namespace sched::ctl {

/// The file's fields as the API's JSON, typed as YAML 1.2's core schema reads them (`7` an
/// integer, `true` a boolean, a quoted scalar a string); `events` a list of names. Only the
/// shape is checked here, the values by the server (its 400 names the field). kInvalidArgument
/// naming the file and the field: "pager.yaml: colour: unknown field".
Result<nlohmann::json> ParseAlertRuleDocument(std::string_view text, std::string_view file_name);

/// The body of `alerts update`: `current` (the rule as the API answers it) with the file's
/// fields over it, without the read-only ones; the version is the file's or else the current
/// one. A no_success_within_ms left over from `current` is dropped when the events no longer
/// hold no_success, and a null (job_id: every job) is left out, as the API's create takes it.
nlohmann::json MergeAlertRuleUpdate(const nlohmann::json& current, const nlohmann::json& file_fields);

}  // namespace sched::ctl
