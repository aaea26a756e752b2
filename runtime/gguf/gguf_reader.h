// A hardened GGUF reader: maps one model (one file or a set of split shards) and validates every
// count, length, type, dimension and offset before anything else sees it (docs/gguf.md
// "Hardening"). Metadata strings and tensor data are views into the mapping; nothing is copied.
#pragma once

#include "runtime/gguf/ggml_types.h"
#include "runtime/support/mapped_file.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace glm5rt::gguf {

// GGUF metadata value types (the u32 stored after each key).
enum class ValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7, String = 8, Array = 9,
  U64 = 10, I64 = 11, F64 = 12,
};
const char *valueTypeName(ValueType type);
// Size in bytes of a fixed-size value type; 0 for String and Array.
uint32_t valueTypeSize(ValueType type);

// One parsed metadata value. Scalars are decoded; arrays of fixed-size elements keep a pointer to
// their little-endian bytes in the mapping; string arrays keep views; nested arrays keep Values.
struct Value {
  ValueType type = ValueType::U8;
  union {
    uint64_t u;
    int64_t i;
    double f;
  } num{0};
  std::string_view str;                   // type == String
  ValueType elemType = ValueType::U8;     // type == Array
  uint64_t count = 0;                     // type == Array: number of elements
  const uint8_t *raw = nullptr;           // Array of fixed-size elements
  std::vector<std::string_view> strings;  // Array of String
  std::vector<Value> items;               // Array of Array

  bool isArray() const { return type == ValueType::Array; }
  bool isInteger() const;
  // Scalar conversions; nullopt when the type does not fit (a string, a negative to unsigned, ...).
  std::optional<uint64_t> asU64() const;
  std::optional<int64_t> asI64() const;
  std::optional<double> asF64() const; // any numeric scalar
  std::optional<bool> asBool() const;
  std::optional<std::string_view> asString() const;
  // Element i (< count) of an array of numeric elements, converted as above.
  std::optional<int64_t> elemI64(uint64_t i) const;
  std::optional<double> elemF64(uint64_t i) const;
  // Human-readable rendering; arrays longer than `maxElems` are summarized.
  std::string toString(size_t maxElems = 8) const;
};

struct KeyValue {
  std::string_view key;
  Value value;
  uint64_t offset = 0; // byte offset of the key in its file
};

struct TensorInfo {
  std::string_view name;
  uint32_t nDims = 0;
  uint64_t ne[4] = {1, 1, 1, 1}; // ggml order: ne[0] is contiguous; unused dims are 1
  GgmlType type = GgmlType::F32;
  uint64_t offset = 0;       // relative to its file's data section
  uint64_t bytes = 0;        // ggmlTensorBytes(type, ne, nDims)
  uint32_t file = 0;         // shard index
  uint64_t infoOffset = 0;   // byte offset of this tensor's info record in its file
  const uint8_t *data = nullptr; // first byte of the tensor in the mapping

  uint64_t elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; } // validated not to overflow
  std::string shapeString() const; // "{6144, 2048}"
};

struct OpenOptions {
  // Nesting limit for arrays of arrays; deeper files are rejected (stack safety).
  uint32_t maxArrayDepth = 8;
};

class GgufFile {
public:
  // Opens `path`. A name of the form `<base>-00001-of-00003.gguf`, or a file whose metadata says
  // split.count > 1, opens every shard and presents them as one model.
  static StatusOr<std::unique_ptr<GgufFile>> open(const std::string &path,
                                                  const OpenOptions &options = {});

  // Parses a GGUF held in memory (one shard; `name` appears in messages). The bytes must outlive
  // the GgufFile.
  static StatusOr<std::unique_ptr<GgufFile>> openMemory(const std::string &name,
                                                        const uint8_t *data, uint64_t size,
                                                        const OpenOptions &options = {});

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  const std::string &path() const { return paths_.front(); }
  const std::vector<std::string> &paths() const { return paths_; }
  uint64_t fileSize(uint32_t shard) const { return files_[shard]->size(); }
  uint64_t dataOffset(uint32_t shard) const { return dataOffsets_[shard]; }
  size_t shardCount() const { return files_.size(); }

  // Metadata of the first shard (the split.* keys of later shards are checked, not kept).
  const std::vector<KeyValue> &metadata() const { return kvs_; }
  const KeyValue *find(std::string_view key) const;
  const std::vector<TensorInfo> &tensors() const { return tensors_; }
  // The mapped bytes of a shard (its header is [0, dataOffset(shard))).
  const uint8_t *shardData(uint32_t shard) const { return files_[shard]->data(); }
  const TensorInfo *findTensor(std::string_view name) const;

  // Typed lookups: a missing key is kNotFound, a key of another type kDataLoss; both name the key.
  StatusOr<uint64_t> getU64(std::string_view key) const;
  StatusOr<double> getF64(std::string_view key) const;
  StatusOr<bool> getBool(std::string_view key) const;
  StatusOr<std::string_view> getString(std::string_view key) const;

private:
  GgufFile() = default;
  Status parseShard(uint32_t shard, const OpenOptions &options);
  Status finishOpen();

  uint32_t version_ = 3;
  uint32_t alignment_ = 32;
  std::vector<std::string> paths_;
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::vector<uint64_t> dataOffsets_;
  std::vector<KeyValue> kvs_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> kvIndex_;
  std::unordered_map<std::string_view, size_t> tensorIndex_;
};

// A 128-bit hash (hex) of every shard's header bytes (metadata and tensor table, up to the data
// section): what a plan compiled from this file records and the runtime checks.
std::string headerFingerprint(const GgufFile &file);

// Shard naming: "<base>-%05d-of-%05d.gguf" with 1-based numbers.
std::string splitPath(const std::string &base, uint32_t index, uint32_t count);
// Recognizes a shard name; returns the base ("model" for "model-00002-of-00004.gguf").
std::optional<std::string> parseSplitPath(const std::string &path, uint32_t *index,
                                          uint32_t *count);

} // namespace glm5rt::gguf
