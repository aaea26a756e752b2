// Unit tests of the runtime tokenizer: GGUF loading and validation, the GLM-4 pre-tokenizer, BPE
// against a naive reference, special tokens, streaming decoding and the chat template.
#include "runtime/tokenizer/PreTokenizer.h"
#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/tokenizer/Unicode.h"

#include "runtime/gguf/gguf_reader.h"
#include "runtime/gguf/gguf_writer.h"
#include "tools/glm5-gguf/bpe_train.h"
#include "tools/glm5-gguf/fixture_text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace glm5rt;
using namespace glm5rt::tokenizer;
using glm5c::fixture::TokenizerData;

namespace {

constexpr uint32_t kFixtureVocab = 1024;

std::string tempPath(const std::string &name) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/glm5c-tokenizer-test-" + std::to_string(getpid()) +
         "-" + name;
}

const TokenizerData &fixtureData() {
  static const TokenizerData data = [] {
    auto d = glm5c::fixture::buildGlmTokenizer(glm5c::fixture::kFixtureText, 400, kFixtureVocab);
    EXPECT_TRUE(d.isOk()) << d.status().toString();
    return d.isOk() ? std::move(d).value() : TokenizerData();
  }();
  return data;
}

// How a test GGUF departs from what `glm5-gguf make` writes.
struct GgufVariant {
  std::string model = "gpt2";
  std::string pre = "glm4";
  bool writeTokens = true;
};

// Writes the tokenizer keys `glm5-gguf make` writes (tools/glm5-gguf/fixture.cpp) to `path`.
Status writeTokenizerGguf(const std::string &path, const TokenizerData &d,
                          const GgufVariant &variant = {}) {
  gguf::GgufWriter w;
  w.setString("general.architecture", "glm-dsa");
  w.setString("tokenizer.ggml.model", variant.model);
  w.setString("tokenizer.ggml.pre", variant.pre);
  if (variant.writeTokens)
    w.setStringArray("tokenizer.ggml.tokens", d.tokens);
  w.setI32Array("tokenizer.ggml.token_type", d.tokenTypes);
  w.setStringArray("tokenizer.ggml.merges", d.merges);
  w.setU32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(d.bosId));
  w.setU32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(d.eosId));
  w.setU32("tokenizer.ggml.eot_token_id", static_cast<uint32_t>(d.eotId));
  w.setU32("tokenizer.ggml.eom_token_id", static_cast<uint32_t>(d.eomId));
  w.setU32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(d.unkId));
  w.setU32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(d.padId));
  w.setBool("tokenizer.ggml.add_bos_token", false);
  GLM5_RETURN_IF_ERROR(w.create(path));
  return w.finish();
}

// Writes `d` as a GGUF and loads a tokenizer from it; the file is gone afterwards, so a
// tokenizer that kept views into the mapping would fail under ASan.
StatusOr<std::unique_ptr<Tokenizer>> loadTokenizer(const TokenizerData &d,
                                                   const GgufVariant &variant = {}) {
  static int counter = 0;
  const std::string path = tempPath(std::to_string(counter++) + ".gguf");
  Status written = writeTokenizerGguf(path, d, variant);
  if (!written.isOk())
    return written;
  StatusOr<std::unique_ptr<Tokenizer>> tok = [&]() -> StatusOr<std::unique_ptr<Tokenizer>> {
    auto file = gguf::GgufFile::open(path);
    if (!file.isOk())
      return file.status();
    return Tokenizer::fromGguf(**file);
  }();
  std::remove(path.c_str());
  return tok;
}

std::string join(const std::vector<std::string_view> &pieces) {
  std::string out;
  for (std::string_view p : pieces)
    out += std::string(p) + "|";
  return out;
}

bool isValidUtf8(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    size_t len;
    if (decodeUtf8(s.substr(pos), &len) == kInvalidCodePoint)
      return false;
    pos += len;
  }
  return true;
}

