#include "sched/lock/row_lock.hpp"

#include <algorithm>
#include <string>

#include "sched/lock/lock_store.hpp"

namespace sched::lock {

namespace {

constexpr std::string_view kNotAcquired = "row lock not acquired";
constexpr std::string_view kRowPrefix = "row:";

long long WholeSecondsAtLeastOne(Micros d) {
    const auto s = std::chrono::duration_cast<std::chrono::seconds>(d + std::chrono::microseconds(999'999)).count();
    return std::max<long long>(1, s);
}

}  // namespace

bool IsNotAcquired(const Status& status) {
    return status.code() == Code::kDeadlineExceeded && status.message().rfind(kNotAcquired, 0) == 0;
}

namespace impl {

RowLockTransaction::RowLockTransaction(db::Database& db, std::string_view key, Micros wait)
    : db_(db), name_(std::string(kRowPrefix) + std::string(key)), wait_(wait) {
    if (key.empty() || name_.size() > kMaxLockNameLength) name_.clear();
}

RowLockTransaction::~RowLockTransaction() {
    if (open_) Rollback();
}

void RowLockTransaction::SetWait(soci::session& s, Micros wait) {
    if (db_.backend() == db::Backend::kMySql) {
        s << "SET SESSION innodb_lock_wait_timeout = " + std::to_string(WholeSecondsAtLeastOne(wait));
    } else {
        s << "PRAGMA busy_timeout = " +
                 std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(wait).count());
    }
}

Status RowLockTransaction::Acquire() {
    if (name_.empty()) {
        return InvalidArgument("row lock key must have 1.." + std::to_string(kMaxLockNameLength - kRowPrefix.size()) +
                               " characters");
    }
    auto session = db_.Acquire();
    if (!session.ok()) return session.status();
    session_.emplace(std::move(*session));
    soci::session& s = **session_;
    try {
        SetWait(s, wait_);
        Status locked = Lock(s);
        // The session goes back to the pool afterwards: leave the URL's own wait in place.
        SetWait(s, db_.backend() == db::Backend::kMySql ? db_.url().lock_wait_timeout : db_.url().busy_timeout);
        return locked;
    } catch (const soci::soci_error& e) {
        bool lost = false;
        Status status = db::ClassifyError(e, &lost);
        if (lost) {
            session_->MarkBroken();
            open_ = false;
            return status;
        }
        Rollback();
        try {
            SetWait(s, db_.backend() == db::Backend::kMySql ? db_.url().lock_wait_timeout : db_.url().busy_timeout);
        } catch (...) {
            session_->MarkBroken();
        }
        // MySQL: the locking SELECT timed out (innodb_lock_wait_timeout); SQLite: BEGIN
        // IMMEDIATE stayed busy for the whole busy timeout. Both mean another holder.
        const bool waited_out = db_.backend() == db::Backend::kMySql ? status.code() == Code::kDeadlineExceeded
                                                                     : status.code() == Code::kUnavailable;
        if (waited_out) {
            return DeadlineExceeded(std::string(kNotAcquired) + ": '" + name_ + "' held by another transaction for " +
                                    FormatDuration(wait_) + " (" + status.message() + ")");
        }
        return status;
    }
}

Status RowLockTransaction::Lock(soci::session& s) {
    // Creates the lock's row if it is missing; a row another node created meanwhile makes it a no-op.
    const auto create_row = [this](soci::session& session) {
        soci::statement insert =
            (session.prepare << db_.dialect().InsertIfAbsent(
                 "scheduler_lock (namespace, create_time_us, update_time_us) VALUES (:name, " +
                 std::string(db_.dialect().NowUs()) + ", " + std::string(db_.dialect().NowUs()) + ")"),
             soci::use(name_));
        (void)db::ExecuteInsertIfAbsent(insert);
    };
    // Two passes at most: the row is created on first use. A locking read of a missing row locks
    // nothing under READ COMMITTED, so the row must exist before anyone relies on its lock.
    for (int pass = 0; pass < 2; ++pass) {
        db_.Begin(s, db::TxMode::kWrite);
        open_ = true;
        long long id = 0;
        soci::statement st = (s.prepare << "SELECT id FROM scheduler_lock WHERE namespace = :name" +
                                               std::string(db_.dialect().ForUpdate()),
                              soci::use(name_), soci::into(id));
        st.execute(false);
        if (st.fetch()) return Status::Ok();
        if (db_.backend() == db::Backend::kSqlite) {
            // SQLite: we hold the file's write lock already; creating the row inside this
            // transaction is as exclusive as locking it.
            create_row(s);
            return Status::Ok();
        }
        db::Database::Rollback(s);
        open_ = false;
        // Autocommit insert-if-absent: a concurrent creator makes this a no-op, never an error.
        create_row(s);
    }
    return Internal("row lock '" + name_ + "': the row vanished after it was created");
}

Status RowLockTransaction::Commit() {
    try {
        db::Database::Commit(**session_);
        open_ = false;
        return Status::Ok();
    } catch (const soci::soci_error& e) {
        return Fail(e);
    }
}

void RowLockTransaction::Rollback() {
    if (!open_) return;
    open_ = false;
    try {
        db::Database::Rollback(**session_);
    } catch (...) {
        session_->MarkBroken();  // unknown transaction state: never lend this database session again
    }
}

Status RowLockTransaction::Fail(const soci::soci_error& e) {
    bool lost = false;
    Status status = db::ClassifyError(e, &lost);
    if (lost) {
        session_->MarkBroken();
        open_ = false;
    } else {
        Rollback();
    }
    return status;
}

}  // namespace impl

}  // namespace sched::lock
