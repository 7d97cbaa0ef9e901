// The only stdout writer (src/output/output.h): text, json and ndjson for a document and a list, errors
// on stderr or as JSON, and the table renderer.
#include "output/output.h"

#include <gtest/gtest.h>

#include <sstream>

namespace tnk {
namespace {

const nlohmann::json kDoc = {{"id", "tnk-demo"}, {"network", {{"policy", "inference"}}}};
const nlohmann::json kItems = nlohmann::json::array({{{"id", "tnk-a"}}, {{"id", "tnk-b"}, {"state", "running"}}});

class OutputTest : public ::testing::Test {
 protected:
  Output make(OutputFormat format, bool color = false) { return Output(out_, err_, format, color); }
  // A text renderer that notes it ran.
  Output::TextRenderer text(const std::string& shown) {
    return [this, shown](std::ostream& os) {
      ++rendered_;
      os << shown;
    };
  }

  std::ostringstream out_, err_;
  int rendered_ = 0;
};

TEST(OutputFormatParse, AcceptsTheFourNames) {
  EXPECT_EQ(*parse_output_format("text"), OutputFormat::kText);
  EXPECT_EQ(*parse_output_format("json"), OutputFormat::kJson);
  EXPECT_EQ(*parse_output_format("ndjson"), OutputFormat::kNdjson);
  EXPECT_EQ(*parse_output_format("yaml"), OutputFormat::kYaml);
}

TEST(OutputFormatParse, RefusesAnythingElse) {
  for (const char* name : {"xml", "JSON", "", "json "}) {
    auto format = parse_output_format(name);
    ASSERT_FALSE(format.ok()) << name;
    EXPECT_EQ(format.error().kind, ErrorKind::kUsage);
  }
  auto format = parse_output_format("xml");
  EXPECT_EQ(format.error().message, "unknown output format 'xml'");
  EXPECT_EQ(format.error().hint, "use one of: text, json, ndjson, yaml");
}

TEST_F(OutputTest, DocumentAsText) {
  make(OutputFormat::kText).document(kDoc, text("sandbox tnk-demo\n"));
  EXPECT_EQ(out_.str(), "sandbox tnk-demo\n");
  EXPECT_EQ(rendered_, 1);
  EXPECT_FALSE(make(OutputFormat::kText).machine());
}

TEST_F(OutputTest, DocumentAsJsonIsOneDocumentWithoutTheText) {
  make(OutputFormat::kJson).document(kDoc, text("sandbox tnk-demo\n"));
  EXPECT_EQ(out_.str(), R"({"id":"tnk-demo","network":{"policy":"inference"}})"
                        "\n");
  EXPECT_EQ(rendered_, 0);
  EXPECT_TRUE(make(OutputFormat::kJson).machine());
}

TEST_F(OutputTest, DocumentAsNdjsonIsTheSameOnOneLine) {
  make(OutputFormat::kNdjson).document(kDoc, text("sandbox tnk-demo\n"));
  EXPECT_EQ(out_.str(), R"({"id":"tnk-demo","network":{"policy":"inference"}})"
                        "\n");
  EXPECT_EQ(rendered_, 0);
}

TEST_F(OutputTest, DocumentAndListAsYamlAreOneYamlDocumentEach) {
  make(OutputFormat::kYaml).document(kDoc, text("sandbox tnk-demo\n"));
  make(OutputFormat::kYaml).list(kItems, text("tnk-a\n"));
  EXPECT_EQ(out_.str(),
            "---\nid: tnk-demo\nnetwork:\n  policy: inference\n"
            "---\n- id: tnk-a\n- id: tnk-b\n  state: running\n");
  EXPECT_EQ(rendered_, 0);
}

TEST_F(OutputTest, ListAsText) {
  make(OutputFormat::kText).list(kItems, text("tnk-a\ntnk-b\n"));
  EXPECT_EQ(out_.str(), "tnk-a\ntnk-b\n");
  EXPECT_EQ(rendered_, 1);
}

TEST_F(OutputTest, ListAsJsonIsOneArray) {
  make(OutputFormat::kJson).list(kItems, text("tnk-a\n"));
  EXPECT_EQ(out_.str(), R"([{"id":"tnk-a"},{"id":"tnk-b","state":"running"}])"
                        "\n");
  EXPECT_EQ(rendered_, 0);
}

TEST_F(OutputTest, ListAsNdjsonIsOneObjectPerLine) {
  make(OutputFormat::kNdjson).list(kItems, text("tnk-a\n"));
  EXPECT_EQ(out_.str(), "{\"id\":\"tnk-a\"}\n{\"id\":\"tnk-b\",\"state\":\"running\"}\n");
  EXPECT_EQ(rendered_, 0);
}

TEST_F(OutputTest, EmptyListIsAnEmptyArrayOrNoLines) {
  make(OutputFormat::kJson).list(nlohmann::json::array(), text(""));
  EXPECT_EQ(out_.str(), "[]\n");
  out_.str("");
  make(OutputFormat::kNdjson).list(nlohmann::json::array(), text(""));
  EXPECT_EQ(out_.str(), "");
}

TEST_F(OutputTest, RawIsPrintedInEveryFormat) {
  for (OutputFormat format : {OutputFormat::kText, OutputFormat::kJson, OutputFormat::kNdjson}) {
    out_.str("");
    make(format).raw("tnk 1.0\n");
    EXPECT_EQ(out_.str(), "tnk 1.0\n");
  }
}

TEST_F(OutputTest, ErrorAsTextGoesToStderrOnly) {
  make(OutputFormat::kText).error(not_found("no sandbox tnk-x", "run `tnk sandbox ls`"));
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), "error: no sandbox tnk-x\nhint: run `tnk sandbox ls`\n");
}

