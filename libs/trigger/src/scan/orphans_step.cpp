#include "scan/orphans_step.hpp"

#include <spdlog/spdlog.h>

#include "scan/jobs_of.hpp"
#include "sched/store/fire_claims.hpp"

namespace sched::trigger::impl {

void OrphansStep::Run(ScanContext& ctx) {
    if (ctx.assigner.empty()) return;  // nobody to give them to: leave them
    ScanReport& r = ctx.report;
    // The planned fires of a slave that gets no new fires (silent for node-ttl / 2) due after its
    // sent_through were never sent: back to pending at once, like its pending fires, and
    // reassigned below in this same scan. As safe as moving those: the release is a CAS on the
    // row a raising claim of that node writes (FireClaims::ReleaseUnsent), and a claim that
    // raises nothing sends only fires at or below the value the release judged by. The rest
    // wait for the judgement of a dead slave below.
    for (const auto& node : store::FireClaims::SilentDispatching(ctx.s, ctx.live_ids)) {
        if (const int unsent = store::FireClaims::ReleaseUnsent(ctx.s, node); unsent > 0) {
            spdlog::info("master: {} unsent planned fires of silent slave {} handed to other nodes", unsent, node);
        }
    }
    std::map<std::string, std::vector<std::int64_t>> orphans_by_node;
    std::map<std::int64_t, std::int64_t> orphan_due;  // id -> due_at, for the notices
    for (const auto& fire :
         store::FireRepository::ListOrphans(ctx.s, ctx.live_ids, {model::FireStatus::kPending}, config_.batch)) {
        orphans_by_node[*ctx.assigner.Next()].push_back(fire.id);
        orphan_due[fire.id] = fire.due_at;
    }
    for (const auto& [node, ids] : orphans_by_node) {
        for (const std::int64_t id :
             store::FireRepository::ReassignMany(ctx.s, ids, {model::FireStatus::kPending}, node)) {
            ++r.orphans_assigned;
            ctx.Notify(node, id, orphan_due.at(id));
        }
    }
    if (!ctx.judges_slaves) return;
    const auto lost =
        store::FireRepository::ListOrphans(ctx.s, ctx.alive_ids, {model::FireStatus::kDispatching}, config_.batch);
    // The apps name the `ended` spans; read only when spans are exported.
    std::map<std::int64_t, model::Job> jobs;
    if (protocol::FireTracer::On() && !lost.empty()) jobs = JobsOf(ctx.s, lost);
    for (const auto& fire : lost) {
        // Its slave died between claiming (or, planned, raising its sent_through past it) and
        // recording the outcome: the run may or may not have started, so the fire is lost, never
        // silently re-sent.
        if (store::FireRepository::Transition(
                ctx.s, fire.id, {model::FireStatus::kDispatching}, model::FireStatus::kLost,
                {.finished_at = ctx.now,
                 .result_message = "slave " + fire.assigned_node.value_or("?") + " died while dispatching",
                 .reason = model::FireReason::kSlaveDied,
                 .followup = true}) == 1) {
            ++r.lost;
            if (const auto job = jobs.find(fire.job_id); job != jobs.end()) {
                r.spans.push_back(PendingFireSpan::Ended(fire, job->second.app, ctx.now, model::FireStatus::kLost));
            }
        }
    }
}

}  // namespace sched::trigger::impl
