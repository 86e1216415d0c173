// Loads the plugin (argv[1]) with dlopen and calls its entry point: prints what it returned.
#include <cstdio>

#include <dlfcn.h>

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    void* handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        std::fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    using Run = int (*)(const char*);
    auto run = reinterpret_cast<Run>(dlsym(handle, "sched_plugin_run"));
    if (run == nullptr) {
        std::fprintf(stderr, "dlsym: %s\n", dlerror());
        return 1;
    }
    std::printf("plugin returned %d\n", run("plugin"));
    return dlclose(handle) == 0 ? 0 : 1;
}
