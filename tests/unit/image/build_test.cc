// ensure_image with a fake mmdebstrap (a shell script): build once and reuse, concurrent callers
// build once, a failure leaves nothing and says why, --force swaps, a killed builder's leftovers are
// cleaned up only once nothing of it runs; plus the streaming runner and the progress lines.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <thread>

#include "core/files.h"
#include "image/build_process.h"
#include "image/layout.h"
#include "image/store.h"

namespace tnk::image {
namespace {
namespace fs = std::filesystem;

Recipe test_recipe() {
  auto recipe = default_recipe({{"http://mirror.example/debian", {"bookworm"}, {"main"}, "", ""}});
  EXPECT_TRUE(recipe.ok());
  return *recipe;
}

class ImageBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "ensure_image needs root (mmdebstrap root mode); not root here";
    char tmpl[] = "/tmp/tnk-image-build-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    paths_.home = root_;
    paths_.config_dir = root_ / "config";
    paths_.state_dir = root_ / "state";
    paths_.cache_dir = root_ / "cache";
    id_ = image_id(test_recipe());
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }

  // A fake mmdebstrap: prints phase lines, counts its runs, creates <target>/etc/build (the run
  // number), optionally sleeps first or fails.
  std::string fake(const std::string& name, const std::string& behaviour = "") {
    fs::path script = root_ / name;
    std::string text =
        "#!/bin/sh\n"
        "if [ \"$1\" = --version ]; then echo 'mmdebstrap 9.8.7'; exit 0; fi\n"
        "prev=; for a in \"$@\"; do [ \"$prev\" = bookworm ] && target=$a; prev=$a; done\n"
        "echo run >> " +
        (root_ / "runs").string() +
        "\n"
        "n=$(wc -l < " +
        (root_ / "runs").string() +
        ")\n"
        "echo 'I: chroot architecture amd64 is equal to the host'\n"
        "echo 'I: running apt-get update...'\n"
        "echo 'Get:1 http://mirror.example/debian bookworm InRelease'\n"
        "echo 'I: downloading packages with apt...'\n" +
        behaviour +
        "mkdir -p \"$target/etc\" && echo $n > \"$target/etc/build\"\n"
        "echo 'I: running --customize-hook in shell: sh -c ...'\n"
        "echo 'I: running --customize-hook in shell: sh -c ...'\n"
        "echo 'I: cleaning package lists and apt cache...'\n"
        "printf 'I: success in 0.1 seconds'\n";  // no final newline
    EXPECT_TRUE(write_file_atomic(script, text, 0755).ok());
    return script.string();
  }
  int runs() {
    auto text = read_file(root_ / "runs");
    return text ? static_cast<int>(std::count(text->begin(), text->end(), '\n')) : 0;
  }
  std::vector<std::string> work_dirs() {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(paths_.images_dir())) {
      if (e.path().filename().string().starts_with(".")) out.push_back(e.path().filename().string());
    }
    return out;
  }
  BuildOptions with(const std::string& program, bool force = false) {
    BuildOptions o;
    o.mmdebstrap = program;
    o.force = force;
    return o;
  }

  fs::path root_;
  Paths paths_;
  std::string id_;
  std::ostringstream err_;
  Log log_{err_};
};

