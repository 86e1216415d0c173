// schedctl: the operators' command line over the REST API (docs/schedctl.md).

#include <iostream>

#include "cli.hpp"

int main(int argc, char** argv) {
    return sched::ctl::RunCli(argc, argv, std::cout, std::cerr);
}
