// Hostile job and config files: what their aliases expand to, their nesting and their values are
// bounded before any node is walked, and the refusal names the file and the line.

#include "bounded_yaml.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "calendar_file.hpp"
#include "cli.hpp"
#include "job_file.hpp"
#include "parser_checks.hpp"

namespace sched::ctl {
namespace {

const std::string kJob = "jobs:\n  - name: j\n    app: a\n    handler: h\n    schedule_type: manual\n";

// A job whose params hold levels of `fan_out` aliases of the level below: fan_out^levels leaves
// written in a few hundred bytes. Level 0 (line 7) holds the leaves, level i is on line 7 + i.
std::string AliasBomb(int levels, int fan_out) {
    std::string text = kJob + "    params:\n      l0: &l0 [";
    for (int i = 0; i < fan_out; ++i) text += std::string(i ? ", " : "") + "lol";
    text += "]\n";
    for (int level = 1; level < levels; ++level) {
        text += "      l" + std::to_string(level) + ": &l" + std::to_string(level) + " [";
        for (int i = 0; i < fan_out; ++i) text += std::string(i ? ", " : "") + "*l" + std::to_string(level - 1);
        text += "]\n";
    }
    return text;
}

TEST(LoadBoundedYaml, AliasesWithinTheBoundsReadAsTheirExpansion) {
    auto r = ParseJobFile(AliasBomb(3, 10), "jobs.yaml");  // 1,000 leaves
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ((*r)[0].fields["params"]["l2"].size(), 10u);
    EXPECT_EQ((*r)[0].fields["params"]["l2"][9][9],
              nlohmann::json::array({"lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"}));
    // Aliases of a whole job's fields stay usable.
    r = ParseJobFile("jobs:\n  - &base {name: a, app: x, handler: h, schedule_type: manual}\n", "jobs.yaml");
    ASSERT_TRUE(r.ok()) << r.status().message();
}

TEST(LoadBoundedYaml, AMillionLeavesOfAliasesAreRefusedAtTheirLine) {
    // 10^6 leaves in 600 bytes: refused when the count passes the bound, on the first line of
    // level 6 (line 12), before a node is walked.
    const auto message = ParseErrorOf(ParseJobFile(AliasBomb(6, 10), "jobs.yaml"));
    EXPECT_EQ(message, "jobs.yaml: line 12: the document expands to more than 250000 values (aliases included)");
    // Likewise for a single `jobs create -f` document and the calendars: section.
    auto doc = ParseJobDocument("params:\n" + AliasBomb(6, 10).substr(kJob.size() + 12), "job.yaml");
    ASSERT_FALSE(doc.ok());
    EXPECT_NE(doc.status().message().find("job.yaml: line "), std::string::npos) << doc.status().message();
    EXPECT_NE(doc.status().message().find("expands to more than 250000 values"), std::string::npos);
    auto calendars = ParseCalendarSection(AliasBomb(6, 10), "jobs.yaml");
    ASSERT_FALSE(calendars.ok());
    EXPECT_NE(calendars.status().message().find("expands to more than 250000 values"), std::string::npos);
}

TEST(LoadBoundedYaml, ManyAliasesOfALongValueAreRefused) {
    // 1,000 aliases of a 60,000-byte string: 60 MB of text from a 70 KB file.
    std::string text = kJob + "    description: &d " + std::string(60000, 'x') + "\n    params: [";
    for (int i = 0; i < 1000; ++i) text += std::string(i ? ", " : "") + "*d";
    text += "]\n";
    EXPECT_EQ(ParseErrorOf(ParseJobFile(text, "jobs.yaml")),
              "jobs.yaml: line 7: the document's values expand to more than 4194304 bytes (aliases included)");
}

TEST(LoadBoundedYaml, DeepNestingIsRefusedAlsoThroughAnAlias) {
    std::string deep = kJob + "    params: " + std::string(70, '[') + std::string(70, ']') + "\n";
    EXPECT_EQ(ParseErrorOf(ParseJobFile(deep, "jobs.yaml")),
              "jobs.yaml: line 6: nesting deeper than 64 levels (aliases included)");
    // Each part within the bound, the alias nests one inside the other.
    const std::string half = std::string(40, '[') + std::string(40, ']');
    std::string through_alias = kJob + "    description: x\n    params: {a: &a " + half +
                                ", b: " + std::string(30, '[') + "*a" + std::string(30, ']') + "}\n";
    const auto message = ParseErrorOf(ParseJobFile(through_alias, "jobs.yaml"));
    EXPECT_EQ(message, "jobs.yaml: line 7: nesting deeper than 64 levels (aliases included)");
}

TEST(LoadBoundedYaml, AnAliasInsideTheNodeItNamesIsRefused) {
    EXPECT_EQ(ParseErrorOf(ParseJobFile(kJob + "    params: &p [1, *p]\n", "jobs.yaml")),
              "jobs.yaml: line 6: an alias inside the node it refers to (a cycle)");
}

TEST(LoadBoundedYaml, HugeValuesAndParamsAreRefusedNamingTheirPlace) {
    EXPECT_EQ(ParseErrorOf(ParseJobFile(kJob + "    description: " + std::string(70000, 'x') + "\n", "jobs.yaml")),
              "jobs.yaml: line 6: a value of 70000 bytes (at most 65535)");
    // Params as the API would store them: over its 65,535 bytes, though each value is short.
    std::string many = kJob + "    params: [";
    for (int i = 0; i < 20000; ++i) many += std::string(i ? ", " : "") + "abcd";
    many += "]\n";
    EXPECT_EQ(ParseErrorOf(ParseJobFile(many, "jobs.yaml")),
              "jobs.yaml: jobs[0] (name \"j\"): params: larger than 65535 bytes (the API's limit)");
    EXPECT_EQ(ParseErrorOf(ParseJobFile(std::string(kMaxJobFileBytes + 1, '#'), "jobs.yaml")),
              "jobs.yaml: larger than 1048576 bytes");
}

TEST(LoadBoundedYaml, TheConfigFileIsBoundedToo) {
    const auto path = std::filesystem::temp_directory_path() / "schedctl-bounded-config.yaml";
    std::ofstream(path) << "server: http://127.0.0.1:1\nlaughs:\n" << AliasBomb(6, 10).substr(kJob.size() + 12);
    std::vector<const char*> args = {"schedctl", "--config", path.c_str(), "cluster", "status"};
    std::ostringstream out, err;
    const int code = RunCli(static_cast<int>(args.size()), args.data(), out, err);
    std::filesystem::remove(path);
    EXPECT_EQ(code, 1);
    EXPECT_NE(err.str().find(path.string() + ": line 8: the document expands to more than 250000 values"),
              std::string::npos)
        << err.str();
}

}  // namespace
}  // namespace sched::ctl
