#pragma once

/// Calendars: named sets of excluded periods shared by jobs (table `calendar`, migration 010;
/// the rules' meaning is cron::Calendar's). A job refers to a calendar by name (job.calendar).
///
/// `version` is the optimistic-concurrency token, as for jobs: every Update names the version it
/// read and increments it; the master caches evaluated calendars by (id, version).
/// Repositories are thread-safe and blocking; times are epoch ms from the DB clock.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "sched/common/status.hpp"
#include "sched/db/database.hpp"

namespace sched::store {

struct CalendarRecord {
    std::int64_t id = 0;
    std::string name;
    std::string description;
    std::string time_zone = "UTC";
    std::vector<std::string> excluded_dates;     ///< stored one per line
    std::vector<std::string> excluded_weekdays;  ///< stored one per line
    std::vector<std::string> excluded_times;     ///< stored one per line
    std::int64_t version = 0;
    std::int64_t created_at = 0;
    std::int64_t updated_at = 0;
};

/// (id, version) of a calendar, by name: what the master compares against its cache.
struct CalendarVersion {
    std::int64_t id = 0;
    std::string name;
    std::int64_t version = 0;
};

class CalendarRepository {
  public:
    explicit CalendarRepository(db::Database& db) : db_(db) {}

    /// Stores a new calendar (id, version 1, times assigned). kAlreadyExists when the name is taken.
    Result<CalendarRecord> Create(const CalendarRecord& calendar);
    /// kNotFound when absent.
    Result<CalendarRecord> Get(std::int64_t id);
    Result<CalendarRecord> GetByName(const std::string& name);
    /// In id order, ids > after_id, at most `limit` (1-1000).
    Result<std::vector<CalendarRecord>> List(std::int64_t after_id, int limit);
    /// Replaces description, time zone and rules (not the name: jobs refer to it) when the stored
    /// version is `expected_version`. kNotFound, or kAborted when the version moved.
    Result<CalendarRecord> Update(const CalendarRecord& calendar, std::int64_t expected_version);
    /// Deletes the calendar unless a job refers to it: then kFailedPrecondition whose message names
    /// up to 20 of those jobs ("calendar \"holidays\" is used by jobs: a, b"); checked and deleted
    /// in one write transaction. kNotFound when absent.
    Status Delete(std::int64_t id);
    /// Number of calendars (the API bounds how many there may be).
    Result<std::int64_t> Count();

    // ---- session-level, for the master's scan ----

    /// Every calendar's (id, name, version), at most 10,000.
    static std::vector<CalendarVersion> ListVersions(soci::session& s);
    static std::optional<CalendarRecord> FindByName(soci::session& s, const std::string& name);

  private:
    db::Database& db_;
};

}  // namespace sched::store
