#include "runner/log_fields.h"

#include <vector>

#include "bridge/json_text.h"

namespace kakeya::runner {
namespace {

thread_local std::vector<std::pair<std::string, nlohmann::json>> t_fields;

}  // namespace

ScopedLogFields::ScopedLogFields(std::initializer_list<std::pair<const char*, nlohmann::json>> fields)
    : count_(fields.size()) {
  for (const auto& [name, value] : fields) t_fields.emplace_back(name, value);
}

ScopedLogFields::~ScopedLogFields() { t_fields.resize(t_fields.size() - count_); }

std::string current_log_fields_json() {
  std::string out;
  for (std::size_t i = 0; i < t_fields.size(); ++i) {
    bool overridden = false;
    for (std::size_t k = i + 1; k < t_fields.size() && !overridden; ++k) overridden = t_fields[k].first == t_fields[i].first;
    if (overridden) continue;
    out += "," + bridge::to_json_text(nlohmann::json(t_fields[i].first)) + ":" + bridge::to_json_text(t_fields[i].second);
  }
  return out;
}

}  // namespace kakeya::runner
