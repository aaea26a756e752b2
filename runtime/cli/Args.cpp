#include "runtime/cli/Args.h"

namespace glm5rt::cli {

bool parseUnsigned(const char *s, uint64_t max, uint64_t *out) {
  if (!s || !*s)
    return false;
  uint64_t v = 0;
  for (const char *p = s; *p; ++p) {
    if (*p < '0' || *p > '9')
      return false;
    const uint64_t d = static_cast<uint64_t>(*p - '0');
    if (d > max || v > (max - d) / 10) // v * 10 + d > max, without overflow (or max - d's wrap)
      return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

bool parseUnsigned(const char *s, uint64_t lo, uint64_t max, uint64_t *out) {
  uint64_t v = 0;
  if (!parseUnsigned(s, max, &v) || v < lo)
    return false;
  *out = v;
  return true;
}

} // namespace glm5rt::cli
