// What the specs tests share: the bundled specs in the source tree, and a manifest parsed from text.
#pragma once

#include <string>

#include "specs/manifest.h"

namespace tnk::testing_specs {

inline constexpr const char* kBundledSpecs = TNK_SOURCE_SPECS_DIR;

inline Result<specs::Manifest> parse(const std::string& text) { return specs::parse_manifest(text, "/x/m.yaml"); }

}  // namespace tnk::testing_specs
