#include "sched/lock/redis_lock_store.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "impl/redis_connection.hpp"
#include "sched/common/host_port.hpp"

namespace sched::lock {

namespace impl {

namespace {

using Steady = std::chrono::steady_clock;

// The value of a held key is "<epoch> <owner>": the owner is unique per acquisition, the epoch
// makes the value unique per acquisition even for callers that reuse owner strings.
//
// KEYS[1] held key, KEYS[2] epoch counter; ARGV[1] owner, ARGV[2] lease ms, ARGV[3] "1" = fenced.
// Returns {1, epoch} when acquired (or already ours: a retry whose first reply was lost), else
// {0, epoch, pttl ms, owner, time s, time us} describing the holder on the server's clock.
constexpr RedisScript kAcquire{"acquire", R"lua(
local v = redis.call('GET', KEYS[1])
if v then
  local sep = string.find(v, ' ', 1, true)
  local epoch = tonumber(string.sub(v, 1, sep - 1))
  local owner = string.sub(v, sep + 1)
  if owner == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {1, epoch}
  end
  local t = redis.call('TIME')
  return {0, epoch, redis.call('PTTL', KEYS[1]), owner, t[1], t[2]}
end
local e = 0
if ARGV[3] == '1' then e = redis.call('INCR', KEYS[2]) end
redis.call('SET', KEYS[1], e .. ' ' .. ARGV[1], 'PX', ARGV[2])
return {1, e}
)lua"};

// KEYS[1] held key; ARGV[1] "<epoch> <owner>", ARGV[2] lease ms. 1 = extended.
constexpr RedisScript kRenew{"renew", R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
)lua"};

// KEYS[1] held key, KEYS[2] epoch counter; ARGV[1] "<epoch> <owner>", ARGV[2] "1" = fenced.
// 1 = deleted. A fenced release moves the counter on, as the SQL release moves the row's epoch
// (docs/locks.md: + 1 on each release), so the lock's epoch after a release is never the
// released holder's.
constexpr RedisScript kRelease{"release", R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] == '1' then redis.call('INCR', KEYS[2]) end
  return 1
end
return 0
)lua"};

// KEYS[1] held key, KEYS[2] epoch counter. {value or false, pttl ms, counter or false, time s, time us}.
constexpr RedisScript kInspect{"inspect", R"lua(
local t = redis.call('TIME')
return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2]), t[1], t[2]}
)lua"};

std::string Value(std::int64_t epoch, std::string_view owner) {
    return std::to_string(epoch) + " " + std::string(owner);
}

std::string LeaseMs(Micros lease) {
    // PX is in milliseconds: round up, so the server's lease is never shorter than asked for.
    return std::to_string(std::max<long long>(1, (lease.count() + 999) / 1000));
}

Status CheckName(std::string_view name) {
    if (name.empty() || name.size() > kMaxLockNameLength) {
        return InvalidArgument("lock name must have 1.." + std::to_string(kMaxLockNameLength) + " characters, got " +
                               std::to_string(name.size()));
    }
    return Status::Ok();
}

bool Transient(const Status& s) {
    return s.code() == Code::kUnavailable || s.code() == Code::kDeadlineExceeded;
}

// Keeps the error to report when too few servers answered: one that retrying cannot fix (wrong
// password, a script error) wins over "down", so the caller does not retry it forever.
void Remember(std::optional<Status>& kept, const Status& s) {
    if (!kept || (Transient(*kept) && !Transient(s))) kept = s;
}

// The error for "fewer than a quorum answered".
Status NoQuorum(std::string_view name, std::size_t answered, std::size_t servers, std::size_t quorum,
                const std::optional<Status>& error) {
    if (servers == 1 && error) return {error->code(), "lock '" + std::string(name) + "': " + error->message()};
    const std::string m = "lock '" + std::string(name) + "': only " + std::to_string(answered) + " of " +
                          std::to_string(servers) + " redis servers answered (need " + std::to_string(quorum) +
                          "): " + (error ? error->message() : "");
    if (error && !Transient(*error)) return {error->code(), m};
    return Unavailable(m);
}

long long ToLong(const RedisReply& r) {
    if (r.type == RedisReply::Type::kInteger) return r.integer;
    if (r.type == RedisReply::Type::kString) return std::stoll(r.str);
    return 0;
}

}  // namespace

