// A slave's claim of one group: retried per ClaimRetry, in parts after conflicts, each part
// handed on before the next is claimed; what is left when the slave stops.
#include "sched/trigger/group_claimer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <numeric>

#include "sched/common/testing/io_thread.hpp"

namespace sched::trigger {
namespace {

using Ids = std::vector<std::int64_t>;

Ids Range(std::int64_t from, std::int64_t to) {
    Ids ids(static_cast<std::size_t>(to - from));
    std::iota(ids.begin(), ids.end(), from);
    return ids;
}

class GroupClaimerTest : public ::testing::Test {
  protected:
    ~GroupClaimerTest() override { loop_.Join(); }

    // Claims `ids`; the attempt fails as `fail(attempt number, ids)` says (Ok: claimed). Every
    // attempt and every handed part is logged in `events_` in the order they happened.
    Ids Claim(
        Ids ids, std::function<Status(int, const Ids&)> fail, std::function<bool()> stopping = [] { return false; }) {
        GroupClaimer claimer(strand_, pool_, "n1");
        GroupClaimer::Attempt attempt = [this, fail](const Ids& part) -> Result<ClaimedGroup> {
            std::lock_guard lock(mu_);
            events_.push_back({"attempt", part});
            if (Status why = fail(++attempts_, part); !why.ok()) return why;
            ClaimedGroup claimed;
            for (auto id : part) claimed.fires.push_back(model::Fire{.id = id});
            return claimed;
        };
        GroupClaimer::OnPart on_part = [this](Ids part, ClaimedGroup claimed) -> net::awaitable<void> {
            std::lock_guard lock(mu_);
            EXPECT_EQ(claimed.fires.size(), part.size());
            events_.push_back({"part", std::move(part)});
            co_return;
        };
        return net::co_spawn(strand_, claimer.Claim(std::move(ids), attempt, std::move(stopping), on_part),
                             net::use_future)
            .get();
    }
    std::vector<Ids> Parts() const {
        std::vector<Ids> parts;
        for (const auto& [what, ids] : events_)
            if (what == "part") parts.push_back(ids);
        return parts;
    }

    sched::testing::IoThread loop_;
    net::io_context& io_ = loop_.io;
    net::thread_pool& pool_ = loop_.pool;
    net::strand<net::io_context::executor_type> strand_{net::make_strand(io_)};
    std::mutex mu_;
    int attempts_ = 0;
    std::vector<std::pair<std::string, Ids>> events_;
};

const Status kConflict = Aborted("Deadlock found when trying to get lock");
const Status kOutage = Unavailable("database connection lost");

TEST_F(GroupClaimerTest, AGroupClaimedAtTheFirstAttemptIsHandedOnWhole) {
    EXPECT_TRUE(Claim(Range(1, 11), [](int, const Ids&) { return Status::Ok(); }).empty());
    EXPECT_EQ(attempts_, 1);
    EXPECT_EQ(Parts(), std::vector<Ids>{Range(1, 11)});
}

TEST_F(GroupClaimerTest, AGroupThatKeepsLosingConflictsIsClaimedInPartsEarliestFirstEachHandedOnBeforeTheNext) {
    // Any claim of more than 3 fires conflicts: 12 -> 12 -> 6 -> 6 -> 3, then the rest.
    const auto left =
        Claim(Range(1, 13), [](int, const Ids& part) { return part.size() > 3 ? kConflict : Status::Ok(); });
    EXPECT_TRUE(left.empty());
    EXPECT_EQ(Parts(), (std::vector<Ids>{Range(1, 4), Range(4, 7), Range(7, 10), Range(10, 13)}));
    // Each part is handed on before the next attempt, and each attempt starts where the last
    // claimed part ended.
    std::int64_t next_first = 1;
    for (std::size_t i = 0; i < events_.size(); ++i) {
        EXPECT_EQ(events_[i].second.front(), next_first) << "event " << i;
        if (events_[i].first == "part") {
            ASSERT_GT(i, 0u);
            EXPECT_EQ(events_[i - 1].first, "attempt") << "a part is handed on right after its claim";
            EXPECT_EQ(events_[i - 1].second, events_[i].second);
            next_first = events_[i].second.back() + 1;
        }
    }
}

TEST_F(GroupClaimerTest, AnOutageIsRetriedWithTheWholeGroup) {
    const auto left = Claim(Range(1, 9), [](int attempt, const Ids&) { return attempt <= 4 ? kOutage : Status::Ok(); });
    EXPECT_TRUE(left.empty());
    ASSERT_EQ(attempts_, 5);
    for (const auto& [what, ids] : events_) EXPECT_EQ(ids, Range(1, 9)) << what;
    EXPECT_EQ(Parts(), std::vector<Ids>{Range(1, 9)});
}

TEST_F(GroupClaimerTest, StoppingAfterAFailureReturnsTheWholeUnclaimedRest) {
    const auto left = Claim(
        Range(1, 6), [](int, const Ids&) { return kOutage; }, [] { return true; });
    EXPECT_EQ(left, Range(1, 6));
    EXPECT_EQ(attempts_, 1) << "no retry once stopping";
    EXPECT_TRUE(Parts().empty());
}

TEST_F(GroupClaimerTest, StoppingBetweenPartsHandsOnTheClaimedPartsAndReturnsTheRest) {
    std::atomic<bool> stop{false};
    // Parts of one fire (claims of more conflict); the slave stops once the first part is handed on.
    const auto left = Claim(
        Range(1, 5),
        [&stop](int, const Ids& part) {
            if (part.size() > 1) return kConflict;
            stop = true;
            return Status::Ok();
        },
        [&stop] { return stop.load(); });
    EXPECT_EQ(Parts(), std::vector<Ids>{Range(1, 2)});
    EXPECT_EQ(left, Range(2, 5));
}

}  // namespace
}  // namespace sched::trigger
