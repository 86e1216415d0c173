#include "impl/spool.hpp"

#include <algorithm>
#include <fstream>

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "impl/fire_log.hpp"
#include "sched/common/node_id.hpp"

namespace sched::client::impl {
namespace {

class SpoolTest : public ::testing::Test {
  protected:
    void SetUp() override { dir_ = std::filesystem::temp_directory_path() / ("sched-spool-test-" + RandomHex(8)); }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    static CallbackResult Result(std::int64_t fire_id, std::string url = "") {
        CallbackResult r;
        r.fire_id = fire_id;
        r.attempt = 1;
        r.epoch = 2;
        r.outcome = protocol::RunOutcome::kSucceeded;
        r.code = "ok";
        r.message = "fire " + std::to_string(fire_id);
        r.started_ms = 1000 + fire_id;
        r.finished_ms = 2000 + fire_id;
        r.callback_url = std::move(url);
        return r;
    }
    static std::vector<std::int64_t> Fires(const std::vector<CallbackResult>& rs) {
        std::vector<std::int64_t> out;
        out.reserve(rs.size());
        for (const auto& r : rs) out.push_back(r.fire_id);
        return out;
    }

    std::filesystem::path dir_;
};

TEST_F(SpoolTest, KeepsUndeliveredResultsAcrossReopening) {
    {
        ResultSpool spool(dir_);
        ASSERT_TRUE(spool.Append({Result(1), Result(2), Result(3)}).ok());
        ASSERT_TRUE(spool.Append({Result(4)}).ok());
        EXPECT_EQ(Fires(spool.Peek(2)), (std::vector<std::int64_t>{1, 2}));
        ASSERT_TRUE(spool.Ack(2).ok());
    }
    ResultSpool reopened(dir_);
    EXPECT_EQ(reopened.pending(), 2u);
    const auto rest = reopened.Peek(10);
    EXPECT_EQ(Fires(rest), (std::vector<std::int64_t>{3, 4}));
    EXPECT_EQ(rest[0].message, "fire 3");
    EXPECT_EQ(rest[0].started_ms, 1003);
    ASSERT_TRUE(reopened.Append({Result(5)}).ok());
    EXPECT_EQ(Fires(reopened.Peek(10)), (std::vector<std::int64_t>{3, 4, 5}));
}

TEST_F(SpoolTest, DeliveringEverythingRemovesTheFiles) {
    ResultSpool spool(dir_);
    ASSERT_TRUE(spool.Append({Result(1)}).ok());
    EXPECT_TRUE(std::filesystem::exists(dir_ / "results.jsonl"));
    ASSERT_TRUE(spool.Ack(1).ok());
    EXPECT_FALSE(std::filesystem::exists(dir_ / "results.jsonl"));
    EXPECT_FALSE(std::filesystem::exists(dir_ / "results.acked"));
    ASSERT_TRUE(spool.Append({Result(2)}).ok());
    EXPECT_EQ(Fires(spool.Peek(10)), std::vector<std::int64_t>{2});
}

TEST_F(SpoolTest, ANewSpoolDirectoryAndItsFilesArePrivate) {
    const mode_t old_umask = ::umask(022);  // the usual default, which would give 0755 / 0644
    {
        ResultSpool spool(dir_);
        ASSERT_TRUE(spool.Append({Result(1), Result(2)}).ok());
        ASSERT_TRUE(spool.Ack(1).ok());
        const auto mode = [](const std::filesystem::path& p) {
            struct stat st {};
            return ::stat(p.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 0777) : -1;
        };
        EXPECT_EQ(mode(dir_), 0700);
        for (const char* name : {"lock", "results.jsonl", "results.acked"}) {
            ASSERT_TRUE(std::filesystem::exists(dir_ / name)) << name;
            EXPECT_EQ(mode(dir_ / name), 0600) << name;
        }
    }
    ::umask(old_umask);
}

TEST_F(SpoolTest, ASecondSpoolOnTheSameDirectoryIsRefused) {
    ResultSpool first(dir_);
    EXPECT_THROW(ResultSpool second(dir_), std::runtime_error);
}

TEST_F(SpoolTest, TornLastLineFromACrashIsDropped) {
    {
        ResultSpool spool(dir_);
        ASSERT_TRUE(spool.Append({Result(1)}).ok());
    }
    {
        std::ofstream out(dir_ / "results.jsonl", std::ios::app);
        out << R"({"fire_id": 2, "attem)";
    }
    {
        ResultSpool spool(dir_);
        EXPECT_EQ(Fires(spool.Peek(10)), std::vector<std::int64_t>{1});
        ASSERT_TRUE(spool.Append({Result(3)}).ok());
    }
    ResultSpool again(dir_);
    EXPECT_EQ(Fires(again.Peek(10)), (std::vector<std::int64_t>{1, 3}));
}

TEST_F(SpoolTest, PeekStopsWhereTheCallbackUrlChanges) {
    ResultSpool spool(dir_);
    ASSERT_TRUE(spool.Append({Result(1), Result(2, "http://a/cb"), Result(3, "http://a/cb"), Result(4)}).ok());
    EXPECT_EQ(Fires(spool.Peek(10)), std::vector<std::int64_t>{1});
    ASSERT_TRUE(spool.Ack(1).ok());
    const auto batch = spool.Peek(10);
    EXPECT_EQ(Fires(batch), (std::vector<std::int64_t>{2, 3}));
    EXPECT_EQ(batch[0].callback_url, "http://a/cb");
}

TEST(CallbackResult, ProtocolJsonHasExactlyTheDesignFields) {
    CallbackResult r;
    r.fire_id = 7;
    r.callback_url = "http://x/cb";
    const auto j = r.ToJson();
    std::vector<std::string> keys;
    for (const auto& [k, v] : j.items()) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
    EXPECT_EQ(keys, (std::vector<std::string>{"attempt", "code", "epoch", "finished_ms", "fire_id", "message",
                                              "started_ms", "status"}));
    // With the executor's address (what the server checks the dispatch against), it is sent
    // and survives the spool.
    r.address = "10.0.0.1:7000";
    EXPECT_EQ(r.ToJson()["address"], "10.0.0.1:7000");
    const auto back = CallbackResult::FromSpoolLine(r.ToSpoolLine());
    ASSERT_TRUE(back);
    EXPECT_EQ(back->address, "10.0.0.1:7000");
    EXPECT_EQ(back->callback_url, "http://x/cb");
}

// Spool lines are read with the protocol's reader (sched/protocol/run_result.hpp): what it
// refuses is skipped, except fields of a newer SDK, which are dropped from the line.
TEST(CallbackResult, SpoolLinesAreReadWithTheProtocolsReader) {
    CallbackResult r;
    r.fire_id = 7;
    r.epoch = 3;
    r.outcome = protocol::RunOutcome::kKilled;
    r.log = "tail";
    r.log_truncated_bytes = 5;
    auto line = nlohmann::json::parse(r.ToSpoolLine());
    EXPECT_EQ(line["status"], "killed");
    line["from_a_newer_sdk"] = 1;
    const auto back = CallbackResult::FromSpoolLine(line.dump());
    ASSERT_TRUE(back);
    EXPECT_EQ(back->outcome, protocol::RunOutcome::kKilled);
    EXPECT_EQ(back->log, "tail");
    EXPECT_EQ(back->log_truncated_bytes, 5);
    EXPECT_FALSE(back->ToJson().contains("from_a_newer_sdk"));

    auto bad_status = line;
    bad_status["status"] = "done";
    EXPECT_FALSE(CallbackResult::FromSpoolLine(bad_status.dump()));
    auto no_epoch = line;
    no_epoch.erase("epoch");
    EXPECT_FALSE(CallbackResult::FromSpoolLine(no_epoch.dump()));
    auto bad_url = line;
    bad_url["callback_url"] = 5;
    EXPECT_FALSE(CallbackResult::FromSpoolLine(bad_url.dump()));
}

TEST(FireLogBook, PagesLinesAndForgetsOldestFinishedFires) {
    FireLogBook book(2, 3);
    book.Open(1);
    for (int i = 0; i < 5; ++i) book.Append(1, "line " + std::to_string(i), LineSource::kHandler);
    auto page = book.Read(1, 0, 10);
    ASSERT_TRUE(page);
    EXPECT_EQ(page->lines, (std::vector<std::string>{"line 0", "line 1", "[log truncated: more than 3 lines]"}));
    EXPECT_FALSE(page->finished);
    auto tail = book.Read(1, 2, 10);
    EXPECT_EQ(tail->lines.size(), 1u);
    EXPECT_EQ(tail->next_line, 3);
    book.Close(1);
    EXPECT_TRUE(book.Read(1, 3, 10)->finished);
    book.Open(2);
    book.Open(3);  // over the limit: fire 1 (finished) goes, 2 and 3 stay
    EXPECT_FALSE(book.Read(1, 0, 10));
    EXPECT_TRUE(book.Read(2, 0, 10));
    book.Open(4);  // 2 and 3 are unfinished: kept even over the limit
    EXPECT_TRUE(book.Read(2, 0, 10));
    EXPECT_FALSE(book.Read(99, 0, 10));
}

TEST(FireLogBook, ForgetsTheFiresThatFinishedFirstWhateverTheOrderTheyOpenedIn) {
    FireLogBook book(3, 10);
    for (std::int64_t id = 1; id <= 3; ++id) book.Open(id, "accepted " + std::to_string(id));
    book.Close(2);  // finished first, though opened after 1
    book.Close(1);
    book.Close(1);  // closing twice changes nothing
    book.Open(4);   // one over the bound: 2 goes, not 1
    EXPECT_FALSE(book.Read(2, 0, 10));
    EXPECT_EQ(book.Read(1, 0, 10)->lines, std::vector<std::string>{"accepted 1"});
    book.Open(5);  // then 1
    EXPECT_FALSE(book.Read(1, 0, 10));
    book.Open(6);  // 3, 4, 5 and 6 are running: kept over the bound
    for (std::int64_t id = 3; id <= 6; ++id) EXPECT_TRUE(book.Read(id, 0, 10)) << id;
    book.Close(6);  // the only finished fire, and over the bound: it goes at once
    EXPECT_FALSE(book.Read(6, 0, 10));
    EXPECT_TRUE(book.Read(3, 0, 10));
}

// A run's end in one call: its last line, its tail (when asked and when its handler wrote), and
// its close, after which it may be forgotten at once; the tail was taken before.
TEST(FireLogBook, FinishAppendsTheLastLineReturnsTheTailAndCloses) {
    FireLogBook book(1, 10, 64);
    book.Open(1, "accepted");
    book.Append(1, "charging", LineSource::kHandler);
    book.Open(2, "accepted");
    auto tail = book.Finish(1, "finished: succeeded", true);
    ASSERT_TRUE(tail);
    EXPECT_EQ(tail->text, "accepted\ncharging\nfinished: succeeded");
    EXPECT_EQ(tail->truncated_bytes, 0);
    EXPECT_FALSE(book.Read(1, 0, 10)) << "closed over the bound of one: forgotten at once";

    EXPECT_FALSE(book.Finish(2, "finished: failed", true)) << "the SDK's lines alone make no tail";
    ASSERT_TRUE(book.Read(2, 0, 10)) << "within the bound: kept";
    EXPECT_TRUE(book.Read(2, 0, 10)->finished);
    EXPECT_FALSE(book.Finish(3, "finished: succeeded", true)) << "unknown here";

    FireLogBook kept(10, 10, 64);
    kept.Open(1);
    kept.Append(1, "a line", LineSource::kHandler);
    EXPECT_FALSE(kept.Finish(1, "finished: succeeded", false)) << "no tail asked for";
    const auto page = kept.Read(1, 0, 10);
    ASSERT_TRUE(page);
    EXPECT_TRUE(page->finished);
    EXPECT_EQ(page->lines, (std::vector<std::string>{"a line", "finished: succeeded"}));
}

TEST_F(SpoolTest, KeepsALogAcrossReopeningAndBoundsABatchInBytes) {
    {
        ResultSpool spool(dir_);
        std::vector<CallbackResult> rs;
        for (int i = 1; i <= 4; ++i) {
            auto r = Result(i);
            r.log = std::string(200 << 10, 'x') + "\n\"end\"";
            r.log_truncated_bytes = i;
            rs.push_back(r);
        }
        ASSERT_TRUE(spool.Append(rs).ok());
    }
    ResultSpool reopened(dir_);
    // 200 KiB each: two fit in a batch's 512 KiB, the third does not.
    const auto batch = reopened.Peek(10);
    ASSERT_EQ(Fires(batch), (std::vector<std::int64_t>{1, 2}));
    ASSERT_TRUE(batch[1].log);
    EXPECT_EQ(batch[1].log->substr(batch[1].log->size() - 6), "\n\"end\"");
    EXPECT_EQ(batch[1].log_truncated_bytes, 2);
    EXPECT_EQ(batch[1].ToJson()["log_truncated_bytes"], 2);
    // One result always goes, whatever its size.
    EXPECT_EQ(Fires(reopened.Peek(10, 1)), std::vector<std::int64_t>{1});
    EXPECT_FALSE(Result(5).ToJson().contains("log"));
}

TEST(FireLogBook, TheTailHasTheLastBytesIncludingLinesBeyondTheLineLimit) {
    FireLogBook book(10, 3, 10);
    book.Open(1);
    for (const std::string line : {"aaaa", "bbbb", "cccc", "dddd", "eeee"}) book.Append(1, line, LineSource::kHandler);
    // GET /v1/log: two lines and the marker.
    EXPECT_EQ(book.Read(1, 0, 10)->lines.size(), 3u);
    auto tail = book.ReadTail(1);
    ASSERT_TRUE(tail);
    // The newest whole lines that fit; everything else (24 bytes joined) is counted as cut.
    EXPECT_EQ(tail->text, "dddd\neeee");
    EXPECT_EQ(tail->truncated_bytes, 24 - 9);
    EXPECT_FALSE(book.ReadTail(2));

    // A cut inside a character drops the whole character; invalid bytes become U+FFFD.
    FireLogBook utf8(10, 100, 3);
    utf8.Open(1);
    utf8.Append(1, "\xC3\xA9\xC3\xA9\xC3\xA9", LineSource::kHandler);  // "ééé": the last 3 bytes start inside one
    EXPECT_EQ(utf8.ReadTail(1)->text, "\xC3\xA9");
    EXPECT_EQ(utf8.ReadTail(1)->truncated_bytes, 4);
    FireLogBook invalid(10, 100, 10);
    invalid.Open(1);
    invalid.Append(1, "a\xFF", LineSource::kHandler);
    EXPECT_EQ(invalid.ReadTail(1)->text, "a\xEF\xBF\xBD");
}

TEST(FireLogBook, ALogOfTheSdksOwnLinesHasNoTailUntilTheHandlerWritesOne) {
    FireLogBook book(10, 100, 1000);
    book.Open(1);
    book.Append(1, "accepted: handler h", LineSource::kRuntime);
    book.Append(1, "started: shard 0/1", LineSource::kRuntime);
    book.Append(1, "finished: succeeded", LineSource::kRuntime);
    // GET /v1/log still shows them; the result carries no log (the fire's row says the same).
    EXPECT_EQ(book.Read(1, 0, 10)->lines.size(), 3u);
    EXPECT_FALSE(book.ReadTail(1));

    // One handler line: the whole log goes, the SDK's lines around it included.
    book.Open(2);
    book.Append(2, "started: shard 0/1", LineSource::kRuntime);
    book.Append(2, "copied 3 files", LineSource::kHandler);
    book.Append(2, "finished: succeeded", LineSource::kRuntime);
    const auto tail = book.ReadTail(2);
    ASSERT_TRUE(tail);
    EXPECT_EQ(tail->text, "started: shard 0/1\ncopied 3 files\nfinished: succeeded");
}

}  // namespace
}  // namespace sched::client::impl
