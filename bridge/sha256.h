#pragma once
// SHA-256 of a byte string, as lower-case hex (OpenSSL EVP). Used for cache directory names and
// the catalog digest runners publish.
#include <string>
#include <string_view>

namespace kakeya::bridge {

std::string sha256_hex(std::string_view data);

}  // namespace kakeya::bridge
