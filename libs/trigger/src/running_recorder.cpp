#include "sched/trigger/running_recorder.hpp"

#include <algorithm>
#include <map>
#include <unordered_set>
#include <utility>

#include <spdlog/spdlog.h>

namespace sched::trigger {

RunningRecorder::RunningRecorder(const net::any_io_executor& io, net::thread_pool& db_pool, Options options,
                                 FireClaimStore& store, std::string node_id, MetricsRegistry& metrics)
    : options_(std::move(options)),
      store_(store),
      node_id_(std::move(node_id)),
      statements_(metrics
                      .Counter("sched_slave_running_batches_total",
                               "Statements recording accepted fires as running (one per executor per window).")
                      .Labels({})),
      // The held records each ripen at their own time (spread start times): a flush per
      // record-window for them cost more statements than the rows it saved, so their window is
      // record-running-after too. Errors are retried: giving up within a Galera node's loss
      // would leave the fire `dispatching` on a live slave, ended by nothing but its result.
      held_(
          io, db_pool, std::max(options_.record_window, options_.record_running_after), options_.retry,
          [this](std::vector<Record>& batch) { return Write(batch); },
          [this](const Status& error, const std::vector<Record>& left, bool giving_up) {
              NotRecorded(error, left, giving_up);
          }),
      prompt_(
          io, db_pool, options_.record_window, options_.retry,
          [this](std::vector<Record>& batch) { return Write(batch); },
          [this](const Status& error, const std::vector<Record>& left, bool giving_up) {
              NotRecorded(error, left, giving_up);
          }) {}

void RunningRecorder::Add(const AcceptedRun& run) {
    Record record{.address = run.address, .fire = {.id = run.fire_id, .started_at = run.started_at}};
    if (run.stoppable) {
        prompt_.Add(std::move(record));
        return;
    }
    // Held from the run's start (a run sent ahead starts at its due time), not from its 202.
    held_.Add(std::move(record),
              options_.record_running_after + std::chrono::milliseconds(std::max<std::int64_t>(0, run.held_ms)));
}

std::optional<RunningRecorder::Record> RunningRecorder::Withdraw(std::int64_t fire_id) {
    const auto of_fire = [fire_id](const Record& r) {
        return r.fire.id == fire_id;
    };
    auto withdrawn = held_.Withdraw(of_fire);
    if (withdrawn.empty()) withdrawn = prompt_.Withdraw(of_fire);
    if (withdrawn.empty()) return std::nullopt;
    return std::move(withdrawn.front());
}

std::size_t RunningRecorder::WithdrawEnded(const std::vector<std::int64_t>& fire_ids) {
    // One pass over each queue with a set, not one per fire: a callback batch names up to 64
    // fires and a queue may hold thousands of records.
    const std::unordered_set<std::int64_t> ended(fire_ids.begin(), fire_ids.end());
    const auto of_ended = [&ended](const Record& r) {
        return ended.contains(r.fire.id);
    };
    return held_.Withdraw(of_ended).size() + prompt_.Withdraw(of_ended).size();
}

std::optional<std::string> RunningRecorder::QueuedAddress(std::int64_t fire_id) const {
    std::optional<std::string> address;
    const auto find = [&address, fire_id](const Record& r) {
        if (r.fire.id == fire_id) address = r.address;
    };
    held_.ForEachQueued(find);
    prompt_.ForEachQueued(find);
    return address;
}

bool RunningRecorder::Busy() const {
    return held_.Busy() || prompt_.Busy();
}

void RunningRecorder::Hurry() {
    held_.Hurry();
    prompt_.Hurry();
}

Status RunningRecorder::Write(std::vector<Record>& batch) {
    // One statement per executor instance, each fire with its own start (a CASE over the
    // window's few distinct times), a CAS from `dispatching`: it never overwrites an end that
    // landed first.
    std::map<std::string, std::vector<store::StartedFire>> by_address;
    for (const auto& r : batch) by_address[r.address].push_back(r.fire);
    // Named references, not a structured binding: clang before 16 cannot capture one.
    for (const auto& entry : by_address) {
        const std::string& address = entry.first;
        if (auto marked = store_.MarkRunning(entry.second, address); !marked.ok()) return marked.status();
        statements_.Inc();
        if (options_.written) {
            std::vector<std::int64_t> ids;
            ids.reserve(entry.second.size());
            for (const auto& fire : entry.second) ids.push_back(fire.id);
            options_.written(ids);
        }
        std::erase_if(batch, [&address](const Record& r) { return r.address == address; });
    }
    return Status::Ok();
}

void RunningRecorder::NotRecorded(const Status& error, const std::vector<Record>& left, bool giving_up) const {
    spdlog::warn("slave {}: {} accepted fires (first: {} on {}) not recorded running{}: {}", node_id_, left.size(),
                 left.front().fire.id, left.front().address, giving_up ? "; their results end them" : " yet, retrying",
                 error.ToString());
}

}  // namespace sched::trigger
