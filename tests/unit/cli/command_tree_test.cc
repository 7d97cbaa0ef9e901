// The command tree built for one command line: the branch a command line names holds that command as
// the whole tree does, so that building only the branch changes nothing but the time it takes.
#include "cli/command_tree.h"

#include <gtest/gtest.h>

#include <functional>

namespace tnk::cli {
namespace {

std::vector<std::string> path_words(const CLI::App& command) {
  std::vector<std::string> words;
  for (const CLI::App* c = &command; c->get_parent() != nullptr; c = c->get_parent()) {
    words.insert(words.begin(), c->get_name());
  }
  return words;
}

const CLI::App* find_path(const CLI::App& root, const std::vector<std::string>& words) {
  const CLI::App* at = &root;
  for (const auto& word : words) {
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : at->get_subcommands({})) {
      if (sub->get_name() == word) next = sub;
    }
    if (next == nullptr) return nullptr;
    at = next;
  }
  return at;
}

std::vector<const CLI::App*> every_command(const CLI::App& root) {
  std::vector<const CLI::App*> all;
  std::function<void(const CLI::App&)> walk = [&](const CLI::App& app) {
    for (const CLI::App* sub : app.get_subcommands({})) {
      all.push_back(sub);
      walk(*sub);
    }
  };
  walk(root);
  return all;
}

TEST(CommandTree, EveryCommandIsOnTheBranchItsWordsName) {
  GlobalOptions global;
  CommandTable whole_table;
  auto whole = make_root(global, whole_table);
  auto commands = every_command(*whole);
  ASSERT_GT(commands.size(), 20u);
  for (const CLI::App* command : commands) {
    auto words = path_words(*command);
    GlobalOptions branch_global;
    CommandTable branch_table;
    branch_table.select(words);
    auto branch = make_root(branch_global, branch_table);
    const CLI::App* found = find_path(*branch, words);
    ASSERT_NE(found, nullptr) << command_path(*command) << " is missing from its own branch";
    EXPECT_EQ(branch_table.find(found) != nullptr, whole_table.find(command) != nullptr) << command_path(*command);
    EXPECT_EQ(found->get_options().size(), command->get_options().size()) << command_path(*command);
  }
}

TEST(CommandTree, TheBranchOfAVerbIsSmallerThanTheWholeTree) {
  GlobalOptions global;
  CommandTable whole_table, branch_table;
  auto whole = make_root(global, whole_table);
  branch_table.select({"sandbox", "ls"});
  auto branch = make_root(global, branch_table);
  EXPECT_EQ(every_command(*branch).size(), 2u);  // sandbox, ls
  EXPECT_GT(every_command(*whole).size(), 20u);
}

TEST(CommandTree, CommandWordsSkipOptionsTheOutputValueAndWhatFollowsTheSeparator) {
  const char* argv[] = {"tnk", "-o", "json", "-q", "sandbox", "exec", "-e", "A=1", "--", "sandbox", "ls"};
  auto words = command_words(11, const_cast<char**>(argv));
  EXPECT_EQ(words, (std::vector<std::string>{"sandbox", "exec", "A=1"}));
}

TEST(CommandTree, ListingsAndDescriptionsOfEveryVerbNeedTheWholeTree) {
  EXPECT_TRUE(needs_whole_tree({}));
  EXPECT_TRUE(needs_whole_tree({"completion", "bash"}));
  EXPECT_TRUE(needs_whole_tree({"manpage"}));
  EXPECT_FALSE(needs_whole_tree({"sandbox", "exec"}));
  EXPECT_FALSE(needs_whole_tree({"no-such-verb"}));
}

}  // namespace
}  // namespace tnk::cli
