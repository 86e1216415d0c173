// Alert deliveries over real loopback HTTP: receivers that stall or trickle an endless answer
// delay only their own deliveries, every one of their attempts ends and is counted, and an
// address the policy refuses is never connected to.

#include <atomic>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "master_lease_fixture.hpp"
#include "sched/common/clock.hpp"
#include "sched/db/migrator.hpp"
#include "sched/db/testing/test_database.hpp"
#include "sched/http/testing/test_server.hpp"
#include "sched/lock/lock_store.hpp"
#include "sched/lock/sql_lock_store.hpp"
#include "sched/store/job.hpp"
#include "sched/trigger/alerter.hpp"
#include "sched/trigger/webhook_sender.hpp"

namespace sched::trigger {
namespace {

using namespace std::chrono_literals;
using store::AlertEvent;

// A receiver that accepts, reads the request and then never completes an answer: kSilent sends
// nothing; kTrickle sends a 200 header and then one chunk of an endless chunked body every 20 ms.
class StallingReceiver {
  public:
    enum class Mode { kSilent, kTrickle };
    explicit StallingReceiver(Mode mode)
        : mode_(mode), acceptor_(io_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
        net::co_spawn(io_, Accept(), net::detached);
        thread_ = std::thread([this] { io_.run(); });
    }
    ~StallingReceiver() {
        io_.stop();
        thread_.join();
    }
    StallingReceiver(const StallingReceiver&) = delete;
    StallingReceiver& operator=(const StallingReceiver&) = delete;

    std::string Url() const {
        return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/hook";
    }
    int accepted() const { return accepted_.load(); }

  private:
    net::awaitable<void> Accept() {
        for (;;) {
            boost::system::error_code ec;
            tcp::socket socket = co_await acceptor_.async_accept(net::redirect_error(net::use_awaitable, ec));
            if (ec) co_return;
            accepted_.fetch_add(1);
            net::co_spawn(io_, Serve(std::move(socket)), net::detached);
        }
    }
    net::awaitable<void> Serve(tcp::socket socket) {
        boost::system::error_code ec;
        std::array<char, 4096> buffer{};
        co_await socket.async_read_some(net::buffer(buffer), net::redirect_error(net::use_awaitable, ec));
        if (ec) co_return;
        net::steady_timer timer(io_);
        if (mode_ == Mode::kTrickle) {
            const std::string header = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
            co_await net::async_write(socket, net::buffer(header), net::redirect_error(net::use_awaitable, ec));
        }
        while (!ec) {
            timer.expires_after(20ms);
            co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
            if (mode_ == Mode::kTrickle && !ec) {
                const std::string chunk = "1\r\nx\r\n";
                co_await net::async_write(socket, net::buffer(chunk), net::redirect_error(net::use_awaitable, ec));
            } else if (mode_ == Mode::kSilent && !ec) {
                // Until the caller hangs up.
                char probe = 0;
                const auto n = ::recv(socket.native_handle(), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
                if (n == 0) co_return;
            }
        }
    }

    Mode mode_;
    net::io_context io_;
    tcp::acceptor acceptor_;
    std::atomic<int> accepted_{0};
    std::thread thread_;
};

class WebhookIsolationTest : public MasterLeaseTest {
  protected:
    WebhookIsolationTest() {
        config_.alert_settle = 0s;
        config_.alert_max_attempts = 3;
        config_.alert_backoff = 10ms;
        config_.alert_backoff_max = 10ms;
        config_.alert_receiver_concurrency = 3;
    }

    std::chrono::seconds LeaseTtl() const override { return 300s; }

    void SetUpDatabase() override {
        MasterLeaseTest::SetUpDatabase();
        if (HasFatalFailure()) return;
        job_ = CreateBillingJob("nightly");
        ASSERT_NE(job_, 0);
        work_.emplace(io_.get_executor());
        io_thread_ = std::thread([this] { io_.run(); });
    }
    void TearDown() override {
        // The sender's calls run on io_: stop it before the sender goes.
        work_.reset();
        io_.stop();
        if (io_thread_.joinable()) io_thread_.join();
        DbTest::TearDown();
    }

