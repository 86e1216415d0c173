#pragma once

/// Executor routing: which live instance of a job's app gets a fire, and in which order the
/// slave falls back to the others. Pure logic (no I/O): the slave asks a Router for the order,
/// then probes (`beat` / `idle-beat`) and calls `/v1/run` along it.
///
/// Strategies (the job's `routing` column):
///   first, last            always the first / last instance by address
///   round-robin            per job, rotating
///   random                 uniform
///   consistent-hash        by job id on a hash ring of the instances (virtual nodes), so a job
///                          sticks to one instance while the set of instances is stable, and
///                          only ~1/N of the jobs move when one joins or leaves
///   least-frequently-used  the instance this router sent the fewest fires of the job to
///   least-recently-used    the instance that has gone longest without a fire of the job
///   failover               instances in address order; the slave uses the first one whose
///                          `GET /v1/beat` answers
///   busy-over              instances in address order; the slave uses the first one whose
///                          `POST /v1/idle-beat` says it is idle for the job
///   sharding-broadcast     every instance, one fire per instance (the master creates one fire
///                          per shard; the slave sends shard i to the i-th instance by address)
///
/// Thread-safe.

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "sched/common/job_vocabulary.hpp"

namespace sched::trigger {

/// The routings and their names are the job vocabulary's (sched/common/job_vocabulary.hpp).
using sched::Routing;
using sched::RoutingName;

/// What a slave does with the order a Router returns.
enum class Probe {
    kNone,      ///< call /v1/run on the first; on refusal or error, the next
    kBeat,      ///< failover: skip instances whose /v1/beat does not answer
    kIdleBeat,  ///< busy-over: skip instances whose /v1/idle-beat says busy
};
Probe ProbeFor(Routing r);

class Router {
  public:
    explicit Router(std::uint64_t seed = std::random_device{}());

    /// The instances (addresses) to try for one fire of `job_id`, best first. `instances` is the
    /// live set in any order; the result is a permutation of it (empty in, empty out). For
    /// sharding-broadcast, pass the shard index: the result starts with the instance that owns
    /// that shard (the i-th by address, modulo the count) and continues with the others.
    std::vector<std::string> Order(Routing routing, std::int64_t job_id, std::vector<std::string> instances,
                                   int shard_index = 0);

    /// Records that a fire of `job_id` went to `address` (feeds LFU / LRU / round-robin).
    void RecordDispatch(std::int64_t job_id, const std::string& address);

  private:
    std::mutex mu_;
    std::mt19937_64 rng_;
    std::uint64_t tick_ = 0;  // logical time for LRU: monotonic, immune to clock steps
    std::map<std::int64_t, std::uint64_t> round_robin_;
    std::map<std::pair<std::int64_t, std::string>, std::uint64_t> use_count_;
    std::map<std::pair<std::int64_t, std::string>, std::uint64_t> last_use_;
};

/// FNV-1a 64-bit, stable across runs and platforms (the hash ring must not depend on
/// std::hash, which may differ between builds of two nodes).
std::uint64_t StableHash(std::string_view data);

}  // namespace sched::trigger
