// The YAML writer (src/output/yaml.h): its exact layout, and that every value it writes reads back as
// the same JSON, through yaml-cpp with the core schema's resolution (yaml_json_util.h). The e2e test of
// the k8s dry run reads its output with PyYAML (YAML 1.1) too.
#include "output/yaml.h"

#include <gtest/gtest.h>

#include "yaml_json_util.h"

namespace tnk {
namespace {

using nlohmann::json;

json read_back(const std::string& text) { return testing_support::yaml_to_json(YAML::Load(text)); }

TEST(Yaml, BlockLayout) {
  json doc = {{"kind", "Pod"},
              {"spec", {{"containers", json::array({json{{"name", "a"}, {"args", json::array({"x", "z"})}}})}}},
              {"empty", json::object()},
              {"none", json::array()},
              {"nested", json::array({json::array({1, 2})})}};
  EXPECT_EQ(to_yaml(doc),
            "empty: {}\n"
            "kind: Pod\n"
            "nested:\n"
            "  -\n"
            "    - 1\n"
            "    - 2\n"
            "none: []\n"
            "spec:\n"
            "  containers:\n"
            "    - args:\n"
            "        - x\n"
            "        - z\n"
            "      name: a\n");
}

TEST(Yaml, QuotesEveryStringAReaderCouldTakeForSomethingElse) {
  for (const char* text : {"",
                           "true",
                           "False",
                           "yes",
                           "No",
                           "on",
                           "OFF",
                           "y",
                           "n",
                           "null",
                           "~",
                           "2",
                           "0755",
                           "1e3",
                           "0x1f",
                           "12:30",
                           ".inf",
                           "-1",
                           "+1",
                           "2Gi",
                           "a b",
                           "a: b",
                           "key:",
                           "#x",
                           "&anchor",
                           "*alias",
                           "!tag",
                           "@at",
                           "%x",
                           "`x",
                           "- x",
                           "[x]",
                           "{x}",
                           "x,y",
                           "\"q\"",
                           "'q'",
                           "|",
                           ">",
                           "line\nbreak",
                           "tab\tx",
                           "del\x7f",
                           "caf\xc3\xa9",
                           "\xc2\x80"
                           "c1"}) {
    EXPECT_FALSE(yaml_plain_safe(text)) << text;
    json doc = {{"k", text}};
    EXPECT_EQ(read_back(to_yaml(doc)), doc) << to_yaml(doc);
  }
}

TEST(Yaml, WritesPlainWhatIsPlainlyAString) {
  for (const char* text : {"Pod", "agents.x-k8s.io/v1beta1", "tnk/role", "http://x:8080/v1", "/workspace", "_a",
                           "a-b_c.d", "RuntimeDefault", "sleep"}) {
    EXPECT_TRUE(yaml_plain_safe(text)) << text;
    EXPECT_EQ(to_yaml(json{{"k", text}}), std::string("k: ") + text + "\n");
  }
}

TEST(Yaml, ScalarsKeepTheirTypes) {
  json doc = {{"int", 256},
              {"negative", -3},
              {"float", 1.5},
              {"true", true},
              {"false", false},
              {"null", nullptr},
              {"big", 9007199254740993},
              {"1", "one"},
              {"list", json::array({"1", 1, true})}};
  EXPECT_EQ(read_back(to_yaml(doc)), doc) << to_yaml(doc);
}

TEST(Yaml, StreamHasCommentsThenOneDocumentEach) {
  std::string stream = to_yaml_stream({json{{"a", 1}}, json{{"b", "x y"}}}, {"first", "two\nlines"});
  EXPECT_EQ(stream, "# first\n# two lines\n---\na: 1\n---\nb: \"x y\"\n");
  auto documents = YAML::LoadAll(stream);
  ASSERT_EQ(documents.size(), 2u);
  EXPECT_EQ(testing_support::yaml_to_json(documents[1]), (json{{"b", "x y"}}));
}

}  // namespace
}  // namespace tnk
