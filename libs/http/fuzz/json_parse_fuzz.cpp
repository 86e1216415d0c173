// libFuzzer entry point for the JSON decoder every request body goes through (ParseJson and
// the JsonFields reader on its result). Built with clang++ -fsanitize=fuzzer,address,undefined
// when available, and always by the g++ replay driver (replay_main.cpp).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sched/http/json.hpp"
#include "sched/http/message.hpp"

namespace {

void Check(bool condition) {
    if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    for (const std::size_t depth : {std::size_t{4}, std::size_t{64}}) {
        auto parsed = sched::http::ParseJson(text, {.max_depth = depth});
        if (!parsed.ok()) {
            const std::string& message = parsed.status().message();
            Check(parsed.status().code() == sched::Code::kInvalidArgument);
            Check(!message.empty() && message.size() < 400);
            // The library's own exception text never reaches a caller; a key path may of course
            // echo those characters when the input itself holds them.
            Check(message.find("json.exception") == std::string::npos ||
                  text.find("json.exception") != std::string_view::npos);
            continue;
        }
        // What handlers do with a document: serialise it (recursive, so the depth bound is
        // what keeps this safe), read fields, copy values.
        const std::string dumped = parsed->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        auto again = sched::http::ParseJson(dumped, {.max_depth = depth});
        Check(again.ok());
        sched::http::JsonFields f(*parsed);
        (void)f.Int("fire_id", 0, {.min = 0});
        (void)f.String("name", "");
        (void)f.Bool("enabled", false);
        const nlohmann::json params = f.Value("params", nlohmann::json::object());
        (void)params.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        sched::http::JsonFields nested(params, "params");  // holds a reference: params outlives it
        (void)nested.StringList("handlers");
    }
    return 0;
}
