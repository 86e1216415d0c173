#pragma once

/// Executor results applied in batches: what `POST /api/v1/callback` does with its up to 1000
/// items, at a constant number of statements instead of 3-4 per item.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "sched/store/fire.hpp"
#include "sched/store/fire_metrics.hpp"

namespace sched::store {

class FireResults {
  public:
    /// Applies `results` inside the caller's write transaction and returns their outcomes, aligned
    /// with the input. Each item gets exactly the checks, in the order, of
    /// FireRepository::ApplyResult (see there), and the same outcome as applying the items one by
    /// one in input order would give.
    ///
    /// Cost in the usual case (every item found and applied): one SELECT of the fires joined with
    /// their jobs per 500 items (which also says whether the address most items name is a
    /// registered instance of each dispatching fire's app), one SELECT of the other registered
    /// (app, address) pairs when such a fire names another address (per 250 distinct pairs), a
    /// SAVEPOINT, and one multi-row UPDATE per 64 items or 4 MiB of bound text, whose WHERE
    /// repeats every item's conditions. Ids, numbers and status names are inlined; messages and
    /// addresses are bound. Results with a `log` add one multi-row REPLACE into job_fire_log per
    /// 4 MiB of log (FireLogs::StoreMany), written only once the UPDATE moved every row it named.
    ///
    /// When that UPDATE moves fewer rows than it names (a concurrent change: an operator's kill,
    /// the master's sweep, the slave's `running` record of another instance), the batch is rolled back to the savepoint
    /// and judged again on the fires as they are now; after three such losses the remaining items go through
    /// ApplyResult one by one. A fire named more than once takes the batch path for its first
    /// item; its later items go through ApplyResult afterwards, in input order. So do the items
    /// that would be refused (duplicate, conflict) but may do more there: a success for a lost
    /// fire, a result that carries a log (ApplyResult keeps it when it answers the dispatch).
    ///
    /// `app_allowed` is called once per item and round (as ApplyResult does). When
    /// `applied_jobs` is given, it receives the job and app of every applied item whose job
    /// still exists (for the outcome metrics), read by the same SELECT, in input order. Throws
    /// what soci throws.
    ///
    /// `raised_followup`, when given, is set to true (never back to false) when an applied item
    /// left its fire's follow-up flag set: the master has work (a retry, a workflow step's end, a
    /// fixed-delay job's next time), so the caller wakes it. Read from the same SELECT, no
    /// statement of its own; a success of a cron or fixed-rate job's fire raises none. Exact up
    /// to a job's schedule type changed between that SELECT and the UPDATE.
    static std::vector<ResultOutcome> ApplyMany(soci::session& s, const std::vector<ExecutorResult>& results,
                                                const std::function<bool(const std::string& app)>& app_allowed,
                                                std::vector<FireJob>* applied_jobs = nullptr,
                                                bool* raised_followup = nullptr);

    /// ApplyMany for a transaction that holds nothing else: no savepoint (one statement less per
    /// batch). When an UPDATE moves fewer rows than it names, returns nullopt at once, some rows
    /// written: the caller must roll the transaction back and apply the batch with ApplyMany in
    /// a new one. Otherwise exactly ApplyMany's outcomes, `applied_jobs` and `raised_followup`
    /// (left untouched on nullopt).
    static std::optional<std::vector<ResultOutcome>> TryApplyMany(
        soci::session& s, const std::vector<ExecutorResult>& results,
        const std::function<bool(const std::string& app)>& app_allowed, std::vector<FireJob>* applied_jobs = nullptr,
        bool* raised_followup = nullptr);

    /// The usual batch without a transaction: on a MySQL session in autocommit mode, a batch of at
    /// most 64 items, none naming a fire twice nor carrying a log, is judged by one SELECT and
    /// written by one UPDATE, each its own transaction (two statements instead of four). Returns
    /// the outcome of every item it decided, aligned with the input, exactly as ApplyMany would
    /// decide it; nullopt for the others, which the caller applies with ApplyMany in a
    /// transaction, in input order: all of them when the batch does not qualify (or the session
    /// is SQLite), the items ApplyMany judges one by one, and the items whose write a concurrent
    /// change refused (the UPDATE moves the rows it can; those read back holding their item's
    /// end are applied, the rest are left undecided). `applied_jobs` and `raised_followup` as
    /// ApplyMany's, for the items it applied. Needs no causal reads (a Galera cluster's callback
    /// applies its batch in a transaction that waits for them).
    static std::vector<std::optional<ResultOutcome>> ApplyManyAutocommit(
        soci::session& s, const std::vector<ExecutorResult>& results,
        const std::function<bool(const std::string& app)>& app_allowed, std::vector<FireJob>* applied_jobs = nullptr,
        bool* raised_followup = nullptr);
};

}  // namespace sched::store
