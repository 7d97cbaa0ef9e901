// tnk.toml's [[routes]]: every key read and checked with <file>:<line>:<col>, and each source of a
// credential resolved on the host (env, file with its mode checked, cmd as an argv) with errors that name
// the route and never quote the credential.
#include <sys/stat.h>

#include "config/config_show.h"
#include "config/route_source.h"
#include "config_test_util.h"
#include "net/ssh_wire.h"

namespace tnk::testing_config {
namespace {

constexpr const char* kGithub = R"([[routes]]
name = "github"
upstream = "https://github.com"
header = "Authorization: {basic:x-access-token}"
source = "env:GH_TOKEN"
methods = ["GET", "POST"]
paths = ["/me/"]
ca_file = "~/ca.pem"
)";

class RoutesTest : public ConfigTest {
 protected:
  std::string load_error(const std::string& text) {
    write_config(text);
    auto config = load();
    EXPECT_FALSE(config.ok());
    return config.ok() ? "" : config.error().message;
  }
  Result<std::string> credential(const std::string& source) {
    write_config(
        "[[routes]]\nname = \"r\"\nupstream = \"https://h.example\"\nheader = \"X-Key: {credential}\"\n"
        "source = \"" +
        source + "\"\n");
    Config config = load_ok();
    return resolve_route_credential(config, config.routes.at(0), env_, home());
  }
};

TEST_F(RoutesTest, EveryKeyIsRead) {
  write_config(std::string("server_port = 9000\n") + kGithub);
  Config c = load_ok();
  ASSERT_EQ(c.routes.size(), 1u);
  const RouteSetting& r = c.routes[0];
  EXPECT_EQ(r.name, "github");
  EXPECT_EQ(r.host, "github.com");
  EXPECT_EQ(r.port, 443);
  EXPECT_EQ(r.header.name, "Authorization");
  EXPECT_EQ(r.header.value, "{basic:x-access-token}");
  EXPECT_EQ(r.source, "env:GH_TOKEN");
  EXPECT_EQ(r.methods, (std::vector<std::string>{"GET", "POST"}));
  EXPECT_EQ(r.paths, (std::vector<std::string>{"/me/"}));
  EXPECT_EQ(r.ca_file, home() + "/ca.pem");
  EXPECT_EQ(r.line, 2);
  EXPECT_EQ(err(), "");
}

TEST_F(RoutesTest, UpstreamWithPortAndNoRules) {
  write_config(
      "[[routes]]\nname = \"api-1\"\nupstream = \"https://Api.Example:8443/\"\n"
      "header = \"Authorization: Bearer {credential}\"\nsource = \"cmd:gh auth token\"\n");
  Config c = load_ok();
  ASSERT_EQ(c.routes.size(), 1u);
  EXPECT_EQ(c.routes[0].host, "api.example");
  EXPECT_EQ(c.routes[0].port, 8443);
  EXPECT_TRUE(c.routes[0].methods.empty());
  EXPECT_TRUE(c.routes[0].paths.empty());
}

TEST_F(RoutesTest, BadValuesNameTheLineAndTheKey) {
  const std::string route =
      "[[routes]]\nname = \"r\"\nheader = \"Authorization: Bearer {credential}\"\nsource = \"env:T\"\n";
  struct Case {
    std::string text, expected;
  } cases[] = {
      {route + "upstream = \"http://h.example\"\n", ":5:12: key 'routes.upstream' must be an https:// URL"},
      {route + "upstream = \"https://h.example/api\"\n",
       "key 'routes.upstream' must be an https:// URL without a path"},
      {route + "upstream = \"https://u:p@h.example\"\n", "without user info"},
      {"[[routes]]\nname = \"a b\"\nupstream = \"https://h\"\n", ":2:8: key 'routes.name' must be letters"},
      {"[[routes]]\nname = \"r\"\nupstream = \"https://h\"\nheader = \"Host: {credential}\"\nsource = \"env:T\"\n",
       "the header Host is set by tnk itself"},
      {"[[routes]]\nname = \"r\"\nupstream = \"https://h\"\nheader = \"X-Key: static\"\nsource = \"env:T\"\n",
       "holds no {credential} or {basic:USER}"},
      {"[[routes]]\nname = \"r\"\nupstream = \"https://h\"\nheader = \"X: {credential}\"\nsource = \"sh:x\"\n",
       "key 'routes.source' must be env:NAME, file:PATH or cmd:PROGRAM"},
      {route + "upstream = \"https://h\"\nmethods = [\"get\"]\n", "key 'routes.methods' must be a list of upper-case"},
      {route + "upstream = \"https://h\"\npaths = [\"/a/../b\"]\n", "key 'routes.paths' must be a list of path"},
      {route + "upstream = \"https://h\"\nmethod = [\"GET\"]\n", "unknown key 'routes.method' (a route has name,"},
      {"[[routes]]\nname = \"r\"\n", ":1:1: a route needs the key 'upstream'"},
      {"routes = 3\n", "key 'routes' must be an array of tables"},
      {route + "upstream = \"https://h\"\n" + route + "upstream = \"https://h\"\n",
       "the route name 'r' is used twice (also on line 1)"},
  };
  for (const Case& c : cases) {
    std::string message = load_error(c.text);
    EXPECT_NE(message.find(file()), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.text << "\n" << message;
  }
}

TEST_F(RoutesTest, EnvSourceAndItsError) {
  env_.set("T", "  secret-value\n");
  auto ok = credential("env:T");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(*ok, "secret-value");
  env_.unset("T");
  auto missing = credential("env:T");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, file() + ":1: route 'r': source env:T: the variable T is not set (or empty)");
}

TEST_F(RoutesTest, FileSourceRefusesAFileOthersCanRead) {
  std::string path = home() + "/token";
  ASSERT_TRUE(write_file_atomic(path, "file-secret\n").ok());
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  auto open_file = credential("file:~/token");
  ASSERT_FALSE(open_file.ok());
  EXPECT_NE(open_file.error().message.find("can be read or changed by others (mode 0644)"), std::string::npos);
  EXPECT_EQ(open_file.error().hint, "chmod 600 " + path);
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  auto ok = credential("file:~/token");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(*ok, "file-secret");
  auto missing = credential("file:~/nothing");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("route 'r': source file:~/nothing: cannot open"), std::string::npos);
}

