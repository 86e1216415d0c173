#include "sched/lock/fenced.hpp"

#include <spdlog/spdlog.h>

namespace sched::lock {

namespace {

// MariaDB only; nullptr leaves the server's setting. The fenced transactions of a node share
// one setting, so the pool keeps the sessions that carry it for them (db::SessionSetting).
std::shared_ptr<const db::SessionSetting> IdleTimeout(const db::Database& db, const FenceOptions& options) {
    if (db.backend() != db::Backend::kMySql || options.idle_transaction_timeout.count() <= 0) return nullptr;
    return std::make_shared<const db::SessionSetting>(db::SessionSetting{
        .apply = "SET SESSION idle_transaction_timeout = " + std::to_string(options.idle_transaction_timeout.count()),
        .restore = "SET SESSION idle_transaction_timeout = DEFAULT"});
}

}  // namespace

Fence::Fence(std::shared_ptr<db::Database> db, std::string name, std::string owner, FenceOptions options)
    : db_(std::move(db)),
      name_(std::move(name)),
      owner_(std::move(owner)),
      options_(options),
      idle_timeout_(IdleTimeout(*db_, options_)),
      idle_timeout_unsupported_(std::make_shared<std::atomic<bool>>(false)),
      confirmed_epoch_(std::make_shared<std::atomic<std::int64_t>>(0)) {}

Status Fence::Check(soci::session& s, std::int64_t epoch, bool lock_row) const {
    if (lock_row && options_.certify_by_write && db_->backend() == db::Backend::kMySql) {
        // On Galera a row lock binds only the Galera node it was taken on; a write of the row
        // binds every node: certification aborts this transaction (error 1213 at COMMIT) when a
        // take-over of the row was ordered before it, and a take-over already applied here
        // makes the update match nothing. See fenced.hpp.
        soci::statement bump =
            (s.prepare << "UPDATE scheduler_lock SET fence_writes = fence_writes + 1 WHERE namespace = :name"
                          " AND owner = :owner AND epoch = :epoch AND lease_until_us > " +
                              std::string(db_->dialect().NowUs()),
             soci::use(name_), soci::use(owner_), soci::use(static_cast<long long>(epoch)));
        bump.execute(true);
        if (bump.get_affected_rows() == 1) return Status::Ok();
        Status why = Check(s, epoch, false);
        return why.ok() ? LeaseLost("'" + name_ + "' changed while its epoch " + std::to_string(epoch) + " was checked")
                        : why;
    }
    std::string owner;
    soci::indicator owner_ind = soci::i_null;
    long long row_epoch = 0;
    long long lease_until_us = 0;
    long long now_us = 0;
    // The shared lock is what makes the fence hold: a take-over UPDATE of this row must wait
    // until this transaction ends, so no other node can start leading between this check and
    // our commit. (SQLite: BEGIN IMMEDIATE already holds the file's write lock.) A locking read
    // also sees the latest committed row, never the transaction's snapshot.
    const std::string lock_clause = lock_row ? std::string(db_->dialect().ShareLock()) : std::string();
    soci::statement st = (s.prepare << "SELECT owner, epoch, lease_until_us, " + std::string(db_->dialect().NowUs()) +
                                           " FROM scheduler_lock WHERE namespace = :name" + lock_clause,
                          soci::use(name_), soci::into(owner, owner_ind), soci::into(row_epoch),
                          soci::into(lease_until_us), soci::into(now_us));
    st.execute(false);
    if (!st.fetch()) return LeaseLost("no lease row '" + name_ + "'");
    if (owner_ind != soci::i_ok || owner != owner_) {
        return LeaseLost("'" + name_ + "' is held by " + (owner_ind == soci::i_ok ? owner : std::string("nobody")) +
                         " at epoch " + std::to_string(row_epoch) + ", not by " + owner_ + " at epoch " +
                         std::to_string(epoch));
    }
    if (row_epoch != epoch) {
        return LeaseLost("'" + name_ + "' is at epoch " + std::to_string(row_epoch) + ", not " + std::to_string(epoch));
    }
    // Expired but not yet taken over: nobody else could write meanwhile, but the holder's term
    // is over by the database's judgement, and the fence follows the database, not the holder.
    if (lease_until_us <= now_us) {
        return LeaseLost("'" + name_ + "' epoch " + std::to_string(epoch) + " expired " +
                         std::to_string(now_us - lease_until_us) + " us ago");
    }
    return Status::Ok();
}

// The first check is a plain read (no lock: it only saves running fn for nothing), skipped at
// an epoch whose last final check passed; the final one locks the row, which is what holds a
// take-over off until the commit. Concurrent transactions may race on confirmed_epoch_: the
// worst outcome is one first check too many, or one fn run that the final check rolls back.
db::TxGuard Fence::Guard(std::int64_t epoch) const {
    return {.check =
                [this, epoch](soci::session& s, bool final) {
                    if (!final && confirmed_epoch_->load() == epoch) return Status::Ok();
                    Status held = Check(s, epoch, final);
                    if (held.ok()) {
                        if (final) confirmed_epoch_->store(epoch);
                    } else {
                        std::int64_t confirmed = epoch;
                        confirmed_epoch_->compare_exchange_strong(confirmed, 0);
                    }
                    return held;
                },
            .setting = idle_timeout_unsupported_->load(std::memory_order_relaxed) ? nullptr : idle_timeout_,
            .setting_refused =
                [unsupported = idle_timeout_unsupported_](const Status& refused) {
                    // MySQL 8 has no such variable: run fenced transactions without it from now on.
                    if (!unsupported->exchange(true)) {
                        spdlog::warn(
                            "fenced transactions: server refused idle_transaction_timeout ({}); a process paused "
                            "inside a fenced transaction will block lease take-over until it resumes",
                            refused.ToString());
                    }
                    return true;
                }};
}

std::optional<std::int64_t> ReadLeaseEpoch(soci::session& s, const std::string& name) {
    long long epoch = 0;
    soci::indicator ind = soci::i_null;
    s << "SELECT epoch FROM scheduler_lock WHERE namespace = :name", soci::use(name), soci::into(epoch, ind);
    if (!s.got_data() || ind != soci::i_ok) return std::nullopt;
    return static_cast<std::int64_t>(epoch);
}

std::optional<std::int64_t> ReadEpochSum(soci::session& s, const std::string& name, const std::string& pattern) {
    // The rows of one election's leases (a handful, by the namespace's unique index). Each row's
    // epoch only grows, so their sum does too, with any number of rows, present or left over.
    long long sum = 0;
    long long rows = 0;
    soci::indicator ind = soci::i_null;
    s << "SELECT SUM(epoch), COUNT(*) FROM scheduler_lock WHERE namespace = :name OR namespace LIKE :pattern",
        soci::use(name, "name"), soci::use(pattern, "pattern"), soci::into(sum, ind), soci::into(rows);
    if (!s.got_data() || rows == 0 || ind != soci::i_ok) return std::nullopt;
    return static_cast<std::int64_t>(sum);
}

}  // namespace sched::lock
