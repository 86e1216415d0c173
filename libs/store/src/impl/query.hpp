#pragma once

// Small helpers over soci statements shared by the repositories.

#include <cstdint>
#include <optional>
#include <string>

#include <soci/soci.h>

namespace sched::store::impl {

/// Executes `st` (already prepared and bound) and returns the affected (matched) rows.
inline long long ExecuteAffected(soci::statement& st) {
    st.execute(true);
    return st.get_affected_rows();
}

/// A nullable BIGINT column bound with an indicator.
struct NullableInt64 {
    std::int64_t value = 0;
    soci::indicator ind = soci::i_null;

    std::optional<std::int64_t> get() const {
        return ind == soci::i_ok ? std::optional<std::int64_t>(value) : std::nullopt;
    }
    void set(const std::optional<std::int64_t>& v) {
        value = v.value_or(0);
        ind = v ? soci::i_ok : soci::i_null;
    }
};

struct NullableString {
    std::string value;
    soci::indicator ind = soci::i_null;

    std::optional<std::string> get() const {
        return ind == soci::i_ok ? std::optional<std::string>(value) : std::nullopt;
    }
    void set(const std::optional<std::string>& v) {
        value = v.value_or("");
        ind = v ? soci::i_ok : soci::i_null;
    }
};

}  // namespace sched::store::impl
