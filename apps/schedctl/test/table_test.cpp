#include "table.hpp"

#include <gtest/gtest.h>

namespace sched::ctl {
namespace {

TEST(RenderTable, AlignsColumnsToTheWidestCell) {
    EXPECT_EQ(RenderTable({"ID", "NAME", "APP"}, {{"7", "nightly-report", "reports"}, {"12", "a", "b"}}),
              "ID  NAME            APP\n"
              "7   nightly-report  reports\n"
              "12  a               b\n");
}

TEST(RenderTable, PadsShortRowsAndTrimsTrailingSpace) {
    EXPECT_EQ(RenderTable({"A", "B"}, {{"x"}}), "A  B\nx\n");
    EXPECT_EQ(RenderTable({"A", "B"}, {}), "A  B\n");
}

TEST(RenderTable, ReplacesControlCharactersSoCellsCannotBreakLinesOrDriveTheTerminal) {
    EXPECT_EQ(RenderTable({"NAME", "X"}, {{"a\nb\x1b[31m", "y"}}), "NAME      X\na?b?[31m  y\n");
}

TEST(CellText, RendersJsonValues) {
    EXPECT_EQ(CellText(nullptr), "-");
    EXPECT_EQ(CellText("s"), "s");
    EXPECT_EQ(CellText(5), "5");
    EXPECT_EQ(CellText(true), "true");
    EXPECT_EQ(CellText(nlohmann::json::array({"a", "b"})), "[\"a\",\"b\"]");
    EXPECT_EQ(FieldCell({{"a", 1}}, "b"), "-");
    EXPECT_EQ(FieldCell(5, "b"), "-");
}

TEST(TimeCell, FormatsEpochMillisecondsAsUtc) {
    const nlohmann::json j = {{"t", 1764151200000}, {"n", nullptr}};
    EXPECT_EQ(TimeCell(j, "t"), "2025-11-26T10:00:00Z");
    EXPECT_EQ(TimeCell(j, "n"), "-");
    EXPECT_EQ(TimeCell(j, "absent"), "-");
}

}  // namespace
}  // namespace sched::ctl
