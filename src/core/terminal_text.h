// Text from a sandbox or guest made safe to print on the user's terminal: tnk's own messages may
// carry such text (provisioning output, the proxy's answer, the bridge's error words), and a control
// sequence in it could set the clipboard (OSC 52), the title, or make the terminal answer into the
// shell's input. Session output of `tnk sandbox exec/shell` is not passed through here (SECURITY.md).
#pragma once

#include <string>
#include <string_view>

namespace tnk {

// Returns `text` with every C0 control byte except '\n' and '\t', DEL, every C1 control (U+0080 to
// U+009F), and every byte that is not part of valid UTF-8 (a lone 8-bit C1 byte, a cut sequence)
// replaced by its visible escape `\xNN`. An ESC sequence thus loses its ESC and prints as text.
// Valid UTF-8 otherwise passes unchanged; the result passes unchanged through this again.
std::string terminal_safe(std::string_view text);

// A path from a sandbox as one line of a listing (`tnk sandbox diff`, `apply`), quoted as git's
// core.quotePath quotes it: a path with a control byte (a newline could print a line of its choosing),
// DEL, '"', '\\' or a byte that is not valid, printable UTF-8 is written in double quotes with C escapes
// (\\n, \\t, \\", \\\\) and octal ones for the rest; any other path is printed as it is.
std::string quoted_path(std::string_view path);

}  // namespace tnk
