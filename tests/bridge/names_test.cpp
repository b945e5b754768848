#include "bridge/names.h"

#include <string>

#include <gtest/gtest.h>

namespace kakeya::bridge {
namespace {

TEST(Names, EnvNameIsThePosixPortableForm) {
  for (const char* ok : {"PATH", "_", "HF_TOKEN", "A1", "KAKEYA_GIT_TOKEN", "_X9"}) EXPECT_TRUE(is_env_name(ok)) << ok;
  for (const char* bad : {"", "1A", "lower", "Hf_TOKEN", "HF-TOKEN", "A=B", "A B", "A.B"}) {
    EXPECT_FALSE(is_env_name(bad)) << bad;
  }
  EXPECT_FALSE(is_env_name(std::string("A\0B", 3)));
  EXPECT_TRUE(is_env_name(std::string(128, 'A')));
  EXPECT_FALSE(is_env_name(std::string(129, 'A')));
}

TEST(Names, ParamNameAndModelRole) {
  EXPECT_TRUE(is_param_name("max_new_tokens"));
  EXPECT_TRUE(is_param_name(std::string(40, 'a')));
  EXPECT_FALSE(is_param_name(std::string(41, 'a')));
  for (const char* bad : {"", "Steps", "1x", "a-b", "_a"}) EXPECT_FALSE(is_param_name(bad)) << bad;
  EXPECT_TRUE(is_model_role("draft-1"));
  EXPECT_TRUE(is_model_role("target_q4"));
  for (const char* bad : {"", "Draft", "-x", "a.b", "a/b"}) EXPECT_FALSE(is_model_role(bad)) << bad;
}

}  // namespace
}  // namespace kakeya::bridge
