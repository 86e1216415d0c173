#include "sched/common/logging.hpp"

#include <iostream>
#include <memory>

#include "sched/common/announce.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace sched {

namespace {

constexpr char kHex[] = "0123456789abcdef";

void AppendHexByte(std::string& out, unsigned char c) {
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
}

// \n, \r and \t, spelled alike by JSON and by the text log; false (nothing written) for any other byte.
bool EscapeLineBreakOrTab(std::string& out, unsigned char c) {
    switch (c) {
        case '\n':
            out += "\\n";
            return true;
        case '\r':
            out += "\\r";
            return true;
        case '\t':
            out += "\\t";
            return true;
        default:
            return false;
    }
}

// Length of the well-formed UTF-8 sequence at the start of `s`, or 0 (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF).
std::size_t Utf8SequenceLength(std::string_view s) {
    const auto b0 = static_cast<unsigned char>(s[0]);
    std::size_t n = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xbf;
    if (b0 >= 0xc2 && b0 <= 0xdf) {
        n = 2;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
        n = 3;
        if (b0 == 0xe0) lo = 0xa0;
        if (b0 == 0xed) hi = 0x9f;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
        n = 4;
        if (b0 == 0xf0) lo = 0x90;
        if (b0 == 0xf4) hi = 0x8f;
    } else {
        return 0;
    }
    if (s.size() < n) return 0;
    for (std::size_t i = 1; i < n; ++i) {
        const auto b = static_cast<unsigned char>(s[i]);
        if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xbf)) return 0;
    }
    return n;
}

// Walks `s`, copying printable text and well-formed UTF-8 and handing every other byte to
// `escape` (which appends its replacement to `out`).
template <typename Escape>
std::string EscapeWith(std::string_view s, Escape escape) {
    std::string out;
    out.reserve(s.size() + 8);
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            if (const std::size_t n = Utf8SequenceLength(s.substr(i)); n > 0) {
                out.append(s.substr(i, n));
                i += n;
                continue;
            }
        }
        if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
            escape(out, c);
        } else {
            out += static_cast<char>(c);
        }
        ++i;
    }
    return out;
}

// spdlog's %v writes the message as is. Every message passes through one of these flags
// instead, so no argument (a job name, a peer's error text) can start a forged log line or
// break the JSON format, whatever the call site.
template <std::string (*Escape)(std::string_view)>
class EscapedMessageFlag final : public spdlog::custom_flag_formatter {
  public:
    void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
        const std::string escaped = Escape(std::string_view(msg.payload.data(), msg.payload.size()));
        dest.append(escaped.data(), escaped.data() + escaped.size());
    }
    std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<EscapedMessageFlag>(); }
};

using JsonMessageFlag = EscapedMessageFlag<JsonEscape>;
using TextMessageFlag = EscapedMessageFlag<LogEscape>;

constexpr std::string_view kAnnounceLogger = "announce";

}  // namespace

LogConfig LogConfig::FromYaml(const ConfigNode& node) {
    LogConfig c;
    c.level = node.Enum("level", c.level, {"trace", "debug", "info", "warn", "error", "critical", "off"});
    c.format = node.Enum("format", c.format, {"text", "json"});
    return c;
}

void SetupLogging(const LogConfig& config) {
    auto logger = std::make_shared<spdlog::logger>("sched", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    if (config.format == "json") {
        auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
        formatter->add_flag<JsonMessageFlag>('*').set_pattern(
            R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","thread":%t,"msg":"%*"})");
        logger->set_formatter(std::move(formatter));
    } else {
        auto formatter = std::make_unique<spdlog::pattern_formatter>();
        formatter->add_flag<TextMessageFlag>('*').set_pattern("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ [%t] %*");
        logger->set_formatter(std::move(formatter));
    }
    logger->set_level(spdlog::level::from_str(config.level));
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(std::move(logger));

    // Announce() (announce.hpp): stdout, the bare line as text, the same record as the log's in
    // json, so a collector that reads both streams (docker logs) sees nothing but JSON.
    auto announce = std::make_shared<spdlog::logger>(std::string(kAnnounceLogger),
                                                     std::make_shared<spdlog::sinks::stdout_sink_mt>());
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    if (config.format == "json") {
        formatter->add_flag<JsonMessageFlag>('*').set_pattern(
            R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","thread":%t,"msg":"%*"})");
    } else {
        formatter->add_flag<TextMessageFlag>('*').set_pattern("%*");
    }
    announce->set_formatter(std::move(formatter));
    announce->flush_on(spdlog::level::info);
    spdlog::drop(std::string(kAnnounceLogger));
    spdlog::register_logger(std::move(announce));
}

void Announce(std::string_view line) {
    if (auto announce = spdlog::get(std::string(kAnnounceLogger))) {
        announce->info("{}", line);
    } else {
        std::cout << line << std::endl;  // before SetupLogging (tools, tests)
    }
}

std::string JsonEscape(std::string_view s) {
    return EscapeWith(s, [](std::string& out, unsigned char c) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (!EscapeLineBreakOrTab(out, c)) {
            // A control byte as \u00XX; a byte outside well-formed UTF-8 as U+FFFD, since JSON text
            // must be UTF-8.
            if (c < 0x80) {
                out += "\\u00";
                AppendHexByte(out, c);
            } else {
                out += "\\ufffd";
            }
        }
    });
}

std::string LogEscape(std::string_view s) {
    return EscapeWith(s, [](std::string& out, unsigned char c) {
        if (c == '"' || c == '\\') {
            out += static_cast<char>(c);  // a text line shows quotes and backslashes as they are
        } else if (!EscapeLineBreakOrTab(out, c)) {
            out += "\\x";
            AppendHexByte(out, c);
        }
    });
}

}  // namespace sched