// Classic BPE, written independently of Tokenizer: repeatedly merge the leftmost occurrence of
// the adjacent pair with the lowest rank, on token strings.
using MergeRanks = std::map<std::pair<std::string, std::string>, size_t>;

std::vector<std::string> naiveBpe(std::string_view piece, const MergeRanks &rank) {
  std::vector<std::string> syms;
  for (char c : piece)
    syms.push_back(glm5c::fixture::byteToUnicode(static_cast<uint8_t>(c)));
  while (syms.size() > 1) {
    size_t best = 0, bestRank = SIZE_MAX;
    for (size_t i = 0; i + 1 < syms.size(); ++i) {
      auto it = rank.find({syms[i], syms[i + 1]});
      if (it != rank.end() && it->second < bestRank) {
        bestRank = it->second;
        best = i;
      }
    }
    if (bestRank == SIZE_MAX)
      break;
    syms[best] += syms[best + 1];
    syms.erase(syms.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  return syms;
}

class TokenizerTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    auto tok = loadTokenizer(fixtureData());
    ASSERT_TRUE(tok.isOk()) << tok.status().toString();
    tok_ = std::move(tok).value().release();
  }
  static void TearDownTestSuite() {
    delete tok_;
    tok_ = nullptr;
  }
  static Tokenizer *tok_;

  void expectRoundTrip(const std::string &s) {
    std::vector<int32_t> ids = tok_->encode(s, /*parseSpecial=*/false);
    EXPECT_EQ(tok_->decode(ids), s);
    for (int32_t id : ids) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, tok_->vocabSize());
      EXPECT_NE(tok_->tokenType(id), kTokenControl) << "id " << id << " in " << s;
    }
  }
};
Tokenizer *TokenizerTest::tok_ = nullptr;

// --- Pre-tokenizer (no vocabulary needed) ---

TEST(PreTokenizer, SplitsKnownExamples) {
  // Contraction, " ?\p{L}+" words, a lone space before digits, digits in threes, punctuation
  // taking trailing newlines, "\s+(?!\S)" leaving one space for the next word.
  EXPECT_EQ(join(preTokenize("Hello world's 12345 ok!!\n\n  x")),
            "Hello| world|'s| |123|45| ok|!!\n\n| | x|");
  // Contractions fold ASCII case; "'sup" still splits after "'s" (the regex's known quirk).
  EXPECT_EQ(join(preTokenize("I'M HERE, we'll see. They'RE 'sup")),
            "I|'M| HERE|,| we|'ll| see|.| They|'RE| '|sup|");
  // Leading, inner and trailing whitespace runs; the run at the end of the text stays whole.
  EXPECT_EQ(join(preTokenize("  foo  ")), " | foo|  |");
  EXPECT_EQ(join(preTokenize("a\r\n\r\nb")), "a|\r\n\r\n|b|");
  EXPECT_EQ(join(preTokenize("x \n y")), "x| \n| y|");
  EXPECT_EQ(join(preTokenize("\tfoo\t")), "\tfoo|\t|");
  // Code: a punctuation prefix joins a word, punctuation runs take their newline.
  EXPECT_EQ(join(preTokenize("def f(x):\n    return x**2\n")),
            "def| f|(x|):\n|   | return| x|**|2|\n|");
}

