#include "host/root_reservation.h"

#include <gtest/gtest.h>

namespace tnk::host {
namespace {

// Security review L5: a root start that finds no range of root's reserves the one setup would.
TEST(RootReservationStep, ReservesWhatSetupWouldOffTheUsersRange) {
  auto step = root_reservation_step("alice:100000:65536\n", "alice:100000:65536\n");
  ASSERT_TRUE(step.ok()) << step.error().message;
  ASSERT_TRUE(step->has_value());
  ASSERT_EQ((*step)->ops.size(), 1u);
  EXPECT_EQ((*step)->ops[0].argv, (std::vector<std::string>{"usermod", "--add-subuids", "165536-231071",
                                                            "--add-subgids", "165536-231071", "root"}));
  EXPECT_EQ((*step)->done, "added subuid and subgid range 165536-231071 for root");
}

TEST(RootReservationStep, NothingWhenRootHasBothRanges) {
  auto step = root_reservation_step("alice:100000:65536\nroot:165536:65536\n", "0:165536:65536\n");
  ASSERT_TRUE(step.ok());
  EXPECT_FALSE(step->has_value());
}

TEST(RootReservationStep, OnlyTheMissingKind) {
  auto step = root_reservation_step("root:165536:65536\n", "alice:100000:65536\n");
  ASSERT_TRUE(step.ok());
  ASSERT_TRUE(step->has_value());
  EXPECT_EQ((*step)->ops[0].argv, (std::vector<std::string>{"usermod", "--add-subgids", "231072-296607", "root"}));
}

}  // namespace
}  // namespace tnk::host
