#include "supervisor/ssh_host_signature.h"

#include <memory>

#include "net/ssh_wire.h"
#include "supervisor/openssl_library.h"

namespace tnk::supervisor {
namespace {

constexpr std::string_view kEd25519 = "ssh-ed25519";
constexpr size_t kEd25519KeyBytes = 32, kEd25519SignatureBytes = 64;

// The one field after the type name: the raw key or signature, when `blob` is an Ed25519 one of `size` bytes.
bool ed25519_field(std::string_view blob, size_t size, std::string_view& out) {
  net::SshReader reader(blob);
  std::string_view type;
  return reader.string(type) && type == kEd25519 && reader.string(out) && out.size() == size && reader.done();
}

}  // namespace

bool verify_host_signature(std::string_view host_key, std::string_view signature, std::string_view data) {
  std::string_view key, sig;
  if (!ed25519_field(host_key, kEd25519KeyBytes, key) || !ed25519_field(signature, kEd25519SignatureBytes, sig)) {
    return false;
  }
  auto lib = openssl();
  if (!lib) return false;
  const OpenSsl& ssl = **lib;
  std::unique_ptr<EVP_PKEY, decltype(ssl.EVP_PKEY_free)> pkey(
      ssl.EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(key.data()),
                                      key.size()),
      ssl.EVP_PKEY_free);
  std::unique_ptr<EVP_MD_CTX, decltype(ssl.EVP_MD_CTX_free)> ctx(ssl.EVP_MD_CTX_new(), ssl.EVP_MD_CTX_free);
  if (!pkey || !ctx) return false;
  // Ed25519 signs the message itself: no digest is named.
  if (ssl.EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, pkey.get()) != 1) return false;
  bool valid = ssl.EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                                    reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
  ssl.ERR_clear_error();
  return valid;
}

}  // namespace tnk::supervisor
