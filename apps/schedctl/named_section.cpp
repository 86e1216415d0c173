#include "named_section.hpp"

#include <set>

#include "bounded_yaml.hpp"

namespace sched::ctl {

std::string LineOf(const YAML::Node& at) {
    return at.Mark().is_null() ? std::string() : "line " + std::to_string(at.Mark().line + 1) + ": ";
}

Result<std::optional<std::vector<DeclaredObject>>> ParseNamedSection(std::string_view text, std::string_view file_name,
                                                                     const NamedSection& section,
                                                                     const EntryReader& read) {
    const std::string file(file_name);
    const std::string key(section.key);
    auto fail = [&](const YAML::Node& at, const std::string& what) {
        return Status(Code::kInvalidArgument, file + ": " + LineOf(at) + what);
    };
    auto loaded = LoadBoundedYaml(text, file);
    if (!loaded.ok()) return loaded.status();
    const YAML::Node& root = *loaded;
    if (!root.IsMap() || !root[key]) return std::optional<std::vector<DeclaredObject>>();
    const YAML::Node entries = root[key];
    if (entries.IsNull()) return std::optional<std::vector<DeclaredObject>>(std::vector<DeclaredObject>{});
    if (!entries.IsSequence()) return fail(entries, key + ": expected a list of " + std::string(section.list_of));
    // Bounded before any entry is read.
    if (entries.size() > section.max_entries) {
        return fail(entries,
                    key + ": more than " + std::to_string(section.max_entries) + " " + std::string(section.counted));
    }
    std::vector<DeclaredObject> out;
    std::set<std::string> names;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const YAML::Node node = entries[i];
        std::string where = key + "[" + std::to_string(i) + "]";
        if (node.IsMap() && node["name"] && node["name"].IsScalar()) {
            where += " (name " + nlohmann::json(node["name"].Scalar()).dump() + ")";
        }
        DeclaredObject object;
        if (auto problem = read(node, object.fields)) return fail(problem->at, where + ": " + problem->what);
        object.name = object.fields["name"].get<std::string>();
        if (!names.insert(object.name).second) {
            return fail(node, where + ": name: " + nlohmann::json(object.name).dump() + " appears twice");
        }
        out.push_back(std::move(object));
    }
    return std::optional<std::vector<DeclaredObject>>(std::move(out));
}

}  // namespace sched::ctl
