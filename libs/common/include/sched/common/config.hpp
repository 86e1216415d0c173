#pragma once

/// YAML configuration reading with exact errors.
///
/// Every component reads its keys through a ConfigNode: the typed getters take the default that
/// applies when a key is absent, check the type and range, and remember which keys were read.
/// After all components have read their sections, RejectUnknownKeys() throws for any key nobody
/// read, naming its full path ("http.listen-adress: unknown key"). Keys are kebab-case.
///
/// Errors are ConfigError exceptions (start-up errors, not expected failures); apps print what() as one
/// line and exit with code 2.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "sched/common/duration.hpp"

namespace sched {

/// A configuration error. what() is "<path>: <problem>", e.g.
/// "database.pool-size: expected an integer in 1..256, got \"lots\"".
class ConfigError : public std::runtime_error {
  public:
    ConfigError(std::string path, const std::string& problem)
        : std::runtime_error((path.empty() ? std::string("config") : path) + ": " + problem), path_(std::move(path)) {}
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

class ConfigNode {
  public:
    /// Parses a YAML file. Throws ConfigError naming the file (and line) when it cannot be read
    /// or parsed. An empty file is an empty map (all defaults).
    static ConfigNode LoadFile(const std::filesystem::path& file);
    /// Parses YAML text; `source` names it in errors.
    static ConfigNode LoadString(const std::string& yaml, const std::string& source = "<string>");

    /// The full dotted path of this node ("" for the root).
    const std::string& path() const { return path_; }
    /// True when the key is present (even if null).
    bool Has(std::string_view key) const;

    /// A child map. Absent -> an empty map whose getters all return their defaults.
    /// Throws ConfigError when the key holds something other than a map.
    ConfigNode Child(std::string_view key) const;

    std::string String(std::string_view key, const std::string& fallback) const;
    std::int64_t Int(std::string_view key, std::int64_t fallback, std::int64_t min, std::int64_t max) const;
    bool Bool(std::string_view key, bool fallback) const;
    /// A duration string ("3s"); must lie in [min, max].
    Micros Duration(std::string_view key, Micros fallback, Micros min = Micros{0},
                    Micros max = std::chrono::hours(24 * 365)) const;
    /// One of `allowed` (exact match).
    std::string Enum(std::string_view key, const std::string& fallback, const std::vector<std::string>& allowed) const;
    std::vector<std::string> StringList(std::string_view key, const std::vector<std::string>& fallback) const;

    /// Throws ConfigError for the first key in the whole document that no getter read.
    void RejectUnknownKeys() const;

  private:
    struct Document {
        YAML::Node root;
        std::string source;
        std::set<std::string> read;  // dotted paths of keys that were read
    };
    ConfigNode(std::shared_ptr<Document> doc, YAML::Node node, std::string path);

    std::string ChildPath(std::string_view key) const;
    std::optional<YAML::Node> Lookup(std::string_view key) const;  // marks the key read
    std::string Scalar(std::string_view key, const YAML::Node& n) const;
    void CheckUnknown(const YAML::Node& node, const std::string& path) const;

    std::shared_ptr<Document> doc_;
    YAML::Node node_;
    std::string path_;
};

/// The value of an environment variable that overrides a secret (SCHED_DB_PASSWORD, SCHED_TOKEN),
/// or nullopt when unset or empty.
std::optional<std::string> EnvOverride(const char* name);

}  // namespace sched