/// The Redlock steps over N servers; with N = 1 (RedisLockStore) a quorum of one, no drift.
class RedisQuorum {
  public:
    RedisQuorum(const std::vector<RedisServerAddress>& servers, const RedisOptions& options, bool fenced)
        : prefix_(options.key_prefix), fenced_(fenced), drift_(servers.size() > 1) {
        for (const auto& s : servers) conns_.push_back(std::make_unique<RedisConnection>(s, options));
    }

    std::size_t size() const { return conns_.size(); }
    std::size_t quorum() const { return conns_.size() / 2 + 1; }

    Micros DriftAllowance(Micros lease) const {
        if (!drift_) return Micros(0);
        return Micros(static_cast<Micros::rep>(static_cast<double>(lease.count()) * RedlockStore::kDriftFactor)) +
               RedlockStore::kDriftConstant;
    }

    std::uint64_t commands() const {
        std::uint64_t n = 0;
        for (const auto& c : conns_) n += c->commands();
        return n;
    }

    Result<std::optional<Holding>> Acquire(std::string_view name, std::string_view owner, Micros lease,
                                           std::optional<LockRow>* seen) {
        if (Status s = CheckName(name); !s.ok()) return s;
        if (lease.count() <= 0) return InvalidArgument("lease must be positive");
        if (owner.empty()) return InvalidArgument("lock owner must not be empty");
        if (seen != nullptr) seen->reset();
        const std::vector<std::string> keys{HeldKey(name), EpochKey(name)};
        const std::vector<std::string> args{std::string(owner), LeaseMs(lease), fenced_ ? "1" : "0"};
        const auto start = Steady::now();
        std::size_t acquired = 0;
        std::size_t answered = 0;
        std::int64_t epoch = 0;
        std::optional<Status> last_error;
        // Servers that may hold our key afterwards: those that accepted, and those that did not
        // answer (the SET may have run before the reply was lost). Not those that said "held".
        std::vector<bool> may_hold(conns_.size(), false);
        for (std::size_t i = 0; i < conns_.size(); ++i) {
            auto r = conns_[i]->Eval(kAcquire, keys, args);
            if (!r.ok()) {
                may_hold[i] = true;
                Remember(last_error, r.status());
                continue;
            }
            if (r->type != RedisReply::Type::kArray || r->elements.size() < 2) {
                may_hold[i] = true;
                Remember(last_error,
                         Internal("redis " + conns_[i]->address().ToString() + ": unexpected acquire reply"));
                continue;
            }
            ++answered;
            if (ToLong(r->elements[0]) == 1) {
                ++acquired;
                may_hold[i] = true;
                epoch = ToLong(r->elements[1]);
            } else if (seen != nullptr && r->elements.size() >= 6) {
                LockRow row;
                row.name = std::string(name);
                row.epoch = ToLong(r->elements[1]);
                const long long pttl_ms = ToLong(r->elements[2]);
                row.owner = r->elements[3].str;
                row.db_now_us = ToLong(r->elements[4]) * 1000000 + ToLong(r->elements[5]);
                // PTTL -1 (no expiry: not one of ours) is shown as a lease far in the future.
                row.lease_until_us = row.db_now_us + (pttl_ms >= 0 ? pttl_ms * 1000 : 3600LL * 1000000);
                row.update_time_us = row.db_now_us;
                // Keep the soonest-ending holding: a waiter need not sleep longer than that.
                if (!seen->has_value() ||
                    row.lease_until_us - row.db_now_us < (*seen)->lease_until_us - (*seen)->db_now_us) {
                    *seen = std::move(row);
                }
            }
        }
        const auto elapsed = std::chrono::duration_cast<Micros>(Steady::now() - start);
        const Micros validity = lease - elapsed - DriftAllowance(lease);
        if (acquired >= quorum() && validity.count() > 0) {
            return std::optional<Holding>(Holding{0, fenced_ ? epoch : 0});
        }
        // Not acquired: give back whatever part of it we may hold, so that it does not block the
        // others until the lease ends.
        const std::vector<std::string> release_keys{HeldKey(name), EpochKey(name)};
        const std::vector<std::string> release_args{Value(fenced_ ? epoch : 0, owner), fenced_ ? "1" : "0"};
        for (std::size_t i = 0; i < conns_.size(); ++i) {
            if (!may_hold[i]) continue;
            if (fenced_ && epoch == 0) {
                // Single server that did not answer: we do not know the epoch it gave us, so the
                // key (if set) expires on its own; a retry with this owner finds it again.
                continue;
            }
            auto r = conns_[i]->Eval(kRelease, release_keys, release_args);
            if (!r.ok()) spdlog::debug("lock '{}': release after failed acquire: {}", name, r.status().ToString());
        }
        if (answered < quorum()) return NoQuorum(name, answered, conns_.size(), quorum(), last_error);
        if (acquired >= quorum()) {
            return DeadlineExceeded("lock '" + std::string(name) + "': acquiring took " + FormatDuration(elapsed) +
                                    ", longer than the lease's validity (" + FormatDuration(lease) +
                                    " minus clock drift)");
        }
        return std::optional<Holding>();
    }

