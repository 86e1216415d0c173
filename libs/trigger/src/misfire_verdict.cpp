#include "sched/trigger/misfire_verdict.hpp"

#include <algorithm>

#include "sched/cron/misfire.hpp"

namespace sched::trigger {

std::optional<std::string> MisfireVerdict(const std::vector<model::Fire>& group, const model::Fire& fire,
                                          const model::Job& job, std::int64_t now_ms, std::int64_t threshold_ms) {
    // Only planned times: manual, retry and misfire fires run whenever they are sent. A planned
    // fire normally leaves at its time; it is late when this node was stopped (SIGSTOP, a VM
    // pause, a long GC of the database) past its time, and then the job's policy decides as the
    // master's would have (PlanMisfire), instead of sending every stale fire at once.
    // Lateness counts from when the fire could first be sent: its time, or its creation when
    // the master planned it already due (the master judged it then, by the same threshold;
    // judging it again from its time would skip on-time fires the master just kept).
    if (fire.kind != model::FireKind::kSchedule) return std::nullopt;
    // Held back by its job's concurrency limit: it waited for a seat, it was not late.
    if (fire.reason == model::FireReason::kConcurrency) return std::nullopt;
    const std::int64_t late = now_ms - std::max(fire.scheduled_time, fire.created_at);
    if (late <= threshold_ms) return std::nullopt;
    const std::string how_late = "misfire: planned for " + std::to_string(fire.scheduled_time) + ", sent " +
                                 std::to_string(late) + " ms late (misfire-threshold " + std::to_string(threshold_ms) +
                                 " ms)";
    switch (job.misfire_policy) {
        case cron::MisfirePolicy::kFireAll:
            return std::nullopt;
        case cron::MisfirePolicy::kSkip:
            return how_late + "; policy skip";
        case cron::MisfirePolicy::kFireOnceNow:
            // One run stands for the late times: the latest late fire of the job (same shard) in
            // this group runs, the earlier ones are folded into it.
            for (const auto& other : group) {
                if (other.job_id == fire.job_id && other.kind == model::FireKind::kSchedule &&
                    other.shard_index == fire.shard_index && other.scheduled_time > fire.scheduled_time &&
                    now_ms - std::max(other.scheduled_time, other.created_at) > threshold_ms) {
                    return how_late + "; folded into fire " + std::to_string(other.id) + " planned for " +
                           std::to_string(other.scheduled_time) + " (policy fire-once-now)";
                }
            }
            return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace sched::trigger
