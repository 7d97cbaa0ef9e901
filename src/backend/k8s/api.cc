#include "backend/k8s/api.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "core/files.h"
#include "core/subprocess.h"
#include "core/unique_fd.h"
#include "core/unix_address.h"
#include "inference/http_client.h"

namespace tnk::k8s {

using json = nlohmann::json;

namespace {

constexpr const char* kSocketName = "api.sock";
constexpr const char* kOutputName = "kubectl.log";
constexpr std::chrono::seconds kProxyStartTimeout{15};
constexpr std::chrono::seconds kRequestTimeout{30};

const char* const kKubectlHint =
    "the k8s backend reaches the cluster through kubectl: install it (Debian's kubernetes-client, "
    "scripts/install-deps.sh) or put it on PATH";

Result<std::filesystem::path> private_dir() {
  std::string templ = (std::filesystem::temp_directory_path() / "tnk-kubectl-XXXXXX").string();
  if (::mkdtemp(templ.data()) == nullptr) return sys_error(errno, "cannot make a directory for kubectl proxy");
  return std::filesystem::path(templ);
}

std::vector<std::string> proxy_argv(const KubeAccess& access, const std::filesystem::path& socket) {
  std::vector<std::string> argv = {"kubectl"};
  if (access.kubeconfig) argv.insert(argv.end(), {"--kubeconfig", access.kubeconfig->string()});
  if (access.context) argv.insert(argv.end(), {"--context", *access.context});
  argv.insert(argv.end(), {"proxy", "--unix-socket=" + socket.string()});
  return argv;
}

Result<UniqueFd> connect_socket(const std::filesystem::path& socket) {
  TNK_ASSIGN_OR_RETURN(sockaddr_un address, unix_address(socket, "kubectl proxy's socket"));
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error(errno, "cannot make a socket for kubectl proxy");
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    return sys_error(errno, "cannot reach kubectl proxy at " + socket.string());
  }
  return fd;
}

// kubectl's own words, for an error: the last lines of what it printed.
std::string kubectl_said(const std::filesystem::path& output) {
  auto text = read_file(output);
  std::string said = text ? *text : "";
  said.erase(said.find_last_not_of(" \n\r\t") + 1);
  return said.empty() ? "it printed nothing" : said.substr(said.size() > 800 ? said.size() - 800 : 0);
}

void stop_proxy(pid_t pid) {
  ::kill(pid, SIGTERM);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

std::string api_message(const ApiAnswer& answer) {
  std::string message = answer.body.is_object() ? answer.body.value("message", "") : "";
  if (message.empty()) message = answer.text.substr(0, 400);
  message.erase(message.find_last_not_of(" \n\r\t") + 1);
  return (message.empty() ? "no message" : message) + " (HTTP " + std::to_string(answer.status) + ")";
}

Result<std::unique_ptr<ClusterApi>> ClusterApi::connect(const KubeAccess& access) {
  TNK_ASSIGN_OR_RETURN(std::filesystem::path dir, private_dir());
  const std::filesystem::path socket = dir / kSocketName;
  const std::filesystem::path output = dir / kOutputName;
  UniqueFd out(::open(output.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!out.valid() || !null.valid()) {
    int err = errno;
    std::filesystem::remove_all(dir);
    return sys_error(err, "cannot open " + output.string());
  }
  const int out_fd = out.get(), null_fd = null.get();
  auto started = start_process(proxy_argv(access, socket), [out_fd, null_fd] {
    if (::dup2(null_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(out_fd, 2) < 0) return errno;
    return 0;
  });
  if (!started) {
    std::filesystem::remove_all(dir);
    if (started.error().sys_errno == ENOENT) return failed("kubectl is not installed", kKubectlHint);
    return started.error().with_hint(kKubectlHint);
  }
  std::unique_ptr<ClusterApi> api(new ClusterApi(*started, dir));
  const auto deadline = std::chrono::steady_clock::now() + kProxyStartTimeout;
  while (!connect_socket(socket).ok()) {
    int status = 0;
    if (::waitpid(*started, &status, WNOHANG) == *started) {
      api->proxy_ = -1;  // reaped: nothing to stop
      return failed("kubectl could not reach the cluster (`kubectl proxy` exited " +
                        std::to_string(exit_code_from_wait_status(status)) + "): " + kubectl_said(output),
                    "check k8s.kubeconfig and k8s.context in tnk.toml, and `kubectl cluster-info`");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return failed("kubectl proxy did not start serving within " + std::to_string(kProxyStartTimeout.count()) +
                        " s: " + kubectl_said(output),
                    "check `kubectl cluster-info`");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return api;
}

ClusterApi::~ClusterApi() {
  if (proxy_ > 0) stop_proxy(proxy_);
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

Result<ApiAnswer> ClusterApi::call(const std::string& method, const std::string& path, const json* body,
                                   const std::string& content_type) {
  const std::string what = method + " " + path;
  TNK_ASSIGN_OR_RETURN(UniqueFd fd, connect_socket(dir_ / kSocketName));
  std::string payload = body ? body->dump() : "";
  std::string request = method + " " + path +
                        " HTTP/1.1\r\nHost: localhost\r\nUser-Agent: tnk\r\nAccept: application/json\r\n"
                        "Accept-Encoding: identity\r\nConnection: close\r\n";
  if (body)
    request += "Content-Type: " + content_type + "\r\nContent-Length: " + std::to_string(payload.size()) + "\r\n";
  request += "\r\n" + payload;
  auto answered = inference::http_exchange(fd.get(), request, what, kRequestTimeout);
  if (!answered) return answered.error().with_hint("the cluster's API server did not answer: `kubectl cluster-info`");
  ApiAnswer answer{answered->status, json::parse(answered->body, nullptr, false), ""};
  if (answer.body.is_discarded()) {
    answer.body = nullptr;
    answer.text = std::move(answered->body);
  }
  return answer;
}

Error ClusterApi::refused(const std::string& doing, const ApiAnswer& answer) const {
  std::string hint = "docs/k8s-backend.md";
  if (answer.status == 401 || answer.status == 403) {
    hint = "the kubeconfig's user may not do this: ask the cluster's admin for the role docs/k8s-backend.md names";
  } else if (answer.status >= 500) {
    hint =
        "the cluster's API server could not be reached or failed: `kubectl cluster-info` (k8s.kubeconfig and "
        "k8s.context in tnk.toml)";
  } else if (answer.status == 404) {
    hint =
        "is agent-sandbox installed on the cluster? `kubectl get crd sandboxes.agents.x-k8s.io` (docs/k8s-backend.md)";
  }
  const std::string verb = answer.status >= 500 ? "the cluster could not " : "the cluster refused to ";
  return failed(verb + doing + ": " + api_message(answer), hint);
}

Result<std::optional<json>> ClusterApi::get(const std::string& path) {
  TNK_ASSIGN_OR_RETURN(ApiAnswer answer, call("GET", path));
  if (answer.status == 404 && answer.body.value("kind", "") == "Status") return std::optional<json>();
  if (answer.status / 100 != 2) return refused("read " + path, answer);
  return std::optional<json>(std::move(answer.body));
}

Result<bool> ClusterApi::create(const std::string& path, const json& object) {
  TNK_ASSIGN_OR_RETURN(ApiAnswer answer, call("POST", path, &object));
  if (answer.status == 409) return false;
  if (answer.status / 100 != 2) {
    return refused("create " + object.value("kind", "an object") + " " + object["metadata"].value("name", ""), answer);
  }
  return true;
}

Status ClusterApi::merge_patch(const std::string& path, const json& patch) {
  TNK_ASSIGN_OR_RETURN(ApiAnswer answer, call("PATCH", path, &patch, "application/merge-patch+json"));
  if (answer.status / 100 != 2) return refused("change " + path, answer);
  return ok_status();
}

Result<bool> ClusterApi::remove(const std::string& path) {
  TNK_ASSIGN_OR_RETURN(ApiAnswer answer, call("DELETE", path));
  if (answer.status == 404) return false;
  if (answer.status / 100 != 2) return refused("delete " + path, answer);
  return true;
}

}  // namespace tnk::k8s
