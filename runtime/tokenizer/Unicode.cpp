// UTF-8 decoding and repair, GPT-2's byte map and Unicode class lookups (see Unicode.h).
#include "runtime/tokenizer/Unicode.h"

#include <algorithm>

namespace glm5rt::tokenizer {
namespace {

bool inRange(uint8_t c, uint8_t lo, uint8_t hi) { return c >= lo && c <= hi; }

// For a lead byte, the number of continuation bytes it needs and the allowed range of the first
// one (which excludes overlong forms, surrogates and values above U+10FFFF); need = -1 for a byte
// that can never start a sequence.
struct LeadInfo {
  int need;
  uint8_t lo, hi;
};
LeadInfo leadInfo(uint8_t b) {
  if (b < 0x80)
    return {0, 0, 0};
  if (inRange(b, 0xC2, 0xDF))
    return {1, 0x80, 0xBF};
  if (b == 0xE0)
    return {2, 0xA0, 0xBF};
  if (b == 0xED)
    return {2, 0x80, 0x9F};
  if (inRange(b, 0xE1, 0xEF))
    return {2, 0x80, 0xBF};
  if (b == 0xF0)
    return {3, 0x90, 0xBF};
  if (b == 0xF4)
    return {3, 0x80, 0x8F};
  if (inRange(b, 0xF1, 0xF3))
    return {3, 0x80, 0xBF};
  return {-1, 0, 0};
}

bool inTable(uint32_t cp, const detail::CodePointRange *table, size_t n) {
  const detail::CodePointRange *end = table + n;
  // First range whose upper bound is >= cp; cp is in the table iff that range starts <= cp.
  const detail::CodePointRange *it = std::lower_bound(
      table, end, cp, [](const detail::CodePointRange &r, uint32_t v) { return r.hi < v; });
  return it != end && it->lo <= cp;
}

bool isPrintableByte(uint32_t b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct ByteMap {
  uint32_t toCp[256];
  int16_t toByte[0x144]; // indexed by code point; the image of the map lies below U+0144
};
const ByteMap &byteMap() {
  static const ByteMap map = [] {
    ByteMap m;
    std::fill(std::begin(m.toByte), std::end(m.toByte), static_cast<int16_t>(-1));
    uint32_t next = 0x100; // non-printable bytes take U+0100, U+0101, ... in byte order
    for (uint32_t b = 0; b < 256; ++b) {
      m.toCp[b] = isPrintableByte(b) ? b : next++;
      m.toByte[m.toCp[b]] = static_cast<int16_t>(b);
    }
    return m;
  }();
  return map;
}

} // namespace

uint32_t decodeUtf8(std::string_view s, size_t *len) {
  *len = 1;
  const uint8_t b0 = static_cast<uint8_t>(s[0]);
  const LeadInfo info = leadInfo(b0);
  if (info.need == 0)
    return b0;
  if (info.need < 0 || s.size() <= static_cast<size_t>(info.need))
    return kInvalidCodePoint;
  uint32_t cp = b0 & (0x7F >> (info.need + 1));
  for (int k = 1; k <= info.need; ++k) {
    const uint8_t c = static_cast<uint8_t>(s[k]);
    if (k == 1 ? !inRange(c, info.lo, info.hi) : !inRange(c, 0x80, 0xBF))
      return kInvalidCodePoint;
    cp = (cp << 6) | (c & 0x3F);
  }
  *len = static_cast<size_t>(info.need) + 1;
  return cp;
}

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t appendRepairedUtf8(std::string &out, std::string_view bytes, bool final) {
  static constexpr char kReplacement[] = "\xEF\xBF\xBD"; // U+FFFD
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    const uint8_t b = static_cast<uint8_t>(bytes[i]);
    const LeadInfo info = leadInfo(b);
    if (info.need == 0) {
      out.push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    if (info.need < 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    // Extend over valid continuation bytes; j ends after the last byte that fits.
    size_t j = i + 1;
    int k = 0;
    bool bad = false;
    while (k < info.need && j < n) {
      const uint8_t c = static_cast<uint8_t>(bytes[j]);
      if (k == 0 ? !inRange(c, info.lo, info.hi) : !inRange(c, 0x80, 0xBF)) {
        bad = true;
        break;
      }
      ++j;
      ++k;
    }
    if (k == info.need) {
      out.append(bytes.data() + i, j - i);
    } else if (bad || final) {
      out += kReplacement; // the maximal subpart [i, j); the byte at j (if any) starts afresh
    } else {
      return i; // a valid prefix cut short by the end of the input: hold it back
    }
    i = j;
  }
  return n;
}

uint32_t byteToCodePoint(uint8_t b) { return byteMap().toCp[b]; }

int32_t codePointToByte(uint32_t cp) { return cp < 0x144 ? byteMap().toByte[cp] : -1; }

bool isLetter(uint32_t cp) {
  if (cp < 0x80)
    return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return inTable(cp, detail::kLetterRanges, detail::kNumLetterRanges);
}

bool isNumber(uint32_t cp) {
  if (cp < 0x80)
    return cp >= '0' && cp <= '9';
  return inTable(cp, detail::kNumberRanges, detail::kNumNumberRanges);
}

bool isWhitespace(uint32_t cp) {
  if (cp < 0x80)
    return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  switch (cp) {
  case 0x85:
  case 0xA0:
  case 0x1680:
  case 0x2028:
  case 0x2029:
  case 0x202F:
  case 0x205F:
  case 0x3000:
    return true;
  default:
    return cp >= 0x2000 && cp <= 0x200A;
  }
}

} // namespace glm5rt::tokenizer
