#pragma once

/// Scan step 2: fires whose slave is gone. Pending fires with no live slave (manual triggers,
/// retries, fires of slaves silent for node-ttl / 2) are assigned again, one UPDATE per target
/// node (a move is safe: the claim is a CAS on the status). Dispatching fires of slaves silent
/// for the full node-ttl become `lost` (reason slave_died): their run may or may not have
/// started, so they are never re-sent silently. Without a live slave nothing is moved.

#include "scan/scan_step.hpp"

namespace sched::trigger::impl {

class OrphansStep final : public ScanStep {
  public:
    explicit OrphansStep(const MasterConfig& config) : config_(config) {}
    void Run(ScanContext& ctx) override;
    /// A change of the live nodes makes the scan a full one (Master::Quiet).
    bool Wanted(const ProbedWork& work) const override { return work.unassigned; }

  private:
    const MasterConfig& config_;
};

}  // namespace sched::trigger::impl
