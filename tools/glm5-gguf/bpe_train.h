// Builds a small GLM-style byte-level BPE tokenizer (GGUF "gpt2" model, "glm4" pre) for fixtures.
//
// The result fills the GGUF keys tokenizer.ggml.tokens / token_type / merges and the special-token
// ids. Layout of the vocabulary (vocabSize = V):
//   [0, 256)          the 256 byte tokens in byte order, in GPT-2's byte->unicode form;
//   [256, 256 + M')   one token per learned merge whose result is new, in merge order (M' <= M);
//   [256 + M', V - 60) "[PAD<id>]" padding (UNUSED);
//   [V - 60, V - 24)  the 36 GLM special tokens (CONTROL), in kGlmSpecialTokens order;
//   [V - 24, V)       "[PAD<id>]" padding (UNUSED).
// With V = 154880 the special ids are GLM-5's real ones (<|endoftext|> 154820, [gMASK] 154822).
#pragma once

#include "runtime/support/status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace glm5c::fixture {

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
constexpr int32_t kTokenTypeNormal = 1;
constexpr int32_t kTokenTypeControl = 3;
constexpr int32_t kTokenTypeUnused = 5;

// The special block starts this many ids before the end of the vocabulary.
constexpr uint32_t kSpecialBlockFromEnd = 60;
// GLM's special tokens in id order; the first sits at vocabSize - kSpecialBlockFromEnd.
// clang-format off
constexpr const char *kGlmSpecialTokens[] = {
    "<|endoftext|>", "[MASK]", "[gMASK]", "[sMASK]", "<sop>", "<eop>", "<|system|>", "<|user|>",
    "<|assistant|>", "<|observation|>", "<|begin_of_image|>", "<|end_of_image|>",
    "<|begin_of_video|>", "<|end_of_video|>", "<|begin_of_audio|>", "<|end_of_audio|>",
    "<|begin_of_transcription|>", "<|end_of_transcription|>", "<|code_prefix|>",
    "<|code_middle|>", "<|code_suffix|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
    "<tool_response>", "</tool_response>", "<arg_key>", "</arg_key>", "<arg_value>",
    "</arg_value>", "/nothink", "<|begin_of_box|>", "<|end_of_box|>", "<|image|>", "<|video|>"};
// clang-format on
constexpr uint32_t kNumGlmSpecialTokens = sizeof(kGlmSpecialTokens) / sizeof(kGlmSpecialTokens[0]);
static_assert(kNumGlmSpecialTokens <= kSpecialBlockFromEnd, "special block overflows its slot");

// Larger vocabularies are refused: fixtures stay far below this, and the cap keeps a bad argument
// from allocating gigabytes of "[PAD<i>]" strings.
constexpr uint32_t kMaxFixtureVocab = 1u << 24;

struct TokenizerData {
  std::vector<std::string> tokens; // GGUF tokenizer.ggml.tokens, byte-level unicode form
  std::vector<int32_t> tokenTypes; // tokenizer.ggml.token_type: 1 NORMAL, 3 CONTROL, 5 UNUSED
  std::vector<std::string> merges; // tokenizer.ggml.merges: "left right" in rank order
  int32_t bosId = -1;              // [gMASK]
  int32_t eosId = -1;              // <|endoftext|>
  int32_t eotId = -1;              // <|user|>
  int32_t eomId = -1;              // <|observation|>
  int32_t unkId = -1;              // <|endoftext|>
  int32_t padId = -1;              // <|endoftext|>
};

// GPT-2's byte -> unicode code point mapping, as UTF-8: the printable bytes '!'..'~', 0xA1..0xAC
// and 0xAE..0xFF map to the code point of the same value; the other 68 bytes map, in byte order,
// to U+0100, U+0101, ... (so ' ' -> U+0120 "Ġ", '\n' -> U+010A "Ċ", 0xAD -> U+0143).
std::string byteToUnicode(uint8_t b);
// Maps every byte of `bytes` with byteToUnicode and concatenates the results.
std::string bytesToUnicode(std::string_view bytes);

// Splits raw bytes into pre-tokens with an approximation of GLM-4's pre-tokenizer regex; merges
// are learned inside pre-tokens only. The pieces concatenate back to `text`. See bpe_train.cpp for
// exactly how the approximation differs from the regex.
std::vector<std::string_view> preTokenize(std::string_view text);

// Pre-tokenizes `text`, then learns up to nMerges merges greedily: each step merges the most
// frequent adjacent pair (ties go to the lexicographically smallest (left, right) pair of
// byte-level token strings, compared bytewise), stopping early when the best pair occurs fewer
// than 2 times. A pair whose concatenation is a GLM special token's text is never merged, so
// tokens stay unique. When a merge's result string is already a token (two different splits of
// the same string), the merge is kept and reuses that token's id, so there may be fewer merged
// tokens than merges.
// Fails with invalid-argument when vocabSize cannot hold 256 byte tokens + nMerges merged tokens
// before the special block (i.e. 256 + nMerges > vocabSize - 60), or exceeds kMaxFixtureVocab.
// The check uses the requested nMerges, not the learned count, so it does not depend on `text`.
glm5rt::StatusOr<TokenizerData> buildGlmTokenizer(std::string_view text, uint32_t nMerges,
                                                  uint32_t vocabSize);

} // namespace glm5c::fixture