    Result<bool> Renew(std::string_view name, const Holding& holding, std::string_view owner, Micros lease) {
        if (lease.count() <= 0) return InvalidArgument("lease must be positive");
        const std::vector<std::string> keys{HeldKey(name)};
        const std::vector<std::string> args{Value(holding.epoch, owner), LeaseMs(lease)};
        const Tally renewed = EvalOnEvery(kRenew, keys, args);
        if (renewed.done >= quorum()) return true;
        if (renewed.answered < quorum() ||
            (renewed.last_error && renewed.done + (conns_.size() - renewed.answered) >= quorum())) {
            // Too few answers to say it is gone: the caller retries while the lease lasts.
            return NoQuorum(name, renewed.answered, conns_.size(), quorum(), renewed.last_error);
        }
        return false;
    }

    Result<bool> Release(std::string_view name, const Holding& holding, std::string_view owner) {
        const std::vector<std::string> keys{HeldKey(name), EpochKey(name)};
        const std::vector<std::string> args{Value(holding.epoch, owner), fenced_ ? "1" : "0"};
        const Tally deleted = EvalOnEvery(kRelease, keys, args);
        if (deleted.done > 0) {
            // Ours on at least one server, now gone there; a server that did not answer lets it
            // expire.
            if (deleted.last_error) {
                spdlog::warn("lock '{}': released, but not everywhere: {}", name, deleted.last_error->message());
            }
            return true;
        }
        if (deleted.answered < quorum()) {
            return NoQuorum(name, deleted.answered, conns_.size(), quorum(), deleted.last_error);
        }
        return false;
    }

    Result<std::optional<LockRow>> Inspect(std::string_view name) {
        if (Status s = CheckName(name); !s.ok()) return s;
        const std::vector<std::string> keys{HeldKey(name), EpochKey(name)};
        const std::vector<std::string> args;
        auto r = conns_.front()->Eval(kInspect, keys, args);
        if (!r.ok()) return r.status();
        if (r->type != RedisReply::Type::kArray || r->elements.size() < 5) {
            return Internal("redis " + conns_.front()->address().ToString() + ": unexpected inspect reply");
        }
        const auto& e = r->elements;
        const bool held = e[0].type == RedisReply::Type::kString;
        const bool counted = e[2].type == RedisReply::Type::kString || e[2].type == RedisReply::Type::kInteger;
        if (!held && !counted) return std::optional<LockRow>();
        LockRow row;
        row.name = std::string(name);
        row.db_now_us = ToLong(e[3]) * 1000000 + ToLong(e[4]);
        row.update_time_us = row.db_now_us;
        // held_since_us stays 0 (unknown): the key records no time its holder took it.
        if (held) {
            const std::string& v = e[0].str;
            const auto sep = v.find(' ');
            row.epoch = sep == std::string::npos ? 0 : std::stoll(v.substr(0, sep));
            row.owner = sep == std::string::npos ? v : v.substr(sep + 1);
            const long long pttl_ms = ToLong(e[1]);
            row.lease_until_us = row.db_now_us + (pttl_ms >= 0 ? pttl_ms * 1000 : 3600LL * 1000000);
        } else {
            // Released (the counter moved on) or expired (the counter still has its epoch, as
            // an expired SQL row does until it is taken over).
            row.epoch = ToLong(e[2]);
        }
        return std::optional<LockRow>(std::move(row));
    }

  private:
    // How the servers answered a script that returns 1 where it did its work.
    struct Tally {
        std::size_t done = 0;      // servers that answered 1
        std::size_t answered = 0;  // servers that answered at all
        std::optional<Status> last_error;
    };