TEST_F(RoutesTest, CommandSourceRunsAnArgvWithoutAShell) {
  auto ok = credential("cmd:printf %s cmd-secret");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(*ok, "cmd-secret");
  auto shell = credential("cmd:echo a;b");  // no shell: one argument "a;b"
  ASSERT_TRUE(shell.ok());
  EXPECT_EQ(*shell, "a;b");
  auto failing = credential("cmd:false");
  ASSERT_FALSE(failing.ok());
  EXPECT_NE(failing.error().message.find("route 'r': source cmd:false: the command exited with status 1"),
            std::string::npos);
  auto control = credential("cmd:printf a\\\\001b");  // printf writes byte 1
  ASSERT_FALSE(control.ok());
  EXPECT_NE(control.error().message.find("holds control characters"), std::string::npos);
}

TEST_F(RoutesTest, ResolvedRoutesCarryTheRenderedHeaderAndWhatToMask) {
  write_config(kGithub);
  env_.set("GH_TOKEN", "tok");
  Config c = load_ok();
  auto routes = resolve_routes(c, env_, home());
  ASSERT_TRUE(routes.ok()) << routes.error().message;
  ASSERT_EQ(routes->size(), 1u);
  EXPECT_EQ((*routes)[0].header_name, "Authorization");
  EXPECT_EQ((*routes)[0].header_value, "Basic eC1hY2Nlc3MtdG9rZW46dG9r");  // base64("x-access-token:tok")
  EXPECT_EQ((*routes)[0].secrets, (std::vector<std::string>{"tok", "eC1hY2Nlc3MtdG9rZW46dG9r"}));
}

