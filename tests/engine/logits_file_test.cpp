// LogitsFile / read_logits_npy (presets/logits_file.h): what one writes the other reads back, and
// files that are not a float32 2-D .npy are refused by name.
#include "engine/presets/logits_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/harness/paths.h"

namespace kakeya::engine {
namespace {

TEST(LogitsNpy, ReadBackWhatLogitsFileWrote) {
  testing::TempDir dir;
  const std::string path = (dir.path() / "l.npy").string();
  auto f = LogitsFile::create(path, 3);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(f->append(std::vector<float>{1.5f, -2.0f, 3.25f}).ok());
  ASSERT_TRUE(f->append(std::vector<float>{0.0f, 7.0f, -0.5f}).ok());
  ASSERT_TRUE(f->finish().ok());
  auto m = read_logits_npy(path);
  ASSERT_TRUE(m.ok()) << m.error().str();
  EXPECT_EQ(m->rows, 2u);
  EXPECT_EQ(m->n_vocab, 3);
  EXPECT_EQ(m->data, (std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f}));
}

TEST(LogitsNpy, RefusesOtherFilesNamingWhatIsWrong) {
  testing::TempDir dir;
  auto write = [&](const std::string& name, const std::string& header, size_t data_bytes) {
    const std::string path = (dir.path() / name).string();
    std::ofstream out(path, std::ios::binary);
    std::string h = header;
    h.resize(118 - 1, ' ');
    h += '\n';
    out << std::string("\x93NUMPY\x01\x00", 8) << static_cast<char>(118) << static_cast<char>(0) << h
        << std::string(data_bytes, '\0');
    return path;
  };
  struct Case {
    std::string path, expect;
  };
  const Case cases[] = {
      {write("f8.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }", 16), "dtype"},
      {write("fortran.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 2), }", 8), "C order"},
      {write("1d.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8), "not 2-D"},
      {write("short.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 8), "needs 16 data bytes"},
  };
  for (const Case& c : cases) {
    auto m = read_logits_npy(c.path);
    ASSERT_FALSE(m.ok()) << c.path;
    EXPECT_EQ(m.error().code, "parse_error");
    EXPECT_NE(m.error().message.find(c.expect), std::string::npos) << m.error().message;
    EXPECT_NE(m.error().message.find(c.path), std::string::npos) << m.error().message;
  }
  EXPECT_EQ(read_logits_npy((dir.path() / "absent.npy").string()).error().code, "io");
}

}  // namespace
}  // namespace kakeya::engine
