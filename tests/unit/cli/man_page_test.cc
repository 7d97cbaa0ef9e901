// The manual page writer on a small command tree: what it takes from the tree and from describe(),
// and the roff escapes that keep flags and leading dots intact.
#include "cli/man_page.h"

#include <gtest/gtest.h>

#include "cli/command.h"
#include "sandbox/resolve.h"

namespace tnk::cli {
namespace {

std::string page_of_a_small_tree() {
  CLI::App root("tnk does things.", "tnk");
  bool quiet = false, dry_run = false;
  root.add_flag("-q,--quiet", quiet, "Print less");
  auto* box = root.add_subcommand("box", "Work with boxes");
  auto* open = box->add_subcommand("open", "Open the box");
  describe(*open, ".dots lead this explanation", "tnk box open --lid red");
  std::string lid;
  open->add_option("--lid", lid, "Which lid")->type_name("COLOUR");
  open->add_option("name", lid, "The box")->required();
  open->add_flag("-n,--dry-run", dry_run, "Change nothing");
  auto* hidden = root.add_subcommand("secret", "Not shown");
  hidden->group("");
  return man_page(root);
}

TEST(ManPage, EveryCommandAndFlagOfTheTreeIsInThePage) {
  std::string page = page_of_a_small_tree();
  EXPECT_NE(page.find(".SS \"tnk box [OPTIONS]\"\nWork with boxes\n"), std::string::npos) << page;
  EXPECT_NE(page.find(".SS \"tnk box open [OPTIONS] name\"\nOpen the box\n"), std::string::npos) << page;
  EXPECT_NE(page.find(".B \\-\\-lid COLOUR\nWhich lid\n"), std::string::npos) << page;
  EXPECT_NE(page.find(".B \\-n, \\-\\-dry\\-run\nChange nothing\n"), std::string::npos) << page;
  EXPECT_NE(page.find(".B \\-q, \\-\\-quiet\nPrint less\n"), std::string::npos) << page;
  EXPECT_EQ(page.find("secret"), std::string::npos) << "a hidden command stays hidden";
  // -h is listed once, with the global options.
  EXPECT_EQ(page.find(".B \\-h, \\-\\-help"), page.rfind(".B \\-h, \\-\\-help"));
}

TEST(ManPage, DescribeTextAndExampleAreEscapedForRoff) {
  std::string page = page_of_a_small_tree();
  EXPECT_NE(page.find(".PP\n\\&.dots lead this explanation\n"), std::string::npos) << page;
  EXPECT_NE(page.find(".EX\ntnk box open \\-\\-lid red\n.EE\n"), std::string::npos) << page;
}

TEST(ManPage, EveryVariableTheSandboxGetsIsExplained) {
  std::string page = page_of_a_small_tree();
  for (const auto& name : sandbox::runtime_env_names()) {
    std::string label = ".B " + name + "\n";
    auto at = page.find(label);
    ASSERT_NE(at, std::string::npos) << name;
    EXPECT_NE(page[at + label.size()], '\n') << name << " has no explanation";
  }
}

TEST(ManPage, CommandDocReadsBackWhatDescribeWrote) {
  CLI::App app("x", "x");
  describe(app, "An explanation.\nTwo lines.", "x --go");
  CommandDoc doc = command_doc(app);
  EXPECT_EQ(doc.explanation, "An explanation.\nTwo lines.");
  EXPECT_EQ(doc.example, "x --go");
  CLI::App plain("y", "y");
  EXPECT_EQ(command_doc(plain).explanation, "");
}

}  // namespace
}  // namespace tnk::cli