TEST_F(RoutesTest, ConfigShowListsRoutesWithoutCredentials) {
  write_config(kGithub);
  env_.set("GH_TOKEN", "tok-never-shown");
  Config c = load_ok();
  std::string text = config_show_text(c);
  EXPECT_NE(text.find("routes.github"), std::string::npos) << text;
  EXPECT_NE(text.find("https://github.com"), std::string::npos) << text;
  EXPECT_NE(text.find("from env:GH_TOKEN, only GET POST /me/"), std::string::npos) << text;
  nlohmann::json json = config_to_json(c);
  ASSERT_EQ(json["routes"].size(), 1u);
  EXPECT_EQ(json["routes"][0]["name"], "github");
  EXPECT_EQ(json["routes"][0]["header"], "Authorization");
  EXPECT_EQ(json.dump().find("tok-never-shown"), std::string::npos);
  EXPECT_EQ(text.find("tok-never-shown"), std::string::npos);
}

// [[ssh_routes]] (docs/network.md, "SSH routes"): keys as .pub lines, read into wire blobs.
constexpr const char* kHostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINdamAGCsQq31Uv+08lkBzoO4XLz2qYjJa8CGmj3B1Ea";

TEST_F(RoutesTest, SshRoutesAreReadAndChecked) {
  write_config(std::string("[[ssh_routes]]\nhost = \"Git.Example\"\nport = 2222\nhost_key = \"") + kHostKey +
               "\"\nidentities = [\"" + kHostKey + " me@host\"]\n[[ssh_routes]]\nhost = \"192.0.2.7\"\nhost_key = \"" +
               kHostKey + "\"\nidentities = [\"" + kHostKey + "\"]\n");
  Config c = load_ok();
  ASSERT_EQ(c.ssh_routes.size(), 2u);
  EXPECT_EQ(c.ssh_routes[0].host, "git.example");
  EXPECT_EQ(c.ssh_routes[0].port, 2222);
  EXPECT_EQ(c.ssh_routes[1].port, 22);
  EXPECT_EQ(net::ssh_blob_type(c.ssh_routes[0].host_key), "ssh-ed25519");
  EXPECT_EQ(c.ssh_routes[0].identities, std::vector<std::string>{c.ssh_routes[0].host_key});

  const std::string key = std::string("host_key = \"") + kHostKey + "\"\n";
  const std::string ids = std::string("identities = [\"") + kHostKey + "\"]\n";
  struct Case {
    std::string text, expected;
  } cases[] = {
      {"host = \"*.example\"\n" + key + ids, "key 'ssh_routes.host' must be a host name or IPv4 address"},
      {"host = \"h\"\nport = 0\n" + key + ids, "key 'ssh_routes.port' must be a port number (1-65535)"},
      {"host = \"h\"\n" + ids, "the server's host key is needed"},
      {"host = \"h\"\nhost_key = \"ssh-rsa AAAA\"\n" + ids, "key 'ssh_routes.host_key' must be a public key"},
      {"host = \"h\"\n" + key, "key 'ssh_routes.identities' must be a non-empty list"},
      {"host = \"h\"\n" + key + "identities = [\"nope\"]\n", "key 'ssh_routes.identities' must be a list"},
      {"host = \"h\"\nuser = \"git\"\n" + key + ids, "unknown key 'ssh_routes.user'"},
  };
  for (const Case& c2 : cases) {
    EXPECT_NE(load_error("[[ssh_routes]]\n" + c2.text).find(c2.expected), std::string::npos) << c2.text;
  }
  EXPECT_NE(load_error("[[ssh_routes]]\nhost = \"h\"\n" + key + ids + "[[ssh_routes]]\nhost = \"h\"\n" + key + ids)
                .find("the SSH route h:22 is listed twice"),
            std::string::npos);
}

}  // namespace
}  // namespace tnk::testing_config
