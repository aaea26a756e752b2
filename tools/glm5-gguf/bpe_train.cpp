// Byte-level BPE training and GLM vocabulary layout for tokenizer fixtures (see bpe_train.h).
#include "tools/glm5-gguf/bpe_train.h"

#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace glm5c::fixture {
namespace {

void appendUtf8(std::string &out, uint32_t cp) {
  // Only code points below U+0800 occur here (the byte map tops out at U+0143).
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool isPrintableByte(uint32_t b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

// The 256 byte-level strings, built once; entry b is byteToUnicode(b).
const std::vector<std::string> &byteTable() {
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    uint32_t next = 256; // non-printable bytes take 256, 257, ... in byte order
    for (uint32_t b = 0; b < 256; ++b)
      appendUtf8(t[b], isPrintableByte(b) ? b : next++);
    return t;
  }();
  return table;
}

// Byte classes of the pre-tokenizer approximation. Every byte >= 0x80 counts as a letter: UTF-8
// lead and continuation bytes of a character then always stay in one pre-token.
bool isLetter(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}
bool isDigit(unsigned char c) { return c >= '0' && c <= '9'; }
bool isNewline(unsigned char c) { return c == '\r' || c == '\n'; }
bool isSpace(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
// [^\s\p{L}\p{N}] in the approximation: ASCII punctuation, symbols and control bytes.
bool isPunct(unsigned char c) { return !isSpace(c) && !isLetter(c) && !isDigit(c); }

char lower(unsigned char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

// Length of a contraction ('s 't 're 've 'm 'll 'd, any case) at the start of `s`, or 0.
size_t contractionLength(std::string_view s) {
  if (s.size() < 2 || s[0] != '\'')
    return 0;
  char a = lower(s[1]);
  if (a == 's' || a == 't' || a == 'm' || a == 'd')
    return 2;
  if (s.size() < 3)
    return 0;
  char b = lower(s[2]);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
    return 3;
  return 0;
}

// Length of the pre-token starting at s[0] (s is non-empty); always >= 1.
size_t preTokenLength(std::string_view s) {
  const size_t n = s.size();
  auto at = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  auto letterRunEnd = [&](size_t i) {
    while (i < n && isLetter(at(i)))
      ++i;
    return i;
  };
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
  if (size_t len = contractionLength(s))
    return len;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (isLetter(at(0)))
    return letterRunEnd(1);
  if (n >= 2 && !isNewline(at(0)) && !isDigit(at(0)) && isLetter(at(1)))
    return letterRunEnd(2);
  // \p{N}{1,3}
  if (isDigit(at(0))) {
    size_t i = 1;
    while (i < n && i < 3 && isDigit(at(i)))
      ++i;
    return i;
  }
  // " ?[^\s\p{L}\p{N}]+[\r\n]*"
  size_t p = at(0) == ' ' ? 1 : 0;
  if (p < n && isPunct(at(p))) {
    while (p < n && isPunct(at(p)))
      ++p;
    while (p < n && isNewline(at(p)))
      ++p;
    return p;
  }
  // Only whitespace is left: s[0] is a space byte here (letters, digits and punctuation were all
  // taken above). Find the maximal whitespace run [0, end).
  size_t end = 0, lastNewline = n;
  while (end < n && isSpace(at(end))) {
    if (isNewline(at(end)))
      lastNewline = end;
    ++end;
  }
  // \s*[\r\n]+ : greedy \s* backtracks to the run's last newline, so the match ends after it.
  if (lastNewline != n)
    return lastNewline + 1;
  // \s+(?!\S) : leave the run's last space to be glued to the following word; \s+ for a single one.
  if (end < n && end > 1)
    return end - 1;
  return end;
}

struct Word {
  std::vector<int32_t> symbols; // token ids
  int64_t count = 0;            // occurrences of this pre-token in the text
};

} // namespace

std::string byteToUnicode(uint8_t b) { return byteTable()[b]; }

std::string bytesToUnicode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes)
    out += byteTable()[static_cast<unsigned char>(c)];
  return out;
}

// Approximates GLM-4's pre-tokenizer regex
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//   \s*[\r\n]+|\s+(?!\S)|\s+
// on bytes, trying the alternatives in order at each position like the regex does. Differences:
// every byte >= 0x80 is a letter (so non-ASCII punctuation, digits, spaces and emoji join letter
// runs), \p{N} is ASCII digits only, and \s is ASCII whitespace only. That is enough for training:
// merges only have to stay inside plausible word pieces. Tokenizing with the exact regex is the
// runtime tokenizer's job, not the trainer's.
std::vector<std::string_view> preTokenize(std::string_view text) {
  std::vector<std::string_view> pieces;
  size_t i = 0;
  while (i < text.size()) {
    size_t len = preTokenLength(text.substr(i));
    pieces.push_back(text.substr(i, len));
    i += len;
  }
  return pieces;
}

glm5rt::StatusOr<TokenizerData> buildGlmTokenizer(std::string_view text, uint32_t nMerges,
                                                  uint32_t vocabSize) {
  using glm5rt::StatusCode;
  if (vocabSize > kMaxFixtureVocab)
    return glm5rt::makeStatus(StatusCode::kInvalidArgument,
                              "vocab size %u exceeds the fixture limit %u", vocabSize,
                              kMaxFixtureVocab);
  // Bytes and merged tokens must all fit below the special block.
  const uint64_t needed = 256ull + nMerges + kSpecialBlockFromEnd;
  if (needed > vocabSize)
    return glm5rt::makeStatus(StatusCode::kInvalidArgument,
                              "vocab size %u cannot hold 256 byte tokens + %u merges + %u special "
                              "slots (needs %llu)",
                              vocabSize, nMerges, kSpecialBlockFromEnd,
                              static_cast<unsigned long long>(needed));

  TokenizerData data;
  std::unordered_map<std::string, int32_t> idOf; // token string -> id, for every token so far
  for (uint32_t b = 0; b < 256; ++b) {
    idOf.emplace(byteTable()[b], static_cast<int32_t>(b));
    data.tokens.push_back(byteTable()[b]);
  }
  // Merge results that would collide with a special token's text (e.g. "/nothink") are refused.
  std::set<std::string> reserved;
  for (const char *special : kGlmSpecialTokens)
    reserved.insert(special);

  // Distinct pre-tokens with multiplicities; std::map keeps iteration order independent of hashing.
  std::map<std::string_view, int64_t> wordCounts;
  for (std::string_view piece : preTokenize(text))
    ++wordCounts[piece];
  std::vector<Word> words;
  words.reserve(wordCounts.size());
  for (const auto &[piece, count] : wordCounts) {
    Word w;
    w.count = count;
    for (char c : piece)
      w.symbols.push_back(static_cast<unsigned char>(c));
    if (w.symbols.size() >= 2) // single symbols never take part in a pair
      words.push_back(std::move(w));
  }

  std::map<std::pair<int32_t, int32_t>, int64_t> pairCounts;
  for (uint32_t m = 0; m < nMerges; ++m) {
    // Recounting every step is cheap at fixture scale (thousands of distinct words).
    pairCounts.clear();
    for (const Word &w : words)
      for (size_t i = 0; i + 1 < w.symbols.size(); ++i)
        pairCounts[{w.symbols[i], w.symbols[i + 1]}] += w.count;

    const std::pair<int32_t, int32_t> *best = nullptr;
    int64_t bestCount = 0;
    for (const auto &[pair, count] : pairCounts) {
      if (count < bestCount)
        continue;
      if (reserved.count(data.tokens[pair.first] + data.tokens[pair.second]))
        continue;
      if (best && count == bestCount) {
        const std::string &l = data.tokens[pair.first], &r = data.tokens[pair.second];
        const std::string &bl = data.tokens[best->first], &br = data.tokens[best->second];
        if (std::tie(l, r) >= std::tie(bl, br))
          continue;
      }
      best = &pair;
      bestCount = count;
    }
    if (!best || bestCount < 2)
      break;

    const int32_t left = best->first, right = best->second;
    std::string merged = data.tokens[left] + data.tokens[right];
    data.merges.push_back(data.tokens[left] + " " + data.tokens[right]);
    int32_t mergedId;
    auto it = idOf.find(merged);
    if (it != idOf.end()) {
      mergedId = it->second; // same string reached through another split: reuse its id
    } else {
      mergedId = static_cast<int32_t>(data.tokens.size());
      idOf.emplace(merged, mergedId);
      data.tokens.push_back(std::move(merged));
    }

    // Replace non-overlapping occurrences left to right, as BPE application does.
    for (Word &w : words) {
      std::vector<int32_t> &s = w.symbols;
      size_t out = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == left && s[i + 1] == right) {
          s[out++] = mergedId;
          ++i;
        } else {
          s[out++] = s[i];
        }
      }
      s.resize(out);
    }
  }
  data.tokenTypes.assign(data.tokens.size(), kTokenTypeNormal);

  // Padding up to the special block, the specials, then padding to the end.
  const uint32_t specialStart = vocabSize - kSpecialBlockFromEnd;
  auto padTo = [&](uint32_t end) {
    while (data.tokens.size() < end) {
      data.tokens.push_back("[PAD" + std::to_string(data.tokens.size()) + "]");
      data.tokenTypes.push_back(kTokenTypeUnused);
    }
  };
  padTo(specialStart);
  for (const char *special : kGlmSpecialTokens) {
    data.tokens.push_back(special);
    data.tokenTypes.push_back(kTokenTypeControl);
  }
  padTo(vocabSize);

  // Learned tokens cannot collide with specials (refused above) or with "[PAD<i>]" (a pre-token
  // never holds both letters and digits); check anyway, since duplicate tokens break loaders.
  std::unordered_map<std::string_view, int32_t> seen;
  seen.reserve(data.tokens.size());
  for (size_t i = 0; i < data.tokens.size(); ++i)
    if (!seen.emplace(data.tokens[i], static_cast<int32_t>(i)).second)
      return glm5rt::makeStatus(StatusCode::kInternal, "duplicate token '%s' at ids %d and %zu",
                                data.tokens[i].c_str(), seen[data.tokens[i]], i);

  auto specialId = [&](uint32_t index) { return static_cast<int32_t>(specialStart + index); };
  data.eosId = specialId(0); // <|endoftext|>
  data.bosId = specialId(2); // [gMASK]
  data.eotId = specialId(7); // <|user|>
  data.eomId = specialId(9); // <|observation|>
  data.unkId = data.eosId;
  data.padId = data.eosId;
  return data;
}

} // namespace glm5c::fixture
