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

/// The bound values of a statement whose SQL is built at run time (a list of rows): Add returns
/// a fresh placeholder and keeps the value where soci can reference it (a deque never moves its
/// elements) until Bind has handed every value to the statement.
class BoundValues {
  public:
    std::string Add(std::int64_t value) {
        ints_.emplace_back(NextName(), value);
        return ":" + ints_.back().first;
    }
    std::string Add(const std::optional<std::string>& value) {
        strings_.emplace_back(NextName(), NullableString{});
        strings_.back().second.set(value);
        return ":" + strings_.back().first;
    }
    std::size_t size() const { return ints_.size() + strings_.size(); }
    void Bind(soci::statement& st) {
        for (auto& [name, value] : ints_) st.exchange(soci::use(value, name));
        for (auto& [name, value] : strings_) st.exchange(soci::use(value.value, value.ind, name));
    }

  private:
    std::string NextName() { return "v" + std::to_string(size()); }

    std::deque<std::pair<std::string, std::int64_t>> ints_;
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
