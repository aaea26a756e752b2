// The runtime tokenizer: GLM's byte-level BPE read from a GGUF, special tokens, UTF-8-safe
// streaming decoding and GLM's chat template.
//
// Encoding (Tokenizer::encode):
//   1. Special tokens are cut out first as literal substrings, scanning left to right and taking
//      the longest one that starts at each position. CONTROL tokens are matched only when the
//      caller asks for it (parseSpecial); USER_DEFINED tokens always, as Hugging Face and
//      llama.cpp do for non-special added tokens.
//   2. Each stretch of text between special tokens is split by GLM-4's pre-tokenizer regex
//      (PreTokenizer.h).
//   3. Each piece is mapped byte by byte through GPT-2's byte -> unicode table to byte tokens,
//      which are merged by BPE: repeatedly the adjacent pair with the lowest merge rank, the
//      leftmost one on ties. Every merge's result is a token (checked at load), so a piece that
//      is not in the vocabulary simply ends as smaller tokens, at worst its byte tokens. Byte
//      tokens and merge results are NORMAL (also checked at load): encoding plain text never
//      yields a special token, and decode(encode(text, false)) == text for any bytes.
// encode() never adds a BOS token: GLM prompts begin with "[gMASK]<sop>", which the chat template
// writes and encode(..., parseSpecial = true) turns into those two ids.
#pragma once

#include "runtime/gguf/gguf_reader.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace glm5rt::tokenizer {

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum TokenType : int32_t {
  kTokenUndefined = 0,
  kTokenNormal = 1,
  kTokenUnknown = 2,
  kTokenControl = 3,
  kTokenUserDefined = 4,
  kTokenUnused = 5,
  kTokenByte = 6,
};

// A special-token id the GGUF does not define.
constexpr int32_t kNoToken = -1;

// One chat turn. Roles: "system", "user", "assistant", and "tool" (or its alias "observation").
struct Message {
  std::string role, content;
};

// Which GLM chat template applyChatTemplate writes.
enum class ChatFormat {
  // GLM-5 / GLM-5.1 (the GLM-4.5 .. 4.7 family's template without tools); no newline after role
  // tags:
  //   [gMASK]<sop><|system|>{system}<|user|>{user}<|assistant|></think>{answer}...
  // An assistant turn is "<|assistant|>" + "</think>" + its content with surrounding whitespace
  // removed. When the content holds "</think>", the text before it (after the last "<think>",
  // newlines trimmed) is the turn's reasoning and the text after it (leading newlines trimmed) the
  // content; the reasoning is kept, as "<think>{reasoning, whitespace-trimmed}</think>" in place
  // of the bare "</think>", only for assistant turns after the last user turn. A run of tool
  // turns is "<|observation|>" followed by "<tool_response>{content}</tool_response>" per turn.
  // The generation prompt is "<|assistant|><think>", or "<|assistant|></think>" with thinking off.
  kGlm5,
  // GLM-4 (glm-4-9b-chat, llama.cpp's "chatglm4"), without tools or metadata:
  //   [gMASK]<sop><|system|>\n{system}<|user|>\n{user}<|assistant|>\n{answer}...
  // (a tool turn is "<|observation|>\n{content}"); the generation prompt is "<|assistant|>".
  kGlm4,
};

struct ChatOptions {
  ChatFormat format = ChatFormat::kGlm5;
  // kGlm5 only: the generation prompt opens a reasoning block ("<think>") or skips it ("</think>").
  bool enableThinking = true;
};

class Tokenizer {
public:
  // Not copyable: the string index holds views into the token strings.
  Tokenizer(const Tokenizer &) = delete;
  Tokenizer &operator=(const Tokenizer &) = delete;

  // Reads tokenizer.ggml.model (must be "gpt2"), .pre (see below), .tokens, .token_type, .merges
  // and the bos/eos/eot/eom/unknown/padding_token_id keys, validating all of them: array types and
  // lengths, token types, every merge ("left right", both tokens and their concatenation in the
  // vocabulary), special ids inside the vocabulary, and all 256 byte tokens present. Errors name
  // the file and the key (and the element index). Special-id keys that are absent, or -1, mean
  // "none" (kNoToken).
  // Accepted pre-tokenizers, all with the same regex: "glm4" and "chatglm-bpe" (GLM), and "llama3",
  // "llama-v3", "llama-bpe" (Llama-3, whose BPE additionally takes a piece that is a whole NORMAL
  // token as is, without applying merges: Hugging Face's ignore_merges).
  static StatusOr<std::unique_ptr<Tokenizer>> fromGguf(const gguf::GgufFile &file);

