// Runs LLVMFuzzerTestOneInput without libFuzzer: over the seed corpus given on the command line,
// then over deterministic mutations of it (fixed PRNG seed, so a failure reproduces exactly).

#include <cstddef>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "sched/common/testing/fuzz_replay.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

constexpr int kMutants = 30000;

const std::vector<std::string> kTokens = {"{",
                                          "}",
                                          "[",
                                          "]",
                                          ":",
                                          ",",
                                          "\"",
                                          "\\",
                                          "\\u0000",
                                          "\\ud800",
                                          "1e309",
                                          "-1e400",
                                          "1e-400",
                                          "0.5",
                                          "-0",
                                          "1E+2",
                                          "true",
                                          "false",
                                          "null",
                                          "nul",
                                          "\xff",
                                          "\xc3\xa9",
                                          "\xed\xa0\x80",
                                          std::string(1, '\0'),
                                          "\n",
                                          "99999999999999999999999",
                                          "\"k\":",
                                          "[[[[[[[[",
                                          "]]]]]]]]",
                                          "{\"a\":{\"b\":",
                                          "}}"};

void Run(const std::string& input) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
}

const sched::testing::ByteMutations kMutations{.tokens = kTokens, .max_slice = 16, .max_size = 4096};

// A seed longer than a mutant may be is cut first.
std::string Mutate(const std::string& seed, std::mt19937_64& rng) {
    return sched::testing::MutateBytes(seed.size() > 4096 ? seed.substr(0, 4096) : seed, rng, kMutations);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> seeds = {"{}",
                                      "[]",
                                      R"({"fire_id":1,"params":{"x":[1,2,{"y":null}]}})",
                                      std::string(100'000, '[') + std::string(100'000, ']'),
                                      std::string(1'000'000, '{'),
                                      "{\"a\":\"" + std::string(200'000, 'x') + "\"}"};
    sched::testing::AddCorpusSeeds(argc, argv, seeds);
    sched::testing::ReplaySeedsAndMutants(seeds, 20240613, kMutants, Run, Mutate);
    std::cout << "replayed " << seeds.size() << " seeds and " << kMutants << " mutants without a failure\n";
    return 0;
}
