#pragma once

// Small helpers over soci statements shared by the repositories.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <soci/soci.h>

namespace sched::store::impl {

/// Runs a SELECT: `Row::BindInto(statement&)` binds the output columns, `bind_uses(statement&)`
/// the inputs, and `Row::Finish()` turns each fetched row into the result type.
template <typename Row, typename BindUses>
auto SelectRows(soci::session& s, const std::string& sql, BindUses&& bind_uses)
    -> std::vector<decltype(std::declval<Row&>().Finish())> {
    Row row;
    soci::statement st(s);
    row.BindInto(st);
    bind_uses(st);
    st.alloc();
    st.prepare(sql);
    st.define_and_bind();
    std::vector<decltype(row.Finish())> out;
    if (st.execute(true)) {
        do {
            out.push_back(row.Finish());
        } while (st.fetch());
    }
    return out;
}

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

/// The values of a statement whose SQL is built at run time (a list of rows). A number is
/// written into the SQL as its decimal literal (formatted here, never text from input: no
/// injection); a string gets a fresh placeholder and is kept where soci can reference it (a
/// deque never moves its elements) until Bind has handed it to the statement. Why numbers are
/// not bound: SQLite finds a named parameter by a linear search of the names seen so far, so a
/// 200-row INSERT with 1,800 named values spent 43% of a standalone node's CPU in
/// sqlite3_prepare at 3,000 fires/s (issue 20); soci's MySQL backend substitutes each name
/// into the text on the client anyway.
class BoundValues {
  public:
    std::string Add(std::int64_t value) {
        ++numbers_;
        // Parenthesised when negative: "a -" + "-1" must never read as "a --1" (a comment).
        return value < 0 ? "(" + std::to_string(value) + ")" : std::to_string(value);
    }
    std::string Add(const std::optional<std::string>& value) {
        strings_.emplace_back("v" + std::to_string(strings_.size()), NullableString{});
        strings_.back().second.set(value);
        return ":" + strings_.back().first;
    }
    /// Values added: what callers bound their statements' size by.
    std::size_t size() const { return numbers_ + strings_.size(); }
    void Bind(soci::statement& st) {
        for (auto& [name, value] : strings_) st.exchange(soci::use(value.value, value.ind, name));
    }

  private:
    std::size_t numbers_ = 0;
    std::deque<std::pair<std::string, NullableString>> strings_;
};

/// Prepares `sql` with `values` bound and returns the affected (matched) rows.
inline long long ExecuteBound(soci::session& s, const std::string& sql, BoundValues& values) {
    soci::statement st(s);
    values.Bind(st);
    st.alloc();
    st.prepare(sql);
    st.define_and_bind();
    return ExecuteAffected(st);
}

}  // namespace sched::store::impl
