#pragma once

/// Browser sessions of people signed in through single sign-on (table `web_session`), shared by
/// every web process on the database: a restart signs nobody out and a load balancer needs no
/// sticky sessions.
///
/// A session is found by the SHA-256 (hex) of its cookie's value; the web module hashes, and
/// this repository never sees a cookie. Times are epoch milliseconds given by the caller (the web
/// module's clock, the one its idle and absolute limits are measured with).
///
/// Thread-safe and blocking, like every repository: call it off the I/O threads.

#include <cstdint>
#include <string>

#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/store/token.hpp"

namespace sched::store {

struct WebSession {
    std::string id_hash;  ///< SHA-256 hex of the cookie's value (64 characters)
    std::string subject;  ///< the person's `sub` (at most 255 bytes)
    std::string issuer;   ///< the provider's `iss` (at most 512 bytes)
    std::string name;     ///< what audit entries record (at most 191 bytes)
    Role role = Role::kViewer;
    std::int64_t created_ms = 0;
    std::int64_t last_seen_ms = 0;
    std::int64_t expires_ms = 0;  ///< the absolute end: created_ms + session-absolute
};

/// How many sessions may exist and when an unused one has ended.
struct WebSessionLimits {
    int per_subject = 10;      ///< sessions of one person
    int total = 10000;         ///< sessions of everyone
    std::int64_t idle_ms = 0;  ///< unused this long: ended (0: never idle)
    int purge_batch = 100;     ///< ended sessions deleted by one Create, at most
};

class WebSessionRepository {
  public:
    explicit WebSessionRepository(db::Database& db) : db_(db) {}

    /// Stores `session` in one transaction that first deletes up to limits.purge_batch ended
    /// sessions (past expires_ms, or unused for limits.idle_ms), then the subject's oldest
    /// sessions (by created_ms) until a new one fits under limits.per_subject, then everyone's
    /// least recently used until it fits under limits.total. Returns how many live sessions were
    /// ended to make room. kAlreadyExists for an id_hash that is stored already. Two sign-ins
    /// of one person at the same moment on two processes may leave one session more than the
    /// cap until the next sign-in.
    Result<int> Create(const WebSession& session, const WebSessionLimits& limits, std::int64_t now_ms);
    /// The session with this hash, ended or not (the caller judges its times); kNotFound.
    Result<WebSession> Find(const std::string& id_hash);
    /// Records a use at now_ms, only when the stored one is at least `min_interval_ms` older:
    /// true when the row was written. Several processes touching one session within the
    /// interval write it once.
    Result<bool> Touch(const std::string& id_hash, std::int64_t now_ms, std::int64_t min_interval_ms);
    /// Deletes the session; false when there was none.
    Result<bool> Delete(const std::string& id_hash);
    /// Deletes up to `limit` ended sessions (as Create does first); returns how many.
    Result<int> PurgeEnded(std::int64_t now_ms, std::int64_t idle_ms, int limit);
    /// Sessions of `subject`, ended ones included.
    Result<int> CountForSubject(const std::string& subject);

  private:
    db::Database& db_;
};

}  // namespace sched::store
