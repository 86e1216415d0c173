// A shared library that links the SDK's static libraries (they are position-independent): a
// service that loads its handlers from a plugin. Its one entry point builds an Executor,
// registers a handler and runs it once through a JobContext, without a network.
#include <chrono>
#include <string>

#include <sched/client/executor.hpp>

extern "C" int sched_plugin_run(const char* app) {
    sched::client::ExecutorOptions options;
    options.app = app;
    options.web_endpoints = {"http://127.0.0.1:8080"};
    options.token = "t";
    options.http.listen = "127.0.0.1:0";
    sched::client::Executor executor(options);
    int calls = 0;
    executor.Handle("plugin", [&calls](sched::client::JobContext& ctx) {
        ++calls;
        ctx.Log("plugin handler, fire {}", ctx.fire_id());
        return sched::Status::Ok();
    });
    sched::client::RunRequest run;
    run.fire_id = 7;
    sched::client::CancellationToken token;
    std::string logged;
    sched::client::JobContext ctx(run, token, std::chrono::steady_clock::time_point::max(),
                                  [&logged](const std::string& line) { logged = line; });
    ctx.Log("fire {}", ctx.fire_id());
    return logged == "fire 7" ? 42 : 1;
}
