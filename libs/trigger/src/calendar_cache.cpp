#include "sched/trigger/calendar_cache.hpp"

#include "sched/store/calendar.hpp"

namespace sched::trigger {

void CalendarCache::Refresh(soci::session& s, const std::set<std::string>& names) {
    if (names.empty()) return;
    std::map<std::string, store::CalendarVersion> stored;
    for (auto& v : store::CalendarRepository::ListVersions(s)) stored.emplace(v.name, v);
    for (const auto& name : names) {
        const auto it = stored.find(name);
        if (it == stored.end()) {
            entries_[name] = Entry{.error = "calendar \"" + name + "\" does not exist"};
            continue;
        }
        auto& entry = entries_[name];
        if (entry.id == it->second.id && entry.version == it->second.version) continue;
        const auto record = store::CalendarRepository::FindByName(s, name);
        if (!record) {
            entry = Entry{.error = "calendar \"" + name + "\" does not exist"};
            continue;
        }
        entry = Entry{.id = record->id, .version = record->version};
        auto made = cron::Calendar::Make({.time_zone = record->time_zone,
                                          .excluded_dates = record->excluded_dates,
                                          .excluded_weekdays = record->excluded_weekdays,
                                          .excluded_times = record->excluded_times});
        if (made.ok()) {
            entry.calendar = std::move(*made);
        } else {
            entry.error = "calendar \"" + name + "\": " + made.status().message();
        }
    }
    // Calendars no due job named this time stay cached: the next Refresh checks their version.
    if (entries_.size() > 20000) entries_.clear();
}

const cron::Calendar* CalendarCache::Find(const std::string& name, std::string* error) const {
    const auto it = entries_.find(name);
    if (it == entries_.end()) {
        if (error) *error = "calendar \"" + name + "\" was not loaded";
        return nullptr;
    }
    if (!it->second.calendar && error) *error = it->second.error;
    return it->second.calendar ? &*it->second.calendar : nullptr;
}

}  // namespace sched::trigger
