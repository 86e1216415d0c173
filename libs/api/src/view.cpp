#include "sched/api/view.hpp"

namespace sched::api::impl {

std::string Member(std::string_view path, std::string_view name) {
    std::string out(path);
    if (!out.empty()) out += '.';
    out += name;
    return out;
}

Status Wrong(std::string_view path, std::string_view what) {
    return InvalidArgument((path.empty() ? std::string("the answer") : std::string(path)) + ": " + std::string(what));
}

}  // namespace sched::api::impl
