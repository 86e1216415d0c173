#pragma once

/// Spreads fires over the live slaves in proportion to their capacity (smooth weighted
/// round-robin, as nginx balances upstreams): with capacities 2:1 the sequence is A A B A A B,
/// interleaved rather than bunched. Not thread-safe; the master makes one per scan.

#include <optional>
#include <string>
#include <vector>

namespace sched::trigger {

struct SlaveWeight {
    std::string node_id;
    int capacity = 1;  ///< <= 0 counts as 1: a live slave always gets some work
};

class Assigner {
  public:
    explicit Assigner(std::vector<SlaveWeight> slaves);
    /// The next slave, or nullopt when there is none.
    std::optional<std::string> Next();
    bool empty() const { return slaves_.empty(); }
    std::vector<std::string> NodeIds() const;

  private:
    std::vector<SlaveWeight> slaves_;
    std::vector<long long> current_;
    long long total_ = 0;
};

}  // namespace sched::trigger
