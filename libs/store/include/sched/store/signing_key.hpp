#pragma once

/// Per-app signing secrets (table `signing_key`, migration 003): nodes sign every call they make
/// to an app's executors with one (sched/protocol/request_signature.hpp), executors learn them
/// from their heartbeat answers. docs/protocol.md ("Security") describes the whole scheme.
///
/// An app holds at most two keys, ordered by `generation`:
/// - the **signing** key: the newest whose `active_from_ms` has passed (by the DB clock);
/// - during a rotation, the **next** key (`active_from_ms` in the future): executors already
///   accept it, nodes sign with it once its time comes, after a grace long enough for every
///   live executor to have heartbeated (and so learnt it);
/// - after a rotation, the **previous** key, still accepted by executors until the next
///   rotation removes it, so that an executor that missed heartbeats keeps working.
/// Secrets are 256-bit values from the CSPRNG (64 hex characters), stored as they are (a node
/// needs the secret itself to compute an HMAC).

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sched/common/duration.hpp"
#include "sched/common/status.hpp"
#include "sched/db/database.hpp"

namespace sched::store {

struct SigningKey {
    std::string app;
    std::int64_t generation = 0;
    std::string key_id;  ///< public: travels with every signed call
    std::string secret;
    std::int64_t active_from_ms = 0;  ///< DB clock: nodes sign with it from then on
    std::int64_t created_at_ms = 0;
};

/// An app's keys as read at one moment.
struct AppSigningKeys {
    std::vector<SigningKey> keys;  ///< newest generation first; at most two
    std::int64_t db_now_ms = 0;    ///< the DB clock when they were read

    /// The key nodes sign with at `now_ms` (DB clock): the newest already active. nullptr when
    /// the app has none (yet).
    const SigningKey* SigningAt(std::int64_t now_ms) const;
};

/// The keys of `app` (none for an unknown app) and the DB clock, inside the caller's
/// transaction: one statement when the app has keys, two when it has none.
AppSigningKeys ReadAppKeys(soci::session& s, const db::Dialect& dialect, const std::string& app);

class SigningKeyRepository {
  public:
    explicit SigningKeyRepository(db::Database& db) : db_(db) {}

    /// The app's keys, creating its first (active at once) when it has none. Concurrent
    /// callers create one key between them (insert-if-absent on (app, generation 1)).
    Result<AppSigningKeys> EnsureForApp(const std::string& app);
    /// The app's keys as they are (none for an unknown app).
    Result<AppSigningKeys> List(const std::string& app);
    /// Starts a rotation: keeps only the current signing key, adds a new one that nodes sign
    /// with from `DB now + grace_ms`. Errors: kNotFound (the app has no key: no executor of it
    /// ever registered), kFailedPrecondition (the previous rotation's key is not active yet, or
    /// it has signed for less than `settle_ms`, so a node whose key cache is older than that
    /// could still sign with the key this rotation would remove; the message says how long to
    /// wait), kAborted (a concurrent rotation won).
    Result<AppSigningKeys> Rotate(const std::string& app, std::int64_t grace_ms,
                                  std::int64_t settle_ms = kRotationSettleMs);

    /// Default `settle_ms`: twice the nodes' key cache age (SigningKeyCache, 5 s).
    static constexpr std::int64_t kRotationSettleMs = 10'000;

  private:
    db::Database& db_;
};

/// Each app's keys, read through to the database at most once per `max_age` per app, and an
/// estimate of the DB clock (offset measured at each read), for the nodes: they sign every
/// call, and must not read the table per call. Thread-safe.
class SigningKeyCache {
  public:
    explicit SigningKeyCache(Micros max_age = std::chrono::seconds(5)) : max_age_(max_age) {}

    /// The cached keys of `app` when read less than max_age ago, else nullopt (no DB work:
    /// callable on an I/O thread).
    std::optional<AppSigningKeys> Fresh(const std::string& app) const;
    /// Fresh(app), or reads them (EnsureForApp) from `db`: blocking, call it on a DB thread.
    /// On a read error the stale entry is returned if there is one (keys change rarely), else
    /// the error.
    Result<AppSigningKeys> Get(db::Database& db, const std::string& app);
    /// Local wall clock plus the offset to the DB clock measured at the last read (the local
    /// clock alone before any read).
    std::int64_t DbNowMs() const;

  private:
    struct Entry {
        AppSigningKeys keys;
        std::chrono::steady_clock::time_point read_at;
    };
    const Micros max_age_;
    mutable std::mutex mu_;
    std::map<std::string, Entry> entries_;
    std::int64_t offset_ms_ = 0;
};

}  // namespace sched::store
