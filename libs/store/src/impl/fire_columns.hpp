#pragma once

// The leading columns of a fire row: the full row (kColumns, fire.cpp) and the claim row
// (kClaimColumns, fire_claims.cpp) both start with them, so they are bound in one place.

#include <stdexcept>
#include <string>

#include <soci/soci.h>

#include "query.hpp"
#include "sched/model/fire.hpp"

namespace sched::store::impl {

/// The columns every dispatching reader of a fire selects first, in this order:
/// "id, job_id, scheduled_time, kind, attempt, shard_index, shard_total, epoch, assigned_node".
/// `kind` receives the stored kind name, to be parsed once the row is fetched.
inline void IntoFireHead(soci::statement& st, IntColumns& ints, model::Fire& fire, std::string& kind,
                         NullableString& assigned_node) {
    ints.Into(st, fire.id);
    ints.Into(st, fire.job_id);
    ints.Into(st, fire.scheduled_time);
    st.exchange(soci::into(kind));
    ints.Into(st, fire.attempt);
    ints.Into(st, fire.shard_index);
    ints.Into(st, fire.shard_total);
    ints.Into(st, fire.epoch);
    st.exchange(soci::into(assigned_node.value, assigned_node.ind));
}

/// Once a row is fetched: the head's kind and assigned node, and the stored `status`, into
/// `fire`. Stored names come only from this code; an unknown one means a corrupted row: it
/// throws.
inline void FinishFireHead(model::Fire& fire, const std::string& kind, const std::string& status,
                           const NullableString& assigned_node) {
    const auto k = model::ParseFireKind(kind);
    const auto st = model::ParseFireStatus(status);
    if (!k || !st) throw std::runtime_error("fire " + std::to_string(fire.id) + ": bad kind/status in database");
    fire.kind = *k;
    fire.status = *st;
    fire.assigned_node = assigned_node.get();
}

}  // namespace sched::store::impl
