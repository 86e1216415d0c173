#include "impl/outbox.hpp"

#include <gtest/gtest.h>

namespace sched::client::impl {
namespace {

CallbackResult Result(std::int64_t fire_id, const std::string& url, std::string message = "") {
    CallbackResult r;
    r.fire_id = fire_id;
    r.callback_url = url;
    r.message = std::move(message);
    return r;
}

std::vector<std::int64_t> Fires(const std::vector<CallbackResult>& batch) {
    std::vector<std::int64_t> ids;
    ids.reserve(batch.size());
    for (const auto& r : batch) ids.push_back(r.fire_id);
    return ids;
}

using Ids = std::vector<std::int64_t>;

// Pushes one result per url, for fires 1, 2, ... in that order.
void PushInOrder(Outbox& box, std::initializer_list<std::string> urls) {
    std::int64_t fire_id = 0;
    for (const auto& url : urls) box.Push(Result(++fire_id, url));
}

TEST(Outbox, ABatchIsOneUrlsResultsStartingWithTheOldestUrl) {
    Outbox box(100, kCallbackBatchBytes);
    PushInOrder(box, {"http://b", "http://a", "http://b", "http://a", "http://b"});
    EXPECT_EQ(box.size(), 5u);
    const auto first = box.TakeBatch();
    EXPECT_EQ(Fires(first), (Ids{1, 3, 5}));
    EXPECT_EQ(first.front().callback_url, "http://b");
    EXPECT_EQ(box.size(), 2u);
    EXPECT_EQ(Fires(box.TakeBatch()), (Ids{2, 4}));
    EXPECT_TRUE(box.TakeBatch().empty());
    EXPECT_EQ(box.size(), 0u);
}

TEST(Outbox, AfterABatchTheUrlWithTheOldestWaitingResultGoesNext) {
    Outbox box(2, kCallbackBatchBytes);
    PushInOrder(box, {"http://a", "http://a", "http://b", "http://a"});
    EXPECT_EQ(Fires(box.TakeBatch()), (Ids{1, 2}));
    EXPECT_EQ(Fires(box.TakeBatch()), (Ids{3}));  // older than 4
    EXPECT_EQ(Fires(box.TakeBatch()), (Ids{4}));
}

TEST(Outbox, ABatchStopsAtItsByteLimitButAlwaysCarriesOneResult) {
    const std::string big(1000, 'x');
    const std::size_t one = Result(1, "u", big).WireBytes();
    Outbox box(100, one * 2);
    for (std::int64_t id = 1; id <= 5; ++id) box.Push(Result(id, "u", big));
    EXPECT_EQ(Fires(box.TakeBatch()), (Ids{1, 2}));
    Outbox tight(100, 10);  // less than any result
    tight.Push(Result(1, "u", big));
    tight.Push(Result(2, "u", big));
    EXPECT_EQ(Fires(tight.TakeBatch()), (Ids{1}));
    EXPECT_EQ(Fires(tight.TakeBatch()), (Ids{2}));
}

TEST(Outbox, ARequeuedBatchGoesFirstInItsOrder) {
    Outbox box(2, kCallbackBatchBytes);
    for (std::int64_t id = 1; id <= 3; ++id) box.Push(Result(id, "http://a"));
    auto batch = box.TakeBatch();
    ASSERT_EQ(Fires(batch), (Ids{1, 2}));
    box.Push(Result(4, "http://b"));
    box.Requeue(std::move(batch));
    EXPECT_EQ(box.size(), 4u);
    EXPECT_EQ(Fires(box.TakeBatch()), (Ids{1, 2}));
    // Requeued results of another URL also go ahead of what was waiting.
    box.Requeue({Result(9, "http://c")});
    EXPECT_EQ(Fires(box.TakeAll()), (Ids{9, 3, 4}));
    EXPECT_EQ(box.size(), 0u);
    EXPECT_TRUE(box.TakeBatch().empty());
}

TEST(Outbox, TakeAllReturnsEveryResultInTheOrderTheyArrived) {
    Outbox box(1, kCallbackBatchBytes);
    PushInOrder(box, {"http://a", "http://b", "http://a", ""});  // "" = the web endpoints
    EXPECT_EQ(Fires(box.TakeAll()), (Ids{1, 2, 3, 4}));
    EXPECT_TRUE(box.TakeAll().empty());
}

}  // namespace
}  // namespace sched::client::impl
