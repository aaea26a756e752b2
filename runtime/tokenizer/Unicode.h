// Unicode support for the tokenizer: lenient UTF-8 decoding, UTF-8 repair for display, GPT-2's
// byte <-> unicode mapping, and the letter / number / whitespace classes of the pre-tokenizer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace glm5rt::tokenizer {

// What decodeUtf8 returns for a byte that does not start a valid UTF-8 sequence.
constexpr uint32_t kInvalidCodePoint = 0xFFFFFFFFu;

// Decodes the UTF-8 sequence at the start of `s` (non-empty) and sets *len to its length in bytes
// (always >= 1). A byte that starts no valid sequence (a stray continuation byte, an overlong form,
// a surrogate, a value above U+10FFFF, or a sequence cut short) decodes as kInvalidCodePoint with
// *len = 1, so every byte of any input belongs to exactly one decoded unit.
uint32_t decodeUtf8(std::string_view s, size_t *len);

// Appends the UTF-8 encoding of `cp` (<= U+10FFFF).
void appendUtf8(std::string &out, uint32_t cp);

// Appends `bytes` to `out` as valid UTF-8: each maximal ill-formed subsequence (Unicode's
// "maximal subpart" rule, as WHATWG decoders use) becomes one U+FFFD. When `final` is false, an
// incomplete but so far valid sequence at the end is not consumed; returns the number of bytes of
// `bytes` consumed (the held-back tail is at most 3 bytes). When `final` is true, everything is
// consumed and a cut-short sequence at the end becomes U+FFFD.
size_t appendRepairedUtf8(std::string &out, std::string_view bytes, bool final);

// GPT-2's byte -> unicode mapping: the printable bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF map to
// the code point of the same value; the other 68 bytes map, in byte order, to U+0100..U+0143.
uint32_t byteToCodePoint(uint8_t b);
// The inverse: the byte a code point stands for, or -1 when `cp` is not in the mapping's image.
int32_t codePointToByte(uint32_t cp);

// General_Category L* (Lu Ll Lt Lm Lo) in Unicode 14.0, i.e. the regex class \p{L}.
bool isLetter(uint32_t cp);
// General_Category N* (Nd Nl No) in Unicode 14.0, i.e. the regex class \p{N}.
bool isNumber(uint32_t cp);
// The White_Space property (what \s matches in Oniguruma and Rust regex): U+0009..U+000D, U+0020,
// U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
bool isWhitespace(uint32_t cp);

namespace detail {
struct CodePointRange {
  uint32_t lo, hi; // inclusive
};
// Sorted, disjoint tables (UnicodeTables.cpp, generated).
extern const CodePointRange kLetterRanges[];
extern const size_t kNumLetterRanges;
extern const CodePointRange kNumberRanges[];
extern const size_t kNumNumberRanges;
} // namespace detail

} // namespace glm5rt::tokenizer
