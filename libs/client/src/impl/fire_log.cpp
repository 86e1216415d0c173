#include "impl/fire_log.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace sched::client::impl {

FireLogBook::FireLogBook(std::size_t retained_fires, std::size_t max_lines_per_fire, std::size_t tail_bytes)
    : retained_fires_(std::max<std::size_t>(retained_fires, 1)),
      max_lines_(std::max<std::size_t>(max_lines_per_fire, 1)),
      tail_bytes_(tail_bytes) {}

void FireLogBook::Open(std::int64_t fire_id, std::optional<std::string> first_line) {
    std::lock_guard lock(mu_);
    const auto [it, opened] = entries_.try_emplace(fire_id);
    if (!opened) return;
    if (first_line) AppendTo(it->second, std::move(*first_line), LineSource::kRuntime);
    EvictIfNeeded();
}

void FireLogBook::EvictIfNeeded(std::vector<std::unordered_map<std::int64_t, Entry>::node_type>* forgotten) {
    // Only finished fires are forgotten (a running fire's lines are still being asked for), and
    // they wait in their own queue: a search for them among the running fires, in the order the
    // fires opened, cost a pass over every running fire at each admission, quadratic in a burst
    // (a 1,000-run burst with log-retained-fires 1 spent most of its admission there).
    while (entries_.size() > retained_fires_ && !finished_.empty()) {
        if (forgotten) {
            forgotten->push_back(entries_.extract(finished_.front()));
        } else {
            entries_.erase(finished_.front());
        }
        finished_.pop_front();
    }
}

void FireLogBook::Append(std::int64_t fire_id, std::string line, LineSource source) {
    std::lock_guard lock(mu_);
    auto it = entries_.find(fire_id);
    if (it == entries_.end()) return;
    AppendTo(it->second, std::move(line), source);
}

void FireLogBook::AppendTo(Entry& e, std::string line, LineSource source) {
    if (source == LineSource::kHandler) e.handler_wrote = true;
    e.total_bytes += static_cast<std::int64_t>(line.size()) + (e.total_bytes > 0 || !e.lines.empty() ? 1 : 0);
    if (e.lines.size() + 1 < max_lines_) {
        e.lines.push_back(std::move(line));
        return;
    }
    if (!e.truncated) {
        e.truncated = true;
        e.lines.push_back("[log truncated: more than " + std::to_string(max_lines_) + " lines]");
    }
    if (tail_bytes_ == 0) return;
    e.overflow_bytes += line.size() + 1;
    e.overflow.push_back(std::move(line));
    // Keep what a tail of tail_bytes_ can use: the newest lines whose sizes add up to it.
    while (e.overflow.size() > 1 && e.overflow_bytes - (e.overflow.front().size() + 1) >= tail_bytes_) {
        e.overflow_bytes -= e.overflow.front().size() + 1;
        e.overflow.pop_front();
    }
}

std::vector<std::string> FireLogBook::PickTail(const Entry& e) const {
    // Copied under the lock only what fits: the newest lines first, then the kept head.
    std::vector<std::string> picked;  // newest first
    std::size_t bytes = 0;
    const auto take = [&](const std::string& line) {
        if (bytes >= tail_bytes_) return false;
        picked.push_back(line);
        bytes += line.size() + 1;
        return true;
    };
    bool more = true;
    for (auto o = e.overflow.rbegin(); more && o != e.overflow.rend(); ++o) more = take(*o);
    const std::size_t head = e.truncated ? e.lines.size() - 1 : e.lines.size();  // not the marker
    for (std::size_t i = head; more && i > 0; --i) more = take(e.lines[i - 1]);
    return picked;
}

FireLogBook::Tail FireLogBook::MakeTail(const std::vector<std::string>& picked, std::int64_t total_bytes) const {
    Tail tail;
    for (auto p = picked.rbegin(); p != picked.rend(); ++p) {
        if (p != picked.rbegin()) tail.text += '\n';
        tail.text += *p;
    }
    if (tail.text.size() > tail_bytes_) tail.text.erase(0, tail.text.size() - tail_bytes_);
    // A cut inside a character, or a handler's invalid bytes, become U+FFFD (nlohmann's
    // replacement), so that the cluster can parse the callback; then the bound again, at a
    // character boundary.
    tail.text =
        nlohmann::json::parse(nlohmann::json(tail.text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
            .get<std::string>();
    std::size_t start = tail.text.size() > tail_bytes_ ? tail.text.size() - tail_bytes_ : 0;
    while (start < tail.text.size() && (static_cast<unsigned char>(tail.text[start]) & 0xC0) == 0x80) ++start;
    tail.text.erase(0, start);
    tail.truncated_bytes = std::max<std::int64_t>(0, total_bytes - static_cast<std::int64_t>(tail.text.size()));
    return tail;
}

std::optional<FireLogBook::Tail> FireLogBook::ReadTail(std::int64_t fire_id) const {
    std::vector<std::string> picked;
    std::int64_t total = 0;
    {
        std::lock_guard lock(mu_);
        auto it = entries_.find(fire_id);
        // A log of the SDK's lines only would be one more stored row per fire that says what
        // the fire's row says (every row written per fire counts at 1,000 fires/s).
        if (it == entries_.end() || !it->second.handler_wrote) return std::nullopt;
        total = it->second.total_bytes;
        picked = PickTail(it->second);
    }
    return MakeTail(picked, total);
}

std::optional<FireLogBook::Tail> FireLogBook::Finish(std::int64_t fire_id, std::string last_line, bool want_tail) {
    std::vector<std::string> picked;
    std::int64_t total = 0;
    bool tail = false;
    std::vector<std::unordered_map<std::int64_t, Entry>::node_type> forgotten;
    {
        std::lock_guard lock(mu_);
        auto it = entries_.find(fire_id);
        if (it == entries_.end()) return std::nullopt;
        AppendTo(it->second, std::move(last_line), LineSource::kRuntime);
        if (want_tail && it->second.handler_wrote) {
            tail = true;
            total = it->second.total_bytes;
            picked = PickTail(it->second);
        }
        MarkFinished(fire_id, it->second, &forgotten);
    }
    forgotten.clear();  // freed here, outside the lock
    if (!tail) return std::nullopt;
    return MakeTail(picked, total);
}

void FireLogBook::Close(std::int64_t fire_id) {
    std::lock_guard lock(mu_);
    auto it = entries_.find(fire_id);
    if (it != entries_.end()) MarkFinished(fire_id, it->second, nullptr);
}

void FireLogBook::MarkFinished(std::int64_t fire_id, Entry& e,
                               std::vector<std::unordered_map<std::int64_t, Entry>::node_type>* forgotten) {
    if (e.finished) return;
    e.finished = true;
    finished_.push_back(fire_id);
    EvictIfNeeded(forgotten);  // may forget `e`
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
