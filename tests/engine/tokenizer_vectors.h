#pragma once
// llama.cpp's tokenizer test vectors (<vocab>.gguf.inp / .gguf.out, as described in
// ../shared/reference/tokenizer/README.md) and loading a vocabulary-only GGUF, for the tokenizer
// tests. The files are third-party and read from the shared folder at test time.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/gguf.h"
#include "engine/tokenizer.h"
#include "tests/harness/paths.h"

namespace kakeya::engine::tokenizer_testing {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  EXPECT_TRUE(f.good()) << p;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct TokenizerVector {
  std::string input;
  std::vector<int32_t> ids;  // without BOS
};

// The vectors of `<gguf>.inp` / `<gguf>.out` (`gguf` is the path of the .gguf, which need not
// exist): inputs split on "\n__ggml_vocab_test__\n", one line of ids per input.
inline std::vector<TokenizerVector> read_vectors(const std::filesystem::path& gguf) {
  const std::string inp = slurp(gguf.string() + ".inp");
  const std::string out = slurp(gguf.string() + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<TokenizerVector> v;
  for (size_t pos = 0;;) {
    const size_t hit = inp.find(sep, pos);
    if (hit == std::string::npos) break;
    v.push_back({inp.substr(pos, hit - pos), {}});
    pos = hit + sep.size();
  }
  std::istringstream lines(out);
  std::string line;
  size_t i = 0;
  while (std::getline(lines, line) && i < v.size()) {
    std::istringstream ls(line);
    int32_t id = 0;
    while (ls >> id) v[i].ids.push_back(id);
    ++i;
  }
  EXPECT_EQ(i, v.size()) << gguf;
  return v;
}

inline Tokenizer load_tokenizer(const std::filesystem::path& path) {
  auto gguf = GgufFile::open(path.string());
  EXPECT_TRUE(gguf.ok()) << (gguf.ok() ? "" : gguf.error().str());
  auto tok = Tokenizer::from_gguf(*gguf);
  EXPECT_TRUE(tok.ok()) << (tok.ok() ? "" : tok.error().str());
  return std::move(tok).value();
}

// ../shared/reference/tokenizer/bpe/ggml-vocab-<name>.gguf
inline std::filesystem::path bpe_vocab(const std::string& name) {
  return kakeya::testing::shared_dir() / "reference" / "tokenizer" / "bpe" / ("ggml-vocab-" + name + ".gguf");
}

}  // namespace kakeya::engine::tokenizer_testing
