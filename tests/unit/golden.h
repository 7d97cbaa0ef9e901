// Golden files for plan tests: the expected text lives in a file under tests/unit, and
// TNK_UPDATE_GOLDEN=1 rewrites it from what the code produces now (review the diff before committing).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tnk::testing_support {

// `name` is relative to tests/unit, e.g. "backend/vm/golden/kvm.txt".
inline void expect_golden(const std::string& name, const std::string& actual) {
  std::filesystem::path path = std::filesystem::path(TNK_SOURCE_DIR) / "tests/unit" / name;
  const char* update = std::getenv("TNK_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream out(path);
    out << actual;
    ASSERT_TRUE(out.good()) << "cannot write " << path;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "missing golden file " << path << " (TNK_UPDATE_GOLDEN=1 writes it)";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(expected.str(), actual) << "plan differs from " << path;
}

}  // namespace tnk::testing_support
