#include "sched/protocol/log_page.hpp"

#include "sched/http/json.hpp"

namespace sched::protocol {

nlohmann::json ToJson(const LogPage& page) {
    return {{"fire_id", page.fire_id},
            {"from_line", page.from_line},
            {"to_line", page.to_line},
            {"lines", page.lines},
            {"finished", page.finished}};
}

Parsed<LogPage> ReadLogPage(const nlohmann::json& body) {
    Parsed<LogPage> out;
    http::JsonFields f(body);
    LogPage& p = out.value;
    p.fire_id = f.Int("fire_id", {.min = 0});
    p.from_line = f.Int("from_line", {.min = 0});
    p.to_line = f.Int("to_line", {.min = 0});
    if (f.ok()) {
        // Bounded before anything is copied.
        const auto lines = body.find("lines");
        if (lines == body.end() || !lines->is_array()) {
            f.Fail("lines", "required, an array of strings");
        } else if (lines->size() > kMaxLogPageLines) {
            f.Fail("lines",
                   "at most " + std::to_string(kMaxLogPageLines) + " lines, got " + std::to_string(lines->size()));
        }
    }
    if (f.ok()) p.lines = f.StringList("lines");
    if (f.ok() && p.to_line - p.from_line != static_cast<std::int64_t>(p.lines.size())) {
        f.Fail("to_line",
               "expected from_line + " + std::to_string(p.lines.size()) + " lines, got " + std::to_string(p.to_line));
    }
    p.finished = f.Bool("finished", false);
    out.error = f.error();
    return out;
}

}  // namespace sched::protocol