TEST_F(OutputTest, ErrorWithoutHintHasNoHintLine) {
  make(OutputFormat::kText).error(failed("it broke"));
  EXPECT_EQ(err_.str(), "error: it broke\n");
}

TEST_F(OutputTest, ErrorInColorPaintsOnlyThePrefix) {
  make(OutputFormat::kText, true).error(failed("it broke"));
  EXPECT_EQ(err_.str(), "\033[31merror:\033[0m it broke\n");
}

TEST_F(OutputTest, ErrorUnderJsonIsAJsonDocumentOnStdout) {
  make(OutputFormat::kJson).error(usage_error("unknown flag --x", "see tnk --help"));
  EXPECT_EQ(nlohmann::json::parse(out_.str()), nlohmann::json::parse(R"({"error": {"kind": "usage",
      "message": "unknown flag --x", "exit_code": 64, "hint": "see tnk --help"}})"));
  EXPECT_EQ(err_.str(), "error: unknown flag --x\nhint: see tnk --help\n");
}

TEST_F(OutputTest, ErrorUnderNdjsonIsOneLineAndAMissingHintIsNull) {
  make(OutputFormat::kNdjson).error(permission_denied("cannot open /dev/kvm"));
  EXPECT_EQ(out_.str(), R"({"error":{"exit_code":77,"hint":null,"kind":"permission","message":"cannot open /dev/kvm"}})"
                        "\n");
}

TEST(OutputErrorJson, KindNamesAndExitCodes) {
  EXPECT_EQ(error_to_json(failed("m"))["error"]["kind"], "failed");
  EXPECT_EQ(error_to_json(failed("m"))["error"]["exit_code"], 1);
  EXPECT_EQ(error_to_json(usage_error("m"))["error"]["exit_code"], 64);
  EXPECT_EQ(error_to_json(not_found("m"))["error"]["kind"], "not_found");
  EXPECT_EQ(error_to_json(not_found("m"))["error"]["exit_code"], 66);
  EXPECT_EQ(error_kind_name(ErrorKind::kPermission), "permission");
  EXPECT_EQ(error_to_json(permission_denied("m"))["error"]["exit_code"], 77);
}

TEST(OutputTable, ColumnsAreLeftAlignedTwoSpacesApart) {
  EXPECT_EQ(render_table({"ID", "STATE", "BACKEND"}, {{"tnk-demo", "running", "ns"}, {"tnk-a", "stopped", "vm"}}),
            "ID        STATE    BACKEND\n"
            "tnk-demo  running  ns\n"
            "tnk-a     stopped  vm\n");
}

TEST(OutputTable, AHeaderWiderThanItsCellsSetsTheWidth) {
  EXPECT_EQ(render_table({"NAME", "X"}, {{"a", "1"}}),
            "NAME  X\n"
            "a     1\n");
}

TEST(OutputTable, AShortRowEndsWithoutPadding) {
  EXPECT_EQ(render_table({"A", "B"}, {{"x"}, {"y", "z"}}),
            "A  B\n"
            "x\n"
            "y  z\n");
}

TEST(OutputTable, NoRowsIsTheHeaderOnly) { EXPECT_EQ(render_table({"ID", "STATE"}, {}), "ID  STATE\n"); }

}  // namespace
}  // namespace tnk
