#include "backend/vm/qmp_events.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "backend/vm/processes.h"

namespace tnk::vm {
namespace {

using namespace std::chrono_literals;

TEST(QmpEvents, ADiskFullIsTheNospaceIoErrorOrAGuestPausedForOne) {
  EXPECT_EQ(QmpEvents::disk_full_reason(
                R"({"timestamp":{"seconds":1,"microseconds":2},"event":"BLOCK_IO_ERROR","data":{"device":"root",)"
                R"("node-name":"#block123","operation":"write","action":"stop","nospace":true,)"
                R"("reason":"No space left on device"}})"),
            "No space left on device");
  EXPECT_EQ(QmpEvents::disk_full_reason(R"({"return":{"status":"io-error","running":false}})"),
            "No space left on device");
  // Not a full disk: another I/O error (reported to the guest), a running guest, a STOP alone, junk.
  EXPECT_EQ(QmpEvents::disk_full_reason(
                R"({"event":"BLOCK_IO_ERROR","data":{"device":"root","operation":"write","action":"report",)"
                R"("nospace":false,"reason":"Input/output error"}})"),
            "");
  EXPECT_EQ(QmpEvents::disk_full_reason(R"({"return":{"status":"running","running":true}})"), "");
  EXPECT_EQ(QmpEvents::disk_full_reason(R"({"event":"STOP"})"), "");
  EXPECT_EQ(QmpEvents::disk_full_reason("{not json"), "");
  EXPECT_EQ(QmpEvents::disk_full_reason(R"({"event":"BLOCK_IO_ERROR","data":7})"), "");
}

// A QMP server that greets, answers, then sends the event QEMU sends when a write finds its host file
// system full: the watcher calls back once and tells QEMU to quit.
TEST(QmpEvents, TheWatcherReportsAFullDiskOnceAndTellsQemuToQuit) {
  char dir_template[] = "/tmp/qmpev-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  std::filesystem::path socket = std::filesystem::path(dir_template) / "qmpev.sock";
  auto listener = listen_unix(socket);
  ASSERT_TRUE(listener) << listener.error().message;
  std::string received;
  std::thread qemu([&] {
    UniqueFd conn(::accept(listener->get(), nullptr, nullptr));
    ASSERT_TRUE(conn.valid());
    auto say = [&](const std::string& line) { ::send(conn.get(), line.data(), line.size(), MSG_NOSIGNAL); };
    say("{\"QMP\":{\"version\":{},\"capabilities\":[]}}\n");
    say("{\"return\":{}}\n{\"return\":{\"status\":\"running\",\"running\":true}}\n");
    say("{\"event\":\"BLOCK_IO_ERROR\",\"data\":{\"device\":\"root\",\"operation\":\"write\",\"action\":\"stop\","
        "\"nospace\":true,\"reason\":\"No space left on device\"}}\n{\"event\":\"STOP\"}\n");
    char buf[1024];
    for (ssize_t n; (n = ::recv(conn.get(), buf, sizeof buf, 0)) > 0;) {
      received.append(buf, static_cast<size_t>(n));
      if (received.find("quit") != std::string::npos) break;
    }
  });
  std::atomic<int> calls{0};
  std::string reason;
  auto events = QmpEvents::watch(
      socket, 5s, [] { return false; },
      [&](const std::string& why) {
        reason = why;
        ++calls;
      });
  ASSERT_TRUE(events) << events.error().message;
  qemu.join();
  events->reset();  // joins the watcher: every callback has run
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(reason, "No space left on device");
  EXPECT_NE(received.find("qmp_capabilities"), std::string::npos) << received;
  EXPECT_NE(received.find("query-status"), std::string::npos) << received;
  EXPECT_NE(received.find("\"quit\""), std::string::npos) << received;
  std::filesystem::remove_all(dir_template);
}

// A QEMU that is gone: the watcher stops retrying at once, not after its timeout.
TEST(QmpEvents, ConnectingGivesUpWhenQemuHasExited) {
  auto started = std::chrono::steady_clock::now();
  auto events = QmpEvents::watch(
      "/tmp/qmpev-missing-dir/qmpev.sock", 10s, [] { return true; }, [](const std::string&) {});
  ASSERT_FALSE(events);
  EXPECT_NE(events.error().message.find("/tmp/qmpev-missing-dir/qmpev.sock"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
}

}  // namespace
}  // namespace tnk::vm
