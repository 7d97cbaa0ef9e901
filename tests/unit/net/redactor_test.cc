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

// A piece that cannot end inside a secret passes whole (a stream of small events is not delayed); one
// that ends with what could begin a secret, or an escape, waits for the next piece only that far.
TEST(Redactor, HoldsBackOnlyWhatCouldStartASecret) {
  Redactor redactor({"abcdef"});
  EXPECT_EQ(redactor.feed("0123456789"), "0123456789");
  EXPECT_EQ(redactor.feed("data: 0abc"), "data: 0");
  EXPECT_EQ(redactor.feed("x and a%6"), "abcx and ");
  EXPECT_EQ(redactor.feed("2\\u0063"), "");  // "a%62\\u0063" spells "abc" so far
  EXPECT_EQ(redactor.feed("!"), "a%62\\u0063!");
  EXPECT_EQ(redactor.feed("tail\\"), "tail");  // a backslash may begin an escape
  EXPECT_EQ(redactor.finish(), "\\");
}

// An echo inside JSON or a URL writes some of a secret's bytes escaped; each form, and any mix of them
// byte by byte, is masked whole, keeping the length.
TEST(Redactor, MasksTheJsonEscapedAndPercentEncodedForms) {
  const std::string secret = "sk/a+b=\"c";
  for (const std::string& form :
       {std::string("sk/a+b=\"c"), std::string("sk\\/a+b=\\\"c"), std::string("sk\\u002Fa\\u002bb\\u003D\\u0022c"),
        std::string("sk%2Fa%2Bb%3D%22c"), std::string("sk%2fa%2bb%3d%22c"), std::string("%73k\\/a%2b\\u0062=%22c")}) {
    Redactor redactor({secret});
    std::string in = "{\"h\":\"Bearer " + form + "\"}";
    EXPECT_EQ(through(redactor, {in}), "{\"h\":\"Bearer " + std::string(form.size(), '*') + "\"}") << form;
  }
}

TEST(Redactor, EncodedFormsSplitAtEveryByteAreMasked) {
  const std::string form = "pre sk%2Fa\\u002bb post";
  const std::string want = "pre " + std::string(form.size() - 9, '*') + " post";
  for (std::size_t cut = 0; cut <= form.size(); ++cut) {
    Redactor redactor({"sk/a+b"});
    EXPECT_EQ(through(redactor, {form.substr(0, cut), form.substr(cut)}), want) << cut;
  }
}

TEST(Redactor, NearMissesOfTheFormsPassUnchanged) {
  for (const char* in : {"sk%2Ga+b", "sk\\u002ga+b", "sk\\xa+b", "sk%2F", "sk\\u00", "sk%", "sk/a+"}) {
    Redactor redactor({"sk/a+b"});
    EXPECT_EQ(through(redactor, {in}), in) << in;
  }
}

}  // namespace
}  // namespace tnk::net