  // Token ids of `text` (any bytes; invalid UTF-8 is encoded through its byte tokens).
  std::vector<int32_t> encode(std::string_view text, bool parseSpecial) const;

  // The exact bytes `ids` stand for, concatenated: byte-level tokens through the reverse byte map,
  // CONTROL / USER_DEFINED / UNKNOWN tokens as their text (CONTROL ones left out when
  // `includeSpecial` is false), UNUSED tokens as nothing, ids outside the vocabulary as U+FFFD.
  // The result can be invalid UTF-8 when `ids` cut a character; TokenDecoder repairs that.
  std::string decode(const std::vector<int32_t> &ids, bool includeSpecial = true) const;
  // What one id contributes to decode(); the view lives as long as the tokenizer.
  std::string_view tokenBytes(int32_t id, bool includeSpecial = true) const;

  // True for the end-of-generation ids: eos, eot and eom (GLM-5: <|endoftext|>, <|user|>,
  // <|observation|>).
  bool isEog(int32_t id) const;

  // The prompt text for `messages` in GLM's chat format (see ChatFormat); encode it with
  // parseSpecial = true. Fails only on an unknown role.
  static StatusOr<std::string> applyChatTemplate(const std::vector<Message> &messages,
                                                 bool addGenerationPrompt,
                                                 const ChatOptions &options = {});

  int32_t vocabSize() const { return static_cast<int32_t>(tokens_.size()); }
  // Token text as stored in the GGUF (byte-level form for normal tokens); id must be in range.
  const std::string &tokenText(int32_t id) const { return tokens_[id]; }
  int32_t tokenType(int32_t id) const { return types_[id]; }
  // The id whose GGUF text is `text` (the first one if the vocabulary repeats a string).
  std::optional<int32_t> tokenId(std::string_view text) const;
  // The token of a single byte.
  int32_t byteTokenId(uint8_t b) const { return byteIds_[b]; }
  size_t mergeCount() const { return merges_.size(); }
  const std::string &preTokenizer() const { return pre_; }

  int32_t bosId() const { return bos_; }
  int32_t eosId() const { return eos_; }
  int32_t eotId() const { return eot_; }
  int32_t eomId() const { return eom_; }
  int32_t unknownId() const { return unk_; }
  int32_t paddingId() const { return pad_; }

private:
  Tokenizer() = default;
  // Appends the ids of one stretch of text without special tokens.
  void encodeText(std::string_view text, std::vector<int32_t> &out) const;
  // Appends the BPE ids of one pre-token.
  void encodePiece(std::string_view piece, std::vector<int32_t> &out) const;

  struct Merge {
    int32_t rank;   // position in tokenizer.ggml.merges; lower merges first
    int32_t result; // id of the concatenated token
  };
  static uint64_t pairKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }

  std::vector<std::string> tokens_; // GGUF text per id; never resized after load (views below)
  std::vector<int32_t> types_;      // TokenType per id
  std::vector<std::string> bytes_;  // decoded bytes per id (what decode() emits)
  std::unordered_map<std::string_view, int32_t> idOf_; // views into tokens_; first id per string
  std::unordered_map<uint64_t, Merge> merges_;         // pairKey(left, right) -> merge
  int32_t byteIds_[256] = {};
  // CONTROL and USER_DEFINED ids with non-empty text, bucketed by first byte, longest text first.
  std::vector<int32_t> specialsByFirstByte_[256];
  std::string pre_;
  bool ignoreMerges_ = false;
  int32_t bos_ = kNoToken, eos_ = kNoToken, eot_ = kNoToken, eom_ = kNoToken, unk_ = kNoToken,
          pad_ = kNoToken;
};

// Incremental decoding for streaming output: feed ids one at a time and get back only whole UTF-8
// characters. A character whose bytes are split across tokens is held back until it is complete;
// an ill-formed sequence becomes U+FFFD as soon as it cannot be completed, and finish() turns a
// held-back tail into U+FFFD. The concatenated output is always valid UTF-8 and, for ids that
// decode to valid UTF-8, equals Tokenizer::decode of all ids.
class TokenDecoder {
public:
  explicit TokenDecoder(const Tokenizer &tokenizer, bool includeSpecial = true)
      : tokenizer_(&tokenizer), includeSpecial_(includeSpecial) {}

  // Adds one token; returns the text completed by it (possibly empty).
  std::string push(int32_t id);
  // Ends the stream: returns whatever is held back, repaired, and resets the decoder.
  std::string finish();
  // Bytes held back, waiting for the rest of a character (at most 3).
  size_t pendingBytes() const { return pending_.size(); }

private:
  const Tokenizer *tokenizer_;
  bool includeSpecial_;
  std::string pending_;
};

} // namespace glm5rt::tokenizer