TEST(PreTokenizer, UnicodeClasses) {
  // Accented Latin and CJK are letters; a space prefixes the following letter run.
  EXPECT_EQ(join(preTokenize("caf\u00E9 na\u00EFve \u4F60\u597D\u4E16\u754C")),
            "caf\u00E9| na\u00EFve| \u4F60\u597D\u4E16\u754C|");
  // Fullwidth digits are \p{N} and go in threes between CJK letters.
  EXPECT_EQ(join(preTokenize("\u4EF7\uFF11\uFF12\uFF13\uFF14\u5143")),
            "\u4EF7|\uFF11\uFF12\uFF13|\uFF14|\u5143|");
  // Superscript two and one half are \p{N} (No), not letters.
  EXPECT_EQ(join(preTokenize("x\u00B2+\u00BD")), "x|\u00B2|+|\u00BD|");
  // Emoji are neither letters nor numbers: one punctuation run with the space before it.
  EXPECT_EQ(join(preTokenize("hi \U0001F642\U0001F642!")), "hi| \U0001F642\U0001F642!|");
  // No-break space and ideographic space are \s (and may prefix a word).
  EXPECT_EQ(join(preTokenize("a\u00A0b\u3000\u3000c")), "a|\u00A0b|\u3000|\u3000c|");
  // Combining marks (Mn) are not \p{L}: Devanagari splits at the virama and vowel sign.
  EXPECT_EQ(join(preTokenize("\u0928\u092E\u0938\u094D\u0924\u0947")),
            "\u0928\u092E\u0938|\u094D\u0924|\u0947|");
  // Invalid UTF-8 bytes are kept, as punctuation.
  EXPECT_EQ(join(preTokenize(std::string("a\xFF\xFE") + "b")), "a|\xFF\xFE|b|");
}

TEST(PreTokenizer, PiecesCoverTheText) {
  std::string rebuilt;
  for (std::string_view p : preTokenize(glm5c::fixture::kFixtureText)) {
    EXPECT_FALSE(p.empty());
    rebuilt += p;
  }
  EXPECT_EQ(rebuilt, glm5c::fixture::kFixtureText);
}

TEST(Unicode, Classes) {
  EXPECT_TRUE(isLetter('a'));
  EXPECT_TRUE(isLetter(0x00E9));  // é
  EXPECT_TRUE(isLetter(0x4E2D));  // 中
  EXPECT_TRUE(isLetter(0x20000)); // CJK Extension B
  EXPECT_TRUE(isLetter(0xAC00));  // 가
  EXPECT_TRUE(isLetter(0x3042));  // あ
  EXPECT_FALSE(isLetter('1'));
  EXPECT_FALSE(isLetter(0x1F642)); // emoji
  EXPECT_TRUE(isNumber(0xFF11));   // fullwidth 1
  EXPECT_TRUE(isNumber(0x0663));   // Arabic-Indic 3
  EXPECT_TRUE(isNumber(0x2167));   // Roman numeral eight (Nl)
  EXPECT_FALSE(isNumber('a'));
  EXPECT_TRUE(isWhitespace(0x3000));
  EXPECT_TRUE(isWhitespace(0x85));
  EXPECT_FALSE(isWhitespace(0x200B)); // zero-width space is not White_Space
  EXPECT_FALSE(isWhitespace(0x1C));
}

TEST(Unicode, RepairHoldsBackIncompleteSequences) {
  std::string out;
  EXPECT_EQ(appendRepairedUtf8(out, "a\xF0\x9F\x99", false), 1u);
  EXPECT_EQ(out, "a");
  out.clear();
  EXPECT_EQ(appendRepairedUtf8(out, "a\xF0\x9F\x99", true), 4u);
  EXPECT_EQ(out, "a\uFFFD");
  out.clear();
  // A stray continuation byte and an overlong lead byte become one U+FFFD each; a valid prefix
  // broken by a non-continuation becomes one U+FFFD and the breaking byte is kept.
  appendRepairedUtf8(out, std::string("\x80\xC0x\xE4\xBD") + "b", false);
  EXPECT_EQ(out, "\uFFFD\uFFFDx\uFFFDb");
}

// --- Loading ---

