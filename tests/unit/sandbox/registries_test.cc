// Registry names in network.allow / provision.allow (src/sandbox/registries.h). Only plain domains
// here: @debian and @npm read the host's apt sources and npm, which a unit test does not own.
#include <gtest/gtest.h>

#include "sandbox/registries.h"

namespace tnk::sandbox {
namespace {

TEST(SandboxRegistries, PlainDomainsAreSortedAndUnique) {
  auto allow = expand_registries({"pypi.org", "*.example.com", "pypi.org", "docs.python.org"});
  ASSERT_TRUE(allow.ok());
  EXPECT_EQ(*allow, (std::vector<std::string>{"*.example.com", "docs.python.org", "pypi.org"}));
}

TEST(SandboxRegistries, NothingListedIsNothingAllowed) {
  auto allow = expand_registries({});
  ASSERT_TRUE(allow.ok());
  EXPECT_TRUE(allow->empty());
}

}  // namespace
}  // namespace tnk::sandbox
