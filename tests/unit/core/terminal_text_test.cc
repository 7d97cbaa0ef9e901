// terminal_safe: sandbox text printed by tnk carries no control sequence the terminal would obey
// (security review L7), while ordinary text, including UTF-8, is printed as it is.
#include "core/terminal_text.h"

#include <gtest/gtest.h>

namespace tnk {
namespace {

TEST(TerminalSafeTest, KeepsPlainTextNewlinesTabsAndUtf8) {
  EXPECT_EQ(terminal_safe("ok: line\n\tindented"), "ok: line\n\tindented");
  EXPECT_EQ(terminal_safe("gr\xc3\xbc\xc3\x9f dich \xe2\x9c\x93 \xf0\x9f\x98\x80"),
            "gr\xc3\xbc\xc3\x9f dich \xe2\x9c\x93 \xf0\x9f\x98\x80");
  EXPECT_EQ(terminal_safe("\xc2\xa0nbsp"), "\xc2\xa0nbsp");  // U+00A0 is not a C1 control
}

TEST(TerminalSafeTest, EscapesClearScreen) { EXPECT_EQ(terminal_safe("\x1b[2Jgone"), "\\x1b[2Jgone"); }

TEST(TerminalSafeTest, EscapesOsc52ClipboardWriteAndTitle) {
  EXPECT_EQ(terminal_safe("\x1b]52;c;ZWNobyBwd25lZA==\x07"), "\\x1b]52;c;ZWNobyBwd25lZA==\\x07");
  EXPECT_EQ(terminal_safe("\x1b]0;title\x1b\\"), "\\x1b]0;title\\x1b\\");
}

TEST(TerminalSafeTest, EscapesC1ControlsInUtf8AndAsSingleBytes) {
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "2J"),
            "\\xc2\\x9b2J");  // CSI as U+009B
  EXPECT_EQ(terminal_safe("\x9b"
                          "2J"),
            "\\x9b2J");  // 8-bit CSI, not UTF-8
  EXPECT_EQ(terminal_safe("\xc2\x9d"
                          "52;c;x\xc2\x9c"),
            "\\xc2\\x9d52;c;x\\xc2\\x9c");  // OSC ... ST
}

TEST(TerminalSafeTest, EscapesOtherC0DelAndBrokenUtf8) {
  EXPECT_EQ(terminal_safe(std::string_view("a\0b\rc\x7f", 6)), "a\\x00b\\x0dc\\x7f");
  EXPECT_EQ(terminal_safe("cut \xe2\x9c"), "cut \\xe2\\x9c");
  EXPECT_EQ(terminal_safe("overlong \xc0\xaf \xe0\x80\xaf"), "overlong \\xc0\\xaf \\xe0\\x80\\xaf");
  EXPECT_EQ(terminal_safe("surrogate \xed\xa0\x80"), "surrogate \\xed\\xa0\\x80");
}

TEST(TerminalSafeTest, IsIdempotent) {
  std::string once = terminal_safe("\x1b]52;c;x\x07\xc2\x9b\x9b\xff");
  EXPECT_EQ(terminal_safe(once), once);
}

// Issue 32 (security review 3, low): `tnk sandbox diff` printed a sandbox's file name raw, so a name
// with a newline printed a line of its choosing. Quoted as git's core.quotePath does.
TEST(QuotedPathTest, QuotesWhatCouldForgeALineAndLeavesPlainPathsAlone) {
  EXPECT_EQ(quoted_path("src/main.cc"), "src/main.cc");
  EXPECT_EQ(quoted_path("docs/r\xc3\xa9sum\xc3\xa9.md"), "docs/r\xc3\xa9sum\xc3\xa9.md");  // valid UTF-8 stays
  EXPECT_EQ(quoted_path("a\nA  evil"), "\"a\\nA  evil\"");
  EXPECT_EQ(quoted_path("tab\there"), "\"tab\\there\"");
  EXPECT_EQ(quoted_path("say \"hi\" \\ bye"), "\"say \\\"hi\\\" \\\\ bye\"");
  EXPECT_EQ(quoted_path("esc\x1b[31m"), "\"esc\\033[31m\"");
  EXPECT_EQ(quoted_path("bad\xff"), "\"bad\\377\"");
}

}  // namespace
}  // namespace tnk
