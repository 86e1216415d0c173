// Runs LLVMFuzzerTestOneInput without libFuzzer: over the seed corpus given on the command line,
// then over deterministic mutations of it (fixed PRNG seed, so a failure reproduces exactly).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "sched/common/testing/fuzz_replay.hpp"
#include "sched/cron/cron_expression.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

constexpr int kMutants = 100000;

const std::vector<std::string> kTokens = {"*",        "?",
                                          "L",        "W",
                                          "LW",       "L-3",
                                          "#",        "/",
                                          "-",        ",",
                                          " ",        "\t",
                                          "0",        "1",
                                          "7",        "15",
                                          "31",       "59",
                                          "60",       "99",
                                          "JAN",      "FEB",
                                          "DEC",      "SUN",
                                          "MON",      "SAT",
                                          "FRI",      "2024",
                                          "2199",     "@daily",
                                          "@",        "5#5",
                                          "6L",       "15W",
                                          "1W",       "*/0",
                                          "0/15",     std::string(1, '\0'),
                                          "\xff",     "99999999999",
                                          "2100-2099"};

int valid = 0;

void Run(const std::string& input) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
    if (sched::cron::CronExpression::Parse(input).ok()) ++valid;
}

const std::vector<std::string> kFieldFragments = {
    "*",   "?",   "0",   "5",    "*/5", "0/15", "1-5",     "10-50/20", "22-2",      "L",   "LW",  "L-3",
    "15W", "1W",  "31W", "6L",   "2#3", "6#5",  "MON-FRI", "JAN,JUL",  "2024-2030", "29",  "2",   "1,15,L",
    "SUN", "FRI", "7",   "*/10", "59",  "23",   "12",      "2199",     "2024/4",    "0-0", "3/7", "FRIL"};

/// Replaces whole whitespace-separated fields with fragments that are valid somewhere, so most
/// results are expressions that parse and exercise Next().
std::string SwapFields(const std::string& s, std::mt19937_64& rng) {
    std::vector<std::string> fields;
    std::size_t i = 0;
    while (i < s.size()) {
        const std::size_t start = s.find_first_not_of(" \t", i);
        if (start == std::string::npos) break;
        const std::size_t end = std::min(s.find_first_of(" \t", start), s.size());
        fields.push_back(s.substr(start, end - start));
        i = end;
    }
    if (fields.empty()) return s;
    for (int n = 1 + static_cast<int>(rng() % 2); n > 0; --n) {
        fields[rng() % fields.size()] = kFieldFragments[rng() % kFieldFragments.size()];
    }
    std::string out;
    for (const auto& f : fields) out += (out.empty() ? "" : " ") + f;
    return out;
}

const sched::testing::ByteMutations kMutations{.tokens = kTokens, .numbers = true, .max_slice = 8, .max_size = 512};

std::string Mutate(const std::string& s, std::mt19937_64& rng) {
    if (rng() % 2 == 0) return SwapFields(s, rng);
    return sched::testing::MutateBytes(s, rng, kMutations);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> seeds = {"0 0 12 * * ?", "*/5 * * * *", "0 15 10 ? * 6L 2002-2005", "@weekly", ""};
    sched::testing::AddCorpusSeeds(argc, argv, seeds);
    sched::testing::ReplaySeedsAndMutants(seeds, 20240331, kMutants, Run, Mutate);
    std::cout << "replayed " << seeds.size() << " seeds and " << kMutants << " mutants (" << valid
              << " valid expressions) without a failure\n";
    return 0;
}
