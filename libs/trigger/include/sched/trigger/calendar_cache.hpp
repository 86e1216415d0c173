#pragma once

/// The master's evaluated calendars, by name, refreshed by (id, version) at every planning that
/// needs one: an edit of a calendar takes effect at the next planning of each job using it, and
/// an unchanged calendar is not re-read or re-parsed. Not thread-safe (the master's scan only).

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <soci/soci.h>

#include "sched/cron/calendar.hpp"

namespace sched::trigger {

class CalendarCache {
  public:
    /// Brings the calendars named in `names` up to date inside the scan's transaction: one query
    /// for all (id, version) pairs, one more per calendar that is new or changed.
    void Refresh(soci::session& s, const std::set<std::string>& names);

    /// The calendar as of the last Refresh; nullptr when it does not exist or its stored rules are
    /// invalid (`error` then says why, for the log).
    const cron::Calendar* Find(const std::string& name, std::string* error = nullptr) const;

  private:
    struct Entry {
        std::int64_t id = 0;
        std::int64_t version = 0;
        std::optional<cron::Calendar> calendar;
        std::string error;
    };
    std::map<std::string, Entry> entries_;
};

}  // namespace sched::trigger
