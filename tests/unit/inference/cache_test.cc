#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "core/files.h"
#include "inference/model_cache.h"

namespace tnk::inference {
namespace {

namespace fs = std::filesystem;

class ModelCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tnk-cache-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    file_ = dir_ / "sub" / "models.json";
  }
  void TearDown() override { fs::remove_all(dir_); }

  static ModelInfo good() {
    ModelInfo info;
    info.reachable = true;
    info.model_id = "qwen.gguf";
    info.context_window = 40960;
    return info;
  }

  fs::path dir_;
  fs::path file_;
  const std::string url_ = "http://127.0.0.1:8080/v1";
};

TEST_F(ModelCacheTest, FreshEntryIsReturned) {
  write_cache(file_, url_, good(), 1000);
  auto cached = read_cached(file_, url_, 1029, 30);
  ASSERT_TRUE(cached);
  EXPECT_TRUE(cached->reachable);
  EXPECT_EQ(cached->model_id, "qwen.gguf");
  EXPECT_EQ(cached->context_window, 40960u);
  EXPECT_EQ(cached->base_url, url_);
  EXPECT_EQ(cached->problem, "");
  struct stat st {};
  ASSERT_EQ(::stat(file_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(ModelCacheTest, TrailingSlashIsTheSameUrl) {
  write_cache(file_, url_ + "/", good(), 1000);
  EXPECT_TRUE(read_cached(file_, url_, 1000, 30));
}

TEST_F(ModelCacheTest, StaleAndFutureEntriesIgnored) {
  write_cache(file_, url_, good(), 1000);
  EXPECT_TRUE(read_cached(file_, url_, 1030, 30));
  EXPECT_FALSE(read_cached(file_, url_, 1031, 30));
  EXPECT_FALSE(read_cached(file_, url_, 999, 30));
}

TEST_F(ModelCacheTest, OtherUrlIgnored) {
  write_cache(file_, url_, good(), 1000);
  EXPECT_FALSE(read_cached(file_, "http://127.0.0.1:9090/v1", 1000, 30));
}

TEST_F(ModelCacheTest, ContextWindowMayBeUnknown) {
  ModelInfo info = good();
  info.context_window.reset();
  write_cache(file_, url_, info, 1000);
  auto cached = read_cached(file_, url_, 1000, 30);
  ASSERT_TRUE(cached);
  EXPECT_FALSE(cached->context_window);
}

TEST_F(ModelCacheTest, OnlySuccessfulProbesAreCached) {
  ModelInfo unreachable;
  unreachable.problem = "inference endpoint x did not answer within 1 s";
  write_cache(file_, url_, unreachable, 1000);
  EXPECT_FALSE(fs::exists(file_));
  ModelInfo no_model = good();
  no_model.model_id.reset();
  write_cache(file_, url_, no_model, 1000);
  EXPECT_FALSE(fs::exists(file_));
  ModelInfo bad = good();
  bad.problem = "answered with HTTP 500";
  write_cache(file_, url_, bad, 1000);
  EXPECT_FALSE(fs::exists(file_));
}

TEST_F(ModelCacheTest, MissingOrCorruptFileIsAMiss) {
  EXPECT_FALSE(read_cached(file_, url_, 1000, 30));
  ASSERT_TRUE(make_dirs(file_.parent_path()).ok());
  for (const char* text : {"", "not json", "[]", R"({"version":"1"})",
                           R"({"version":1,"base_url":"http://127.0.0.1:8080/v1","probed_at":"1000","model_id":"m"})",
                           R"({"version":1,"base_url":"http://127.0.0.1:8080/v1","probed_at":1000,"model_id":""})"}) {
    ASSERT_TRUE(write_file_atomic(file_, text).ok());
    EXPECT_FALSE(read_cached(file_, url_, 1000, 30)) << text;
  }
}

TEST_F(ModelCacheTest, WriteFailureIsSilent) {
  fs::path blocked = dir_ / "file";
  ASSERT_TRUE(write_file_atomic(blocked, "x").ok());
  write_cache(blocked / "models.json", url_, good(), 1000);  // parent is a file: nothing happens
  EXPECT_FALSE(read_cached(blocked / "models.json", url_, 1000, 30));
}

}  // namespace
}  // namespace tnk::inference
