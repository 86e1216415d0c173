#pragma once

// Small helpers over soci statements shared by the repositories.

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <soci/soci.h>

#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/db/dialect.hpp"

namespace sched::store::impl {

/// The dialect of the session's backend, for session-level calls that are not handed one.
inline db::Dialect SessionDialect(soci::session& s) {
    return db::Dialect(s.get_backend_name() == "mysql" ? db::Backend::kMySql : db::Backend::kSqlite);
}

/// Executes `st` (already prepared and bound) and returns the affected (matched) rows.
inline long long ExecuteAffected(soci::statement& st) {
    st.execute(true);
    return st.get_affected_rows();
}

/// A nullable column (BIGINT or text) bound with an indicator: NULL is an empty optional.
template <typename T>
struct Nullable {
    T value{};
    soci::indicator ind = soci::i_null;

    Nullable() = default;
    explicit Nullable(const std::optional<T>& v) { set(v); }

    std::optional<T> get() const { return ind == soci::i_ok ? std::optional<T>(value) : std::nullopt; }
    void set(const std::optional<T>& v) {
        value = v.value_or(T{});
        ind = v ? soci::i_ok : soci::i_null;
    }
};
using NullableInt64 = Nullable<std::int64_t>;
using NullableString = Nullable<std::string>;

/// Binds a Nullable as an input with its indicator (soci::use(value, ind, name)); `name` is
/// referenced until the statement is prepared, as with soci::use itself.
template <typename T>
auto Use(Nullable<T>& v, const std::string& name) {
    return soci::use(v.value, v.ind, name);
}

/// Binds one output column: a Nullable with its indicator, anything else as soci binds it.
template <typename T>
void IntoColumn(soci::statement& st, T& target) {
    st.exchange(soci::into(target));
}
template <typename T>
void IntoColumn(soci::statement& st, Nullable<T>& target) {
    st.exchange(soci::into(target.value, target.ind));
}

/// Binds a row's output columns in the order its SELECT names them (`Row::BindInto`).
template <typename... Targets>
void IntoColumns(soci::statement& st, Targets&... targets) {
    (IntoColumn(st, targets), ...);
}

/// The integer output columns of a row (`Row::BindInto(statement&, IntColumns&)`). soci's MySQL
/// backend turns every fetched integer into a number through a fresh std::istringstream (its
/// `parse_num`): a locale set-up per column that was a third of a trigger node's CPU at 1,000
/// fires/s (perf). On MySQL these columns are fetched as their text and read with
/// std::from_chars; elsewhere (SQLite hands over the integer itself) they are bound as they are.
class IntColumns {
  public:
    explicit IntColumns(bool as_text) : as_text_(as_text) {}
    /// True for the backends whose integers are worth fetching as text.
    static bool AsText(soci::session& s) { return s.get_backend_name() == "mysql"; }

    void Into(soci::statement& st, int& target) { Bind(st, target); }
    void Into(soci::statement& st, std::int64_t& target) { Bind(st, target); }
    void Into(soci::statement& st, NullableInt64& target) {
        if (!as_text_) {
            st.exchange(soci::into(target.value, target.ind));
            return;
        }
        columns_.push_back(Column{.target = &target});
        st.exchange(soci::into(columns_.back().text, columns_.back().ind));
    }

    /// After each fetch, before the row reads its fields. A NULL where the row has no indicator
    /// or a text that is not an integer is a broken schema: it throws, as soci itself would.
    void Convert() {
        for (auto& c : columns_) {
            if (auto* nullable = std::get_if<NullableInt64*>(&c.target)) {
                (*nullable)->ind = c.ind;
                if (c.ind == soci::i_ok) (*nullable)->value = Parse<std::int64_t>(c.text);
                continue;
            }
            if (c.ind != soci::i_ok) throw soci::soci_error("Null value fetched and no indicator defined.");
            if (auto* narrow = std::get_if<int*>(&c.target)) {
                **narrow = Parse<int>(c.text);
            } else {
                *std::get<std::int64_t*>(c.target) = Parse<std::int64_t>(c.text);
            }
        }
    }

  private:
    struct Column {
        std::string text;
        soci::indicator ind = soci::i_null;
        std::variant<int*, std::int64_t*, NullableInt64*> target;
    };

    template <typename T>
    void Bind(soci::statement& st, T& target) {
        if (!as_text_) {
            st.exchange(soci::into(target));
            return;
        }
        columns_.push_back(Column{.target = &target});
        st.exchange(soci::into(columns_.back().text, columns_.back().ind));
    }

