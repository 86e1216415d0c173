#include "sched/trigger/assigner.hpp"

#include <algorithm>

namespace sched::trigger {

Assigner::Assigner(std::vector<SlaveWeight> slaves) : slaves_(std::move(slaves)) {
    // A stable order makes the sequence reproducible for a given set of slaves.
    std::sort(slaves_.begin(), slaves_.end(),
              [](const SlaveWeight& a, const SlaveWeight& b) { return a.node_id < b.node_id; });
    for (auto& s : slaves_) {
        s.capacity = std::max(1, s.capacity);
        total_ += s.capacity;
    }
    current_.assign(slaves_.size(), 0);
}

std::optional<std::string> Assigner::Next() {
    if (slaves_.empty()) return std::nullopt;
    std::size_t best = 0;
    for (std::size_t i = 0; i < slaves_.size(); ++i) {
        current_[i] += slaves_[i].capacity;
        if (current_[i] > current_[best]) best = i;
    }
    current_[best] -= total_;
    return slaves_[best].node_id;
}

std::vector<std::string> Assigner::NodeIds() const {
    std::vector<std::string> out;
    for (const auto& s : slaves_) out.push_back(s.node_id);
    return out;
}

}  // namespace sched::trigger
