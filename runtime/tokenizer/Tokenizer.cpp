// GGUF vocabulary loading and validation, BPE encoding, decoding and GLM's chat template (see
// Tokenizer.h).
#include "runtime/tokenizer/Tokenizer.h"

#include "runtime/tokenizer/PreTokenizer.h"
#include "runtime/tokenizer/Unicode.h"

#include <algorithm>
#include <cinttypes>
#include <queue>

namespace glm5rt::tokenizer {
namespace {

using gguf::GgufFile;
using gguf::KeyValue;
using gguf::ValueType;

constexpr char kReplacementChar[] = "\xEF\xBF\xBD"; // U+FFFD

// Pre-tokenizer names whose regex is the one PreTokenizer.cpp implements.
struct PreTokenizerName {
  const char *name;
  bool ignoreMerges; // Hugging Face's BPE ignore_merges (Llama-3)
};
constexpr PreTokenizerName kPreTokenizers[] = {
    {"glm4", false},    {"chatglm-bpe", false}, {"llama3", true},
    {"llama-v3", true}, {"llama-bpe", true},
};

// A token string for messages: quoted, at most 40 bytes, control bytes escaped.
std::string quote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F || c == '"' || c == '\\')
      out += strFormat("\\x%02X", c);
    else
      out.push_back(static_cast<char>(c));
  }
  if (s.size() > 40)
    out += "...";
  return out + "\"";
}

bool isIntegerType(ValueType t) {
  switch (t) {
  case ValueType::U8:
  case ValueType::I8:
  case ValueType::U16:
  case ValueType::I16:
  case ValueType::U32:
  case ValueType::I32:
  case ValueType::U64:
  case ValueType::I64:
    return true;
  default:
    return false;
  }
}

std::string describeType(const gguf::Value &v) {
  if (!v.isArray())
    return valueTypeName(v.type);
  return std::string("an array of ") + valueTypeName(v.elemType);
}

// The array value of `key`, which must hold elements accepted by `elemOk`.
StatusOr<const gguf::Value *> getArray(const GgufFile &file, const char *key, const char *what,
                                       bool (*elemOk)(ValueType)) {
  const KeyValue *kv = file.find(key);
  if (!kv)
    return makeStatus(StatusCode::kNotFound, "%s: metadata key '%s' is missing",
                      file.path().c_str(), key);
  if (!kv->value.isArray() || !elemOk(kv->value.elemType))
    return makeStatus(StatusCode::kDataLoss,
                      "%s: key '%s' at byte %" PRIu64 " is %s, expected an array of %s",
                      file.path().c_str(), key, kv->offset, describeType(kv->value).c_str(), what);
  return &kv->value;
}

// Reads an optional special-token id: absent or -1 is kNoToken, anything else must be an id.
Status readSpecialId(const GgufFile &file, const char *key, int32_t vocab, int32_t *out) {
  *out = kNoToken;
  const KeyValue *kv = file.find(key);
  if (!kv)
    return Status::ok();
  std::optional<int64_t> v = kv->value.asI64();
  if (!v)
    return makeStatus(StatusCode::kDataLoss,
                      "%s: key '%s' at byte %" PRIu64 " is %s, expected a token id",
                      file.path().c_str(), key, kv->offset, describeType(kv->value).c_str());
  if (*v == -1)
    return Status::ok();
  if (*v < 0 || *v >= vocab)
    return makeStatus(StatusCode::kDataLoss,
                      "%s: key '%s' at byte %" PRIu64 " is %" PRId64
                      ", outside the vocabulary of %d tokens",
                      file.path().c_str(), key, kv->offset, *v, vocab);
  *out = static_cast<int32_t>(*v);
  return Status::ok();
}

