#include "sched/common/quoted.hpp"

namespace sched {

std::string QuotedForMessage(std::string_view text) {
    std::string out = "'";
    for (char c : text.substr(0, 64)) {
        const auto u = static_cast<unsigned char>(c);
        out += (u >= 0x20 && u < 0x7f) ? c : '?';
    }
    if (text.size() > 64) out += "...";
    return out + "'";
}

}  // namespace sched
