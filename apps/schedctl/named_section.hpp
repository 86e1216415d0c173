#pragma once

/// The sections of a declarative file that list objects keyed by name (`calendars:`,
/// `workflows:`, `alerts:`) are read alike: the list is bounded before any entry is read, each
/// entry is read by its section's reader, and every error names the file, the line, the entry
/// ("calendars[1] (name \"x\")") and the field.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "declared_object.hpp"
#include "sched/common/status.hpp"

namespace sched::ctl {

/// How a section's errors name it.
struct NamedSection {
    std::string_view key;      ///< the top-level key: "calendars"
    std::string_view list_of;  ///< "calendars: expected a list of <list_of>"
    std::string_view counted;  ///< "calendars: more than <max_entries> <counted>"
    std::size_t max_entries;
};

/// A problem in one entry: where it is and what it is ("colour: unknown field").
struct EntryProblem {
    YAML::Node at;
    std::string what;
};

/// Reads one entry of a section into `fields`; nullopt when it is valid. A valid entry has a
/// non-empty string `name` (the reader checks it).
using EntryReader = std::function<std::optional<EntryProblem>(const YAML::Node& entry, nlohmann::json& fields)>;

/// The section `section.key` of `text` (the contents of `file_name`): nullopt when the file has
/// no such key (then apply leaves those objects alone, even with --prune), an empty list when
/// the key is empty. kInvalidArgument "jobs.yaml: line 4: calendars[0] (name \"x\"): colour:
/// unknown field" for what `read` refuses, for a list longer than `section.max_entries`, for
/// something else than a list, and for a name given twice.
Result<std::optional<std::vector<DeclaredObject>>> ParseNamedSection(std::string_view text, std::string_view file_name,
                                                                     const NamedSection& section,
                                                                     const EntryReader& read);

/// "line N: " for a node that has a place in the file, "" for one that has none.
std::string LineOf(const YAML::Node& at);

}  // namespace sched::ctl
