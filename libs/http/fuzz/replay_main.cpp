// Runs LLVMFuzzerTestOneInput without libFuzzer: over the seed corpus given on the command line,
// then over deterministic mutations of it (fixed PRNG seed, so a failure reproduces exactly).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

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

std::string Mutate(std::string s, std::mt19937_64& rng) {
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
        const std::size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
        switch (rng() % 4) {
            case 0:  // replace a byte
                if (!s.empty()) s[pos % s.size()] = static_cast<char>(rng() % 256);
                break;
            case 1:  // insert a token
                s.insert(pos, kTokens[rng() % kTokens.size()]);
                break;
            case 2:  // delete a run
                if (!s.empty()) s.erase(pos % s.size(), 1 + rng() % 4);
                break;
            default:  // duplicate a slice
                if (!s.empty()) {
                    const std::size_t from = rng() % s.size();
                    s.insert(pos, s.substr(from, 1 + rng() % 16));
                }
                break;
        }
    }
    return s.substr(0, 4096);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> seeds = {"{}",
                                      "[]",
                                      R"({"fire_id":1,"params":{"x":[1,2,{"y":null}]}})",
                                      std::string(100'000, '[') + std::string(100'000, ']'),
                                      std::string(1'000'000, '{'),
                                      "{\"a\":\"" + std::string(200'000, 'x') + "\"}"};
    for (int i = 1; i < argc; ++i) {
        for (const auto& entry : std::filesystem::directory_iterator(argv[i])) {
            std::ifstream in(entry.path(), std::ios::binary);
            seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        }
    }
    for (const auto& seed : seeds) Run(seed);
    std::mt19937_64 rng(20240613);
    const std::size_t small_seeds = seeds.size();
    for (int i = 0; i < kMutants; ++i) {
        const auto& seed = seeds[rng() % small_seeds];
        Run(Mutate(seed.size() > 4096 ? seed.substr(0, 4096) : seed, rng));
    }
    std::cout << "replayed " << seeds.size() << " seeds and " << kMutants << " mutants without a failure\n";
    return 0;
}
