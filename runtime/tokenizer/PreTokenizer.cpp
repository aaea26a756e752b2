// GLM-4's pre-tokenizer regex, matched by hand over decoded code points (see PreTokenizer.h).
#include "runtime/tokenizer/PreTokenizer.h"

#include "runtime/tokenizer/Unicode.h"

#include <cstddef>
#include <cstdint>

namespace glm5rt::tokenizer {
namespace {

// The classes the regex distinguishes; every character is in exactly one.
enum class CharClass : uint8_t {
  kLetter,  // \p{L}
  kNumber,  // \p{N}
  kNewline, // \r or \n (both also \s)
  kSpace,   // any other \s
  kOther,   // [^\s\p{L}\p{N}], including bytes that are not valid UTF-8
};

struct Char {
  uint32_t cp;   // code point, or kInvalidCodePoint
  size_t offset; // byte offset of the character in the text
  CharClass cls;
};

CharClass classify(uint32_t cp) {
  if (cp == kInvalidCodePoint)
    return CharClass::kOther;
  if (cp == '\r' || cp == '\n')
    return CharClass::kNewline;
  if (isWhitespace(cp))
    return CharClass::kSpace;
  if (isLetter(cp))
    return CharClass::kLetter;
  if (isNumber(cp))
    return CharClass::kNumber;
  return CharClass::kOther;
}

bool isSpaceClass(CharClass c) { return c == CharClass::kNewline || c == CharClass::kSpace; }

// Simple case folding, enough for the contraction letters: ASCII, and U+017F (long s), whose
// case fold is 's' (no other code point folds to one of s t r e v m l d).
uint32_t foldCase(uint32_t cp) {
  if (cp >= 'A' && cp <= 'Z')
    return cp + 32;
  return cp == 0x017F ? 's' : cp;
}

// Index one past the end of the match that starts at chars[i] (i < chars.size()); always > i.
size_t matchEnd(const std::vector<Char> &chars, size_t i) {
  const size_t n = chars.size();
  auto cls = [&](size_t k) { return chars[k].cls; };
  auto runEnd = [&](size_t k, CharClass c) {
    while (k < n && cls(k) == c)
      ++k;
    return k;
  };

  // (?i:'s|'t|'re|'ve|'m|'ll|'d): no alternative is a prefix of another, so order is irrelevant.
  if (chars[i].cp == '\'' && i + 1 < n) {
    const uint32_t a = foldCase(chars[i + 1].cp);
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
      return i + 2;
    if (i + 2 < n) {
      const uint32_t b = foldCase(chars[i + 2].cp);
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        return i + 3;
    }
  }

  // [^\r\n\p{L}\p{N}]?\p{L}+ : a letter here needs no prefix (a letter cannot be the prefix);
  // otherwise one prefix character that is not a newline, letter or number, then letters.
  if (cls(i) == CharClass::kLetter)
    return runEnd(i + 1, CharClass::kLetter);
  if ((cls(i) == CharClass::kSpace || cls(i) == CharClass::kOther) && i + 1 < n &&
      cls(i + 1) == CharClass::kLetter)
    return runEnd(i + 2, CharClass::kLetter);

  // \p{N}{1,3}
  if (cls(i) == CharClass::kNumber) {
    size_t k = i + 1;
    while (k < n && k < i + 3 && cls(k) == CharClass::kNumber)
      ++k;
    return k;
  }

  // " ?[^\s\p{L}\p{N}]+[\r\n]*": the optional U+0020 is taken only if "other" characters follow.
  {
    size_t k = i + (chars[i].cp == ' ' ? 1 : 0);
    if (k < n && cls(k) == CharClass::kOther)
      return runEnd(runEnd(k, CharClass::kOther), CharClass::kNewline);
  }

  // Everything left starts with whitespace: letters, numbers and "other" were taken above, and a
  // space followed by "other" too. Take the maximal whitespace run [i, end).
  size_t end = i;
  size_t lastNewline = n; // n: none in the run
  while (end < n && isSpaceClass(cls(end))) {
    if (cls(end) == CharClass::kNewline)
      lastNewline = end;
    ++end;
  }
  // \s*[\r\n]+ : greedy \s* backtracks to the run's last newline; [\r\n]+ then takes just it.
  if (lastNewline != n)
    return lastNewline + 1;
  // \s+(?!\S) : the whole run at the end of the text; before a non-space, the run minus its last
  // character (left to prefix the next word), if that is not empty.
  if (end == n)
    return end;
  if (end - i >= 2)
    return end - 1;
  // \s+ : a single whitespace character before a non-space.
  return end;
}

} // namespace

std::vector<std::string_view> preTokenize(std::string_view text) {
  std::vector<Char> chars;
  chars.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t len;
    const uint32_t cp = decodeUtf8(text.substr(pos), &len);
    chars.push_back({cp, pos, classify(cp)});
    pos += len;
  }

  std::vector<std::string_view> pieces;
  for (size_t i = 0; i < chars.size();) {
    const size_t end = matchEnd(chars, i);
    const size_t from = chars[i].offset;
    const size_t to = end < chars.size() ? chars[end].offset : text.size();
    pieces.push_back(text.substr(from, to - from));
    i = end;
  }
  return pieces;
}

} // namespace glm5rt::tokenizer