TEST_F(TokenizerTest, LoadsFixtureVocabulary) {
  const TokenizerData &d = fixtureData();
  EXPECT_EQ(tok_->vocabSize(), static_cast<int32_t>(kFixtureVocab));
  EXPECT_EQ(tok_->mergeCount(), d.merges.size());
  EXPECT_EQ(tok_->preTokenizer(), "glm4");
  EXPECT_EQ(tok_->bosId(), tok_->tokenId("[gMASK]").value_or(-2));
  EXPECT_EQ(tok_->eosId(), tok_->tokenId("<|endoftext|>").value_or(-2));
  EXPECT_EQ(tok_->eotId(), tok_->tokenId("<|user|>").value_or(-2));
  EXPECT_EQ(tok_->eomId(), tok_->tokenId("<|observation|>").value_or(-2));
  EXPECT_EQ(tok_->unknownId(), tok_->eosId());
  EXPECT_EQ(tok_->paddingId(), tok_->eosId());
  EXPECT_EQ(tok_->byteTokenId(' '), tok_->tokenId("\u0120").value_or(-2));
  EXPECT_TRUE(tok_->isEog(tok_->eosId()));
  EXPECT_TRUE(tok_->isEog(tok_->eotId()));
  EXPECT_TRUE(tok_->isEog(tok_->eomId()));
  EXPECT_FALSE(tok_->isEog(tok_->bosId()));
  EXPECT_FALSE(tok_->isEog(tok_->tokenId("<|assistant|>").value_or(-2)));
  EXPECT_FALSE(tok_->isEog(kNoToken));
  EXPECT_FALSE(tok_->isEog(0));
}

// --- Encoding ---

TEST_F(TokenizerTest, RoundTrips) {
  expectRoundTrip("The keeper climbed the tower and wrote the date at the top of a clean page.");
  expectRoundTrip("Cr\u00E8me br\u00FBl\u00E9e \u00E0 la fran\u00E7aise \u2014 d\u00E9j\u00E0 vu, "
                  "na\u00EFve, \u00C5ngstr\u00F6m");
  expectRoundTrip("\u6211\u4EEC\u4ECA\u5929\u53BB\u516C\u56ED\u6563\u6B65\u5427\u3002");
  expectRoundTrip("Party \U0001F389\U0001F389 time \U0001F469\u200D\U0001F469\u200D\U0001F467 ok "
                  "\U0001F642");
  expectRoundTrip("def area(r):\n    # circle\n\tif r < 0:\n        return None\n"
                  "    return 3.14159 * r ** 2\n\n\nprint(area(2))  \n");
  expectRoundTrip("1234567 + 89 = 1234656; 0.001, 1,000,000 and 2026-05-09");
  expectRoundTrip("I'm sure you'll see they're right, we've said it's what I'd DO'T");
  expectRoundTrip("mixed\r\n\twhite \u00A0space\u3000 \x0B\x0C end   ");
  expectRoundTrip(glm5c::fixture::kFixtureText);
  expectRoundTrip("");
  // Arbitrary bytes survive too (decode is byte-exact).
  expectRoundTrip(std::string("\xFF\xC3(\x00z\x80", 6));
}

TEST_F(TokenizerTest, MergesCompressTrainingText) {
  std::string text = glm5c::fixture::kFixtureText;
  std::vector<int32_t> ids = tok_->encode(text, false);
  // 400 merges learned on this text must save a good share of the bytes.
  EXPECT_LT(ids.size() * 10, text.size() * 6) << ids.size() << " tokens for " << text.size();
  std::vector<int32_t> word = tok_->encode(" the", false);
  EXPECT_EQ(word.size(), 1u) << "\" the\" is among the most frequent pieces";
}

