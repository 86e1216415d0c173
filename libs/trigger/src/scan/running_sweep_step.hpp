#pragma once

/// Scan step 2b, every `running-sweep`: running fires nobody will finish. A running fire
/// normally ends by the executor's callback, or by its slave's timeout kill; neither comes when
/// the executor process died (its heartbeat stops) or when the slave died and the executor never
/// answers. So, over the next `batch` running fires (a cursor that wraps around):
///   - past the job's timeout by more than node-ttl -> `timeout` (reason no_result);
///   - dispatched more than executor-ttl ago to an instance whose heartbeat has expired ->
///     `lost` (reason executor_gone); not concluded while no executor instance at all has a
///     fresh heartbeat (then the registry, not the executors, is what failed).
/// Each end is a CAS from `running`, so a late callback and the sweep make one outcome; both
/// get the follow-up of any ended fire.

#include <cstdint>

#include "scan/scan_step.hpp"

namespace sched::trigger::impl {

class RunningSweepStep final : public ScanStep {
  public:
    explicit RunningSweepStep(const MasterConfig& config) : config_(config) {}
    void Run(ScanContext& ctx) override;

  private:
    const MasterConfig& config_;
    std::int64_t next_sweep_ms_ = 0;
    std::int64_t after_scheduled_ = -1;  // cursor: (scheduled_time, id) of the last fire seen
    std::int64_t after_id_ = 0;
};

}  // namespace sched::trigger::impl
