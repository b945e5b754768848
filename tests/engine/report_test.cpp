// Report writing: reports stay valid JSON whatever bytes decoded text contains.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "engine/presets/report.h"

namespace kakeya::engine {
namespace {

TEST(ReportJsonText, InvalidUtf8IsReplacedNotThrown) {
  // A decoded text that ends inside a 3-byte character, and a lone continuation byte.
  const std::string text = std::string("ok <synth-1>") + "\xE2\x82" + " and \x80 end";
  nlohmann::json r{{"text", text}};
  EXPECT_THROW((void)r.dump(2), nlohmann::json::type_error);  // what the old writer did
  const std::string out = report_json_text(r);
  const auto back = nlohmann::json::parse(out);
  const std::string s = back.at("text").get<std::string>();
  EXPECT_NE(s.find("ok <synth-1>"), std::string::npos);
  EXPECT_NE(s.find("\xEF\xBF\xBD"), std::string::npos);  // U+FFFD
  EXPECT_NE(s.find(" end"), std::string::npos);
}

TEST(ReportJsonText, ValidUtf8IsKeptVerbatim) {
  nlohmann::json r{{"text", "caf\xC3\xA9 \xE2\x82\xAC"}};
  EXPECT_EQ(nlohmann::json::parse(report_json_text(r)).at("text"), "caf\xC3\xA9 \xE2\x82\xAC");
}

TEST(WriteReport, WritesParseableFileWithInvalidUtf8) {
  const auto dir = std::filesystem::temp_directory_path() / ("kakeya-report-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(write_report(dir, nlohmann::json{{"text", "\xFF"}}).ok());
  std::ifstream in(dir / "report.json");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(nlohmann::json::parse(ss.str()).at("text"), "\xEF\xBF\xBD");
  EXPECT_FALSE(std::filesystem::exists(dir / "report.json.tmp"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kakeya::engine