TEST_F(ImageBuildTest, BuildsOnceThenReuses) {
  auto program = fake("mmdebstrap");
  auto first = ensure_image(paths_, test_recipe(), log_, with(program));
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->id, id_);
  EXPECT_EQ(first->dir, paths_.images_dir() / id_);
  EXPECT_EQ(read_file(first->rootfs / "etc" / "build").value(), "1\n");
  EXPECT_EQ(first->mmdebstrap_version, "9.8.7");
  EXPECT_EQ(first->recipe_hash, recipe_hash(test_recipe()));
  EXPECT_EQ(first->recipe, recipe_to_json(test_recipe()));
  EXPECT_EQ(first->inodes, 3u);  // rootfs, etc, etc/build
  EXPECT_GT(first->built_at, 1700000000);

  auto second = ensure_image(paths_, test_recipe(), log_, with(program));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(runs(), 1);
  EXPECT_EQ(second->built_at, first->built_at);
  EXPECT_TRUE(work_dirs().empty());

  std::string progress = err_.str();
  EXPECT_NE(progress.find("building image " + id_ + " from http://mirror.example/debian (first use; about a minute)"),
            std::string::npos)
      << progress;
  EXPECT_NE(progress.find("  [1/7] updating package lists, 0:0"), std::string::npos) << progress;
  EXPECT_EQ(progress.find("customizing"), progress.rfind("customizing")) << "a phase is shown once";
  EXPECT_NE(progress.find("image " + id_ + " ready: 0 MB in "), std::string::npos) << progress;
  auto build_log = read_file(paths_.images_dir() / (id_ + ".build.log"));
  ASSERT_TRUE(build_log.ok());
  EXPECT_NE(build_log->find("Get:1 http://mirror.example/debian bookworm InRelease\n"), std::string::npos);
  EXPECT_NE(build_log->find("I: success in 0.1 seconds\n"), std::string::npos);  // the unterminated last line
  struct stat st {};
  ASSERT_EQ(::stat((paths_.images_dir() / id_ / kImageJsonFile).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

TEST_F(ImageBuildTest, ConcurrentCallersBuildOnce) {
  auto program = fake("mmdebstrap", "sleep 0.5\n");
  std::vector<std::thread> threads;
  std::vector<std::string> ids(4);
  for (size_t i = 0; i < ids.size(); ++i) {
    threads.emplace_back([&, i] {
      std::ostringstream err;
      Log log(err);
      auto info = ensure_image(paths_, test_recipe(), log, with(program));
      ids[i] = info ? info->id : info.error().message;
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& id : ids) EXPECT_EQ(id, id_);
  EXPECT_EQ(runs(), 1);
}

TEST_F(ImageBuildTest, FailureLeavesNoImageAndShowsTheLastLines) {
  auto program = fake("mmdebstrap", "mkdir -p \"$target/half\"; echo 'E: cannot fetch a package' >&2; exit 25\n");
  auto failed_build = ensure_image(paths_, test_recipe(), log_, with(program));
  ASSERT_FALSE(failed_build.ok());
  const Error& e = failed_build.error();
  EXPECT_EQ(e.kind, ErrorKind::kFailed);
  EXPECT_NE(e.message.find("mmdebstrap exited with status 25"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("\n  E: cannot fetch a package"), std::string::npos) << e.message;
  EXPECT_NE(e.hint.find(paths_.images_dir().string() + "/" + id_ + ".build.log"), std::string::npos) << e.hint;
  EXPECT_FALSE(fs::exists(paths_.images_dir() / id_));
  EXPECT_TRUE(work_dirs().empty());
}

TEST_F(ImageBuildTest, ForceRebuildsAndSwaps) {
  auto program = fake("mmdebstrap");
  ASSERT_TRUE(ensure_image(paths_, test_recipe(), log_, with(program)).ok());
  auto again = ensure_image(paths_, test_recipe(), log_, with(program, true));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(runs(), 2);
  EXPECT_EQ(read_file(again->rootfs / "etc" / "build").value(), "2\n");
  EXPECT_TRUE(work_dirs().empty());
}

TEST_F(ImageBuildTest, UnusableImageIsRebuilt) {
  ASSERT_TRUE(make_dirs(paths_.images_dir() / id_ / kRootfsDir).ok());  // no image.json
  auto built = ensure_image(paths_, test_recipe(), log_, with(fake("mmdebstrap")));
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_EQ(runs(), 1);
  EXPECT_TRUE(find_image(paths_, id_).ok());
}

TEST_F(ImageBuildTest, MissingMmdebstrapIsNotFoundWithInstallHint) {
  auto missing = ensure_image(paths_, test_recipe(), log_, with((root_ / "no-such-mmdebstrap").string()));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(missing.error().hint.find("apt-get install mmdebstrap"), std::string::npos);
}

// An ordinary user builds in mmdebstrap's unshare mode, which needs a subordinate range.
TEST_F(ImageBuildTest, NotRootWithoutASubordinateRangeIsPermissionDenied) {
  auto program = fake("mmdebstrap");
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    std::ostringstream err;
    Log log(err);
    auto result = ensure_image(paths_, test_recipe(), log, with(program));
    bool ok = !result && result.error().kind == ErrorKind::kPermission &&
              result.error().hint.find("tnk setup --user") != std::string::npos;
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(runs(), 0);
}

// tnk killed with SIGKILL mid-build: mmdebstrap goes on and still holds the lock, so the next
// builder waits for it instead of deleting a tree that is being written, then cleans up and builds.
TEST_F(ImageBuildTest, KilledBuilderLeftoversAreRemovedOnceItsChildrenAreGone) {
  auto slow = fake("slow-mmdebstrap", "touch " + (root_ / "slow-started").string() + "; sleep 1.5\n");
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::ostringstream err;
    Log log(err);
    (void)ensure_image(paths_, test_recipe(), log, with(slow));
    ::_exit(0);
  }
  for (int i = 0; i < 200 && !fs::exists(root_ / "slow-started"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(fs::exists(root_ / "slow-started"));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);

  auto started = std::chrono::steady_clock::now();
  auto built = ensure_image(paths_, test_recipe(), log_, with(fake("mmdebstrap")));
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_GT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(500)) << "did not wait";
  EXPECT_NE(err_.str().find("waiting for another tnk process"), std::string::npos) << err_.str();
  EXPECT_EQ(runs(), 2);
  EXPECT_EQ(read_file(built->rootfs / "etc" / "build").value(), "2\n");
  EXPECT_TRUE(work_dirs().empty());
}

TEST(ImageStreaming, LinesArriveFromBothStreamsAndTheExitStatusIsKept) {
  std::vector<std::string> lines;
  auto code = run_streaming({"/bin/sh", "-c", "echo one; echo two >&2; printf three; exit 7"}, {},
                            [&](std::string_view l) { lines.emplace_back(l); });
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 7);
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "two", "three"}));
}

