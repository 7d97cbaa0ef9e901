#include "backend/vm/handed_files.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

#include "backend/vm/processes.h"

namespace tnk::vm {
namespace {

Result<UniqueFd> open_file(const std::filesystem::path& path, int flags) {
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return sys_error(errno, "opening " + path.string() + " for QEMU");
  return fd;
}

}  // namespace

Result<std::vector<UniqueFd>> open_handed_files(const vm::VmPlan& plan, std::vector<std::pair<int, int>>& numbers) {
  namespace fd = vm::handed_fd;
  const vm::QemuConfig& q = plan.qemu;
  std::vector<UniqueFd> fds;
  auto hand = [&](Result<UniqueFd> opened, int number) -> Status {
    if (!opened) return std::move(opened).error();
    numbers.emplace_back(opened->get(), number);
    fds.push_back(std::move(*opened));
    return ok_status();
  };
  TNK_RETURN_IF_ERROR(hand(listen_unix(q.qmp_socket), fd::kQmp));
  if (!q.qmp_events_socket.empty()) TNK_RETURN_IF_ERROR(hand(listen_unix(q.qmp_events_socket), fd::kQmpEvents));
  TNK_RETURN_IF_ERROR(hand(listen_unix(q.agent_socket), fd::kAgent));
  TNK_RETURN_IF_ERROR(hand(connect_unix(q.serial_socket), fd::kSerial));
  if (!q.virtiofs_socket.empty()) TNK_RETURN_IF_ERROR(hand(connect_unix(q.virtiofs_socket), fd::kVirtiofs));
  if (!q.git_dir_socket.empty()) TNK_RETURN_IF_ERROR(hand(connect_unix(q.git_dir_socket), fd::kGitDir));
  TNK_RETURN_IF_ERROR(hand(open_file(plan.files.disk, O_RDWR | O_NOFOLLOW), fd::kDisk));
  TNK_RETURN_IF_ERROR(hand(open_file(plan.files.disk, O_RDONLY | O_NOFOLLOW), fd::kDiskRead));
  TNK_RETURN_IF_ERROR(hand(open_file(plan.files.base_disk_link, O_RDONLY | O_NOFOLLOW), fd::kBaseDisk));
  TNK_RETURN_IF_ERROR(hand(open_file(q.kernel, O_RDONLY), fd::kKernel));
  return fds;
}

std::optional<gid_t> kvm_group(bool kvm) {
  struct stat st {};
  if (!kvm || ::stat("/dev/kvm", &st) != 0 || st.st_gid == 0) return std::nullopt;
  return st.st_gid;
}

}  // namespace tnk::vm
