#pragma once

// What the in-process executor tests share: the web module faked (FakeWeb, token kToken), a spool
// folder of the test's own, the executor under test and a client that calls it. TearDown stops
// the executor, then removes the folder.

#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "sched/client/executor.hpp"
#include "sched/client/testing/fake_web.hpp"
#include "sched/common/node_id.hpp"
#include "sched/http/testing/test_server.hpp"

namespace sched::client::testing {

inline constexpr const char* kToken = "test-token";

class ExecutorFixture : public ::testing::Test {
  protected:
    /// The spool folder: `spool_prefix` and random hex digits, under the temp directory.
    explicit ExecutorFixture(const std::string& spool_prefix)
        : spool_dir_(std::filesystem::temp_directory_path() / (spool_prefix + RandomHex(8))) {}

    void SetUp() override { web_ = std::make_unique<FakeWeb>(kToken); }
    void TearDown() override {
        ReleaseHandlers();  // a test that stopped early must not leave a handler waiting
        if (executor_) executor_->Stop();
        executor_.reset();
        web_.reset();
        std::filesystem::remove_all(spool_dir_);
    }
    /// Lets every handler that waits for the test return.
    virtual void ReleaseHandlers() {}

    std::filesystem::path spool_dir_;
    std::unique_ptr<FakeWeb> web_;
    std::unique_ptr<Executor> executor_;
    http::testing::BlockingClient client_;
};

}  // namespace sched::client::testing