TEST(ImageStreaming, MissingProgramTimeoutAndInheritedFd) {
  auto missing = run_streaming({"/nonexistent/tool"}, {}, [](std::string_view) {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::kNotFound);

  StreamOptions quick;
  quick.timeout = std::chrono::milliseconds(300);
  auto started = std::chrono::steady_clock::now();
  auto slow = run_streaming({"/bin/sleep", "30"}, quick, [](std::string_view) {});
  ASSERT_FALSE(slow.ok());
  EXPECT_NE(slow.error().message.find("did not finish"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));

  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  StreamOptions keep;
  keep.inherit_fd = fds[1];
  std::string probe = "test -e /proc/self/fd/" + std::to_string(fds[1]) + " && echo kept || echo closed";
  std::vector<std::string> lines;
  ASSERT_TRUE(run_streaming({"/bin/sh", "-c", probe}, keep, [&](std::string_view l) { lines.emplace_back(l); }).ok());
  keep.inherit_fd = -1;
  ASSERT_TRUE(run_streaming({"/bin/sh", "-c", probe}, keep, [&](std::string_view l) { lines.emplace_back(l); }).ok());
  EXPECT_EQ(lines, (std::vector<std::string>{"kept", "closed"}));
  ::close(fds[0]);
  ::close(fds[1]);
}

// A process of the program's that is still running (empty when it has ended or is a zombie).
bool still_runs(pid_t pid) {
  auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  return stat.ok() && stat->find(") Z ") == std::string::npos;
}

bool ends_within(pid_t pid, std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (still_runs(pid) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return !still_runs(pid);
}

// mmdebstrap killed alone (by hand, or by the OOM killer) left its workers running for minutes, holding
// the build lock (found by tests/faults/inject.py --image-builds, ns seeds 7 and 9).
TEST(ImageStreaming, WhatAKilledProgramForkedEndsWithIt) {
  std::vector<std::string> lines;
  auto code = run_streaming({"/bin/sh", "-c", "sleep 30 & echo $!; kill -9 $$"}, {},
                            [&](std::string_view l) { lines.emplace_back(l); });
  ASSERT_TRUE(code.ok()) << code.error().message;
  EXPECT_EQ(*code, 128 + SIGKILL);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(ends_within(std::stoi(lines[0]), std::chrono::seconds(5))) << "the program's sleep still runs";
}

// Ctrl-C or a SIGTERM to tnk reaches the program's whole group (its own, so not from the terminal), and
// the build fails saying why instead of tnk dying with the program left running.
TEST(ImageStreaming, ASignalToTnkEndsTheProgramAndWhatItForked) {
  pid_t worker = -1;
  auto code = run_streaming({"/bin/sh", "-c", "sleep 30 & echo $!; wait"}, {}, [&](std::string_view l) {
    worker = std::stoi(std::string(l));
    ::kill(::getpid(), SIGTERM);  // caught while the program runs
  });
  ASSERT_FALSE(code.ok());
  EXPECT_NE(code.error().message.find("stopped: tnk got SIGTERM"), std::string::npos) << code.error().message;
  ASSERT_GT(worker, 0);
  EXPECT_TRUE(ends_within(worker, std::chrono::seconds(5))) << "the program's sleep still runs";
}

TEST(ImageProgress, PhasesOnceEach) {
  ProgressFilter filter;
  std::vector<std::string> shown;
  for (const char* line :
       {"I: chroot architecture amd64 is equal to the host's architecture", "I: automatically chosen format: directory",
        "I: running apt-get update...", "Get:1 http://m bookworm InRelease [151 kB]",
        "I: downloading packages with apt...", "I: extracting archives...", "I: installing essential packages...",
        "I: installing remaining packages inside the chroot...", "Setting up git (1:2.39.5-0+deb12u2) ...",
        "I: running --customize-hook in shell: sh -c 'chroot \"$1\" groupadd'",
        "I: running --customize-hook in shell: sh -c 'echo sandbox'", "I: cleaning package lists and apt cache...",
        "I: success in 51.8 seconds"}) {
    if (auto text = filter.feed(line)) shown.push_back("[" + std::to_string(filter.phase()) + "] " + *text);
  }
  EXPECT_EQ(shown, (std::vector<std::string>{"[1] updating package lists", "[2] downloading packages",
                                             "[3] unpacking essential packages", "[4] installing essential packages",
                                             "[5] installing the other packages",
                                             "[6] customizing (user, sudo, /etc, workspace)", "[7] cleaning up"}));
  EXPECT_EQ(ProgressFilter::kPhases, 7);
}

}  // namespace
}  // namespace tnk::image
