// Numeric command-line values, read strictly: the whole argument is the number, so "2x", "64k",
// " 8", "+3", "-1" and out-of-range values are refused rather than read as a prefix or wrapped.
#pragma once

#include <cstdint>

namespace glm5rt::cli {

// A decimal integer in [0, max] made of digits only; false otherwise (*out unchanged).
bool parseUnsigned(const char *s, uint64_t max, uint64_t *out);
// The same in [lo, max].
bool parseUnsigned(const char *s, uint64_t lo, uint64_t max, uint64_t *out);

} // namespace glm5rt::cli
