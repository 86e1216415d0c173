#pragma once

/// Every YAML document schedctl reads (a job file, `jobs create -f`, its config file) goes
/// through LoadBoundedYaml: the file is hostile input like a request body. yaml-cpp shares an
/// anchored node between its aliases, so a few hundred bytes of nested aliases ("billion
/// laughs") load as a small graph that expands to 10^9 values as soon as anything walks it.
/// The bounds are therefore checked on the parser's events, with every alias counted as the
/// whole node it stands for, before a node is built or walked.

#include <cstddef>
#include <string_view>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "sched/common/status.hpp"

namespace sched::ctl {

/// What one document may hold, aliases expanded.
struct YamlBounds {
    std::size_t max_bytes = 1024 * 1024;           ///< the text
    std::size_t max_values = 250'000;              ///< scalars, nulls, lists and mappings
    std::size_t max_depth = 64;                    ///< lists and mappings inside each other
    std::size_t max_scalar_bytes = 65'535;         ///< one scalar (the largest field, params, holds as much)
    std::size_t max_text_bytes = 4 * 1024 * 1024;  ///< all scalars together
};

/// The first document of `text` (the contents of `file_name`). kInvalidArgument naming the file
/// and, where there is one, the line: "jobs.yaml: line 4: the document expands to more than
/// 250000 values (aliases included)"; a YAML syntax error likewise ("jobs.yaml: line 2: ...").
/// An alias to a node that encloses it (a cycle) is refused.
Result<YAML::Node> LoadBoundedYaml(std::string_view text, std::string_view file_name, const YamlBounds& bounds = {});

/// A YAML scalar as YAML 1.2's core schema reads it: null, a boolean, an integer, a number or
/// else a string; a quoted scalar always stays a string.
nlohmann::json ScalarToJson(const YAML::Node& node);

}  // namespace sched::ctl