TEST_F(TokenizerTest, BpeMatchesNaiveReference) {
  const TokenizerData &d = fixtureData();
  MergeRanks rank;
  for (size_t r = 0; r < d.merges.size(); ++r) {
    const std::string &m = d.merges[r];
    const size_t sp = m.find(' ', 1);
    rank.emplace(std::make_pair(m.substr(0, sp), m.substr(sp + 1)), r);
  }
  std::string extra = "aaaaaaa thethethe  \n\n\n   strawberry \u4E2D\u4E2D\u4E2D";
  size_t checked = 0;
  for (const std::string &text : {std::string(glm5c::fixture::kFixtureText), extra}) {
    for (std::string_view piece : preTokenize(text)) {
      std::vector<int32_t> want;
      for (const std::string &s : naiveBpe(piece, rank))
        want.push_back(tok_->tokenId(s).value_or(-1));
      ASSERT_EQ(tok_->encode(piece, false), want) << "piece \"" << piece << "\"";
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000u);
}

TEST_F(TokenizerTest, DigitsSplitInThrees) {
  std::vector<int32_t> ids = tok_->encode("1234567", false);
  // Token boundaries must include the pre-token boundaries after 3 and 6 digits.
  std::vector<size_t> ends;
  size_t pos = 0;
  for (int32_t id : ids)
    ends.push_back(pos += tok_->tokenBytes(id).size());
  EXPECT_NE(std::find(ends.begin(), ends.end(), 3u), ends.end());
  EXPECT_NE(std::find(ends.begin(), ends.end(), 6u), ends.end());
  EXPECT_EQ(ends.back(), 7u);
}

TEST_F(TokenizerTest, SpecialTokens) {
  const int32_t user = tok_->eotId();
  const int32_t assistant = tok_->tokenId("<|assistant|>").value();
  const std::string text = "<|user|>hi there<|assistant|>";
  std::vector<int32_t> ids = tok_->encode(text, /*parseSpecial=*/true);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), user);
  EXPECT_EQ(ids.back(), assistant);
  EXPECT_EQ(tok_->decode(std::vector<int32_t>(ids.begin() + 1, ids.end() - 1)), "hi there");
  EXPECT_EQ(tok_->decode(ids), text);
  EXPECT_EQ(tok_->decode(ids, /*includeSpecial=*/false), "hi there");
  // The text between specials is pre-tokenized on its own: "hi there" as at the start of a text.
  EXPECT_EQ(std::vector<int32_t>(ids.begin() + 1, ids.end() - 1), tok_->encode("hi there", false));

  // Without parseSpecial the same text is ordinary text.
  std::vector<int32_t> plain = tok_->encode(text, /*parseSpecial=*/false);
  for (int32_t id : plain)
    EXPECT_NE(tok_->tokenType(id), kTokenControl);
  EXPECT_EQ(tok_->decode(plain), text);

  // Adjacent specials, and a special that is only almost there.
  EXPECT_EQ(tok_->encode("[gMASK]<sop>", true),
            (std::vector<int32_t>{tok_->bosId(), tok_->tokenId("<sop>").value()}));
  std::vector<int32_t> partial = tok_->encode("<|user|<|user|>", true);
  EXPECT_EQ(partial.back(), user);
  EXPECT_EQ(tok_->decode(partial), "<|user|<|user|>");
}

TEST(TokenizerSpecials, LongestMatchAndUserDefined) {
  TokenizerData d = fixtureData();
  // Turn two padding slots into a CONTROL token that extends <|user|> and a USER_DEFINED one.
  const size_t longer = d.tokens.size() - 2, userDefined = d.tokens.size() - 1;
  d.tokens[longer] = "<|user|>!";
  d.tokenTypes[longer] = glm5c::fixture::kTokenTypeControl;
  d.tokens[userDefined] = "@@tool";
  d.tokenTypes[userDefined] = kTokenUserDefined;
  auto tok = loadTokenizer(d);
  ASSERT_TRUE(tok.isOk()) << tok.status().toString();
  const Tokenizer &t = **tok;
  EXPECT_EQ(t.encode("<|user|>!", true), std::vector<int32_t>{static_cast<int32_t>(longer)});
  EXPECT_EQ(t.encode("<|user|>?", true), (std::vector<int32_t>{t.eotId(), t.byteTokenId('?')}));
  // USER_DEFINED tokens are matched with or without parseSpecial and always decode to their text.
  for (bool parseSpecial : {false, true}) {
    std::vector<int32_t> ids = t.encode("x@@tool", parseSpecial);
    ASSERT_EQ(ids.size(), 2u);
    EXPECT_EQ(ids[1], static_cast<int32_t>(userDefined));
    EXPECT_EQ(t.decode(ids, /*includeSpecial=*/false), "x@@tool");
  }
}

