// Masking secrets in a stream that arrives in pieces (src/net/redactor.h): lengths kept, occurrences
// across piece boundaries found, and what holds no secret passed unchanged.
#include "net/redactor.h"

#include <gtest/gtest.h>

namespace tnk::net {
namespace {

std::string through(Redactor& redactor, const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& piece : pieces) out += redactor.feed(piece);
  return out + redactor.finish();
}

TEST(Redactor, MasksEveryOccurrenceKeepingTheLength) {
  Redactor redactor({"s3cret", "QmFzaWM="});
  std::string in = "Authorization: Bearer s3cret\r\nX: QmFzaWM= and s3cret again";
  std::string out = through(redactor, {in});
  EXPECT_EQ(out, "Authorization: Bearer ******\r\nX: ******** and ****** again");
  EXPECT_EQ(out.size(), in.size());
}

TEST(Redactor, FindsASecretSplitAcrossPieces) {
  std::string in = "head s3cret tail";
  for (std::size_t cut = 0; cut <= in.size(); ++cut) {
    for (std::size_t second = cut; second <= in.size(); ++second) {
      Redactor redactor({"s3cret"});
      std::string out = through(redactor, {in.substr(0, cut), in.substr(cut, second - cut), in.substr(second)});
      EXPECT_EQ(out, "head ****** tail") << cut << " " << second;
    }
  }
}

TEST(Redactor, PassesTextWithoutSecretsUnchanged) {
  Redactor redactor({"s3cret"});
  EXPECT_EQ(through(redactor, {"s3cre", "t-less? no: s3cr", "et"}), "******-less? no: ******");
  Redactor plain({"s3cret"});
  EXPECT_EQ(through(plain, {"nothing ", "to see ", "here"}), "nothing to see here");
  Redactor none({""});  // an empty secret masks nothing and holds nothing back
  EXPECT_EQ(none.feed("abc"), "abc");
}

TEST(Redactor, HoldsBackOnlyWhatCouldStartASecret) {
  Redactor redactor({"abcdef"});
  EXPECT_EQ(redactor.feed("0123456789"), "01234");  // the last 5 bytes wait for the next piece
  EXPECT_EQ(redactor.finish(), "56789");
}

}  // namespace
}  // namespace tnk::net
