#include "supervisor/openssl_library.h"

#include <dlfcn.h>

#include <string>

namespace tnk::supervisor {
namespace {

// Debian 12's libssl3 and Debian 13's libssl3t64 both install this name.
constexpr const char* kLibrary = "libssl.so.3";

// dlsym on libssl's handle also searches its dependencies: ERR_* and X509_* come from libcrypto.
template <typename Function>
Status bind(void* handle, Function& slot, const char* name) {
  slot = reinterpret_cast<Function>(::dlsym(handle, name));
  if (slot != nullptr) return ok_status();
  return failed(std::string(kLibrary) + " has no function " + name, "install OpenSSL 3 (the Debian package libssl3)");
}

Result<OpenSsl> load() {
  // RTLD_LOCAL: its names stay out of the process's global scope. Never closed: its contexts live on.
  void* handle = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return failed(std::string("cannot load OpenSSL (") + kLibrary +
                      "), which credential routes use for TLS: " + (why ? why : "unknown error"),
                  "install the Debian package libssl3 (libssl3t64 on Debian 13)");
  }
  OpenSsl lib;
#define TNK_OPENSSL_BIND(name) TNK_RETURN_IF_ERROR(bind(handle, lib.name, #name));
  TNK_OPENSSL_FUNCTIONS(TNK_OPENSSL_BIND)
#undef TNK_OPENSSL_BIND
  return lib;
}

}  // namespace

Result<const OpenSsl*> openssl() {
  static const Result<OpenSsl> loaded = load();  // thread-safe, once
  if (!loaded) return loaded.error();
  return &*loaded;
}

}  // namespace tnk::supervisor