TEST(TokenizerSpecials, Llama3IgnoresMergesForWholeTokens) {
  TokenizerData d = fixtureData();
  // A normal token no merge sequence reaches: BPE leaves "zqx" as three byte tokens, while
  // Llama-3's ignore_merges takes the whole piece when it is a token.
  const size_t zqx = d.tokens.size() - 1;
  d.tokens[zqx] = "zqx";
  d.tokenTypes[zqx] = glm5c::fixture::kTokenTypeNormal;
  auto glm = loadTokenizer(d);
  ASSERT_TRUE(glm.isOk()) << glm.status().toString();
  EXPECT_EQ((*glm)->encode("zqx", false).size(), 3u);
  GgufVariant llama;
  llama.pre = "llama-bpe";
  auto tok = loadTokenizer(d, llama);
  ASSERT_TRUE(tok.isOk()) << tok.status().toString();
  EXPECT_EQ((*tok)->encode("zqx", false), std::vector<int32_t>{static_cast<int32_t>(zqx)});
  // CONTROL tokens are never taken that way: "/nothink" is one pre-token and a CONTROL token.
  for (int32_t id : (*tok)->encode("/nothink", false))
    EXPECT_NE((*tok)->tokenType(id), kTokenControl);
}

// --- Decoding ---

TEST_F(TokenizerTest, StreamingHoldsBackSplitCharacters) {
  // U+1F642 as four byte tokens: nothing comes out until the fourth.
  const std::string emoji = "\U0001F642"; // F0 9F 99 82
  TokenDecoder dec(*tok_);
  EXPECT_EQ(dec.push(tok_->byteTokenId('a')), "a");
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(dec.push(tok_->byteTokenId(static_cast<uint8_t>(emoji[i]))), "") << "byte " << i;
    EXPECT_EQ(dec.pendingBytes(), i + 1);
  }
  EXPECT_EQ(dec.push(tok_->byteTokenId(static_cast<uint8_t>(emoji[3]))), emoji);
  EXPECT_EQ(dec.push(tok_->byteTokenId('b')), "b");
  EXPECT_EQ(dec.finish(), "");

  // A sequence that cannot complete becomes U+FFFD as soon as that is known; a cut-off tail at
  // the end becomes U+FFFD on finish().
  EXPECT_EQ(dec.push(tok_->byteTokenId(0xF0)), "");
  EXPECT_EQ(dec.push(tok_->byteTokenId(0x9F)), "");
  EXPECT_EQ(dec.push(tok_->byteTokenId('x')), "\uFFFDx");
  EXPECT_EQ(dec.push(tok_->byteTokenId(0xE4)), "");
  EXPECT_EQ(dec.finish(), "\uFFFD");
  EXPECT_EQ(dec.pendingBytes(), 0u);

  // Specials stream as text unless left out; out-of-range ids are U+FFFD.
  EXPECT_EQ(dec.push(tok_->eotId()), "<|user|>");
  EXPECT_EQ(TokenDecoder(*tok_, false).push(tok_->eotId()), "");
  EXPECT_EQ(dec.push(tok_->vocabSize()), "\uFFFD");
  EXPECT_EQ(dec.push(-5), "\uFFFD");
}

TEST_F(TokenizerTest, StreamingOutputIsAlwaysWholeCharacters) {
  const std::string text =
      "Emoji \U0001F389\U0001F642 and \u4E2D\u6587 caf\u00E9 \U0001F469\u200D\U0001F467 " +
      std::string(glm5c::fixture::kFixtureText);
  std::vector<int32_t> ids = tok_->encode(text, false);
  TokenDecoder dec(*tok_);
  std::string streamed;
  size_t held = 0;
  for (int32_t id : ids) {
    std::string chunk = dec.push(id);
    EXPECT_TRUE(isValidUtf8(chunk)) << "chunk for id " << id;
    held += dec.pendingBytes() > 0;
    streamed += chunk;
  }
  streamed += dec.finish();
  EXPECT_EQ(streamed, text);
  // The fixture's few merges leave multi-byte characters split across tokens, so the decoder
  // had to hold bytes back at least once (otherwise this test would prove nothing).
  EXPECT_GT(held, 0u);
}

