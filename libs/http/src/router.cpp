#include "sched/http/router.hpp"

#include <stdexcept>

namespace sched::http {

namespace {

// "/a/b/" -> {"a", "b", ""}; "/" -> {""}. Empty segments are kept so that "/a//b" matches
// nothing instead of silently matching "/a/b".
std::vector<std::string_view> SplitPath(std::string_view path) {
    std::vector<std::string_view> parts;
    if (path.empty() || path.front() != '/') return parts;
    path.remove_prefix(1);
    for (;;) {
        const auto slash = path.find('/');
        parts.push_back(path.substr(0, slash));
        if (slash == std::string_view::npos) break;
        path.remove_prefix(slash + 1);
    }
    return parts;
}

}  // namespace

Router& Router::AddHandler(Method method, std::string_view pattern, Handler handler, Access access) {
    const auto bad = [&](const std::string& why) {
        return std::invalid_argument("route \"" + std::string(pattern) + "\": " + why);
    };
    if (pattern.empty() || pattern.front() != '/') throw bad("must start with '/'");
    if (method == Method::kOther) throw bad("cannot route Method::kOther");
    if (!handler) throw bad("empty handler");
    Route route{method, std::string(pattern), {}, std::move(handler), access};
    const auto parts = SplitPath(pattern);
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const auto part = parts[i];
        if (part.size() >= 2 && part.front() == '{' && part.back() == '}') {
            auto name = part.substr(1, part.size() - 2);
            Segment::Kind kind = Segment::Kind::kParam;
            if (name.size() > 3 && name.substr(name.size() - 3) == "...") {
                if (i + 1 != parts.size()) throw bad("{name...} must be the last segment");
                name.remove_suffix(3);
                kind = Segment::Kind::kRest;
            }
            if (name.empty() || name.find_first_of("{}/.") != std::string_view::npos) throw bad("bad parameter name");
            route.segments.push_back({kind, std::string(name)});
        } else {
            if (part.find_first_of("{}") != std::string_view::npos) throw bad("braces must enclose a whole segment");
            route.segments.push_back({Segment::Kind::kLiteral, std::string(part)});
        }
    }
    for (const auto& r : routes_) {
        if (r.method != method || r.segments.size() != route.segments.size()) continue;
        bool same = true;
        for (std::size_t i = 0; i < r.segments.size() && same; ++i) {
            const auto& a = r.segments[i];
            const auto& b = route.segments[i];
            same = a.kind == b.kind && (a.kind != Segment::Kind::kLiteral || a.text == b.text);
        }
        if (same) throw bad("duplicates route \"" + r.pattern + "\" for " + std::string(MethodName(method)));
    }
    routes_.push_back(std::move(route));
    return *this;
}

bool Router::Matches(const Route& route, const std::vector<std::string_view>& parts,
                     std::vector<std::pair<std::string, std::string>>* params) {
    const auto& segs = route.segments;
    const bool has_rest = !segs.empty() && segs.back().kind == Segment::Kind::kRest;
    if (has_rest ? parts.size() < segs.size() : parts.size() != segs.size()) return false;
    std::vector<std::pair<std::string, std::string>> found;
    for (std::size_t i = 0; i < segs.size(); ++i) {
        const auto& seg = segs[i];
        switch (seg.kind) {
            case Segment::Kind::kLiteral:
                if (parts[i] != seg.text) return false;
                break;
            case Segment::Kind::kParam: {
                if (parts[i].empty()) return false;
                auto value = PercentDecode(parts[i], false);
                if (!value) return false;
                found.emplace_back(seg.text, std::move(*value));
                break;
            }
            case Segment::Kind::kRest: {
                std::string joined;
                for (std::size_t j = i; j < parts.size(); ++j) {
                    auto value = PercentDecode(parts[j], false);
                    if (!value || value->empty()) return false;
                    joined += (j == i ? "" : "/") + *value;
                }
                found.emplace_back(seg.text, std::move(joined));
                break;
            }
        }
    }
    if (params != nullptr) *params = std::move(found);
    return true;
}

bool Router::MoreSpecific(const Route& a, const Route& b) {
    // Position by position, a literal beats a parameter, which beats a rest parameter.
    const std::size_t n = std::min(a.segments.size(), b.segments.size());
    for (std::size_t i = 0; i < n; ++i) {
        const auto ka = a.segments[i].kind;
        const auto kb = b.segments[i].kind;
        if (ka != kb) return ka < kb;  // kLiteral < kParam < kRest in declaration order
    }
    return a.segments.size() > b.segments.size();
}

std::vector<Router::RouteInfo> Router::Routes() const {
    std::vector<RouteInfo> out;
    out.reserve(routes_.size());
    for (const auto& r : routes_) out.push_back({r.method, r.pattern});
    return out;
}

Router::Match Router::Find(Method method, std::string_view path) const {
    Match match;
    const auto parts = SplitPath(path);
    if (parts.empty()) return match;
    const Route* best = nullptr;
    const Route* best_get = nullptr;  // HEAD is served by GET when no HEAD route exists
    bool methods[8] = {};
    for (const auto& route : routes_) {
        if (!Matches(route, parts, nullptr)) continue;
        methods[static_cast<int>(route.method)] = true;
        if (route.method == method && (best == nullptr || MoreSpecific(route, *best))) best = &route;
        if (method == Method::kHead && route.method == Method::kGet &&
            (best_get == nullptr || MoreSpecific(route, *best_get))) {
            best_get = &route;
        }
    }
    if (best == nullptr) best = best_get;
    if (best != nullptr) {
        Matches(*best, parts, &match.params);
        match.handler = &best->handler;
        match.route = static_cast<std::size_t>(best - routes_.data());
        match.access = best->access;
        return match;
    }
    if (methods[static_cast<int>(Method::kGet)]) methods[static_cast<int>(Method::kHead)] = true;
    for (const Method m : {Method::kGet, Method::kHead, Method::kPost, Method::kPut, Method::kPatch, Method::kDelete,
                           Method::kOptions}) {
        if (methods[static_cast<int>(m)]) match.allow += (match.allow.empty() ? "" : ", ") + std::string(MethodName(m));
    }
    return match;
}

}  // namespace sched::http
