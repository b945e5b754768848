#pragma once
// Files compiled into the binaries at build time (cmake/embed_files.cmake writes the definitions
// into the build tree from manifests/schemas/*.json). Readers: bridge/json_schema.cpp.

#include <cstddef>
#include <string_view>

namespace kakeya::generated {

struct EmbeddedFile {
  std::string_view name;  // file name without directories, e.g. "request.schema.json"
  std::string_view text;  // the file's bytes
};

extern const EmbeddedFile kEmbeddedFiles[];  // sorted by name
extern const std::size_t kEmbeddedFileCount;

}  // namespace kakeya::generated
