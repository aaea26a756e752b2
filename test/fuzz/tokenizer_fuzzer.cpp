// libFuzzer target for the tokenizer read from a GGUF's metadata: any byte string must yield a
// tokenizer or a Status, never a crash, hang, leak or out-of-bounds read. An accepted tokenizer
// encodes fixed texts and the input's own tail, with and without special tokens, and decodes the
// result; every id it produces must be in the vocabulary, and encoding without special tokens
// must round-trip through decode (byte-level BPE loses nothing). Ids from the input, in range or
// not, are decoded too. Seed: make_tokenizer_seed.py.
#include "runtime/gguf/gguf_reader.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using glm5rt::tokenizer::Tokenizer;
  auto file = glm5rt::gguf::GgufFile::openMemory("fuzz.gguf", data, size);
  if (!file.isOk())
    return 0;
  auto tok = Tokenizer::fromGguf(**file);
  if (!tok.isOk())
    return 0;
  const Tokenizer &t = **tok;
  const size_t tail = size < 64 ? size : 64;
  static const char kBytes[] = "\xff\xfe bytes \xc3 cut \xe2\x82 \xf0\x9f\x98\x80 end\0zero";
  const std::string texts[] = {
      "[gMASK]<sop><|user|>\nhello world, 123 4567 ok?<|assistant|>",
      std::string(kBytes, sizeof(kBytes) - 1), // invalid and cut UTF-8, a NUL
      std::string(reinterpret_cast<const char *>(data + size - tail), tail),
  };
  for (const std::string &text : texts)
    for (bool special : {false, true}) {
      const std::vector<int32_t> ids = t.encode(text, special);
      for (int32_t id : ids)
        if (id < 0 || id >= t.vocabSize())
          std::abort(); // an id outside the vocabulary
      const std::string back = t.decode(ids);
      if (!special && back != text)
        std::abort(); // byte-level BPE must round-trip
    }
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 4 <= tail; i += 4) {
    int32_t v;
    std::memcpy(&v, data + size - tail + i, 4);
    // mostly in range, some outside
    ids.push_back(static_cast<int32_t>(int64_t(v) % (int64_t(t.vocabSize()) + 8) - 4));
  }
  (void)t.decode(ids, false);
  for (int32_t id : ids)
    (void)t.tokenBytes(id);
  return 0;
}