// The bytes a byte-level (NORMAL) token stands for. Characters outside the byte map's image (not
// produced by byte-level BPE) are kept as their UTF-8 text rather than dropped.
std::string byteLevelToBytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t len;
    const uint32_t cp = decodeUtf8(text.substr(pos), &len);
    const int32_t b = cp == kInvalidCodePoint ? -1 : codePointToByte(cp);
    if (b >= 0)
      out.push_back(static_cast<char>(b));
    else
      out.append(text.data() + pos, len);
    pos += len;
  }
  return out;
}

// "<0xHH>" -> HH (the SentencePiece byte-token form), else -1.
int parseByteToken(std::string_view text) {
  if (text.size() != 6 || text.compare(0, 3, "<0x") != 0 || text[5] != '>')
    return -1;
  int v = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = text[i];
    const int d = (c >= '0' && c <= '9')   ? c - '0'
                  : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                  : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                           : -1;
    if (d < 0)
      return -1;
    v = v * 16 + d;
  }
  return v;
}

} // namespace

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::fromGguf(const GgufFile &file) {
  const char *path = file.path().c_str();

  StatusOr<std::string_view> model = file.getString("tokenizer.ggml.model");
  if (!model.isOk())
    return model.status();
  if (*model != "gpt2")
    return makeStatus(StatusCode::kUnimplemented,
                      "%s: key 'tokenizer.ggml.model' is \"%.*s\"; only \"gpt2\" (byte-level BPE) "
                      "is supported",
                      path, static_cast<int>(model->size()), model->data());

  StatusOr<std::string_view> pre = file.getString("tokenizer.ggml.pre");
  if (!pre.isOk())
    return pre.status();
  const PreTokenizerName *preInfo = nullptr;
  for (const PreTokenizerName &p : kPreTokenizers)
    if (*pre == p.name)
      preInfo = &p;
  if (!preInfo) {
    std::string known;
    for (const PreTokenizerName &p : kPreTokenizers)
      known += (known.empty() ? "" : ", ") + std::string(p.name);
    return makeStatus(StatusCode::kUnimplemented,
                      "%s: key 'tokenizer.ggml.pre' is \"%.*s\"; supported pre-tokenizers: %s",
                      path, static_cast<int>(pre->size()), pre->data(), known.c_str());
  }

  std::unique_ptr<Tokenizer> tok(new Tokenizer());
  tok->pre_ = std::string(*pre);
  tok->ignoreMerges_ = preInfo->ignoreMerges;

  // Tokens.
  auto isString = [](ValueType t) { return t == ValueType::String; };
  StatusOr<const gguf::Value *> tokens =
      getArray(file, "tokenizer.ggml.tokens", "strings", isString);
  if (!tokens.isOk())
    return tokens.status();
  const uint64_t nTokens = (*tokens)->count;
  if (nTokens == 0 || nTokens > static_cast<uint64_t>(INT32_MAX))
    return makeStatus(StatusCode::kDataLoss,
                      "%s: key 'tokenizer.ggml.tokens' holds %" PRIu64 " tokens; expected 1 to %d",
                      path, nTokens, INT32_MAX);
  const int32_t vocab = static_cast<int32_t>(nTokens);
  tok->tokens_.reserve(nTokens);
  for (std::string_view s : (*tokens)->strings)
    tok->tokens_.emplace_back(s);
  // tokens_ is complete and never changes again, so views into its strings stay valid.
  tok->idOf_.reserve(nTokens);
  for (int32_t id = 0; id < vocab; ++id)
    tok->idOf_.emplace(tok->tokens_[id], id);

  // Token types.
  StatusOr<const gguf::Value *> types =
      getArray(file, "tokenizer.ggml.token_type", "integers", isIntegerType);
  if (!types.isOk())
    return types.status();
  if ((*types)->count != nTokens)
    return makeStatus(StatusCode::kDataLoss,
                      "%s: key 'tokenizer.ggml.token_type' has %" PRIu64
                      " entries but 'tokenizer.ggml.tokens' has %" PRIu64,
                      path, (*types)->count, nTokens);
  tok->types_.resize(nTokens);
  for (int32_t id = 0; id < vocab; ++id) {
    std::optional<int64_t> t = (*types)->elemI64(static_cast<uint64_t>(id));
    if (!t || *t < kTokenUndefined || *t > kTokenByte)
      return makeStatus(StatusCode::kDataLoss,
                        "%s: key 'tokenizer.ggml.token_type' entry %d (token %s) is %s; expected "
                        "a token type from 0 to 6",
                        path, id, quote(tok->tokens_[id]).c_str(),
                        t ? std::to_string(*t).c_str() : "out of range");
    tok->types_[id] = static_cast<int32_t>(*t);
  }

  // What byte-level BPE emits -- byte tokens and merge results -- must decode through the byte
  // map (NORMAL, or UNDEFINED, which decodes the same way): a CONTROL, USER_DEFINED, UNKNOWN,
  // UNUSED or BYTE token there would turn plain text into a special token and decode to other
  // bytes (found by the tokenizer fuzzer). Converted vocabularies type only added tokens
  // otherwise, and BPE never produces those.
  auto bpeToken = [&](int32_t id) {
    return tok->types_[id] == kTokenNormal || tok->types_[id] == kTokenUndefined;
  };
  auto typeName = [](int32_t t) {
    static const char *const kNames[] = {"UNDEFINED", "NORMAL", "UNKNOWN", "CONTROL",
                                         "USER_DEFINED", "UNUSED", "BYTE"};
    return kNames[t];
  };

  // Byte tokens: byte-level BPE starts every piece from them.
  for (uint32_t b = 0; b < 256; ++b) {
    std::string text;
    appendUtf8(text, byteToCodePoint(static_cast<uint8_t>(b)));
    std::optional<int32_t> id = tok->tokenId(text);
    if (!id)
      return makeStatus(StatusCode::kDataLoss,
                        "%s: key 'tokenizer.ggml.tokens' has no token for byte 0x%02X (%s)", path,
                        b, quote(text).c_str());
    if (!bpeToken(*id))
      return makeStatus(StatusCode::kDataLoss,
                        "%s: key 'tokenizer.ggml.token_type': token %d %s, byte 0x%02X's, is %s; "
                        "byte-level BPE needs it NORMAL",
                        path, *id, quote(text).c_str(), b, typeName(tok->types_[*id]));
    tok->byteIds_[b] = *id;
  }

  // Merges, in rank order.
  StatusOr<const gguf::Value *> merges =
      getArray(file, "tokenizer.ggml.merges", "strings", isString);
  if (!merges.isOk())
    return merges.status();
  if ((*merges)->count > static_cast<uint64_t>(INT32_MAX))
    return makeStatus(StatusCode::kDataLoss,
                      "%s: key 'tokenizer.ggml.merges' holds %" PRIu64
                      " merges; at most %d are supported",
                      path, (*merges)->count, INT32_MAX);
  tok->merges_.reserve((*merges)->count);
  std::string joined;
  for (size_t r = 0; r < (*merges)->strings.size(); ++r) {
    std::string_view m = (*merges)->strings[r];
    // Byte-level tokens never contain U+0020 (the byte map sends ' ' to U+0120), so the first
    // space after the first character separates the two tokens.
    const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string_view::npos;
    if (sp == std::string_view::npos || sp + 1 >= m.size())
      return makeStatus(StatusCode::kDataLoss,
                        "%s: key 'tokenizer.ggml.merges' entry %zu %s is not two tokens separated "
                        "by a space",
                        path, r, quote(m).c_str());
    std::string_view left = m.substr(0, sp), right = m.substr(sp + 1);
    std::optional<int32_t> l = tok->tokenId(left), rt = tok->tokenId(right);
    if (!l || !rt)
      return makeStatus(StatusCode::kDataLoss,
                        "%s: key 'tokenizer.ggml.merges' entry %zu %s references %s, which is not "
                        "in 'tokenizer.ggml.tokens'",
                        path, r, quote(m).c_str(), quote(!l ? left : right).c_str());
    joined.assign(left);
    joined.append(right);
    std::optional<int32_t> result = tok->tokenId(joined);
    if (!result)
      return makeStatus(StatusCode::kDataLoss,
                        "%s: key 'tokenizer.ggml.merges' entry %zu %s produces %s, which is not "
                        "in 'tokenizer.ggml.tokens'",
                        path, r, quote(m).c_str(), quote(joined).c_str());
    if (!bpeToken(*result))
      return makeStatus(StatusCode::kDataLoss,
                        "%s: key 'tokenizer.ggml.merges' entry %zu %s produces token %d, which is "
                        "%s; byte-level BPE needs it NORMAL",
                        path, r, quote(m).c_str(), *result, typeName(tok->types_[*result]));
    // A repeated pair keeps its first (lowest) rank.
    tok->merges_.emplace(pairKey(*l, *rt), Merge{static_cast<int32_t>(r), *result});
  }

  // Special ids.
  struct {
    const char *key;
    int32_t *out;
  } ids[] = {
      {"tokenizer.ggml.bos_token_id", &tok->bos_},
      {"tokenizer.ggml.eos_token_id", &tok->eos_},
      {"tokenizer.ggml.eot_token_id", &tok->eot_},
      {"tokenizer.ggml.eom_token_id", &tok->eom_},
      {"tokenizer.ggml.unknown_token_id", &tok->unk_},
      {"tokenizer.ggml.padding_token_id", &tok->pad_},
  };
  for (auto &entry : ids)
    GLM5_RETURN_IF_ERROR(readSpecialId(file, entry.key, vocab, entry.out));

  // Decoded bytes per id and the special-token buckets.
  tok->bytes_.resize(nTokens);
  for (int32_t id = 0; id < vocab; ++id) {
    const std::string &text = tok->tokens_[id];
    switch (tok->types_[id]) {
    case kTokenNormal:
    case kTokenUndefined:
      tok->bytes_[id] = byteLevelToBytes(text);
      break;
    case kTokenByte: {
      const int b = parseByteToken(text);
      tok->bytes_[id] = b >= 0 ? std::string(1, static_cast<char>(b)) : text;
      break;
    }
    case kTokenUnused:
      break; // decodes to nothing
    default: // CONTROL, USER_DEFINED, UNKNOWN: their text
      tok->bytes_[id] = text;
      break;
    }
    if ((tok->types_[id] == kTokenControl || tok->types_[id] == kTokenUserDefined) && !text.empty())
      tok->specialsByFirstByte_[static_cast<unsigned char>(text[0])].push_back(id);
  }
  // Longest first, so the first match in a bucket is the longest; ties (equal length, so only
  // one can match) in id order.
  for (std::vector<int32_t> &bucket : tok->specialsByFirstByte_)
    std::sort(bucket.begin(), bucket.end(), [&](int32_t a, int32_t b) {
      const size_t la = tok->tokens_[a].size(), lb = tok->tokens_[b].size();
      return la != lb ? la > lb : a < b;
    });
  return tok;
}

