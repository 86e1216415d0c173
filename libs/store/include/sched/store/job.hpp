#pragma once

/// Jobs: what to run, where, and when (table `job`).
///
/// `version` is the job's optimistic-concurrency token for people and tools: every Update
/// increments it and must name the version it read (409 on mismatch in the API). The master's
/// schedule advance (AdvanceSchedule) does not increment it, so that editing a job that fires
/// every second does not conflict every second; it is a CAS on (version, next_fire_time)
/// instead, which fails when someone edited the job after the master read it.
///
/// Repositories are thread-safe (they only borrow sessions from the pool) and blocking: call them
/// off the I/O threads. Times are epoch milliseconds; created/updated times come from the DB clock.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "sched/common/job_vocabulary.hpp"
#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/model/job.hpp"
#include "sched/store/shard.hpp"

namespace sched::store {

/// What the master's scan adds to a bounded job (RecordRuns): runs planned, and its completion.
struct JobRunsUpdate {
    std::int64_t id = 0;
    std::int64_t runs = 0;                     ///< scheduled fires planned in this scan
    std::optional<std::int64_t> completed_at;  ///< set: the job completes now
    std::string completed_reason;              ///< "end_at" | "max_runs" with completed_at
};

struct JobFilter {
    std::optional<std::string> app;
    std::optional<bool> enabled;
    std::string name_contains;  ///< substring match on name; empty = any
    std::int64_t after_id = 0;  ///< cursor: jobs with id > after_id, in id order
    int limit = 50;
};

/// One job's schedule advance for JobRepository::AdvanceMany: the CAS of AdvanceSchedule.
struct ScheduleAdvance {
    std::int64_t id = 0;
    std::int64_t expected_version = 0;
    std::optional<std::int64_t> expected_next;   ///< the next_fire_time the master read (nullopt: NULL)
    std::optional<std::int64_t> next_fire_time;  ///< the new one (nullopt: parked / done)
    std::optional<std::int64_t> last_fire_time;  ///< nullopt: unchanged
};

class JobRepository {
  public:
    explicit JobRepository(db::Database& db) : db_(db) {}

    /// Stores a new job (id, version, created/updated times assigned). kAlreadyExists when the
    /// app already has a job of that name.
    Result<model::Job> Create(const model::Job& job);
    /// kNotFound when absent.
    Result<model::Job> Get(std::int64_t id);
    Result<std::vector<model::Job>> List(const JobFilter& filter);
    /// Replaces every user-editable field (all but id, version, created_at, last_fire_time) when
    /// the stored version is `expected_version`; returns the stored job with version + 1.
    /// kNotFound: no such job; kAborted: the version moved (someone else changed it).
    Result<model::Job> Update(const model::Job& job, std::int64_t expected_version);
    /// kNotFound when absent; kFailedPrecondition naming the workflow and step while the job is a
    /// step of a workflow (WorkflowRepository::StepUsingJob). Fire rows are kept as history.
    Status Delete(std::int64_t id);
    /// Records who paused the job and why (paused_at = DB now), or clears it (nullopt), without
    /// touching the version. kNotFound when absent.
    Status SetPaused(std::int64_t id, const std::optional<model::JobPause>& pause);

    // ---- session-level operations, for the master's fenced transactions ----

    /// Enabled jobs of `shard` with next_fire_time <= until_ms, earliest first, at most `limit`.
    static std::vector<model::Job> SelectDue(soci::session& s, std::int64_t until_ms, int limit,
                                             const JobShard& shard = {});
    /// Moves a job's schedule on: sets next/last fire time if the job still has `expected_version`
    /// and `expected_next`. Returns false when the CAS lost (the job was edited or advanced).
    static bool AdvanceSchedule(soci::session& s, std::int64_t id, std::int64_t expected_version,
                                std::optional<std::int64_t> expected_next, std::optional<std::int64_t> next_fire_time,
                                std::optional<std::int64_t> last_fire_time);
    /// AdvanceSchedule for many jobs (ids distinct) with one UPDATE per 500 of them, plus one
    /// SELECT for those chunks where not every CAS won. Returns, aligned with `advances`,
    /// whether each job advanced.
    static std::vector<bool> AdvanceMany(soci::session& s, const std::vector<ScheduleAdvance>& advances);
    /// The job with this id, if it exists.
    static std::optional<model::Job> Find(soci::session& s, std::int64_t id);
    /// The earliest next_fire_time of any enabled job of `shard`, if any (its master sleeps until then).
    static std::optional<std::int64_t> EarliestDue(soci::session& s, const JobShard& shard = {});
    /// The earliest next_fire_time later than `after_ms` of an enabled job of `shard`, if any.
    static std::optional<std::int64_t> EarliestDueAfter(soci::session& s, std::int64_t after_ms,
                                                        const JobShard& shard = {});
    /// How many enabled jobs of `shard` are due exactly at `at_ms`, counting at most `cap`.
    static int CountDueAt(soci::session& s, std::int64_t at_ms, int cap, const JobShard& shard = {});
    /// Enabled jobs of `shard` due exactly at `at_ms`, by id, at most `limit`. All three are
    /// served by idx_job_due (enabled, next_fire_time).
    static std::vector<model::Job> SelectDueAt(soci::session& s, std::int64_t at_ms, int limit,
                                               const JobShard& shard = {});
    /// The jobs among `ids` that exist, in one query per 500 ids (the slave's group of fires).
    static std::vector<model::Job> FindMany(soci::session& s, const std::vector<std::int64_t>& ids);
    /// Ids of at most `limit` jobs with id > after_id, ascending (a cursor over all jobs).
    static std::vector<std::int64_t> ListIdsAfter(soci::session& s, std::int64_t after_id, int limit);
    /// Pauses an enabled job as the API's pause does (enabled 0, next_fire_time NULL, version + 1,
    /// updated_at = DB now) unless it was changed (updated_at) after `unchanged_since_ms`.
    /// Returns false when it was paused already, changed since, or is gone. Records the pause as
    /// made by kSchedulerActor with `note` (JobPause).
    static bool Pause(soci::session& s, const db::Dialect& dialect, std::int64_t id, std::int64_t unchanged_since_ms,
                      const std::string& note = "");

    /// Adds `runs` to planned_runs and, when completed_at is set, marks the job completed, for each
    /// update (jobs whose schedule advance won in the same transaction). One UPDATE per job.
    static void RecordRuns(soci::session& s, const std::vector<JobRunsUpdate>& updates);
    /// Names of at most `limit` jobs that refer to `calendar`, by id.
    static std::vector<std::string> NamesUsingCalendar(soci::session& s, const std::string& calendar, int limit);

  private:
    db::Database& db_;
};

}  // namespace sched::store
