#include "cli/prompt.h"

#include <iostream>

namespace tnk::cli {

bool confirmed(const std::string& question) {
  std::cerr << question << " [y/N] " << std::flush;
  std::string answer;
  std::getline(std::cin, answer);
  return answer == "y" || answer == "Y" || answer == "yes";
}

}  // namespace tnk::cli
