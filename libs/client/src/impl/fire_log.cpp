#include "impl/fire_log.hpp"

#include <algorithm>

namespace sched::client::impl {

FireLogBook::FireLogBook(std::size_t retained_fires, std::size_t max_lines_per_fire)
    : retained_fires_(std::max<std::size_t>(retained_fires, 1)),
      max_lines_(std::max<std::size_t>(max_lines_per_fire, 1)) {}

void FireLogBook::Open(std::int64_t fire_id) {
    std::lock_guard lock(mu_);
    if (!entries_.try_emplace(fire_id).second) return;
    order_.push_back(fire_id);
    EvictIfNeeded();
}

void FireLogBook::EvictIfNeeded() {
    // Unfinished fires are kept even over the limit: their lines are still being asked for.
    for (auto it = order_.begin(); entries_.size() > retained_fires_ && it != order_.end();) {
        auto e = entries_.find(*it);
        if (e == entries_.end()) {
            it = order_.erase(it);
        } else if (e->second.finished) {
            entries_.erase(e);
            it = order_.erase(it);
        } else {
            ++it;
        }
    }
}

void FireLogBook::Append(std::int64_t fire_id, std::string line) {
    std::lock_guard lock(mu_);
    auto it = entries_.find(fire_id);
    if (it == entries_.end()) return;
    Entry& e = it->second;
    if (e.lines.size() + 1 < max_lines_) {
        e.lines.push_back(std::move(line));
    } else if (!e.truncated) {
        e.truncated = true;
        e.lines.push_back("[log truncated: more than " + std::to_string(max_lines_) + " lines]");
    }
}

void FireLogBook::Close(std::int64_t fire_id) {
    std::lock_guard lock(mu_);
    auto it = entries_.find(fire_id);
    if (it == entries_.end()) return;
    it->second.finished = true;
    EvictIfNeeded();
}

std::optional<FireLogBook::Page> FireLogBook::Read(std::int64_t fire_id, std::int64_t from_line,
                                                   std::size_t max) const {
    std::lock_guard lock(mu_);
    auto it = entries_.find(fire_id);
    if (it == entries_.end()) return std::nullopt;
    const Entry& e = it->second;
    Page page;
    const auto size = static_cast<std::int64_t>(e.lines.size());
    page.from_line = std::clamp<std::int64_t>(from_line, 0, size);
    const auto end = std::min<std::int64_t>(size, page.from_line + static_cast<std::int64_t>(max));
    page.lines.assign(e.lines.begin() + page.from_line, e.lines.begin() + end);
    page.next_line = end;
    page.finished = e.finished && end == size;
    return page;
}

}  // namespace sched::client::impl
