#pragma once

/// The declarative job file `schedctl apply -f` and `diff -f` read (docs/schedctl.md):
///
///     jobs:
///       - name: nightly-report          # the key: one job per name
///         app: reports
///         handler: build
///         schedule_type: cron
///         schedule_expr: "0 0 2 * * ?"
///         params: {report: sales}
///
/// Fields are the job API's (`JobInput` in openapi.json) minus `version`; `id` is refused.
/// The file is hostile input like any other: its size, what its aliases expand to, its nesting
/// (LoadBoundedYaml), its job count and params' nesting and size are bounded before any deeper
/// work, and every problem names the file, the job (index and name) and the field.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "declared_object.hpp"
#include "sched/common/status.hpp"

namespace sched::ctl {

inline constexpr std::size_t kMaxJobFileBytes = 1024 * 1024;
inline constexpr std::size_t kMaxJobsPerFile = 1000;
inline constexpr std::size_t kMaxParamsDepth = 32;
/// A job's params as the API stores them (a string as is, another value as JSON text), at most.
inline constexpr std::size_t kMaxParamsBytes = 65535;

/// One job as the file declares it.
using JobSpec = DeclaredObject;

/// Parses and validates `text` (the contents of `file_name`, which errors name).
/// kInvalidArgument: "jobs.yaml: jobs[2] (name \"x\"): retry_max: expected an integer".
Result<std::vector<JobSpec>> ParseJobFile(std::string_view text, std::string_view file_name);

/// One job for `jobs create -f` / `jobs update -f`: a YAML (or JSON) mapping of job fields,
/// converted as the job file's are but without the required-field checks (update sends only
/// what changes). kInvalidArgument names the file and the field.
Result<nlohmann::json> ParseJobDocument(std::string_view text, std::string_view file_name);

/// Reads at most kMaxJobFileBytes of `path`. kNotFound when it cannot be read.
Result<std::string> ReadBoundedFile(const std::string& path);

/// Reads `path` (at most kMaxJobFileBytes) and parses it. kNotFound when it cannot be read.
Result<std::vector<JobSpec>> LoadJobFile(const std::string& path);

/// The API's value for a field the file leaves out (what POST would store), or null for the
/// fields that have no default (`name`, `app`, `handler`, `schedule_type`) and for `enabled`,
/// which apply manages only when the file states it (a pause made by an operator stays).
nlohmann::json DefaultFieldValue(std::string_view field);

/// Every field a job file may hold, in the API's order.
const std::vector<std::string>& JobFileFields();

}  // namespace sched::ctl
