// NIAH generator against DESIGN.md §5 test vectors and the niah-tiny golden prompt.
#include "engine/presets/niah.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

TEST(PyRandom, MatchesCPythonMt19937Outputs) {
  // CPython: random.Random(0).getrandbits(32) x3, random.Random(42).getrandbits(32) x3,
  // random.Random(2**40 + 5).getrandbits(32) (a two-word key).
  PyRandom r0(0);
  EXPECT_EQ(r0.next_u32(), 3626764237u);
  EXPECT_EQ(r0.next_u32(), 1654615998u);
  EXPECT_EQ(r0.next_u32(), 3255389356u);
  PyRandom r42(42);
  EXPECT_EQ(r42.next_u32(), 2746317213u);
  EXPECT_EQ(r42.next_u32(), 478163327u);
  EXPECT_EQ(r42.next_u32(), 107420369u);
  PyRandom big((uint64_t{1} << 40) + 5);
  EXPECT_EQ(big.next_u32(), 2166296868u);
}

TEST(PyRandom, GetrandbitsAndRandbelow) {
  // random.Random(7): getrandbits(5), getrandbits(40), getrandbits(64), randbelow(1000) x2.
  PyRandom r(7);
  EXPECT_EQ(r.getrandbits(5), 10u);
  EXPECT_EQ(r.getrandbits(40), 167279807972ull);
  EXPECT_EQ(r.getrandbits(64), 12007621696699967246ull);
  EXPECT_EQ(r.randbelow(1000), 49u);
  EXPECT_EQ(r.randbelow(1000), 74u);
  EXPECT_EQ(r.getrandbits(0), 0u);
}

TEST(PyRandom, RandintAndChoiceStayInRange) {
  PyRandom r(123);
  const std::vector<int> items = {10, 20, 30};
  for (int i = 0; i < 1000; ++i) {
    const int64_t v = r.randint(-3, 3);
    EXPECT_GE(v, -3);
    EXPECT_LE(v, 3);
    const int c = r.choice(items);
    EXPECT_TRUE(c == 10 || c == 20 || c == 30);
  }
  EXPECT_EQ(r.randint(5, 5), 5);
}

TEST(Niah, Seed42Lines238To322Vectors) {
  const auto s = generate_niah(42, 238, 322, 5);
  ASSERT_EQ(s.size(), 5u);
  const std::vector<std::tuple<int, std::string, int>> expected = {
      {319, "BETA-1409", 144}, {269, "DELTA-3286", 56}, {307, "BETA-7912", 20},
      {241, "BETA-4582", 63},  {302, "KAPPA-1434", 291}};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(s[i].n_lines, std::get<0>(expected[i])) << i;
    EXPECT_EQ(s[i].answer, std::get<1>(expected[i])) << i;
    EXPECT_EQ(s[i].insert_at, std::get<2>(expected[i])) << i;
    EXPECT_EQ(s[i].prefix + "-" + std::to_string(s[i].number), s[i].answer);
  }
}

TEST(Niah, Seed0Lines60Vectors) {
  const auto s = generate_niah(0, 60, 60, 5);
  ASSERT_EQ(s.size(), 5u);
  const std::vector<std::pair<std::string, int>> expected = {
      {"MAPLE-7890", 6}, {"IOTA-8961", 29}, {"THETA-6866", 41}, {"IOTA-3281", 22}, {"MAPLE-2553", 43}};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(s[i].n_lines, 60);
    EXPECT_EQ(s[i].answer, expected[i].first) << i;
    EXPECT_EQ(s[i].insert_at, expected[i].second) << i;
  }
}

TEST(Niah, PromptMatchesGoldenByteForByte) {
  std::ifstream f(kakeya::testing::models_dir() / "niah-tiny.goldens.json");
  ASSERT_TRUE(f.good());
  const auto g = nlohmann::json::parse(f);
  std::string golden;
  for (const auto& x : g.at("goldens")) {
    if (x.at("name") == "niah-design-seed0-lines20-sample0-full") {
      golden = x.at("prompt_text").get<std::string>();
      EXPECT_EQ(x.at("needle_answer").get<std::string>(), "MAPLE-7890");
    }
  }
  ASSERT_FALSE(golden.empty());
  const auto s = generate_niah(0, 20, 20, 1);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].prompt, golden);
  EXPECT_EQ(s[0].answer, "MAPLE-7890");
  EXPECT_EQ(s[0].insert_at, 4);
}

TEST(Niah, PromptLayout) {
  const auto s = generate_niah(0, 8, 8, 1)[0];
  const std::string line0 = "Note 0000: this paragraph is unrelated padding and does not contain the answer.";
  EXPECT_EQ(s.prompt.rfind(line0 + "\n", 0), 0u);
  const std::string needle = "\n\nIMPORTANT: the secret code is " + s.answer + ".\n\n";
  EXPECT_NE(s.prompt.find(needle), std::string::npos);
  const std::string tail = "Note 0007: this paragraph is unrelated padding and does not contain the "
                           "answer.\nQuestion: what is the secret code? Answer:";
  ASSERT_GE(s.prompt.size(), tail.size());
  EXPECT_EQ(s.prompt.substr(s.prompt.size() - tail.size()), tail);
}

TEST(Niah, WithoutNeedleDrawsTheSameHaystacks) {
  const auto with = generate_niah(3, 10, 30, 4, true);
  const auto without = generate_niah(3, 10, 30, 4, false);
  ASSERT_EQ(without.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(without[i].n_lines, with[i].n_lines);
    EXPECT_FALSE(without[i].needle);
    EXPECT_TRUE(without[i].answer.empty());
    EXPECT_EQ(without[i].prompt.find("IMPORTANT"), std::string::npos);
    EXPECT_EQ(without[i].prompt.find("\n\n"), std::string::npos);
  }
}

TEST(Niah, RejectsImpossibleParameters) {
  EXPECT_FALSE(check_niah_params(7, 10, 1).ok());
  EXPECT_EQ(check_niah_params(20, 10, 1).error().code, "bad_param");
  EXPECT_FALSE(check_niah_params(8, 10, -1).ok());
  EXPECT_TRUE(check_niah_params(8, 8, 0).ok());
  EXPECT_TRUE(generate_niah(0, 5, 10, 3).empty());
}

TEST(Niah, RecallRuleIsSubstring) {
  EXPECT_TRUE(niah_recalled(" MAPLE-7890 is the se", "MAPLE-7890"));
  EXPECT_FALSE(niah_recalled(" IOTA-1110come is the", "MAPLE-7890"));
  EXPECT_FALSE(niah_recalled(" MAPLE-789", "MAPLE-7890"));
  EXPECT_FALSE(niah_recalled("anything", ""));
}

}  // namespace
}  // namespace kakeya::engine
