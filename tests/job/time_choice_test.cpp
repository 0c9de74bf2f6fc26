// job::faster_than_rules: the automatic layout replaces its rules' choice only with a layout that fits, leaves
// no data-parallel group idle and is predicted more than kTimeMargin (15%) faster, the fastest such, ties going
// to the least traffic across nodes; a rules' choice that does not fit gives way to any layout that does.
#include <gtest/gtest.h>

#include <vector>

#include "job/auto_layout.h"

namespace {

using omni::job::LayoutOption;

LayoutOption option(int cfg, int ulysses, double seconds, int64_t peak, double inter_node = 0, bool idle = false) {
  LayoutOption o;
  o.idle_groups = idle;
  o.layout.cfg = cfg;
  o.layout.ulysses = ulysses;
  o.job_seconds = 100 - seconds;  // with the dispatch and latency: not what the choice weighs (here reversed)
  o.work_seconds = seconds;
  o.peak_bytes = peak;
  o.inter_node_bytes = inter_node;
  return o;
}

TEST(TimeChoice, FasterByMoreThanTheMargin) {
  const std::vector<LayoutOption> options = {option(2, 2, 10.0, 100), option(1, 4, 7.0, 100), option(1, 2, 8.0, 100)};
  const LayoutOption* chosen = omni::job::faster_than_rules(options, &options[0], 1000);
  ASSERT_NE(chosen, nullptr);
  EXPECT_EQ(chosen, &options[1]);  // the fastest, not the first faster one
}

TEST(TimeChoice, WithinTheMarginTheRulesStand) {
  const std::vector<LayoutOption> options = {option(2, 2, 10.0, 100), option(1, 4, 8.6, 100)};
  EXPECT_EQ(omni::job::faster_than_rules(options, &options[0], 1000), nullptr);
  // Just past the margin: replaced.
  const std::vector<LayoutOption> past = {option(2, 2, 10.0, 100), option(1, 4, 8.4, 100)};
  EXPECT_EQ(omni::job::faster_than_rules(past, &past[0], 1000), &past[1]);
  // The rules' own layout the fastest: kept.
  const std::vector<LayoutOption> own = {option(2, 2, 5.0, 100), option(1, 4, 9.0, 100)};
  EXPECT_EQ(omni::job::faster_than_rules(own, &own[0], 1000), nullptr);
}

TEST(TimeChoice, OnlyLayoutsThatFit) {
  // The fastest does not fit: the next that does and is faster than the rules'.
  const std::vector<LayoutOption> options = {option(2, 2, 10.0, 100), option(1, 4, 5.0, 5000), option(1, 2, 7.0, 900)};
  EXPECT_EQ(omni::job::faster_than_rules(options, &options[0], 1000), &options[2]);
  // The rules' does not fit: a slower layout that fits replaces it.
  const std::vector<LayoutOption> slower = {option(2, 2, 10.0, 5000), option(1, 4, 12.0, 900)};
  EXPECT_EQ(omni::job::faster_than_rules(slower, &slower[0], 1000), &slower[1]);
  // Nothing fits: the rules' stands (the memory check then says what would make it fit).
  const std::vector<LayoutOption> none = {option(2, 2, 10.0, 5000), option(1, 4, 5.0, 5000)};
  EXPECT_EQ(omni::job::faster_than_rules(none, &none[0], 1000), nullptr);
  // An unknown budget (0): everything fits.
  EXPECT_EQ(omni::job::faster_than_rules(none, &none[0], 0), &none[1]);
}

TEST(TimeChoice, NoIdleGroups) {
  // dp 4 for one video (three groups repeating the first's) predicted fastest: not taken; the next is.
  const std::vector<LayoutOption> options = {option(2, 2, 10.0, 100), option(1, 1, 2.0, 100, 0, true),
                                             option(1, 4, 5.0, 100)};
  EXPECT_EQ(omni::job::faster_than_rules(options, &options[0], 1000), &options[2]);
}

TEST(TimeChoice, TiesGoToLessTrafficAcrossNodes) {
  const std::vector<LayoutOption> options = {option(2, 2, 10.0, 100), option(1, 4, 5.0, 100, 1e9),
                                             option(2, 1, 5.0, 100, 1e6)};
  EXPECT_EQ(omni::job::faster_than_rules(options, &options[0], 1000), &options[2]);
  // No rules' layout among them (its degrees not a layout of this world): the fastest.
  EXPECT_EQ(omni::job::faster_than_rules(options, nullptr, 1000), &options[2]);
}

}  // namespace
