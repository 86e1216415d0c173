#include "scan/orphans_step.hpp"

namespace sched::trigger::impl {

void OrphansStep::Run(ScanContext& ctx) {
    if (ctx.assigner.empty()) return;  // nobody to give them to: leave them
    ScanReport& r = ctx.report;
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
    for (const auto& fire :
         store::FireRepository::ListOrphans(ctx.s, ctx.alive_ids, {model::FireStatus::kDispatching}, config_.batch)) {
        // Its slave died between claiming and recording the outcome: the run may or may not
        // have started, so the fire is lost, never silently re-sent.
        if (store::FireRepository::Transition(
                ctx.s, fire.id, {model::FireStatus::kDispatching}, model::FireStatus::kLost,
                {.finished_at = ctx.now,
                 .result_message = "slave " + fire.assigned_node.value_or("?") + " died while dispatching",
                 .reason = model::FireReason::kSlaveDied,
                 .followup = true}) == 1) {
            ++r.lost;
        }
    }
}

}  // namespace sched::trigger::impl