std::optional<int32_t> Tokenizer::tokenId(std::string_view text) const {
  auto it = idOf_.find(text);
  if (it == idOf_.end())
    return std::nullopt;
  return it->second;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parseSpecial) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 1);
  size_t segmentStart = 0;
  for (size_t i = 0; i < text.size();) {
    int32_t found = kNoToken;
    for (int32_t id : specialsByFirstByte_[static_cast<unsigned char>(text[i])]) {
      if (!parseSpecial && types_[id] == kTokenControl)
        continue;
      const std::string &s = tokens_[id];
      if (text.compare(i, s.size(), s) == 0) {
        found = id; // the bucket is sorted longest first
        break;
      }
    }
    if (found == kNoToken) {
      ++i;
      continue;
    }
    encodeText(text.substr(segmentStart, i - segmentStart), out);
    out.push_back(found);
    i += tokens_[found].size();
    segmentStart = i;
  }
  encodeText(text.substr(segmentStart), out);
  return out;
}

void Tokenizer::encodeText(std::string_view text, std::vector<int32_t> &out) const {
  if (text.empty())
    return;
  for (std::string_view piece : preTokenize(text))
    encodePiece(piece, out);
}

void Tokenizer::encodePiece(std::string_view piece, std::vector<int32_t> &out) const {
  if (piece.size() == 1) {
    out.push_back(byteIds_[static_cast<unsigned char>(piece[0])]);
    return;
  }
  if (ignoreMerges_) {
    std::string text;
    for (char c : piece)
      appendUtf8(text, byteToCodePoint(static_cast<unsigned char>(c)));
    std::optional<int32_t> id = tokenId(text);
    if (id && types_[*id] == kTokenNormal) {
      out.push_back(*id);
      return;
    }
  }

  // Symbols form a linked list over the piece's bytes; merging absorbs the right symbol into the
  // left one. A candidate records the ids it was made for and is skipped when either changed
  // (ids only grow longer, so a symbol never returns to an id it had before).
  struct Symbol {
    int32_t id;   // -1 once absorbed
    int32_t prev; // -1 at the start
    int32_t next; // -1 at the end
  };
  struct Candidate {
    int32_t rank, left, right, leftId, rightId, result;
    // Min-heap on (rank, left): lowest rank first, leftmost on ties.
    bool operator<(const Candidate &o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  const int32_t n = static_cast<int32_t>(piece.size());
  std::vector<Symbol> syms(n);
  for (int32_t i = 0; i < n; ++i)
    syms[i] = {byteIds_[static_cast<unsigned char>(piece[i])], i - 1, i + 1 < n ? i + 1 : -1};
  std::priority_queue<Candidate> heap;
  auto consider = [&](int32_t left, int32_t right) {
    auto it = merges_.find(pairKey(syms[left].id, syms[right].id));
    if (it != merges_.end())
      heap.push({it->second.rank, left, right, syms[left].id, syms[right].id, it->second.result});
  };
  for (int32_t i = 0; i + 1 < n; ++i)
    consider(i, i + 1);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol &l = syms[c.left];
    if (l.id != c.leftId || l.next != c.right || syms[c.right].id != c.rightId)
      continue; // stale
    l.id = c.result;
    const int32_t next = syms[c.right].next;
    syms[c.right].id = -1;
    l.next = next;
    if (next >= 0)
      syms[next].prev = c.left;
    if (l.prev >= 0)
      consider(l.prev, c.left);
    if (next >= 0)
      consider(c.left, next);
  }
  for (int32_t i = 0; i >= 0; i = syms[i].next)
    out.push_back(syms[i].id);
}

std::string_view Tokenizer::tokenBytes(int32_t id, bool includeSpecial) const {
  if (id < 0 || id >= vocabSize())
    return kReplacementChar;
  if (!includeSpecial && types_[id] == kTokenControl)
    return {};
  return bytes_[id];
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids, bool includeSpecial) const {
  std::string out;
  for (int32_t id : ids)
    out += tokenBytes(id, includeSpecial);
  return out;
}

bool Tokenizer::isEog(int32_t id) const {
  return id != kNoToken && (id == eos_ || id == eot_ || id == eom_);
}

std::string TokenDecoder::push(int32_t id) {
  pending_ += tokenizer_->tokenBytes(id, includeSpecial_);
  std::string out;
  const size_t used = appendRepairedUtf8(out, pending_, /*final=*/false);
  pending_.erase(0, used);
  return out;
}

std::string TokenDecoder::finish() {
  std::string out;
  appendRepairedUtf8(out, pending_, /*final=*/true);
  pending_.clear();
  return out;
}

// --- Chat template ---

namespace {

// Python's str.isspace(), which Jinja's strip() uses: White_Space plus U+001C..U+001F.
bool isPythonSpace(uint32_t cp) { return isWhitespace(cp) || (cp >= 0x1C && cp <= 0x1F); }

// Python's str.strip() with no arguments.
std::string_view stripSpace(std::string_view s) {
  size_t first = s.size(), last = 0; // [first, last) spans the non-space characters
  for (size_t pos = 0; pos < s.size();) {
    size_t len;
    const uint32_t cp = decodeUtf8(s.substr(pos), &len);
    if (cp == kInvalidCodePoint || !isPythonSpace(cp)) {
      first = std::min(first, pos);
      last = pos + len;
    }
    pos += len;
  }
  return first < last ? s.substr(first, last - first) : std::string_view();
}

std::string_view stripChar(std::string_view s, char c, bool front, bool back) {
  while (front && !s.empty() && s.front() == c)
    s.remove_prefix(1);
  while (back && !s.empty() && s.back() == c)
    s.remove_suffix(1);
  return s;
}

enum class Role { kSystem, kUser, kAssistant, kTool };

} // namespace

StatusOr<std::string> Tokenizer::applyChatTemplate(const std::vector<Message> &messages,
                                                   bool addGenerationPrompt,
                                                   const ChatOptions &options) {
  std::vector<Role> roles;
  roles.reserve(messages.size());
  int64_t lastUser = -1;
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string &r = messages[i].role;
    if (r == "system") {
      roles.push_back(Role::kSystem);
    } else if (r == "user") {
      roles.push_back(Role::kUser);
      lastUser = static_cast<int64_t>(i);
    } else if (r == "assistant") {
      roles.push_back(Role::kAssistant);
    } else if (r == "tool" || r == "observation") {
      roles.push_back(Role::kTool);
    } else {
      return makeStatus(StatusCode::kInvalidArgument,
                        "chat message %zu has role \"%s\"; expected system, user, assistant, tool "
                        "or observation",
                        i, r.c_str());
    }
  }

  std::string out = "[gMASK]<sop>";
  if (options.format == ChatFormat::kGlm4) {
    static const char *const kTags[] = {"<|system|>", "<|user|>", "<|assistant|>",
                                        "<|observation|>"};
    for (size_t i = 0; i < messages.size(); ++i)
      out += std::string(kTags[static_cast<int>(roles[i])]) + "\n" + messages[i].content;
    if (addGenerationPrompt)
      out += "<|assistant|>";
    return out;
  }

  for (size_t i = 0; i < messages.size(); ++i) {
    std::string_view content = messages[i].content;
    switch (roles[i]) {
    case Role::kSystem:
      out += "<|system|>";
      out += content;
      break;
    case Role::kUser:
      out += "<|user|>";
      out += content;
      break;
    case Role::kAssistant: {
      std::string_view reasoning;
      const size_t close = content.find("</think>");
      if (close != std::string_view::npos) {
        std::string_view before = stripChar(content.substr(0, close), '\n', false, true);
        const size_t open = before.rfind("<think>");
        if (open != std::string_view::npos)
          before.remove_prefix(open + 7);
        reasoning = stripChar(before, '\n', true, false);
        content = stripChar(content.substr(content.rfind("</think>") + 8), '\n', true, false);
      }
      out += "<|assistant|>";
      if (static_cast<int64_t>(i) > lastUser && !reasoning.empty()) {
        out += "<think>";
        out += stripSpace(reasoning);
        out += "</think>";
      } else {
        out += "</think>";
      }
      out += stripSpace(content);
      break;
    }
    case Role::kTool:
      if (i == 0 || roles[i - 1] != Role::kTool)
        out += "<|observation|>";
      out += "<tool_response>";
      out += content;
      out += "</tool_response>";
      break;
    }
  }
  if (addGenerationPrompt)
    out += options.enableThinking ? "<|assistant|><think>" : "<|assistant|></think>";
  return out;
}

} // namespace glm5rt::tokenizer