// --- Chat template ---

TEST(ChatTemplate, Glm5SystemAndUser) {
  std::vector<Message> chat = {{"system", "You are terse."}, {"user", "Hi!"}};
  auto prompt = Tokenizer::applyChatTemplate(chat, true);
  ASSERT_TRUE(prompt.isOk()) << prompt.status().toString();
  EXPECT_EQ(*prompt, "[gMASK]<sop><|system|>You are terse.<|user|>Hi!<|assistant|><think>");
  ChatOptions noThinking;
  noThinking.enableThinking = false;
  EXPECT_EQ(Tokenizer::applyChatTemplate(chat, true, noThinking).value(),
            "[gMASK]<sop><|system|>You are terse.<|user|>Hi!<|assistant|></think>");
  EXPECT_EQ(Tokenizer::applyChatTemplate(chat, false).value(),
            "[gMASK]<sop><|system|>You are terse.<|user|>Hi!");
}

TEST(ChatTemplate, Glm4SystemAndUser) {
  ChatOptions glm4;
  glm4.format = ChatFormat::kGlm4;
  std::vector<Message> chat = {{"system", "You are terse."}, {"user", "Hi!"}};
  EXPECT_EQ(Tokenizer::applyChatTemplate(chat, true, glm4).value(),
            "[gMASK]<sop><|system|>\nYou are terse.<|user|>\nHi!<|assistant|>");
  chat.push_back({"assistant", "Hello."});
  chat.push_back({"tool", "{}"});
  EXPECT_EQ(Tokenizer::applyChatTemplate(chat, false, glm4).value(),
            "[gMASK]<sop><|system|>\nYou are terse.<|user|>\nHi!<|assistant|>\nHello."
            "<|observation|>\n{}");
}

TEST(ChatTemplate, Glm5ReasoningAndTools) {
  std::vector<Message> chat = {
      {"user", "Q1"},
      {"assistant", "<think>r1</think>\n\nA1 "}, // before the last user turn: reasoning dropped
      {"user", "Q2"},
      {"assistant", "<think>\nr2\n</think>A2"}, // after it: reasoning kept
      {"tool", "42"},
      {"observation", "43"}, // a run of tool turns shares one tag
      {"assistant", "  plain answer \n"},
  };
  EXPECT_EQ(Tokenizer::applyChatTemplate(chat, false).value(),
            "[gMASK]<sop><|user|>Q1<|assistant|></think>A1<|user|>Q2<|assistant|><think>r2</think>"
            "A2<|observation|><tool_response>42</tool_response><tool_response>43</tool_response>"
            "<|assistant|></think>plain answer");
}

