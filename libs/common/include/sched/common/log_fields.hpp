#pragma once

/// Structured fields on log lines: what a line is about (job, fire, attempt, app, epoch,
/// trace id) as data a collector can filter on, not only as words in the message.
///
///     LogWithFields(spdlog::level::warn, {{"fire", fire.id}, {"job", job.id}, {"trace_id", trace}},
///                   "fire {} skipped: {}", fire.id, why);
///
/// With `log.format: json` each field is a member of the line's record
/// (`{"ts":..., "level":"warn", "thread":7, "node":"n1", "fire":42, "job":7, "trace_id":"4bf9...",
/// "msg":"fire 42 skipped: ..."}`); with `text` they follow the message as `key=value`
/// (`... fire 42 skipped: ... fire=42 job=7 trace_id=4bf9...`). Integers stay numbers in JSON.
/// Values are escaped like messages (logging.hpp): no value can forge a line or a member.
///
/// Process fields (SetProcessLogField, e.g. the node's id) are carried by every JSON line the
/// process logs, before the line's own fields; text lines, read by people on one host, leave
/// them out.
///
/// Keys are literals of the code: lower-case letters, digits and '_', never one of the record's
/// own members (ts, level, thread, msg). A line's keys are checked when the code compiles
/// (LogKey); SetProcessLogField throws std::invalid_argument for a bad key.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include <spdlog/spdlog.h>

namespace sched {

/// Whether `key` may name a field (see above).
constexpr bool IsLogFieldKey(std::string_view key) {
    if (key.empty() || key.size() > 32) return false;
    for (const char c : key) {
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
    }
    return key != "ts" && key != "level" && key != "thread" && key != "msg";
}

/// A field's key, checked when the code compiles: a bad literal does not build.
struct LogKey {
    // NOLINTNEXTLINE(google-explicit-constructor): written as a literal in the field list
    consteval LogKey(const char* k) : text(k) {
        if (!IsLogFieldKey(text)) throw "log field keys are [a-z0-9_]+ and not ts, level, thread or msg";
    }
    std::string_view text;
};

/// One field of a log line: a key and an integer or text value. Holds views: build the list in
/// the call to LogWithFields.
struct LogField {
    template <typename Int>
    requires(std::is_integral_v<Int> && !std::is_same_v<Int, bool> && !std::is_same_v<Int, char>)
        LogField(LogKey k, Int v)
        : key(k.text), value(static_cast<std::int64_t>(v)) {}
    LogField(LogKey k, std::string_view v) : key(k.text), value(v) {}
    LogField(LogKey k, const std::string& v) : key(k.text), value(std::string_view(v)) {}
    LogField(LogKey k, const char* v) : key(k.text), value(std::string_view(v)) {}

    std::string_view key;
    std::variant<std::int64_t, std::string_view> value;
};

namespace impl {
/// Publishes `fields` to the installed formatters for the duration of one log call on this
/// thread (spdlog's loggers here are synchronous: the line is formatted in the calling thread).
class LogFieldsScope {
  public:
    explicit LogFieldsScope(std::initializer_list<LogField> fields);
    ~LogFieldsScope();
    LogFieldsScope(const LogFieldsScope&) = delete;
    LogFieldsScope& operator=(const LogFieldsScope&) = delete;

  private:
    const LogField* previous_begin_;
    std::size_t previous_size_;
};
}  // namespace impl

/// Logs like spdlog::log(level, format, args...) with `fields` on the line.
template <typename... Args>
void LogWithFields(spdlog::level::level_enum level, std::initializer_list<LogField> fields,
                   spdlog::format_string_t<Args...> format, Args&&... args) {
    if (!spdlog::should_log(level)) return;
    const impl::LogFieldsScope scope(fields);
    spdlog::log(level, format, std::forward<Args>(args)...);
}

/// Adds (or replaces) a field every line of this process carries (e.g. the node's id, once it is
/// known). Thread-safe; meant for start-up.
void SetProcessLogField(std::string_view key, std::string value);
/// Removes every process field (tests).
void ClearProcessLogFields();

}  // namespace sched
