// A temporary HOME/XDG tree, a hand-built Env and a Log into a string, shared by the config tests.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "config/config.h"
#include "core/files.h"

namespace tnk::testing_config {

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = (std::filesystem::temp_directory_path() / "tnk-config-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(dir.data()), nullptr);
    root_ = dir;
    std::filesystem::create_directories(root_ / "home");
    env_.set("HOME", (root_ / "home").string());
    env_.set("XDG_CONFIG_HOME", (root_ / "xdg").string());
    env_.set("XDG_STATE_HOME", (root_ / "state").string());
    auto paths = Paths::resolve(env_);
    ASSERT_TRUE(paths.ok());
    paths_ = *paths;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void write_config(const std::string& text) {
    ASSERT_TRUE(make_dirs(paths_.config_dir).ok());
    ASSERT_TRUE(write_file_atomic(paths_.config_file(), text).ok());
  }
  Result<Config> load() { return load_config(paths_, env_, log_); }
  Config load_ok() {
    auto config = load();
    EXPECT_TRUE(config.ok()) << (config.ok() ? "" : config.error().message);
    return config.ok() ? *config : Config{};
  }
  std::string home() const { return (root_ / "home").string(); }
  std::string file() const { return paths_.config_file().string(); }
  std::string err() const { return err_.str(); }

  std::filesystem::path root_;
  Env env_;
  Paths paths_;
  std::ostringstream err_;
  Log log_{err_};
};

}  // namespace tnk::testing_config