TEST(ChatTemplate, RejectsUnknownRole) {
  auto prompt = Tokenizer::applyChatTemplate({{"user", "a"}, {"developer", "b"}}, true);
  ASSERT_FALSE(prompt.isOk());
  EXPECT_EQ(prompt.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(prompt.status().message().find("\"developer\""), std::string::npos)
      << prompt.status().message();
}

TEST_F(TokenizerTest, ChatPromptEncodesWithSpecialIds) {
  auto prompt = Tokenizer::applyChatTemplate({{"system", "Be brief."}, {"user", "2+2?"}}, true);
  ASSERT_TRUE(prompt.isOk());
  std::vector<int32_t> ids = tok_->encode(*prompt, true);
  ASSERT_GE(ids.size(), 6u);
  EXPECT_EQ(ids[0], tok_->bosId());
  EXPECT_EQ(ids[1], tok_->tokenId("<sop>").value());
  EXPECT_EQ(ids[2], tok_->tokenId("<|system|>").value());
  EXPECT_EQ(ids[ids.size() - 2], tok_->tokenId("<|assistant|>").value());
  EXPECT_EQ(ids.back(), tok_->tokenId("<think>").value());
  EXPECT_EQ(tok_->decode(ids), *prompt);
}

// --- Validation errors ---

void expectLoadError(const TokenizerData &d, const GgufVariant &variant,
                     const std::vector<std::string> &needles) {
  auto tok = loadTokenizer(d, variant);
  ASSERT_FALSE(tok.isOk()) << "expected an error containing " << needles.front();
  for (const std::string &needle : needles)
    EXPECT_NE(tok.status().message().find(needle), std::string::npos) << tok.status().toString();
}

TEST(TokenizerErrors, MissingTokens) {
  GgufVariant v;
  v.writeTokens = false;
  expectLoadError(fixtureData(), v, {"'tokenizer.ggml.tokens'", "missing"});
}

TEST(TokenizerErrors, NotGpt2) {
  GgufVariant v;
  v.model = "llama";
  expectLoadError(fixtureData(), v, {"'tokenizer.ggml.model'", "\"llama\"", "gpt2"});
}

TEST(TokenizerErrors, UnknownPreTokenizer) {
  GgufVariant v;
  v.pre = "qwen2";
  expectLoadError(fixtureData(), v, {"'tokenizer.ggml.pre'", "\"qwen2\"", "glm4"});
}

TEST(TokenizerErrors, MergeReferencesUnknownToken) {
  TokenizerData d = fixtureData();
  d.merges.insert(d.merges.begin() + 3, "\u2603 a"); // U+2603 is no byte-level token
  expectLoadError(d, {}, {"'tokenizer.ggml.merges' entry 3", "\"\u2603\"", "not in"});
}

TEST(TokenizerErrors, MalformedMerge) {
  TokenizerData d = fixtureData();
  d.merges.push_back("ab");
  expectLoadError(d, {}, {"'tokenizer.ggml.merges' entry", "\"ab\"", "separated by a space"});
}

TEST(TokenizerErrors, TokenTypeLengthMismatch) {
  TokenizerData d = fixtureData();
  d.tokenTypes.pop_back();
  expectLoadError(d, {}, {"'tokenizer.ggml.token_type' has 1023 entries", "1024"});
}

TEST(TokenizerErrors, BadTokenType) {
  TokenizerData d = fixtureData();
  d.tokenTypes[7] = 9;
  expectLoadError(d, {}, {"'tokenizer.ggml.token_type' entry 7", "is 9"});
}

TEST(TokenizerErrors, SpecialIdOutOfRange) {
  TokenizerData d = fixtureData();
  d.eosId = 5000;
  expectLoadError(d, {}, {"'tokenizer.ggml.eos_token_id'", "5000", "1024 tokens"});
}

TEST(TokenizerErrors, MissingByteToken) {
  TokenizerData d = fixtureData();
  d.tokens['A'] = "[not A]";
  expectLoadError(d, {}, {"no token for byte 0x41"});
}

// What byte-level BPE emits must decode through the byte map: a byte token or a merge result of
// another type is refused (it would turn plain text into a special token).
TEST(TokenizerErrors, ByteTokenNotNormal) {
  TokenizerData d = fixtureData();
  d.tokenTypes['A'] = glm5c::fixture::kTokenTypeControl;
  expectLoadError(d, {}, {"token 65 \"A\", byte 0x41's, is CONTROL", "NORMAL"});
}

TEST(TokenizerErrors, MergeResultNotNormal) {
  TokenizerData d = fixtureData();
  const std::string &m = d.merges[0];
  const size_t sp = m.find(' ', 1);
  const std::string joined = m.substr(0, sp) + m.substr(sp + 1);
  const size_t id = std::find(d.tokens.begin(), d.tokens.end(), joined) - d.tokens.begin();
  ASSERT_LT(id, d.tokens.size());
  d.tokenTypes[id] = kTokenUnused;
  expectLoadError(d, {}, {"'tokenizer.ggml.merges' entry 0", "is UNUSED", "NORMAL"});
}

} // namespace
