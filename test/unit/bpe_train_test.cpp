// Unit tests for the fixture BPE trainer: byte map, pre-tokenizer, merges and GLM vocab layout.
#include "tools/glm5-gguf/bpe_train.h"
#include "tools/glm5-gguf/fixture_text.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace glm5c::fixture {
namespace {

constexpr uint32_t kGlm5Vocab = 154880;

TokenizerData buildOrDie(std::string_view text, uint32_t nMerges, uint32_t vocabSize) {
  auto result = buildGlmTokenizer(text, nMerges, vocabSize);
  EXPECT_TRUE(result.isOk()) << result.status().toString();
  return std::move(result).value();
}

bool isAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool isAsciiDigit(char c) { return c >= '0' && c <= '9'; }

TEST(BpeTrain, ByteToUnicodeKnownBytes) {
  EXPECT_EQ(byteToUnicode('!'), "!");
  EXPECT_EQ(byteToUnicode('a'), "a");
  EXPECT_EQ(byteToUnicode(' '), "\xC4\xA0");  // U+0120 'Ġ'
  EXPECT_EQ(byteToUnicode('\n'), "\xC4\x8A"); // U+010A 'Ċ'
  EXPECT_EQ(byteToUnicode(0x00), "\xC4\x80"); // U+0100
  EXPECT_EQ(byteToUnicode(0xFF), "\xC3\xBF"); // U+00FF 'ÿ'
  EXPECT_EQ(byteToUnicode(0xAD), "\xC5\x83"); // U+0143
  EXPECT_EQ(bytesToUnicode("a b\n"), std::string("a\xC4\xA0") + "b\xC4\x8A");
}

TEST(BpeTrain, ByteToUnicodeIsInjective) {
  std::set<std::string> seen;
  for (int b = 0; b < 256; ++b)
    EXPECT_TRUE(seen.insert(byteToUnicode(static_cast<uint8_t>(b))).second) << "byte " << b;
}

TEST(BpeTrain, PreTokenizeSplits) {
  auto join = [](const std::vector<std::string_view> &pieces) {
    std::string out;
    for (std::string_view p : pieces)
      out += std::string(p) + "|";
    return out;
  };
  EXPECT_EQ(join(preTokenize("Hello world's 12345 (x)")), "Hello| world|'s| |123|45| (|x|)|");
  EXPECT_EQ(join(preTokenize("a  b\n\n  c")), "a| | b|\n\n| | c|");
  EXPECT_EQ(join(preTokenize("x = 1;\n    y();")), "x| =| |1|;\n|   | y|();|");
  // Multi-byte UTF-8 stays inside letter runs.
  EXPECT_EQ(join(preTokenize(" caf\xC3\xA9!")), " caf\xC3\xA9|!|");
  // The pieces always concatenate back to the input.
  std::string rebuilt;
  for (std::string_view p : preTokenize(kFixtureText))
    rebuilt += p;
  EXPECT_EQ(rebuilt, kFixtureText);
}

TEST(BpeTrain, Deterministic) {
  TokenizerData a = buildOrDie(kFixtureText, 400, 1024);
  TokenizerData b = buildOrDie(kFixtureText, 400, 1024);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.tokenTypes, b.tokenTypes);
  EXPECT_EQ(a.merges, b.merges);
}

TEST(BpeTrain, Glm5SpecialIds) {
  TokenizerData d = buildOrDie(kFixtureText, 400, kGlm5Vocab);
  ASSERT_EQ(d.tokens.size(), kGlm5Vocab);
  ASSERT_EQ(d.tokenTypes.size(), kGlm5Vocab);
  EXPECT_EQ(d.tokens[154820], "<|endoftext|>");
  EXPECT_EQ(d.tokens[154822], "[gMASK]");
  EXPECT_EQ(d.tokens[154824], "<sop>");
  EXPECT_EQ(d.tokens[154826], "<|system|>");
  EXPECT_EQ(d.tokens[154827], "<|user|>");
  EXPECT_EQ(d.tokens[154828], "<|assistant|>");
  EXPECT_EQ(d.tokens[154829], "<|observation|>");
  EXPECT_EQ(d.tokens[154841], "<think>");
  EXPECT_EQ(d.tokens[154842], "</think>");
  EXPECT_EQ(d.eosId, 154820);
  EXPECT_EQ(d.bosId, 154822);
  EXPECT_EQ(d.eotId, 154827);
  EXPECT_EQ(d.eomId, 154829);
  EXPECT_EQ(d.unkId, 154820);
  EXPECT_EQ(d.padId, 154820);
  for (uint32_t i = 0; i < kNumGlmSpecialTokens; ++i) {
    EXPECT_EQ(d.tokens[154820 + i], kGlmSpecialTokens[i]);
    EXPECT_EQ(d.tokenTypes[154820 + i], kTokenTypeControl);
  }
  EXPECT_EQ(d.tokens[154819], "[PAD154819]");
  EXPECT_EQ(d.tokenTypes[154819], kTokenTypeUnused);
  EXPECT_EQ(d.tokens[154820 + kNumGlmSpecialTokens], "[PAD154856]");
  EXPECT_EQ(d.tokens[kGlm5Vocab - 1], "[PAD154879]");
  EXPECT_EQ(d.tokenTypes[kGlm5Vocab - 1], kTokenTypeUnused);
}

