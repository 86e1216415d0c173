#pragma once

/// Planning `schedctl diff` / `apply`: what must change so that the cluster's jobs match a job
/// file (docs/schedctl.md "apply and diff"). Pure: no I/O, unit-tested.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "job_file.hpp"

namespace sched::ctl {

enum class ChangeKind { kCreate, kUpdate, kUnchanged, kDelete };

struct FieldChange {
    std::string field;
    nlohmann::json old_value;
    nlohmann::json new_value;
};

struct PlannedChange {
    ChangeKind kind = ChangeKind::kUnchanged;
    std::string name;
    std::int64_t id = 0;               ///< update, unchanged, delete: the job's id
    std::int64_t version = 0;          ///< update: the version read (sent back with PUT)
    std::vector<FieldChange> changes;  ///< update only
    nlohmann::json body;               ///< create: POST body; update: PUT body (version included)
};

struct Plan {
    std::vector<PlannedChange> changes;  ///< the file's order, then deletes by name

    std::size_t Count(ChangeKind kind) const;
    /// True when anything would be created, updated or deleted.
    bool HasDrift() const;
};

/// Compares `desired` with `current` (the API's job objects). A field the file leaves out is
/// compared with the API's default (DefaultFieldValue), except `enabled`, compared only when
/// the file states it. With `prune`, current jobs missing from the file are deleted.
/// Current objects without a string `name` or an integer `id` are ignored.
/// The server's list (the items of a `GET` of jobs or calendars) by name; items without a
/// string `name` or an integer `id` are left out (the server's answer is not trusted blindly).
std::map<std::string, const nlohmann::json*> IndexByName(const nlohmann::json& current);

/// The names of the server's jobs (the items of a `GET` of jobs) by id, as IndexByName reads them.
std::map<std::int64_t, std::string> JobNamesById(const nlohmann::json& jobs);

/// How a file names the job `id`: its name, or "#<id>" for a job that is not in `names`.
std::string JobNameOrId(const std::map<std::int64_t, std::string>& names, std::int64_t id);

/// A file's fields and `managed_by`, which no file states: apply sets it (the file's name) on
/// every object it applies.
std::vector<std::string> WithManagedBy(std::vector<std::string> fields);

/// What a file wants of one managed field of a declared object, given the fields it states:
/// the value to send and compare, or nullopt when the file does not manage that field.
using WantedValue =
    std::function<std::optional<nlohmann::json>(const nlohmann::json& stated, const std::string& field)>;

/// The plan for one kind of object (jobs, calendars), matched by name: a declared object the
/// server lacks is created with the fields the file states; one it has is updated when a
/// managed field (of `fields`, in that order) differs from what `want` says, with a PUT body of
/// every managed field and the version read; with `prune`, a server object the file does not
/// declare is deleted (deletes last, sorted by name).
Plan PlanByName(const std::vector<DeclaredObject>& desired, const nlohmann::json& current, bool prune,
                const std::vector<std::string>& fields, const WantedValue& want);

Plan PlanChanges(const std::vector<JobSpec>& desired, const nlohmann::json& current, bool prune);

/// The plan as operators read it, one line per job and one per changed field, then a summary:
///
///     + create    nightly-report
///     ~ update    cleanup (id 7)
///         schedule_expr: "0 0 * * * ?" -> "0 30 * * * ?"
///     = unchanged billing (id 3)
///     - delete    old-job (id 9)
///     Plan: 1 to create, 1 to update, 1 to delete, 1 unchanged.
///
/// For calendars `name_prefix` is "calendar " and `summary` "Calendars".
std::string FormatPlan(const Plan& plan, std::string_view name_prefix = "", std::string_view summary = "Plan");

}  // namespace sched::ctl
