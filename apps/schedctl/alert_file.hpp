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

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "declared_object.hpp"
#include "plan.hpp"
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

/// The `alerts:` section of the declarative file `schedctl apply -f` and `diff -f` read
/// (docs/schedctl.md "Alert rules in the file"), beside `jobs:`, `calendars:` and `workflows:`:
///
///     alerts:
///       - name: pager                  # the key: one rule per name
///         job: nightly-report          # a job's name; absent: every job
///         events: [failed, timeout]
///         consecutive_failures: 3
///         url: http://hooks.internal:8080/sched
///         secret: at-least-16-bytes    # sent, never compared (the API never returns it)
///
/// Fields are the rule API's (`AlertRuleInput`) with `job` (a job's name, which the file may
/// declare too) instead of `job_id`; `id`, `job_id` and `version` are refused. Values are typed
/// as the rule file's and checked by the server. At most kMaxAlertRulesPerFile rules; every
/// problem names the file, the line, the rule (index and name) and the field.
inline constexpr std::size_t kMaxAlertRulesPerFile = 1000;

using AlertRuleSpec = DeclaredObject;

/// nullopt when the file has no `alerts:` key (then apply leaves the cluster's rules alone, even
/// with --prune). kInvalidArgument: "ops.yaml: line 9: alerts[1] (name \"pager\"): events: ...".
Result<std::optional<std::vector<AlertRuleSpec>>> ParseAlertSection(std::string_view text, std::string_view file_name);

/// The server's rules (the items of GET /api/v1/alert-rules) with `job_id` replaced by `job`: that
/// job's name in `jobs` (the items of GET /api/v1/jobs), "#<id>" for an id no listed job has, null
/// for a rule of every job. The form the file's rules are compared in.
nlohmann::json RulesByJobName(const nlohmann::json& rules, const nlohmann::json& jobs);

/// Compares `desired` with `current` (already through RulesByJobName), as PlanChanges does for
/// jobs: a field left out is compared with the API's default (`job`: every job, `enabled`: true).
/// `secret` is never compared (the server does not return it): it is sent on create,
/// and with an update when the file states it. With `prune`, current rules missing from the file
/// are deleted. Rules are matched by name: of several server rules with one name, the first.
Plan PlanAlertRuleChanges(const std::vector<AlertRuleSpec>& desired, const nlohmann::json& current, bool prune);

/// A body with `job` (a name) replaced by `job_id`, from `jobs` (the items of GET /api/v1/jobs),
/// and without null fields (`job` null: every job). kNotFound "job: no job named \"x\"".
Result<nlohmann::json> ResolveRuleJob(const nlohmann::json& body, const nlohmann::json& jobs);

}  // namespace sched::ctl