TEST(BpeTrain, SmallVocabLayout) {
  TokenizerData d = buildOrDie(kFixtureText, 400, 1024);
  ASSERT_EQ(d.tokens.size(), 1024u);
  EXPECT_EQ(d.tokens[964], "<|endoftext|>");
  EXPECT_EQ(d.tokens[966], "[gMASK]");
  EXPECT_EQ(d.eosId, 964);
  EXPECT_EQ(d.bosId, 966);
  EXPECT_EQ(d.eotId, 971);
  EXPECT_EQ(d.eomId, 973);
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(d.tokens[b], byteToUnicode(static_cast<uint8_t>(b)));
    EXPECT_EQ(d.tokenTypes[b], kTokenTypeNormal);
  }
  // Merged tokens follow the bytes contiguously, then padding begins.
  size_t firstPad = 256;
  while (d.tokenTypes[firstPad] == kTokenTypeNormal)
    ++firstPad;
  EXPECT_LE(firstPad - 256, d.merges.size());
  EXPECT_EQ(d.tokens[firstPad], "[PAD" + std::to_string(firstPad) + "]");
  for (size_t i = firstPad; i < 964; ++i)
    EXPECT_EQ(d.tokenTypes[i], kTokenTypeUnused) << "id " << i;
}

TEST(BpeTrain, LearnsEnoughMergesFromBuiltinText) {
  TokenizerData d = buildOrDie(kFixtureText, 400, 1024);
  EXPECT_GE(d.merges.size(), 300u);
  EXPECT_LE(d.merges.size(), 400u);
  // nMerges caps the count.
  EXPECT_EQ(buildOrDie(kFixtureText, 50, 1024).merges.size(), 50u);
  // Too little text stops early: nothing occurs twice.
  EXPECT_TRUE(buildOrDie("abc", 10, 1024).merges.empty());
  // The prefix of a longer run is the shorter run (greedy and deterministic).
  TokenizerData shorter = buildOrDie(kFixtureText, 100, 1024);
  ASSERT_EQ(shorter.merges.size(), 100u);
  for (size_t i = 0; i < shorter.merges.size(); ++i)
    EXPECT_EQ(shorter.merges[i], d.merges[i]);
  // Byte-level UTF-8 merges occur: some merged token holds a multi-byte character's bytes.
  const std::string accentE = bytesToUnicode("\xC3\xA9"); // 'é' in byte-level form
  bool sawUtf8Merge = false;
  for (const std::string &m : d.merges)
    sawUtf8Merge |= m == bytesToUnicode("\xC3") + " " + bytesToUnicode("\xA9");
  EXPECT_TRUE(sawUtf8Merge) << "expected the merge of 'é' (" << accentE << ")";
}

