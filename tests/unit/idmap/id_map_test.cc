#include "idmap/id_map.h"

#include <gtest/gtest.h>

#include "idmap/subordinate_ids.h"

namespace tnk::idmap {
namespace {

TEST(SubordinateIds, FindsTheUsersRangeByNameOrUid) {
  const char* file = "alice:100000:65536\nbob:165536:65536\n1002:231072:65536\n";
  auto bob = find_range(file, "bob", 1001);
  ASSERT_TRUE(bob);
  EXPECT_EQ(bob->start, 165536u);
  EXPECT_EQ(bob->count, 65536u);
  auto by_uid = find_range(file, "carol", 1002);
  ASSERT_TRUE(by_uid);
  EXPECT_EQ(by_uid->start, 231072u);
  EXPECT_FALSE(find_range(file, "dave", 1003));
}

TEST(SubordinateIds, SkipsRangesTooSmallForASandboxAndMalformedLines) {
  const char* file = "alice:100000:1000\nalice:x:65536\nalice:100000\n\nalice:300000:70000\n";
  auto range = find_range(file, "alice", 1000);
  ASSERT_TRUE(range);
  EXPECT_EQ(range->start, 300000u);
  EXPECT_FALSE(find_range("alice:4294967000:65536\n", "alice", 1000));  // past the end of the id space
}

TEST(SubordinateIds, AMissingRangeNamesTheFileAndTheFix) {
  auto missing = read_range("/nonexistent/subuid", "alice", 1000);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::kPermission);
  EXPECT_NE(missing.error().message.find("/nonexistent/subuid gives user alice no range"), std::string::npos);
  EXPECT_NE(missing.error().hint.find("sudo tnk setup --user alice"), std::string::npos);
}

TEST(IdMap, TheSandboxMapShowsOnlyTheUserAsAgent) {
  IdMap map = sandbox_map({100000, 65536}, 1001, kAgentId);
  EXPECT_EQ(proc_map_text(map), "0 100000 1000\n1000 1001 1\n1001 101001 64535\n");
  EXPECT_EQ(outside_id(map, 0), 100000u);  // root inside is never the user
  EXPECT_EQ(outside_id(map, kAgentId), 1001u);
  EXPECT_EQ(outside_id(map, 65534), 165534u);
  EXPECT_FALSE(outside_id(map, 65536));
}

TEST(IdMap, TheOwnerMapHoldsTheWholeRangeAndTheUser) {
  IdMap map = owner_map({100000, 65536}, 1001);
  EXPECT_EQ(proc_map_text(map), "0 100000 65536\n65536 1001 1\n");
  EXPECT_EQ(outside_id(map, kAgentId), 101000u);  // where mmdebstrap's unshare mode puts agent's files
  EXPECT_EQ(outside_id(map, kInsideIdCount), 1001u);
}

TEST(IdMap, TheAgentlessMapHoldsEveryIdButTheAgents) {
  IdMap map = agentless_map(kAgentId);
  EXPECT_EQ(proc_map_text(map), "0 0 1000\n1001 1001 64535\n");
  EXPECT_EQ(outside_id(map, 0), 0u);
  EXPECT_FALSE(outside_id(map, kAgentId));
  EXPECT_EQ(outside_id(map, 65534), 65534u);
}

TEST(IdMap, HelperArgumentsAreTriplesInNewuidmapsOrder) {
  EXPECT_EQ(helper_args(owner_map({100000, 65536}, 1001)),
            (std::vector<std::string>{"0", "100000", "65536", "65536", "1001", "1"}));
}

}  // namespace
}  // namespace tnk::idmap
