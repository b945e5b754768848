#include "bridge/json_schema.h"

// valijson reports schema errors by throwing only with this set (otherwise it aborts).
#define VALIJSON_USE_EXCEPTIONS 1
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include <array>
#include <memory>
#include <stdexcept>
#include <string>

#include "bridge/embedded_files.h"
#include "bridge/error_codes.h"

namespace kakeya::bridge {
namespace {

constexpr std::array<std::string_view, 4> kFileNames = {"request.schema.json", "status.schema.json",
                                                         "summary.schema.json", "report.schema.json"};

std::size_t index_of(JsonSchema schema) { return static_cast<std::size_t>(schema); }

// The compiled schemas, parsed once. A schema that is missing or does not parse is a build
// defect: the tests load every schema, so this never happens in a tested binary.
const valijson::Schema& compiled(JsonSchema schema) {
  static const std::array<std::unique_ptr<valijson::Schema>, kFileNames.size()> schemas = [] {
    std::array<std::unique_ptr<valijson::Schema>, kFileNames.size()> out;
    for (std::size_t i = 0; i < kFileNames.size(); ++i) {
      const std::string_view text = schema_text(static_cast<JsonSchema>(i));
      const nlohmann::json doc = nlohmann::json::parse(text);  // throws: a build defect, see above
      out[i] = std::make_unique<valijson::Schema>();
      valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
      valijson::adapters::NlohmannJsonAdapter adapter(doc);
      parser.populateSchema(adapter, *out[i]);
    }
    return out;
  }();
  return *schemas[index_of(schema)];
}

// valijson's context ["<root>", "[params]", "[steps]"] as a JSON pointer "/params/steps".
std::string json_pointer(const std::vector<std::string>& context) {
  std::string out;
  for (const std::string& part : context) {
    if (part.size() >= 2 && part.front() == '[' && part.back() == ']') {
      out += "/" + part.substr(1, part.size() - 2);
    }
  }
  return out.empty() ? "/" : out;
}

}  // namespace

std::string_view schema_file_name(JsonSchema schema) { return kFileNames[index_of(schema)]; }

std::string_view schema_text(JsonSchema schema) {
  const std::string_view name = schema_file_name(schema);
  for (std::size_t i = 0; i < generated::kEmbeddedFileCount; ++i) {
    if (generated::kEmbeddedFiles[i].name == name) return generated::kEmbeddedFiles[i].text;
  }
  return {};
}

Status validate_against_schema(JsonSchema schema, const nlohmann::json& doc) {
  const std::string name(schema_file_name(schema));
  try {
    valijson::Validator validator(valijson::Validator::kStrongTypes);
    valijson::ValidationResults results;
    valijson::adapters::NlohmannJsonAdapter adapter(doc);
    if (validator.validate(compiled(schema), adapter, &results)) return ok_status();
    valijson::ValidationResults::Error first;
    if (!results.popError(first)) return make_error(errc::kSchemaViolation, name + ": /: does not match the schema");
    return make_error(errc::kSchemaViolation, name + ": " + json_pointer(first.context) + ": " + first.description);
  } catch (const std::exception& e) {
    return make_error(errc::kSchemaViolation, name + ": cannot validate: " + e.what());
  }
}

}  // namespace kakeya::bridge