TEST(BpeTrain, MergesAndTokensAreConsistent) {
  TokenizerData d = buildOrDie(kFixtureText, 400, kGlm5Vocab);
  std::unordered_set<std::string> tokens;
  for (const std::string &t : d.tokens)
    EXPECT_TRUE(tokens.insert(t).second) << "duplicate token " << t;
  std::unordered_set<std::string> merges;
  std::unordered_map<std::string, int32_t> normalTokens;
  for (size_t i = 0; i < d.tokens.size(); ++i)
    if (d.tokenTypes[i] == kTokenTypeNormal)
      normalTokens.emplace(d.tokens[i], static_cast<int32_t>(i));
  for (const std::string &m : d.merges) {
    EXPECT_TRUE(merges.insert(m).second) << "duplicate merge " << m;
    size_t space = m.find(' ');
    ASSERT_NE(space, std::string::npos) << m;
    ASSERT_EQ(m.find(' ', space + 1), std::string::npos) << m; // exactly one separator
    std::string left = m.substr(0, space), right = m.substr(space + 1);
    EXPECT_TRUE(normalTokens.count(left)) << "left side not a token: " << m;
    EXPECT_TRUE(normalTokens.count(right)) << "right side not a token: " << m;
    EXPECT_TRUE(normalTokens.count(left + right)) << "result not a token: " << m;
  }
  // Each side of merge k was available before merge k: it is a byte or an earlier result.
  std::unordered_set<std::string> available;
  for (int b = 0; b < 256; ++b)
    available.insert(byteToUnicode(static_cast<uint8_t>(b)));
  for (const std::string &m : d.merges) {
    size_t space = m.find(' ');
    std::string left = m.substr(0, space), right = m.substr(space + 1);
    EXPECT_TRUE(available.count(left) && available.count(right))
        << "merge uses a later token: " << m;
    available.insert(left + right);
  }
}

TEST(BpeTrain, MergesRespectPreTokenBoundaries) {
  TokenizerData d = buildOrDie(kFixtureText, 400, 1024);
  const std::string space = byteToUnicode(' ');
  const std::string newline = byteToUnicode('\n');
  for (size_t i = 256; i < d.tokens.size(); ++i) {
    if (d.tokenTypes[i] != kTokenTypeNormal)
      continue;
    const std::string &t = d.tokens[i];
    bool hasLetter = false, hasDigit = false;
    for (size_t k = 0; k < t.size(); ++k) {
      hasLetter |= isAsciiLetter(t[k]);
      hasDigit |= isAsciiDigit(t[k]);
      // A space only ever leads a word piece, so no letter is followed by one.
      if (isAsciiLetter(t[k])) {
        EXPECT_NE(t.compare(k + 1, space.size(), space), 0) << "letter then space in " << t;
      }
    }
    // A newline never leads into a word, and digits never mix with letters.
    for (size_t k = 0; (k = t.find(newline, k)) != std::string::npos; k += newline.size()) {
      if (k + newline.size() < t.size()) {
        EXPECT_FALSE(isAsciiLetter(t[k + newline.size()])) << "newline then letter in " << t;
      }
    }
    EXPECT_FALSE(hasLetter && hasDigit) << "letters and digits merged in " << t;
    // Digit runs are at most 3 long.
    EXPECT_EQ(t.find("0000"), std::string::npos);
    size_t run = 0;
    for (char c : t) {
      run = isAsciiDigit(c) ? run + 1 : 0;
      EXPECT_LE(run, 3u) << "digit run longer than 3 in " << t;
    }
  }
}

TEST(BpeTrain, SpecialTextIsNeverLearned) {
  // "/nothink" is one pre-token (punctuation + letters); repeated, it would be learned whole.
  std::string text;
  for (int i = 0; i < 20; ++i)
    text += "/nothink ";
  TokenizerData d = buildOrDie(text, 100, 1024);
  int count = 0;
  for (const std::string &t : d.tokens)
    count += t == "/nothink";
  EXPECT_EQ(count, 1);
  EXPECT_FALSE(d.merges.empty());
}

TEST(BpeTrain, VocabTooSmallIsAnError) {
  // 256 bytes + 400 merges + 60 special slots = 716.
  auto tooSmall = buildGlmTokenizer(kFixtureText, 400, 715);
  EXPECT_FALSE(tooSmall.isOk());
  EXPECT_EQ(tooSmall.status().code(), glm5rt::StatusCode::kInvalidArgument);
  EXPECT_TRUE(buildGlmTokenizer(kFixtureText, 400, 716).isOk());
  EXPECT_FALSE(buildGlmTokenizer("", 0, 300).isOk());
  EXPECT_TRUE(buildGlmTokenizer("", 0, 316).isOk());
  EXPECT_FALSE(buildGlmTokenizer(kFixtureText, 10, kMaxFixtureVocab + 1).isOk());
  EXPECT_FALSE(buildGlmTokenizer(kFixtureText, 0xFFFFFFFFu, 1024).isOk());
}

} // namespace
} // namespace glm5c::fixture
