// GGUF v3 writer (see gguf_writer.h).
#include "runtime/gguf/gguf_writer.h"

#include <cstring>
#include <unordered_set>

namespace glm5rt::gguf {

namespace {

class Bytes {
public:
  explicit Bytes(std::vector<uint8_t> *out) : out_(out) {}
  template <typename T> void put(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_->insert(out_->end(), b, b + sizeof(T));
  }
  void putString(std::string_view s) {
    put<uint64_t>(s.size());
    out_->insert(out_->end(), s.begin(), s.end());
  }
  void putRaw(const uint8_t *p, size_t n) { out_->insert(out_->end(), p, p + n); }

private:
  std::vector<uint8_t> *out_;
};

// Serializes a value's payload (without its leading type tag).
void putPayload(Bytes &b, const Value &v) {
  switch (v.type) {
  case ValueType::String: b.putString(v.str); return;
  case ValueType::Array:
    b.put<uint32_t>(static_cast<uint32_t>(v.elemType));
    b.put<uint64_t>(v.count);
    if (v.elemType == ValueType::String)
      for (std::string_view s : v.strings)
        b.putString(s);
    else if (v.elemType == ValueType::Array)
      for (const Value &item : v.items)
        putPayload(b, item);
    else
      b.putRaw(v.raw, v.count * valueTypeSize(v.elemType));
    return;
  case ValueType::F32: b.put<float>(static_cast<float>(v.num.f)); return;
  case ValueType::F64: b.put<double>(v.num.f); return;
  default: {
    uint64_t u = v.num.u;
    uint8_t tmp[8];
    std::memcpy(tmp, &u, 8); // little-endian host: the low bytes are the value
    b.putRaw(tmp, valueTypeSize(v.type));
    return;
  }
  }
}

uint64_t alignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

} // namespace

void GgufWriter::setRaw(const std::string &key, std::vector<uint8_t> bytes) {
  for (Kv &kv : kvs_)
    if (kv.key == key) {
      kv.bytes = std::move(bytes);
      return;
    }
  kvs_.push_back({key, std::move(bytes)});
}

bool GgufWriter::hasKey(const std::string &key) const {
  for (const Kv &kv : kvs_)
    if (kv.key == key)
      return true;
  return false;
}

#define GLM5_SCALAR_SETTER(Name, T, Tag)                                                       \
  void GgufWriter::Name(const std::string &key, T v) {                                        \
    std::vector<uint8_t> out;                                                                  \
    Bytes b(&out);                                                                             \
    b.put<uint32_t>(static_cast<uint32_t>(ValueType::Tag));                                    \
    b.put<T>(v);                                                                               \
    setRaw(key, std::move(out));                                                               \
  }
GLM5_SCALAR_SETTER(setU8, uint8_t, U8)
GLM5_SCALAR_SETTER(setU16, uint16_t, U16)
GLM5_SCALAR_SETTER(setU32, uint32_t, U32)
GLM5_SCALAR_SETTER(setI32, int32_t, I32)
GLM5_SCALAR_SETTER(setU64, uint64_t, U64)
GLM5_SCALAR_SETTER(setF32, float, F32)
#undef GLM5_SCALAR_SETTER

void GgufWriter::setBool(const std::string &key, bool v) {
  std::vector<uint8_t> out;
  Bytes b(&out);
  b.put<uint32_t>(static_cast<uint32_t>(ValueType::Bool));
  b.put<uint8_t>(v ? 1 : 0);
  setRaw(key, std::move(out));
}

void GgufWriter::setString(const std::string &key, const std::string &v) {
  std::vector<uint8_t> out;
  Bytes b(&out);
  b.put<uint32_t>(static_cast<uint32_t>(ValueType::String));
  b.putString(v);
  setRaw(key, std::move(out));
}

void GgufWriter::setStringArray(const std::string &key, const std::vector<std::string> &v) {
  std::vector<uint8_t> out;
  Bytes b(&out);
  b.put<uint32_t>(static_cast<uint32_t>(ValueType::Array));
  b.put<uint32_t>(static_cast<uint32_t>(ValueType::String));
  b.put<uint64_t>(v.size());
  for (const std::string &s : v)
    b.putString(s);
  setRaw(key, std::move(out));
}

template <typename T>
static std::vector<uint8_t> numericArray(ValueType elem, const std::vector<T> &v) {
  std::vector<uint8_t> out;
  Bytes b(&out);
  b.put<uint32_t>(static_cast<uint32_t>(ValueType::Array));
  b.put<uint32_t>(static_cast<uint32_t>(elem));
  b.put<uint64_t>(v.size());
  for (T x : v)
    b.put<T>(x);
  return out;
}

void GgufWriter::setI32Array(const std::string &key, const std::vector<int32_t> &v) {
  setRaw(key, numericArray(ValueType::I32, v));
}
void GgufWriter::setF32Array(const std::string &key, const std::vector<float> &v) {
  setRaw(key, numericArray(ValueType::F32, v));
}

void GgufWriter::setValue(const std::string &key, const Value &v) {
  std::vector<uint8_t> out;
  Bytes b(&out);
  b.put<uint32_t>(static_cast<uint32_t>(v.type));
  putPayload(b, v);
  setRaw(key, std::move(out));
}

Status GgufWriter::addTensor(const std::string &name, GgmlType type,
                             const std::vector<uint64_t> &ne) {
  if (name.empty() || name.size() > 63)
    return makeStatus(StatusCode::kInvalidArgument, "tensor name '%s' must be 1..63 bytes",
                      name.c_str());
  if (ne.empty() || ne.size() > 4)
    return makeStatus(StatusCode::kInvalidArgument, "tensor '%s': %zu dims, expected 1..4",
                      name.c_str(), ne.size());
  for (const Tensor &t : tensors_)
    if (t.name == name)
      return makeStatus(StatusCode::kInvalidArgument, "tensor '%s' declared twice", name.c_str());
  std::optional<uint64_t> bytes = ggmlTensorBytes(type, ne.data(), static_cast<uint32_t>(ne.size()));
  if (!bytes)
    return makeStatus(StatusCode::kInvalidArgument,
                      "tensor '%s': ne[0] = %llu is not a multiple of %s's block of %u",
                      name.c_str(), static_cast<unsigned long long>(ne[0]), ggmlTypeName(type),
                      ggmlTypeTraits(type).blockElems);
  Tensor t;
  t.name = name;
  t.type = type;
  t.ne = ne;
  t.bytes = *bytes;
  tensors_.push_back(std::move(t));
  return Status::ok();
}

Status GgufWriter::create(const std::string &path, uint32_t shards, bool sparse) {
  if (shards == 0 || shards > tensors_.size() + (tensors_.empty() ? 1 : 0))
    return makeStatus(StatusCode::kInvalidArgument,
                      "%s: cannot split %zu tensors into %u shards", path.c_str(),
                      tensors_.size(), shards);
  std::string base = path;
  if (base.size() > 5 && base.compare(base.size() - 5, 5, ".gguf") == 0)
    base.resize(base.size() - 5);
  outputPaths_.clear();
  for (uint32_t s = 0; s < shards; ++s)
    outputPaths_.push_back(shards == 1 ? path : splitPath(base, s + 1, shards));

  size_t perShard = (tensors_.size() + shards - 1) / shards;
  for (size_t i = 0; i < tensors_.size(); ++i)
    tensors_[i].shard = static_cast<uint32_t>(i / std::max<size_t>(perShard, 1));

  for (uint32_t s = 0; s < shards; ++s) {
    std::vector<uint8_t> header;
    Bytes b(&header);
    // The first shard holds all metadata; every shard holds the split keys (llama.cpp's
    // gguf-split layout), so each can be validated on its own.
    std::vector<Kv> splitKvs;
    if (shards > 1) {
      GgufWriter tmp;
      tmp.setU16("split.no", static_cast<uint16_t>(s));
      tmp.setU16("split.count", static_cast<uint16_t>(shards));
      tmp.setI32("split.tensors.count", static_cast<int32_t>(tensors_.size()));
      // Later shards carry no other keys, so they restate a non-default alignment.
      if (alignment_ != 32 && s != 0)
        tmp.setU32("general.alignment", alignment_);
      splitKvs = tmp.kvs_;
    }
    std::vector<const Kv *> kvs;
    if (s == 0)
      for (const Kv &kv : kvs_)
        kvs.push_back(&kv);
    for (const Kv &kv : splitKvs)
      kvs.push_back(&kv);
    uint64_t nTensors = 0;
    for (const Tensor &t : tensors_)
      nTensors += t.shard == s;
    b.put<uint32_t>(0x46554747);
    b.put<uint32_t>(3);
    b.put<uint64_t>(nTensors);
    b.put<uint64_t>(kvs.size());
    for (const Kv *kv : kvs) {
      b.putString(kv->key);
      b.putRaw(kv->bytes.data(), kv->bytes.size());
    }
    uint64_t offset = 0;
    for (Tensor &t : tensors_) {
      if (t.shard != s)
        continue;
      b.putString(t.name);
      b.put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
      for (uint64_t d : t.ne)
        b.put<uint64_t>(d);
      b.put<uint32_t>(static_cast<uint32_t>(t.type));
      t.offset = offset;
      b.put<uint64_t>(offset);
      offset = alignUp(offset + t.bytes, alignment_);
    }
    uint64_t dataOffset = alignUp(header.size(), alignment_);
    auto file = MappedFile::createWrite(outputPaths_[s], dataOffset + offset, !sparse);
    if (!file.isOk())
      return file.status();
    std::memcpy(file.value()->mutableData(), header.data(), header.size());
    files_.push_back(std::move(file).value());
    dataOffsets_.push_back(dataOffset);
  }
  return Status::ok();
}

uint8_t *GgufWriter::tensorData(size_t i) {
  const Tensor &t = tensors_[i];
  return files_[t.shard]->mutableData() + dataOffsets_[t.shard] + t.offset;
}

Status GgufWriter::finish() {
  Status status;
  for (auto &f : files_) {
    Status s = f->close();
    if (status.isOk())
      status = s;
  }
  files_.clear();
  dataOffsets_.clear();
  return status;
}

} // namespace glm5rt::gguf