    WebhookLimits Limits(http::AddressPolicy addresses) const {
        return {.timeout = 600ms,
                .connect_timeout = 200ms,
                .first_byte_timeout = 300ms,
                .body_limit = 1024,
                .addresses = std::move(addresses)};
    }

    std::int64_t AddRule(const std::string& name, const std::string& url) {
        store::AlertRule r;
        r.name = name;
        r.job_id = job_;
        r.events = {AlertEvent::kFailed};
        r.url = url;
        r.secret = "topsecret-topsecret";
        auto created = store::AlertRepository(db()).CreateRule(r);
        EXPECT_TRUE(created.ok()) << created.status().ToString();
        return created.ok() ? created->id : 0;
    }

    void AddFailedFire(int i) {
        const std::int64_t finished = time_->NowMs() - 1000 + i;
        ASSERT_TRUE(db().Run([&](soci::session& s) {
                            s << "INSERT INTO job_fire (job_id, scheduled_time, kind, epoch, status, due_at, "
                                 "created_at, finished_at) VALUES (:j, :t, 'schedule', 1, 'failed', :t2, :t3, :f)",
                                soci::use(job_), soci::use(finished - 10), soci::use(finished - 10),
                                soci::use(finished - 10), soci::use(finished);
                        })
                        .ok());
    }

    std::vector<store::AlertDelivery> DeliveriesOf(std::int64_t rule) {
        store::DeliveryFilter filter;
        filter.rule_id = rule;
        filter.limit = 100;
        auto listed = store::AlertRepository(db()).ListDeliveries(filter);
        EXPECT_TRUE(listed.ok()) << listed.status().ToString();
        return listed.ok() ? *listed : std::vector<store::AlertDelivery>{};
    }

    bool AllEnded(std::int64_t rule) {
        const auto deliveries = DeliveriesOf(rule);
        return !deliveries.empty() && std::all_of(deliveries.begin(), deliveries.end(), [](const auto& d) {
            return d.status != store::DeliveryStatus::kPending;
        });
    }

    // Alert rounds as the node's alert loop runs them (every 20 ms here), the DB clock moving
    // 1 s a round so every backoff has passed, until `done` or 20 s.
    bool RunRoundsUntil(Alerter& alerter, const std::function<bool()>& done) {
        const auto give_up = std::chrono::steady_clock::now() + 20s;
        while (std::chrono::steady_clock::now() < give_up) {
            auto round = alerter.Round(epoch_);
            EXPECT_TRUE(round.ok()) << round.status().ToString();
            if (done()) return true;
            clock_.Advance(1s);
            std::this_thread::sleep_for(20ms);
        }
        return false;
    }

