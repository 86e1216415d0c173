#include "calendar_file.hpp"

#include <yaml-cpp/yaml.h>

#include <array>
#include <map>
#include <set>

#include "bounded_yaml.hpp"
#include "job_file.hpp"
#include "named_section.hpp"

namespace sched::ctl {
namespace {

constexpr std::array<std::string_view, 7> kWeekdays = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
constexpr std::array<std::string_view, 7> kWeekdaysLong = {"monday", "tuesday",  "wednesday", "thursday",
                                                           "friday", "saturday", "sunday"};

bool IsList(std::string_view field) {
    return field == "excluded_dates" || field == "excluded_weekdays" || field == "excluded_times";
}

nlohmann::json DefaultCalendarValue(std::string_view field) {
    if (field == "time_zone") return "UTC";
    if (IsList(field)) return nlohmann::json::array();
    return "";
}

std::string Trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return std::string(s);
}

// The server's canonical weekdays (week order, each once), or the list as written when an entry
// is not a weekday: the API then rejects it naming the entry, which says more than we could.
nlohmann::json CanonicalWeekdays(const nlohmann::json& list) {
    std::array<bool, 7> days{};
    for (const auto& item : list) {
        std::string name = item.get<std::string>();
        for (auto& c : name) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
        std::size_t d = 0;
        while (d < 7 && kWeekdays[d] != name && kWeekdaysLong[d] != name) ++d;
        if (d == 7) return list;
        days[d] = true;
    }
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t d = 0; d < 7; ++d) {
        if (days[d]) out.push_back(kWeekdays[d]);
    }
    return out;
}

// One calendar of the section into `fields`: the problem and where it is, or nullopt.
std::optional<EntryProblem> CalendarEntry(const YAML::Node& node, nlohmann::json& fields) {
    if (!node.IsMap()) return EntryProblem{node, "expected a mapping of calendar fields"};
    for (const auto& kv : node) {
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
        if (key == "id" || key == "version") {
            return EntryProblem{kv.first, key + ": not allowed (the server assigns it; calendars are keyed by name)"};
        }
        const auto& known = CalendarFileFields();
        if (std::find(known.begin(), known.end(), key) == known.end()) {
            return EntryProblem{kv.first, key + ": unknown field"};
        }
        if (fields.contains(key)) return EntryProblem{kv.first, key + ": given twice"};
        const YAML::Node& value = kv.second;
        if (!IsList(key)) {
            if (!value.IsScalar()) return EntryProblem{kv.first, key + ": expected a string"};
            const std::string s = value.Scalar();
            const std::size_t limit = key == "description" ? kMaxCalendarDescriptionBytes : kMaxCalendarNameBytes;
            if (s.size() > limit) {
                return EntryProblem{kv.first, key + ": longer than " + std::to_string(limit) + " bytes"};
            }
            fields[key] = key == "time_zone" ? (Trim(s).empty() ? "UTC" : Trim(s)) : s;
            continue;
        }
        nlohmann::json list = nlohmann::json::array();
        if (!value.IsNull()) {
            if (!value.IsSequence()) return EntryProblem{kv.first, key + ": expected a list of strings"};
            // Bounded before reading the entries.
            if (value.size() > kMaxCalendarEntries) {
                return EntryProblem{kv.first, key + ": more than " + std::to_string(kMaxCalendarEntries) + " entries"};
            }
            for (const auto& item : value) {
                if (!item.IsScalar() || item.Scalar().size() > kMaxCalendarEntryBytes) {
                    return EntryProblem{item, key + ": expected strings of at most " +
                                                  std::to_string(kMaxCalendarEntryBytes) + " characters"};
                }
                list.push_back(Trim(item.Scalar()));
            }
        }
        fields[key] = key == "excluded_weekdays" ? CanonicalWeekdays(list) : std::move(list);
    }
    if (!fields.contains("name") || fields["name"].get_ref<const std::string&>().empty()) {
        return EntryProblem{node, "name: required"};
    }
    return std::nullopt;
}

}  // namespace

const std::vector<std::string>& CalendarFileFields() {
    static const std::vector<std::string> fields = {"name",           "description",       "time_zone",
                                                    "excluded_dates", "excluded_weekdays", "excluded_times"};
    return fields;
}

Result<std::optional<std::vector<CalendarSpec>>> ParseCalendarSection(std::string_view text,
                                                                      std::string_view file_name) {
    return ParseNamedSection(text, file_name, {"calendars", "calendars", "calendars", kMaxCalendarsPerFile},
                             CalendarEntry);
}

Plan PlanCalendarChanges(const std::vector<CalendarSpec>& desired, const nlohmann::json& current, bool prune) {
    const WantedValue want = [](const nlohmann::json& stated,
                                const std::string& field) -> std::optional<nlohmann::json> {
        if (field == "name") return std::nullopt;  // fixed: jobs refer to it
        return stated.contains(field) ? stated[field] : DefaultCalendarValue(field);
    };
    return PlanByName(desired, current, prune, CalendarFileFields(), want);
}

std::pair<Plan, Plan> SplitDeletes(const Plan& plan) {
    std::pair<Plan, Plan> out;
    for (const auto& c : plan.changes) (c.kind == ChangeKind::kDelete ? out.second : out.first).changes.push_back(c);
    return out;
}

std::string CalendarRulesSummary(const nlohmann::json& calendar) {
    auto list = [&](const char* key) {
        return calendar.is_object() && calendar.contains(key) && calendar[key].is_array() ? calendar[key]
                                                                                          : nlohmann::json::array();
    };
    auto joined = [](const nlohmann::json& items, std::size_t at_most) {
        std::string out;
        std::size_t n = 0;
        for (const auto& item : items) {
            if (n++ == at_most) return out + ", ...";
            out += (out.empty() ? "" : ", ") + (item.is_string() ? item.get<std::string>() : item.dump());
        }
        return out;
    };
    std::vector<std::string> parts;
    if (const auto days = list("excluded_weekdays"); !days.empty()) parts.push_back(joined(days, 7));
    if (const auto dates = list("excluded_dates"); !dates.empty()) {
        parts.push_back(dates.size() <= 2 ? joined(dates, 2) : std::to_string(dates.size()) + " dates");
    }
    if (const auto times = list("excluded_times"); !times.empty()) parts.push_back(joined(times, 3));
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
    return out.empty() ? "-" : out;
}

}  // namespace sched::ctl
