#include "bridge/error_codes.h"

#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "bridge/result.h"

namespace kakeya {
namespace {

TEST(ErrorCodes, EveryNameIsUniqueSnakeCaseAndRoundTrips) {
  std::set<std::string> seen;
  for (const char* name : error_code_detail::kNames) {
    EXPECT_TRUE(seen.insert(name).second) << name << " is listed twice";
    for (char c : std::string(name)) EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') << name;
    auto code = ErrorCode::from_string(name);
    ASSERT_TRUE(code.has_value()) << name;
    EXPECT_EQ(code->str(), name);
  }
  EXPECT_EQ(seen.size(), kErrorCodeCount);
}

TEST(ErrorCodes, SynonymsAreMerged) {
  // One code per meaning: these names were merged into io, out_of_range, parse_error, usage,
  // bad_value and child_failed, and are no longer codes.
  for (const char* gone : {"io_error", "spool_io", "cache_dir", "work_dir", "bad_file", "out_of_bounds", "bad_json",
                           "bad_report", "bad_catalog", "bad_argument", "bad_option", "git_failed"}) {
    EXPECT_FALSE(ErrorCode::from_string(gone).has_value()) << gone;
  }
  EXPECT_FALSE(ErrorCode::from_string("").has_value());
  EXPECT_FALSE(ErrorCode::from_string("IO").has_value());
}

TEST(ErrorCodes, ConstantsLiteralsAndTheWireAgree) {
  const Error e = make_error("out_of_range", "x");  // a literal is checked against the list at compile time
  EXPECT_EQ(e.code, errc::kOutOfRange);
  EXPECT_EQ(e.code, "out_of_range");
  EXPECT_EQ(e.code, std::string("out_of_range"));
  EXPECT_NE(e.code, errc::kBadValue);
  EXPECT_EQ(e.str(), "out_of_range: x");
  std::ostringstream os;
  os << errc::kSchemaViolation;
  EXPECT_EQ(os.str(), "schema_violation");
}

}  // namespace
}  // namespace kakeya
