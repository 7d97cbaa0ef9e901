#include "output/output.h"

#include <algorithm>
#include <ostream>

#include "core/terminal_text.h"
#include "output/yaml.h"

namespace tnk {

Result<OutputFormat> parse_output_format(std::string_view text) {
  if (text == "text") return OutputFormat::kText;
  if (text == "json") return OutputFormat::kJson;
  if (text == "ndjson") return OutputFormat::kNdjson;
  if (text == "yaml") return OutputFormat::kYaml;
  return usage_error("unknown output format '" + std::string(text) + "'", "use one of: text, json, ndjson, yaml");
}

void Output::document(const nlohmann::json& doc, const TextRenderer& text) const {
  if (format_ == OutputFormat::kText) {
    text(*out_);
  } else if (format_ == OutputFormat::kYaml) {
    *out_ << "---\n" << to_yaml(doc);  // a document of its own: a stream of them (--watch) stays valid YAML
  } else {
    *out_ << doc.dump() << '\n';
  }
  out_->flush();
}

void Output::list(const nlohmann::json& items, const TextRenderer& text) const {
  switch (format_) {
    case OutputFormat::kText: text(*out_); break;
    case OutputFormat::kJson: *out_ << items.dump() << '\n'; break;
    case OutputFormat::kYaml: *out_ << "---\n" << to_yaml(items); break;
    case OutputFormat::kNdjson:
      for (const auto& item : items) *out_ << item.dump() << '\n';
      break;
  }
  out_->flush();
}

bool Output::writable() const { return out_->good(); }

void Output::raw(std::string_view text) const {
  *out_ << text;
  out_->flush();
}

std::string error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kFailed: return "failed";
    case ErrorKind::kUsage: return "usage";
    case ErrorKind::kNotFound: return "not_found";
    case ErrorKind::kPermission: return "permission";
  }
  return "failed";
}

nlohmann::json error_to_json(const Error& error) {
  nlohmann::json body = {
      {"kind", error_kind_name(error.kind)}, {"message", error.message}, {"exit_code", exit_code_for(error.kind)}};
  body["hint"] = error.hint.empty() ? nlohmann::json(nullptr) : nlohmann::json(error.hint);
  return {{"error", body}};
}

void Output::error(const Error& error) const {
  if (machine()) {
    *out_ << error_to_json(error).dump() << '\n';
    out_->flush();
  }
  const char* red = color_ ? "\033[31m" : "";
  const char* reset = color_ ? "\033[0m" : "";
  *err_ << red << "error:" << reset << ' ' << terminal_safe(error.message) << '\n';
  if (!error.hint.empty()) *err_ << "hint: " << terminal_safe(error.hint) << '\n';
  err_->flush();
}

std::string megabytes(uint64_t bytes) { return std::to_string((bytes + 500'000) / 1'000'000) + " MB"; }

std::string render_table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths(headers.size());
  for (size_t i = 0; i < headers.size(); ++i) widths[i] = headers[i].size();
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string text;
  auto add_row = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t i = 0; i < cells.size() && i < widths.size(); ++i) {
      line += cells[i];
      if (i + 1 < cells.size()) line += std::string(widths[i] - cells[i].size() + 2, ' ');
    }
    text += line + '\n';
  };
  add_row(headers);
  for (const auto& row : rows) add_row(row);
  return text;
}

}  // namespace tnk
