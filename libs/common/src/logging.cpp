#include "sched/common/logging.hpp"

#include <memory>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace sched {

namespace {

// spdlog's %v is not escaped; a message with a quote would break every JSON log parser.
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
  public:
    void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
        const std::string escaped = JsonEscape(std::string_view(msg.payload.data(), msg.payload.size()));
        dest.append(escaped.data(), escaped.data() + escaped.size());
    }
    std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonMessageFlag>(); }
};

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
        logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ [%t] %v");
    }
    logger->set_level(spdlog::level::from_str(config.level));
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(std::move(logger));
}

std::string JsonEscape(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 8);
    for (const char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    static constexpr char kHex[] = "0123456789abcdef";
                    out += "\\u00";
                    out += kHex[(c >> 4) & 0xf];
                    out += kHex[c & 0xf];
                } else {
                    out += c;
                }
        }
    }
    return out;
}

}  // namespace sched