    // Runs `script` on every server, one after the other.
    Tally EvalOnEvery(const RedisScript& script, const std::vector<std::string>& keys,
                      const std::vector<std::string>& args) {
        Tally tally;
        for (const auto& c : conns_) {
            auto r = c->Eval(script, keys, args);
            if (!r.ok()) {
                Remember(tally.last_error, r.status());
                continue;
            }
            ++tally.answered;
            if (ToLong(*r) == 1) ++tally.done;
        }
        return tally;
    }

    std::string HeldKey(std::string_view name) const { return prefix_ + "held:" + std::string(name); }
    std::string EpochKey(std::string_view name) const { return prefix_ + "epoch:" + std::string(name); }

    std::string prefix_;
    bool fenced_;
    bool drift_;
    std::vector<std::unique_ptr<RedisConnection>> conns_;
};

}  // namespace impl

Result<RedisServerAddress> RedisServerAddress::Parse(std::string_view text) {
    const auto bad = [&](std::string_view why) {
        return InvalidArgument("redis server \"" + std::string(text) + "\": " + std::string(why));
    };
    auto address = Authority::Parse(text);
    if (!address.ok()) return bad(address.status().message());
    if (!address->port) return bad("no port (expected host:port)");
    if (*address->port == 0) return bad("port out of range 1..65535");
    return RedisServerAddress{address->host, *address->port};
}

Result<std::vector<RedisServerAddress>> RedisServerAddress::ParseList(std::string_view text) {
    std::vector<RedisServerAddress> out;
    for (std::size_t start = 0; start <= text.size();) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        auto address = Parse(text.substr(start, comma - start));
        if (!address.ok()) return address.status();
        out.push_back(*address);
        start = comma + 1;
    }
    return out;
}

std::string RedisServerAddress::ToString() const {
    return HostPort{host, static_cast<std::uint16_t>(port)}.ToString();
}

RedisQuorumStore::RedisQuorumStore(std::unique_ptr<impl::RedisQuorum> quorum) : quorum_(std::move(quorum)) {}

RedisQuorumStore::~RedisQuorumStore() = default;

Result<std::optional<Holding>> RedisQuorumStore::AcquireLock(std::string_view name, std::string_view owner,
                                                             Micros lease, std::optional<LockRow>* seen) {
    return quorum_->Acquire(name, owner, lease, seen);
}

Result<bool> RedisQuorumStore::RenewLock(std::string_view name, const Holding& holding, std::string_view owner,
                                         Micros lease) {
    return quorum_->Renew(name, holding, owner, lease);
}

Result<bool> RedisQuorumStore::ReleaseLock(std::string_view name, const Holding& holding, std::string_view owner) {
    return quorum_->Release(name, holding, owner);
}

std::uint64_t RedisQuorumStore::commands() const {
    return quorum_->commands();
}

RedisLockStore::RedisLockStore(RedisServerAddress server, const RedisOptions& options)
    : RedisQuorumStore(
          std::make_unique<impl::RedisQuorum>(std::vector<RedisServerAddress>{std::move(server)}, options, true)) {}

Result<std::optional<LockRow>> RedisLockStore::InspectLock(std::string_view name) {
    return quorum_->Inspect(name);
}

namespace {

std::vector<RedisServerAddress> CheckRedlockServers(std::vector<RedisServerAddress> servers) {
    if (servers.size() < 3) {
        throw std::invalid_argument("RedlockStore: needs at least 3 independent redis servers, got " +
                                    std::to_string(servers.size()));
    }
    std::set<std::string> seen;
    for (const auto& s : servers) {
        if (!seen.insert(s.ToString()).second) {
            throw std::invalid_argument("RedlockStore: redis server " + s.ToString() + " listed twice");
        }
    }
    return servers;
}

}  // namespace

RedlockStore::RedlockStore(std::vector<RedisServerAddress> servers, const RedisOptions& options)
    : RedisQuorumStore(std::make_unique<impl::RedisQuorum>(CheckRedlockServers(std::move(servers)), options, false)) {}

Micros RedlockStore::DriftAllowance(Micros lease) const {
    return quorum_->DriftAllowance(lease);
}

std::size_t RedlockStore::servers() const {
    return quorum_->size();
}

std::size_t RedlockStore::quorum() const {
    return quorum_->quorum();
}

Result<std::optional<LockRow>> RedlockStore::InspectLock(std::string_view name) {
    return Status(Code::kUnimplemented,
                  "lock '" + std::string(name) + "': Redlock has no single authoritative view of a lock to inspect");
}

}  // namespace sched::lock
