// The typed JSON field reader: every error names the key and where the object came from.
#include "core/json_fields.h"

#include <gtest/gtest.h>

namespace tnk {
namespace {

using nlohmann::json;

const char* kWhere = "sandbox record /s/sandbox.json is corrupt";

template <typename T>
std::string error_of(const Result<T>& r) {
  return r.ok() ? "(ok)" : r.error().message;
}

TEST(JsonFieldsTest, ReadsEachTypeAndFallsBackOnlyWhenMissingOrNull) {
  json doc = {{"s", "text"}, {"i", 42}, {"n", 1.5}, {"b", true}, {"a", {"x", "y"}}, {"o", {{"k", 1}}}, {"z", nullptr}};
  JsonFields f(doc, kWhere);
  EXPECT_EQ(*f.string("s"), "text");
  EXPECT_EQ(*f.integer("i", 0, 100), 42);
  EXPECT_EQ(*f.number("n"), 1.5);
  EXPECT_EQ(*f.number("i"), 42.0);
  EXPECT_TRUE(*f.boolean("b"));
  EXPECT_EQ(*f.strings("a"), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(*f.object("o"), (json{{"k", 1}}));
  EXPECT_EQ(*f.optional_string("z", "dflt"), "dflt");
  EXPECT_EQ(*f.optional_string("absent"), "");
  EXPECT_EQ(*f.optional_integer("z", 7), 7);
  EXPECT_FALSE(*f.optional_boolean("absent", false));
  EXPECT_TRUE(f.optional_strings("absent")->empty());
  EXPECT_EQ(*f.optional_integer("i", 7), 42);
  EXPECT_TRUE(f.has("s"));
  EXPECT_FALSE(f.has("z"));
}

TEST(JsonFieldsTest, ErrorsNameTheKeyAndTheFileAndCarryTheHint) {
  json doc = {{"s", 5}, {"i", "5"}, {"b", "yes"}, {"a", {1}}, {"n", "x"}, {"o", 3}, {"z", nullptr}};
  JsonFields f(doc, kWhere, "delete it");
  EXPECT_EQ(error_of(f.string("id")), "sandbox record /s/sandbox.json is corrupt: field 'id' is missing");
  EXPECT_EQ(error_of(f.string("z")), "sandbox record /s/sandbox.json is corrupt: field 'z' is missing");
  EXPECT_EQ(error_of(f.string("s")), "sandbox record /s/sandbox.json is corrupt: field 's' must be a string");
  EXPECT_EQ(error_of(f.optional_string("s")), "sandbox record /s/sandbox.json is corrupt: field 's' must be a string");
  EXPECT_EQ(error_of(f.integer("i")), "sandbox record /s/sandbox.json is corrupt: field 'i' must be an integer");
  EXPECT_EQ(error_of(f.boolean("b")), "sandbox record /s/sandbox.json is corrupt: field 'b' must be true or false");
  EXPECT_EQ(error_of(f.strings("a")),
            "sandbox record /s/sandbox.json is corrupt: field 'a' must be an array of strings");
  EXPECT_EQ(error_of(f.number("n")), "sandbox record /s/sandbox.json is corrupt: field 'n' must be a number");
  EXPECT_EQ(error_of(f.object("o")), "sandbox record /s/sandbox.json is corrupt: field 'o' must be an object");
  EXPECT_EQ(f.string("s").error().hint, "delete it");
  EXPECT_EQ(f.error("s", "is odd").message, "sandbox record /s/sandbox.json is corrupt: field 's' is odd");
}

TEST(JsonFieldsTest, IntegersOutsideTheRangeAreRefusedWithoutWrapping) {
  json doc = {{"small", -1}, {"big", 70000}, {"huge", 18446744073709551615ULL}, {"frac", 1.5}};
  JsonFields f(doc, "control message");
  EXPECT_EQ(error_of(f.integer("small", 0, 65535)),
            "control message: field 'small' must be an integer from 0 to 65535");
  EXPECT_EQ(error_of(f.integer("big", 0, 65535)), "control message: field 'big' must be an integer from 0 to 65535");
  EXPECT_EQ(error_of(f.integer("huge", -1, 10)), "control message: field 'huge' must be an integer from -1 to 10");
  EXPECT_EQ(error_of(f.integer("frac", 0, 10)), "control message: field 'frac' must be an integer from 0 to 10");
  EXPECT_EQ(error_of(f.optional_integer("big", 0, 0, 10)),
            "control message: field 'big' must be an integer from 0 to 10");
  EXPECT_EQ(error_of(f.integer("huge", 0)), "control message: field 'huge' must be an integer of 0 or more");
  EXPECT_EQ(error_of(f.integer("big", LLONG_MIN, 10)), "control message: field 'big' must be an integer of 10 or less");
}

TEST(JsonFieldsTest, StringsWithANulByteAreRefused) {
  json doc = {{"s", std::string("a\0b", 3)}, {"a", {"ok", std::string("x\0", 2)}}};
  JsonFields f(doc, "agent message exec");
  EXPECT_EQ(error_of(f.string("s")), "agent message exec: field 's' must not contain NUL bytes");
  EXPECT_EQ(error_of(f.strings("a")), "agent message exec: field 'a' must not contain NUL bytes");
}

}  // namespace
}  // namespace tnk
