#include "sched/trigger/group_claimer.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "sched/common/on_pool.hpp"
#include "sched/trigger/claim_retry.hpp"

namespace sched::trigger {

GroupClaimer::GroupClaimer(net::any_io_executor strand, net::thread_pool& db_pool, std::string node_id)
    : strand_(std::move(strand)), db_pool_(db_pool), node_id_(std::move(node_id)) {}

net::awaitable<std::vector<std::int64_t>> GroupClaimer::Claim(std::vector<std::int64_t> ids, Attempt attempt,
                                                              std::function<bool()> stopping, OnPart on_part) {
    const auto rest = [&ids](std::size_t from) {
        return std::vector<std::int64_t>(ids.begin() + static_cast<std::ptrdiff_t>(from), ids.end());
    };
    std::size_t part_size = ids.size();
    std::size_t from = 0;  // ids before it are claimed
    while (from < ids.size()) {
        if (from > 0 && stopping()) co_return rest(from);  // the rest stays pending
        ClaimRetry retry;
        int failures = 0;
        std::vector<std::int64_t> part;
        for (;;) {
            part.assign(ids.begin() + static_cast<std::ptrdiff_t>(from),
                        ids.begin() + static_cast<std::ptrdiff_t>(from + std::min(part_size, ids.size() - from)));
            auto claim = [&attempt, &part] {
                return attempt(part);
            };
            auto got = co_await OnPool(db_pool_, claim);
            if (got.ok()) {
                from += part.size();
                auto handed = on_part(std::move(part), std::move(*got));
                co_await std::move(handed);
                break;
            }
            const ClaimRetry::Step next = retry.Next(got.status(), part.size());
            ++failures;
            // The 1st, 2nd, 4th, 8th... failure of a part: a livelock shows, a blip stays quiet.
            if ((failures & (failures - 1)) == 0) {
                spdlog::warn(
                    "slave {}: cannot claim {} of a group of {} fires (failure {}; next try: {} fires in {} ms): {}",
                    node_id_, part.size(), ids.size(), failures, next.claim,
                    std::chrono::duration_cast<std::chrono::milliseconds>(next.wait).count(), got.status().ToString());
            }
            if (stopping()) co_return rest(from);
            part_size = next.claim;
            net::steady_timer pause(strand_);
            pause.expires_after(next.wait);
            try {
                co_await pause.async_wait(net::use_awaitable);
            } catch (const boost::system::system_error&) {
            }
        }
    }
    co_return std::vector<std::int64_t>{};
}

}  // namespace sched::trigger
