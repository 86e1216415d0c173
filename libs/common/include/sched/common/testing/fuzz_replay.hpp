#pragma once

/// The fuzz targets' replay driver (header only): runs a target's LLVMFuzzerTestOneInput without
/// libFuzzer, over its seeds and the corpus directories given on the command line, then over
/// deterministic mutations of them (a fixed PRNG seed, so a failure reproduces exactly).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace sched::testing {

/// How MutateBytes edits an input.
struct ByteMutations {
    std::vector<std::string> tokens;  ///< what an insertion inserts
    bool numbers = false;             ///< also replace a byte with a number below 3000
    std::size_t max_slice = 8;        ///< the longest slice a duplication copies
    std::size_t max_size = 512;       ///< the mutant is cut to this size
};

/// One to four random edits of `s`: replace a byte, insert a token, delete a run, (replace a byte
/// with a number,) duplicate a slice.
inline std::string MutateBytes(std::string s, std::mt19937_64& rng, const ByteMutations& m) {
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
        const std::size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
        const auto kind = rng() % (m.numbers ? 5 : 4);
        if (kind == 0) {  // replace a byte
            if (!s.empty()) s[pos % s.size()] = static_cast<char>(rng() % 256);
        } else if (kind == 1) {  // insert a token
            s.insert(pos, m.tokens[rng() % m.tokens.size()]);
        } else if (kind == 2) {  // delete a run
            if (!s.empty()) s.erase(pos % s.size(), 1 + rng() % 4);
        } else if (kind == 3 && m.numbers) {  // replace a digit run with another number
            if (!s.empty()) s.replace(pos % s.size(), 1, std::to_string(rng() % 3000));
        } else if (!s.empty()) {  // duplicate a slice
            const std::size_t from = rng() % s.size();
            s.insert(pos, s.substr(from, 1 + rng() % m.max_slice));
        }
    }
    return s.substr(0, m.max_size);
}

/// Adds every file of the directories argv[1..argc) to `seeds`.
inline void AddCorpusSeeds(int argc, char** argv, std::vector<std::string>& seeds) {
    for (int i = 1; i < argc; ++i) {
        for (const auto& entry : std::filesystem::directory_iterator(argv[i])) {
            std::ifstream in(entry.path(), std::ios::binary);
            seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        }
    }
}

/// Runs `run` over every seed, then over `mutants` mutants, each `mutate` of a seed drawn with a
/// PRNG seeded `prng_seed`.
inline void ReplaySeedsAndMutants(const std::vector<std::string>& seeds, std::uint64_t prng_seed, int mutants,
                                  const std::function<void(const std::string&)>& run,
                                  const std::function<std::string(const std::string&, std::mt19937_64&)>& mutate) {
    for (const auto& seed : seeds) run(seed);
    std::mt19937_64 rng(prng_seed);
    for (int i = 0; i < mutants; ++i) run(mutate(seeds[rng() % seeds.size()], rng));
}

}  // namespace sched::testing
