// The one place that runs limactl (through core/subprocess.h, argv arrays only). An interface, so
// that the lifecycle code can be driven by a recording fake in tests.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string_view>

#include "backend/lima/instances.h"
#include "backend/lima/plan.h"
#include "core/subprocess.h"

namespace tnk::lima {

// Chunks of a streamed run's output: stream 1 is stdout, 2 is stderr.
using OutputSink = std::function<void(int stream, std::string_view bytes)>;

class Limactl {
 public:
  virtual ~Limactl() = default;
  // Runs to the end with stdout and stderr captured (stdin inherited).
  virtual Result<ProcessResult> capture(const Argv& argv, std::chrono::milliseconds timeout) = 0;
  // Runs with stderr inherited (progress the user sees) and stdout captured.
  virtual Result<ProcessResult> visible(const Argv& argv, std::chrono::milliseconds timeout) = 0;
  // Runs with the terminal: stdin, stdout and stderr inherited; SIGINT and SIGQUIT go to limactl
  // (and through it to the guest), not to tnk. Returns the exit status (128+n when killed).
  virtual Result<int> interactive(const Argv& argv) = 0;
  // Runs with stdin from /dev/null and both outputs handed to `sink` as they come.
  virtual Result<int> stream(const Argv& argv, const OutputSink& sink) = 0;
};

std::unique_ptr<Limactl> system_limactl();

// `limactl list --format json`, parsed. An error names limactl and says what to do.
Result<std::vector<Instance>> list_instances(Limactl& limactl);

// The last `max_lines` non-empty lines of a command's stderr, for error messages.
std::string tail_lines(const std::string& text, size_t max_lines);

}  // namespace tnk::lima
