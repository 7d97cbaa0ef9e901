// The only writer of stdout. Commands hand it data (nlohmann::json) plus a text renderer;
// it prints one JSON document, one object per line (ndjson), the same as YAML, or human text.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/result.h"

namespace tnk {

enum class OutputFormat { kText, kJson, kNdjson, kYaml };

Result<OutputFormat> parse_output_format(std::string_view text);

class Output {
 public:
  using TextRenderer = std::function<void(std::ostream&)>;

  Output(std::ostream& out, std::ostream& err, OutputFormat format, bool color)
      : out_(&out), err_(&err), format_(format), color_(color) {}

  OutputFormat format() const { return format_; }
  bool machine() const { return format_ != OutputFormat::kText; }
  bool color() const { return color_; }
  // Whether stdout still takes what is written: false once its reader closed it (a stream such as
  // `tnk sandbox pending --watch` then ends).
  bool writable() const;

  // One report (inspect, config show, doctor): json = the document; ndjson = the same on one line; yaml =
  // the same as one YAML document.
  void document(const nlohmann::json& doc, const TextRenderer& text) const;
  // A listing (ls): json = one array; ndjson = one object per line; yaml = one sequence; text = the renderer.
  void list(const nlohmann::json& items, const TextRenderer& text) const;
  // Plain text that only makes sense for humans (completion scripts, version); printed in every format.
  void raw(std::string_view text) const;

  // Errors are printed once, here: `error: ...` + `hint: ...` on stderr, or a JSON object on stdout
  // when a machine format was asked for.
  void error(const Error& error) const;

 private:
  std::ostream* out_;
  std::ostream* err_;
  OutputFormat format_;
  bool color_;
};

nlohmann::json error_to_json(const Error& error);
std::string error_kind_name(ErrorKind kind);

// A size for people: decimal megabytes, rounded ("537 MB").
std::string megabytes(uint64_t bytes);

// A left-aligned table with a header row and two spaces between columns.
std::string render_table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows);

}  // namespace tnk
