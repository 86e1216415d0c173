// Builds against the installed SDK and exercises one handler without a network: enough to
// prove that headers, libraries and dependencies resolve (find_package and pkg-config alike).
#include <cstdio>

#include <sched/client/executor.hpp>

int main() {
    sched::client::ExecutorOptions options;
    options.app = "consumer";
    options.web_endpoints = {"http://127.0.0.1:8080"};
    options.token = "t";
    options.http.listen = "127.0.0.1:0";
    sched::client::Executor executor(options);
    executor.Handle("hello", [](sched::client::JobContext& ctx) {
        ctx.Log("hello from fire {}", ctx.fire_id());
        return sched::Status::Ok();
    });

    sched::client::RunRequest run;
    run.fire_id = 1;
    sched::client::CancellationToken token;
    int lines = 0;
    sched::client::JobContext ctx(run, token, std::chrono::steady_clock::time_point::max(),
                                  [&](const std::string&) { ++lines; });
    ctx.Log("direct {}", 1);
    std::printf("consumer ok (%d line)\n", lines);
    return lines == 1 ? 0 : 1;
}
