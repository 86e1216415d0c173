#include "sched/trigger/history_purger.hpp"

#include <chrono>
#include <optional>
#include <vector>

#include "sched/store/alert.hpp"
#include "sched/store/audit.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"

namespace sched::trigger {

HistoryPurger::HistoryPurger(std::shared_ptr<db::Database> db, lock::Fence& fence, const DbTime& time,
                             MasterConfig config, MetricsRegistry& metrics)
    : db_(std::move(db)),
      fence_(fence),
      time_(time),
      config_(config),
      purged_by_age_(metrics
                         .Counter("sched_master_fires_purged_total",
                                  "Ended fires deleted by the master's history retention, by reason.", {"reason"})
                         .Labels({"age"})),
      purged_by_cap_(metrics.Counter("sched_master_fires_purged_total", "", {"reason"}).Labels({"cap"})),
      batches_(metrics
                   .Counter("sched_master_purge_batches_total",
                            "Fenced purge transactions of the master's history retention that deleted fires.")
                   .Labels({})) {}

Result<int> HistoryPurger::PurgeExpiredBatch(std::int64_t epoch) {
    const std::int64_t cutoff =
        time_.NowMs() - std::chrono::duration_cast<std::chrono::milliseconds>(config_.history_retention).count();
    auto deleted = fence_.RunFenced(epoch, [&](soci::session& s) -> Result<int> {
        return store::FireRepository::DeleteMany(s, store::FireRepository::ListExpired(s, cutoff, config_.purge_batch));
    });
    if (deleted.ok() && *deleted > 0) {
        purged_by_age_.Inc(*deleted);
        batches_.Inc();
    }
    return deleted;
}

Result<int> HistoryPurger::PurgeAuditBatch(std::int64_t epoch) {
    return PurgeTableBatch(epoch, &store::AuditRepository::PurgeBefore);
}

Result<int> HistoryPurger::PurgeDeliveryBatch(std::int64_t epoch) {
    return PurgeTableBatch(epoch, &store::AlertRepository::PurgeEndedBefore);
}

Result<int> HistoryPurger::PurgeTableBatch(std::int64_t epoch, int (*purge_before)(soci::session&, std::int64_t, int)) {
    const std::int64_t cutoff =
        time_.NowMs() - std::chrono::duration_cast<std::chrono::milliseconds>(config_.history_retention).count();
    auto deleted = fence_.RunFenced(
        epoch, [&](soci::session& s) -> Result<int> { return purge_before(s, cutoff, config_.purge_batch); });
    if (deleted.ok() && *deleted > 0) batches_.Inc();
    return deleted;
}

Result<int> HistoryPurger::PurgeOverCapBatch(std::int64_t epoch, std::int64_t job_id) {
    return PurgeOverCapBatch(epoch, job_id, std::nullopt);
}

Result<int> HistoryPurger::PurgeOverCapBatch(std::int64_t epoch, std::int64_t job_id,
                                             std::optional<std::int64_t> boundary) {
    auto deleted = fence_.RunFenced(epoch, [&](soci::session& s) -> Result<int> {
        // A boundary read earlier (outside the fence) is safe: fires are only added to a job
        // meanwhile, which moves its boundary later, so the older one deletes a subset.
        const auto before =
            boundary ? boundary : store::FireRepository::CapBoundary(s, job_id, config_.history_max_per_job);
        if (!before) return 0;
        return store::FireRepository::DeleteMany(
            s, store::FireRepository::ListPurgeableBefore(s, job_id, *before, config_.purge_batch));
    });
    if (deleted.ok() && *deleted > 0) {
        purged_by_cap_.Inc(*deleted);
        batches_.Inc();
    }
    return deleted;
}

Result<PurgeReport> HistoryPurger::PurgeRound(std::int64_t epoch, const std::function<bool()>& should_stop) {
    PurgeReport r;
    int budget = kMaxBatchesPerRound;
    const auto go_on = [&] {
        return budget > 0 && !(should_stop && should_stop());
    };
    // Fires past their age, then audit entries and alert deliveries past theirs: each kind in
    // batches until one is not full.
    const auto drain = [&](auto batch, int& count) -> Status {
        while (go_on()) {
            --budget;
            auto deleted = batch();
            if (!deleted.ok()) return deleted.status();
            count += *deleted;
            if (*deleted > 0) ++r.batches;
            if (*deleted < config_.purge_batch) break;
        }
        return Status::Ok();
    };
    if (Status s = drain([&] { return PurgeExpiredBatch(epoch); }, r.by_age); !s.ok()) return s;
    if (Status s = drain([&] { return PurgeAuditBatch(epoch); }, r.audit); !s.ok()) return s;
    if (Status s = drain([&] { return PurgeDeliveryBatch(epoch); }, r.deliveries); !s.ok()) return s;
    if (!go_on()) return r;
    // The job list is read outside any fence: a job created meanwhile is checked next time
    // round, and a fenced batch for a job deleted meanwhile simply finds nothing.
    auto jobs = db_->Run(
        [&](soci::session& s) { return store::JobRepository::ListIdsAfter(s, cap_cursor_, config_.purge_batch); });
    if (!jobs.ok()) return jobs.status();
    // Which of them are over the cap, in one read per 500 jobs (not a fenced transaction per
    // job: about 7 statements each, ~0.7 per fire at 1,000 jobs and 1,000 fires/s).
    auto over = db_->Run(
        [&](soci::session& s) { return store::FireRepository::CapBoundaries(s, *jobs, config_.history_max_per_job); });
    if (!over.ok()) return over.status();
    std::size_t next_over = 0;
    for (const std::int64_t job_id : *jobs) {
        if (next_over < over->size() && (*over)[next_over].first == job_id) {
            const std::int64_t boundary = (*over)[next_over++].second;
            while (go_on()) {
                --budget;
                auto deleted = PurgeOverCapBatch(epoch, job_id, boundary);
                if (!deleted.ok()) return deleted.status();
                r.by_cap += *deleted;
                if (*deleted > 0) ++r.batches;
                if (*deleted < config_.purge_batch) break;
            }
            if (!go_on()) return r;  // this job again first next round
        }
        cap_cursor_ = job_id;
        ++r.jobs_capped;
    }
    // Fewer than a full page of jobs means the end was reached: start over next round.
    if (static_cast<int>(jobs->size()) < config_.purge_batch) cap_cursor_ = 0;
    return r;
}

}  // namespace sched::trigger
