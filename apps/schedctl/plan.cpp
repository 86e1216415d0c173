#include "plan.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "table.hpp"

namespace sched::ctl {

std::size_t Plan::Count(ChangeKind kind) const {
    return static_cast<std::size_t>(
        std::count_if(changes.begin(), changes.end(), [kind](const PlannedChange& c) { return c.kind == kind; }));
}

bool Plan::HasDrift() const {
    return Count(ChangeKind::kUnchanged) != changes.size();
}

std::map<std::string, const nlohmann::json*> IndexByName(const nlohmann::json& current) {
    std::map<std::string, const nlohmann::json*> by_name;
    if (!current.is_array()) return by_name;
    for (const auto& item : current) {
        if (!item.is_object() || !item.contains("name") || !item["name"].is_string()) continue;
        if (!item.contains("id") || !item["id"].is_number_integer()) continue;
        by_name.emplace(item["name"].get<std::string>(), &item);
    }
    return by_name;
}

std::map<std::int64_t, std::string> JobNamesById(const nlohmann::json& jobs) {
    std::map<std::int64_t, std::string> names;
    for (const auto& [name, job] : IndexByName(jobs)) names.emplace((*job)["id"].get<std::int64_t>(), name);
    return names;
}

std::string JobNameOrId(const std::map<std::int64_t, std::string>& names, std::int64_t id) {
    const auto it = names.find(id);
    return it != names.end() ? it->second : "#" + std::to_string(id);
}

std::vector<std::string> WithManagedBy(std::vector<std::string> fields) {
    fields.emplace_back("managed_by");
    return fields;
}

Plan PlanByName(const std::vector<DeclaredObject>& desired, const nlohmann::json& current, bool prune,
                const std::vector<std::string>& fields, const WantedValue& want) {
    auto by_name = IndexByName(current);
    Plan plan;
    for (const auto& spec : desired) {
        PlannedChange change;
        change.name = spec.name;
        const auto it = by_name.find(spec.name);
        if (it == by_name.end()) {
            change.kind = ChangeKind::kCreate;
            change.body = spec.fields;
            plan.changes.push_back(std::move(change));
            continue;
        }
        const nlohmann::json& held = *it->second;
        change.id = held["id"].get<std::int64_t>();
        change.version = held.value("version", std::int64_t{0});
        nlohmann::json body = nlohmann::json::object();
        for (const auto& field : fields) {
            std::optional<nlohmann::json> wanted = want(spec.fields, field);
            if (!wanted) continue;
            body[field] = *wanted;
            const nlohmann::json have = held.contains(field) ? held[field] : nlohmann::json(nullptr);
            if (have != *wanted) change.changes.push_back({field, have, std::move(*wanted)});
        }
        body["version"] = change.version;
        change.body = std::move(body);
        change.kind = change.changes.empty() ? ChangeKind::kUnchanged : ChangeKind::kUpdate;
        plan.changes.push_back(std::move(change));
        by_name.erase(it);
    }
    if (prune) {
        // by_name is ordered: deletes come out sorted by name.
        for (const auto& [name, held] : by_name) {
            PlannedChange change;
            change.kind = ChangeKind::kDelete;
            change.name = name;
            change.id = (*held)["id"].get<std::int64_t>();
            plan.changes.push_back(std::move(change));
        }
    }
    return plan;
}

Plan PlanChanges(const std::vector<JobSpec>& desired, const nlohmann::json& current, bool prune) {
    const WantedValue want = [](const nlohmann::json& stated,
                                const std::string& field) -> std::optional<nlohmann::json> {
        nlohmann::json value = stated.contains(field) ? stated[field] : DefaultFieldValue(field);
        if (value.is_null()) return std::nullopt;  // enabled left out: not managed
        return value;
    };
    static const std::vector<std::string> fields = WithManagedBy(JobFileFields());
    return PlanByName(desired, current, prune, fields, want);
}

std::string FormatPlan(const Plan& plan, std::string_view name_prefix, std::string_view summary) {
    std::ostringstream out;
    for (const auto& c : plan.changes) {
        const std::string id = c.kind == ChangeKind::kCreate ? "" : " (id " + std::to_string(c.id) + ")";
        switch (c.kind) {
            case ChangeKind::kCreate:
                out << "+ create    ";
                break;
            case ChangeKind::kUpdate:
                out << "~ update    ";
                break;
            case ChangeKind::kUnchanged:
                out << "= unchanged ";
                break;
            case ChangeKind::kDelete:
                out << "- delete    ";
                break;
        }
        out << name_prefix << SanitizeCell(c.name) << id << "\n";
        for (const auto& f : c.changes) {
            out << "    " << f.field << ": "
                << SanitizeCell(f.old_value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) << " -> "
                << SanitizeCell(f.new_value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) << "\n";
        }
    }
    out << summary << ": " << plan.Count(ChangeKind::kCreate) << " to create, " << plan.Count(ChangeKind::kUpdate)
        << " to update, " << plan.Count(ChangeKind::kDelete) << " to delete, " << plan.Count(ChangeKind::kUnchanged)
        << " unchanged.\n";
    return out.str();
}

}  // namespace sched::ctl
