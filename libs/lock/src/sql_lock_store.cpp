#include "sched/lock/sql_lock_store.hpp"

#include <string>

namespace sched::lock {

namespace {

constexpr const char* kColumns = "id, namespace, owner, epoch, version, lease_until_us, update_time_us, held_since_us";

}  // namespace

SqlLockStore::SqlLockStore(std::shared_ptr<db::Database> db) : db_(std::move(db)) {}

Result<std::optional<LockRow>> SqlLockStore::Read(std::string_view name) {
    const std::string now(db_->dialect().NowUs());
    const std::string key(name);
    statements_.fetch_add(1, std::memory_order_relaxed);
    return db_->Run([&](soci::session& s) -> Result<std::optional<LockRow>> {
        LockRow row;
        std::string owner;
        soci::indicator owner_ind = soci::i_ok;
        // NOW is selected in the same statement as the row, so Available() compares the row
        // with the database clock of the same instant, never with this node's clock.
        soci::statement st = (s.prepare << "SELECT " + std::string(kColumns) + ", " + now +
                                               " FROM scheduler_lock WHERE namespace = :name",
                              soci::use(key), soci::into(row.id), soci::into(row.name), soci::into(owner, owner_ind),
                              soci::into(row.epoch), soci::into(row.version), soci::into(row.lease_until_us),
                              soci::into(row.update_time_us), soci::into(row.held_since_us), soci::into(row.db_now_us));
        st.execute(false);
        if (!st.fetch()) return std::optional<LockRow>();
        if (owner_ind == soci::i_ok) row.owner = owner;
        return std::optional<LockRow>(std::move(row));
    });
}

Result<std::optional<Holding>> SqlLockStore::Insert(std::string_view name, std::string_view owner_view, Micros lease) {
    const std::string now(db_->dialect().NowUs());
    const std::string key(name);
    const std::string owner(owner_view);
    const long long lease_us = lease.count();
    const std::string sql = db_->dialect().InsertIfAbsent(
        "scheduler_lock (namespace, owner, epoch, version, lease_until_us, update_time_us, held_since_us, "
        "create_time_us) VALUES (:name, :owner, 1, 1, " +
        now + " + :lease, " + now + ", " + now + ", " + now + ")");
    statements_.fetch_add(1, std::memory_order_relaxed);
    return db_->Run([&](soci::session& s) -> Result<std::optional<Holding>> {
        soci::statement st = (s.prepare << sql, soci::use(key), soci::use(owner), soci::use(lease_us));
        if (db::ExecuteInsertIfAbsent(st) == 0) return std::optional<Holding>();
        long long id = 0;
        // The generated id of the row this database session just inserted (LAST_INSERT_ID /
        // sqlite3_last_insert_rowid): per connection, so no other writer can interfere.
        if (!s.get_last_insert_id("scheduler_lock", id)) {
            statements_.fetch_add(1, std::memory_order_relaxed);
            s << "SELECT id FROM scheduler_lock WHERE namespace = :name", soci::use(key), soci::into(id);
        }
        return std::optional<Holding>(Holding{id, 1});
    });
}

Result<bool> SqlLockStore::TakeOver(const LockRow& seen, std::string_view owner_view, Micros lease,
                                    const ClockStepGuard& guard) {
    const std::string now(db_->dialect().NowUs());
    const std::string owner(owner_view);
    const long long lease_us = lease.count();
    const long long id = seen.id;
    const long long version = seen.version;
    const long long tolerance_us = guard.tolerance.count();
    // 2^60 us (36,000 years) stands for "no limit": it keeps the statement's shape fixed, and
    // NOW + 2^60 still fits a BIGINT.
    const long long max_ahead_us = guard.max_lease_ahead.count() > 0 ? guard.max_lease_ahead.count() : (1LL << 60);
    // The expiry test uses the database clock at the moment of the write, in microseconds: a
    // node whose own clock runs fast cannot take a live lease, and a lease can never look
    // expired merely because two writes fell into the same second. The clock-step clauses use
    // that same NOW, so the take-over stays one CAS however the clock moved. The new owner holds
    // the row from that NOW on (held_since_us), even when it is the owner that held it before: a
    // new epoch is a new holding.
    const std::string sql =
        "UPDATE scheduler_lock SET owner = :owner, epoch = epoch + 1, version = version + 1, "
        "lease_until_us = " +
        now + " + :lease, update_time_us = " + now + ", held_since_us = " + now +
        " WHERE id = :id AND version = :version AND (owner IS NULL OR lease_until_us <= " + now +
        " OR update_time_us > " + now + " + :tolerance OR lease_until_us > " + now + " + :max_ahead)";
    statements_.fetch_add(1, std::memory_order_relaxed);
    return db_->Run([&](soci::session& s) -> Result<bool> {
        soci::statement st = (s.prepare << sql, soci::use(owner), soci::use(lease_us), soci::use(id),
                              soci::use(version), soci::use(tolerance_us), soci::use(max_ahead_us));
        st.execute(true);
        // Rows matched (see Dialect::InsertIfAbsent): version alone makes a match a real change.
        return st.get_affected_rows() == 1;
    });
}

Result<bool> SqlLockStore::Renew(std::int64_t id_in, std::string_view owner_view, std::int64_t epoch_in, Micros lease) {
    const std::string now(db_->dialect().NowUs());
    const std::string owner(owner_view);
    const long long lease_us = lease.count();
    const long long id = id_in;
    const long long epoch = epoch_in;
    // `lease_until_us > NOW`: an expired holding is gone even if nobody has taken it yet; its
    // holder must acquire again and so gets a new epoch, which fences off anything still in
    // flight under the old one. held_since_us stays: the holding goes on.
    const std::string sql = "UPDATE scheduler_lock SET version = version + 1, lease_until_us = " + now +
                            " + :lease, update_time_us = " + now +
                            " WHERE id = :id AND owner = :owner AND epoch = :epoch AND lease_until_us > " + now;
    statements_.fetch_add(1, std::memory_order_relaxed);
    return db_->Run([&](soci::session& s) -> Result<bool> {
        soci::statement st = (s.prepare << sql, soci::use(lease_us), soci::use(id), soci::use(owner), soci::use(epoch));
        st.execute(true);
        return st.get_affected_rows() == 1;
    });
}

Result<bool> SqlLockStore::Release(std::int64_t id_in, std::string_view owner_view, std::int64_t epoch_in) {
    const std::string now(db_->dialect().NowUs());
    const std::string owner(owner_view);
    const long long id = id_in;
    const long long epoch = epoch_in;
    const std::string sql =
        "UPDATE scheduler_lock SET owner = NULL, epoch = epoch + 1, version = version + 1, "
        "lease_until_us = " +
        now + ", update_time_us = " + now + " WHERE id = :id AND owner = :owner AND epoch = :epoch";
    statements_.fetch_add(1, std::memory_order_relaxed);
    return db_->Run([&](soci::session& s) -> Result<bool> {
        soci::statement st = (s.prepare << sql, soci::use(id), soci::use(owner), soci::use(epoch));
        st.execute(true);
        return st.get_affected_rows() == 1;
    });
}

}  // namespace sched::lock
