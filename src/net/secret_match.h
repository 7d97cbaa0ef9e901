// Whether a secret starts at a position of a text, in any of the forms a server writes it in when it
// echoes it inside JSON or a URL: each of its bytes as itself, as a JSON escape (`\/`, `\"`, `\\`,
// `\n`, ..., or `\u002f` with hex digits in either case) or percent-encoded (`%2F`, `%2f`), each byte
// independently (encoders differ in which bytes they escape). Pure: the Redactor (net/redactor.h)
// runs it over a stream.
#pragma once

#include <cstddef>
#include <string_view>

namespace tnk::net {

struct SecretMatch {
  enum Kind {
    kNone,   // no occurrence starts here
    kWhole,  // one does, `length` bytes long
    kCut,    // the text ends inside what could still become one: wait for more before deciding
  };
  Kind kind = kNone;
  std::size_t length = 0;
};

SecretMatch match_secret(std::string_view text, std::size_t at, std::string_view secret);

}  // namespace tnk::net