    template <typename T>
    static T Parse(const std::string& text) {
        T value{};
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (ec != std::errc() || ptr != end) throw soci::soci_error("Cannot convert data: '" + text + "'");
        return value;
    }

    bool as_text_;
    std::deque<Column> columns_;  // a deque: soci keeps the address of each text and indicator
};

/// A repository's Get: `find(session, id)` in one read on `db`; kNotFound "<what> <id> not
/// found" when it finds nothing, the database's error as it is.
template <typename T>
Result<T> GetById(db::Database& db, std::string_view what, std::int64_t id,
                  std::optional<T> (*find)(soci::session&, std::int64_t)) {
    return db.Run([&](soci::session& s) -> Result<T> {
        auto found = find(s, id);
        if (!found) return NotFound(std::string(what) + " " + std::to_string(id) + " not found");
        return *std::move(found);
    });
}

/// A repository's Get by name: `find(session, name)` in one read on `db`; kNotFound "<shown>
/// not found" (`shown` names the entity, e.g. `calendar "x"`) when it finds nothing.
template <typename T>
Result<T> GetByName(db::Database& db, const std::string& shown, const std::string& name,
                    std::optional<T> (*find)(soci::session&, const std::string&)) {
    return db.Run([&](soci::session& s) -> Result<T> {
        auto found = find(s, name);
        if (!found) return NotFound(shown + " not found");
        return *std::move(found);
    });
}

/// A row of one BIGINT column (an id): `SelectRows<IdRow>(s, "SELECT id FROM ...", ...)` is the
/// ids as a vector.
struct IdRow {
    std::int64_t id = 0;
    void BindInto(soci::statement& st) { st.exchange(soci::into(id)); }
    std::int64_t Finish() const { return id; }
};

/// Runs a SELECT: `Row::BindInto(statement&)` (or `BindInto(statement&, IntColumns&)`, for rows
/// read on hot paths) binds the output columns, `bind_uses(statement&)` the inputs, and
/// `Row::Finish()` turns each fetched row into the result type.
template <typename Row, typename BindUses>
auto SelectRows(soci::session& s, const std::string& sql, BindUses&& bind_uses)
    -> std::vector<decltype(std::declval<Row&>().Finish())> {
    Row row;
    soci::statement st(s);
    IntColumns ints(IntColumns::AsText(s));
    if constexpr (requires { row.BindInto(st, ints); }) {
        row.BindInto(st, ints);
    } else {
        row.BindInto(st);
    }
    bind_uses(st);
    st.alloc();
    st.prepare(sql);
    st.define_and_bind();
    std::vector<decltype(row.Finish())> out;
    if (st.execute(true)) {
        do {
            ints.Convert();
            out.push_back(row.Finish());
        } while (st.fetch());
    }
    return out;
}

/// A page of the rows under one parent, newest first: `select` (up to its WHERE) of the rows whose
/// `parent_column` is `parent_id` and whose id is below `before_id` (0: from the newest), at most
/// `limit` (clamped to 1..1000), in one read on `db`.
template <typename Row>
auto SelectChildrenBefore(db::Database& db, std::string_view select, std::string_view parent_column,
                          std::int64_t parent_id, std::int64_t before_id, int limit)
    -> Result<std::vector<decltype(std::declval<Row&>().Finish())>> {
    using Rows = std::vector<decltype(std::declval<Row&>().Finish())>;
    return db.Run([&](soci::session& s) -> Result<Rows> {
        const std::int64_t before = before_id > 0 ? before_id : INT64_MAX;
        return SelectRows<Row>(s,
                               std::string(select) + "WHERE " + std::string(parent_column) +
                                   " = :parent AND id < :before ORDER BY id DESC LIMIT " +
                                   std::to_string(std::clamp(limit, 1, 1000)),
                               [&](soci::statement& st) {
                                   st.exchange(soci::use(parent_id, "parent"));
                                   st.exchange(soci::use(before, "before"));
                               });
    });
}

/// The rows of `table`, in one read on `db`.
inline Result<std::int64_t> CountRows(db::Database& db, std::string_view table) {
    return db.Run([&](soci::session& s) -> Result<std::int64_t> {
        std::int64_t n = 0;
        s << "SELECT COUNT(*) FROM " + std::string(table), soci::into(n);
        return n;
    });
}

/// `ids` as comma-separated decimal lists of at most `chunk` ids each, to be written into the
/// SQL of `IN (...)` lists (numbers only: no injection), so that no statement grows without bound.
inline std::vector<std::string> IdListChunks(const std::vector<std::int64_t>& ids, std::size_t chunk) {
    std::vector<std::string> out;
    for (std::size_t from = 0; from < ids.size(); from += chunk) {
        const std::size_t to = std::min(ids.size(), from + chunk);
        std::string list;
        for (std::size_t i = from; i < to; ++i) list += (i == from ? "" : ", ") + std::to_string(ids[i]);
        out.push_back(std::move(list));
    }
    return out;
}

/// The values of a statement whose SQL is built at run time (a list of rows). A number is
/// written into the SQL as its decimal literal (formatted here, never text from input: no
/// injection); a string gets a fresh placeholder and is kept where soci can reference it (a
/// deque never moves its elements) until Bind has handed it to the statement. Why numbers are
/// not bound: SQLite finds a named parameter by a linear search of the names seen so far, so a
/// 200-row INSERT with 1,800 named values spent 43% of a standalone node's CPU in
/// sqlite3_prepare at 3,000 fires/s; soci's MySQL backend substitutes each name
/// into the text on the client anyway.
class BoundValues {
  public:
    std::string Add(std::int64_t value) {
        ++numbers_;
        return Number(value);
    }
    /// The literal Add writes. Parenthesised when negative: "a -" + "-1" must never read as
    /// "a --1" (a comment).
    static std::string Number(std::int64_t value) {
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

/// "1, 2, 3": `ids` as the literals of an IN list.
inline std::string IdList(std::span<const std::int64_t> ids) {
    std::string out;
    for (const auto id : ids) out += (out.empty() ? "" : ", ") + BoundValues::Number(id);
    return out;
}

/// Calls `fn` with consecutive pieces of `items` of at most `size` elements: one statement per
/// piece keeps each statement's text and values bounded whatever the batch.
template <typename T, typename Fn>
void ForEachChunk(const std::vector<T>& items, std::size_t size, Fn&& fn) {
    const std::span<const T> all(items);
    for (std::size_t begin = 0; begin < all.size(); begin += size) {
        fn(all.subspan(begin, std::min(size, all.size() - begin)));
    }
}

/// SelectRows over `ids` a chunk at a time: `sql(list)` is the statement for one chunk's IN list
/// (IdList), with nothing to bind. The rows of every chunk, in the chunks' order.
template <typename Row, typename Sql>
auto SelectByIds(soci::session& s, const std::vector<std::int64_t>& ids, std::size_t chunk, Sql&& sql)
    -> std::vector<decltype(std::declval<Row&>().Finish())> {
    std::vector<decltype(std::declval<Row&>().Finish())> out;
    ForEachChunk(ids, chunk, [&](std::span<const std::int64_t> part) {
        auto rows = SelectRows<Row>(s, sql(IdList(part)), [](soci::statement&) {});
        out.insert(out.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
    });
    return out;
}

/// Prepares `sql` with `values` bound and returns the affected (matched) rows.
inline long long ExecuteBound(soci::session& s, const std::string& sql, BoundValues& values) {
    soci::statement st(s);
    values.Bind(st);
    st.alloc();
    st.prepare(sql);
    st.define_and_bind();
    return ExecuteAffected(st);
}

/// Deletes at most `limit` rows of `table` matching `condition` (SQL naming `:cutoff`, bound to
/// `cutoff`), first in `order`: their ids first, then one DELETE by id, so the batch is bounded
/// on both backends (SQLite has no DELETE ... LIMIT by default, MySQL none with a subquery on the
/// same table). Returns how many went.
inline int DeleteOldest(soci::session& s, std::string_view table, std::string_view condition, std::string_view order,
                        std::int64_t cutoff, int limit) {
    const auto ids =
        SelectRows<IdRow>(s,
                          "SELECT id FROM " + std::string(table) + " WHERE " + std::string(condition) + " ORDER BY " +
                              std::string(order) + " LIMIT " + std::to_string(std::max(1, limit)),
                          [&](soci::statement& st) { st.exchange(soci::use(cutoff, "cutoff")); });
    if (ids.empty()) return 0;
    BoundValues values;  // none: the ids are literals
    return static_cast<int>(
        ExecuteBound(s, "DELETE FROM " + std::string(table) + " WHERE id IN (" + IdList(ids) + ")", values));
}

}  // namespace sched::store::impl