    net::io_context io_;
    std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
    std::thread io_thread_;
};

TEST_P(WebhookIsolationTest, AHealthyReceiverIsServedWhileSlowOnesUseUpTheirAttempts) {
    constexpr int kFires = 6;
    StallingReceiver silent(StallingReceiver::Mode::kSilent);
    StallingReceiver trickle(StallingReceiver::Mode::kTrickle);
    // What the slow receivers had accepted when the healthy one received each delivery.
    std::mutex mu;
    std::vector<std::pair<int, int>> slow_accepted_at_healthy;
    http::Router router;
    router.Add(http::Method::kPost, "/hook", [&](http::Request&) -> net::awaitable<http::Response> {
        {
            std::lock_guard lock(mu);
            slow_accepted_at_healthy.emplace_back(silent.accepted(), trickle.accepted());
        }
        co_return http::Response::NoContent();
    });
    http::testing::TestServer healthy(std::move(router));

    const auto silent_rule = AddRule("silent", silent.Url());
    const auto trickle_rule = AddRule("trickle", trickle.Url());
    const auto healthy_rule = AddRule("healthy", healthy.Url("/hook"));
    for (int i = 0; i < kFires; ++i) AddFailedFire(i);

    HttpWebhookSender sender(io_.get_executor(), Limits(http::AddressPolicy({"127.0.0.1"}, {})));
    Alerter alerter(pool_, *fence_, *time_, config_, metrics_, sender);
    ASSERT_TRUE(RunRoundsUntil(alerter, [&] {
        return AllEnded(silent_rule) && AllEnded(trickle_rule) && AllEnded(healthy_rule);
    })) << "deliveries still pending after 20 s";

    // The healthy receiver got every alert while the slow ones still held their first calls
    // (receiver-concurrency 3, each call lasting at least the first-byte timeout): sending one by
    // one, its k-th alert would wait for k calls to each slow receiver to time out.
    {
        std::lock_guard lock(mu);
        ASSERT_EQ(slow_accepted_at_healthy.size(), static_cast<std::size_t>(kFires));
        for (const auto& [at_silent, at_trickle] : slow_accepted_at_healthy) {
            EXPECT_LE(at_silent, config_.alert_receiver_concurrency);
            EXPECT_LE(at_trickle, config_.alert_receiver_concurrency);
        }
    }
    for (const auto& d : DeliveriesOf(healthy_rule)) {
        EXPECT_EQ(d.status, store::DeliveryStatus::kDelivered);
        EXPECT_EQ(d.attempts, 1);
    }
    // Every slow attempt ended by a deadline, was counted, and the delivery stopped at the limit.
    for (const auto rule : {silent_rule, trickle_rule}) {
        const auto deliveries = DeliveriesOf(rule);
        ASSERT_EQ(deliveries.size(), static_cast<std::size_t>(kFires));
        for (const auto& d : deliveries) {
            EXPECT_EQ(d.status, store::DeliveryStatus::kFailed);
            EXPECT_EQ(d.attempts, config_.alert_max_attempts);
            ASSERT_TRUE(d.last_error.has_value());
            EXPECT_NE(d.last_error->find("deadline_exceeded"), std::string::npos) << *d.last_error;
        }
    }
    EXPECT_EQ(silent.accepted(), kFires * config_.alert_max_attempts);
    EXPECT_EQ(trickle.accepted(), kFires * config_.alert_max_attempts);
    EXPECT_EQ(alerter.InFlight(), 0);
}

TEST_P(WebhookIsolationTest, ADeliveryToARefusedAddressIsNotSentAndCountsAsAFailedAttempt) {
    std::atomic<int> received{0};
    http::Router router;
    router.Add(http::Method::kPost, "/hook", [&](http::Request&) -> net::awaitable<http::Response> {
        received.fetch_add(1);
        co_return http::Response::NoContent();
    });
    http::testing::TestServer receiver(std::move(router));
    // Stored as a name (as if it had passed the API's check), resolved to loopback at delivery.
    const auto rule = AddRule("rebound", "http://localhost:" + std::to_string(receiver.port()) + "/hook");
    AddFailedFire(0);

    HttpWebhookSender sender(io_.get_executor(), Limits(http::AddressPolicy()));
    Alerter alerter(pool_, *fence_, *time_, config_, metrics_, sender);
    ASSERT_TRUE(RunRoundsUntil(alerter, [&] { return AllEnded(rule); }));
    const auto deliveries = DeliveriesOf(rule);
    ASSERT_EQ(deliveries.size(), 1u);
    EXPECT_EQ(deliveries[0].status, store::DeliveryStatus::kFailed);
    EXPECT_EQ(deliveries[0].attempts, config_.alert_max_attempts);
    ASSERT_TRUE(deliveries[0].last_error.has_value());
    EXPECT_NE(deliveries[0].last_error->find("loopback"), std::string::npos) << *deliveries[0].last_error;
    EXPECT_EQ(received.load(), 0);
    EXPECT_EQ(receiver.Stats().connections_accepted, 0u);
}

SCHED_DB_TEST_SUITE(WebhookIsolationTest);

}  // namespace
}  // namespace sched::trigger
