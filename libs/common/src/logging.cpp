#include "sched/common/logging.hpp"

#include <algorithm>
#include <atomic>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "sched/common/announce.hpp"
#include "sched/common/log_fields.hpp"
#include "sched/common/utf8.hpp"

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

// Walks `s`, copying printable text and well-formed UTF-8 and handing every other byte to
// `escape` (which appends its replacement to `out`).
template <typename Escape>
std::string EscapeWith(std::string_view s, Escape escape) {
    std::string out;
    out.reserve(s.size() + 8);
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            if (const std::size_t n = Utf8CharLength(s.substr(i)); n > 0) {
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

// The fields of the line being logged on this thread (LogFieldsScope), and the process's.
thread_local const LogField* tl_fields = nullptr;
thread_local std::size_t tl_field_count = 0;
// Replaced whole (copy, change, publish), so a line being formatted on another thread keeps the
// list it loaded.
using FieldList = std::vector<std::pair<std::string, std::string>>;
std::atomic<std::shared_ptr<const FieldList>>& ProcessFields() {
    static std::atomic<std::shared_ptr<const FieldList>> fields{std::make_shared<const FieldList>()};
    return fields;
}

void Append(spdlog::memory_buf_t& dest, std::string_view text) {
    dest.append(text.data(), text.data() + text.size());
}

// A text value as is when it reads as one word, else in quotes (inner quotes as \").
void AppendTextValue(spdlog::memory_buf_t& dest, std::string_view value) {
    const std::string escaped = LogEscape(value);
    if (!escaped.empty() && escaped.find_first_of(" =\"") == std::string::npos) {
        Append(dest, escaped);
        return;
    }
    dest.push_back('"');
    for (const char c : escaped) {
        if (c == '"') dest.push_back('\\');
        dest.push_back(c);
    }
    dest.push_back('"');
}

// `,"key":value` for each field (json): process fields, then the line's; or ` key=value` (text):
// the line's only, since a person reading one process's text log knows which node wrote it.
template <bool kJson>
class FieldsFlag final : public spdlog::custom_flag_formatter {
  public:
    void format(const spdlog::details::log_msg&, const std::tm&, spdlog::memory_buf_t& dest) override {
        if (kJson) {
            const std::shared_ptr<const FieldList> process = ProcessFields().load();
            for (const auto& [key, value] : *process) Field(dest, key, value);
        }
        for (std::size_t i = 0; i < tl_field_count; ++i) {
            const LogField& f = tl_fields[i];
            if (const auto* n = std::get_if<std::int64_t>(&f.value)) {
                Key(dest, f.key);
                Append(dest, std::to_string(*n));
            } else {
                Field(dest, f.key, std::get<std::string_view>(f.value));
            }
        }
    }
    std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<FieldsFlag>(); }

  private:
    static void Key(spdlog::memory_buf_t& dest, std::string_view key) {
        Append(dest, kJson ? ",\"" : " ");
        Append(dest, key);
        Append(dest, kJson ? "\":" : "=");
    }
    static void Field(spdlog::memory_buf_t& dest, std::string_view key, std::string_view value) {
        Key(dest, key);
        if (kJson) {
            dest.push_back('"');
            Append(dest, JsonEscape(value));
            dest.push_back('"');
        } else {
            AppendTextValue(dest, value);
        }
    }
};

// '&' in the patterns below: the fields.
constexpr char kFieldsFlag = '&';
constexpr const char* kJsonPattern = R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","thread":%t%&,"msg":"%*"})";

std::unique_ptr<spdlog::pattern_formatter> JsonFormatter() {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<JsonMessageFlag>('*').add_flag<FieldsFlag<true>>(kFieldsFlag).set_pattern(kJsonPattern);
    return formatter;
}

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
        logger->set_formatter(JsonFormatter());
    } else {
        auto formatter = std::make_unique<spdlog::pattern_formatter>();
        formatter->add_flag<TextMessageFlag>('*')
            .add_flag<FieldsFlag<false>>(kFieldsFlag)
            .set_pattern("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ [%t] %*%&");
        logger->set_formatter(std::move(formatter));
    }
    logger->set_level(spdlog::level::from_str(config.level));
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(std::move(logger));

    // Announce() (announce.hpp): stdout, the bare line as text, the same record as the log's in
    // json, so a collector that reads both streams (docker logs) sees nothing but JSON.
    auto announce = std::make_shared<spdlog::logger>(std::string(kAnnounceLogger),
                                                     std::make_shared<spdlog::sinks::stdout_sink_mt>());
    if (config.format == "json") {
        announce->set_formatter(JsonFormatter());
    } else {
        auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
        formatter->add_flag<TextMessageFlag>('*').set_pattern("%*");
        announce->set_formatter(std::move(formatter));
    }
    announce->flush_on(spdlog::level::info);
    spdlog::drop(std::string(kAnnounceLogger));
    spdlog::register_logger(std::move(announce));
}

namespace impl {

LogFieldsScope::LogFieldsScope(std::initializer_list<LogField> fields)
    : previous_begin_(tl_fields), previous_size_(tl_field_count) {
    tl_fields = fields.begin();
    tl_field_count = fields.size();
}

LogFieldsScope::~LogFieldsScope() {
    tl_fields = previous_begin_;
    tl_field_count = previous_size_;
}

}  // namespace impl

void SetProcessLogField(std::string_view key, std::string value) {
    if (!IsLogFieldKey(key)) throw std::invalid_argument("bad log field key: " + std::string(key));
    auto fields = std::make_shared<FieldList>(*ProcessFields().load());
    const auto same = std::find_if(fields->begin(), fields->end(), [&](const auto& f) { return f.first == key; });
    if (same != fields->end()) {
        same->second = std::move(value);
    } else {
        fields->emplace_back(std::string(key), std::move(value));
    }
    ProcessFields().store(std::move(fields));
}

void ClearProcessLogFields() {
    ProcessFields().store(std::make_shared<const FieldList>());
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
