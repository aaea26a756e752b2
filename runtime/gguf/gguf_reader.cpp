// GGUF parsing and validation. Every read is bounds-checked against the mapping and every size
// computed from file contents is overflow-checked; errors name the file, the key or tensor, and
// the byte offset (docs/gguf.md "Hardening").
#include "runtime/gguf/gguf_reader.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <limits>

namespace glm5rt::gguf {

namespace {

constexpr uint32_t kMagic = 0x46554747; // "GGUF" read as a little-endian u32
constexpr uint64_t kMaxTensorName = 63; // ggml: names are < GGML_MAX_NAME (64) with the NUL
constexpr uint32_t kMaxDims = 4;

// Sequential little-endian reader over one mapped file. Reads never go past `size`.
class Cursor {
public:
  Cursor(const uint8_t *base, uint64_t size) : base_(base), size_(size) {}
  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  const uint8_t *here() const { return base_ + pos_; }
  bool skip(uint64_t n) {
    if (n > remaining())
      return false;
    pos_ += n;
    return true;
  }
  template <typename T> bool read(T *out) {
    if (sizeof(T) > remaining())
      return false;
    std::memcpy(out, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }

private:
  const uint8_t *base_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

template <typename T> T loadLE(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

bool isValidValueType(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::F64); }

// Parses metadata values; `where` prefixes every message ("model.gguf: key 'x' at byte 40").
class ValueParser {
public:
  ValueParser(Cursor &cursor, uint64_t fileSize, uint32_t maxDepth)
      : c_(cursor), fileSize_(fileSize), maxDepth_(maxDepth) {}

  Status parse(ValueType type, Value *out, const std::string &where, uint32_t depth) {
    out->type = type;
    uint64_t at = c_.pos();
    switch (type) {
    case ValueType::U8: return scalar<uint8_t>(out, where, at);
    case ValueType::I8: return scalar<int8_t>(out, where, at);
    case ValueType::U16: return scalar<uint16_t>(out, where, at);
    case ValueType::I16: return scalar<int16_t>(out, where, at);
    case ValueType::U32: return scalar<uint32_t>(out, where, at);
    case ValueType::I32: return scalar<int32_t>(out, where, at);
    case ValueType::U64: return scalar<uint64_t>(out, where, at);
    case ValueType::I64: return scalar<int64_t>(out, where, at);
    case ValueType::F32: {
      float f;
      if (!c_.read(&f))
        return truncated(where, at, 4);
      out->num.f = f;
      return Status::ok();
    }
    case ValueType::F64: {
      double f;
      if (!c_.read(&f))
        return truncated(where, at, 8);
      out->num.f = f;
      return Status::ok();
    }
    case ValueType::Bool: {
      uint8_t b;
      if (!c_.read(&b))
        return truncated(where, at, 1);
      if (b > 1)
        return makeStatus(StatusCode::kDataLoss, "%s: bool value %u at byte %" PRIu64
                          " is neither 0 nor 1", where.c_str(), b, at);
      out->num.u = b;
      return Status::ok();
    }
    case ValueType::String: return string(&out->str, where);
    case ValueType::Array: return array(out, where, depth);
    }
    return makeStatus(StatusCode::kInternal, "%s: unhandled value type", where.c_str());
  }

  Status string(std::string_view *out, const std::string &where) {
    uint64_t at = c_.pos();
    uint64_t len;
    if (!c_.read(&len))
      return truncated(where, at, 8);
    if (len > c_.remaining())
      return makeStatus(StatusCode::kDataLoss,
                        "%s: string length %" PRIu64 " at byte %" PRIu64
                        " extends past the end of the file (size %" PRIu64 ")",
                        where.c_str(), len, at, fileSize_);
    *out = std::string_view(reinterpret_cast<const char *>(c_.here()), len);
    c_.skip(len);
    return Status::ok();
  }

private:
  template <typename T> Status scalar(Value *out, const std::string &where, uint64_t at) {
    T v;
    if (!c_.read(&v))
      return truncated(where, at, sizeof(T));
    if (std::numeric_limits<T>::is_signed)
      out->num.i = static_cast<int64_t>(v);
    else
      out->num.u = static_cast<uint64_t>(v);
    return Status::ok();
  }

  Status array(Value *out, const std::string &where, uint32_t depth) {
    uint64_t at = c_.pos();
    uint32_t elemType;
    uint64_t count;
    if (!c_.read(&elemType) || !c_.read(&count))
      return truncated(where, at, 12);
    if (!isValidValueType(elemType))
      return makeStatus(StatusCode::kDataLoss,
                        "%s: array element type %u at byte %" PRIu64 " is not a GGUF value type",
                        where.c_str(), elemType, at);
    out->elemType = static_cast<ValueType>(elemType);
    out->count = count;
    uint32_t size = valueTypeSize(out->elemType);
    if (size != 0) {
      uint64_t bytes;
      if (mulOverflows(count, size, &bytes) || bytes > c_.remaining())
        return makeStatus(StatusCode::kDataLoss,
                          "%s: array of %" PRIu64 " %s at byte %" PRIu64
                          " extends past the end of the file (size %" PRIu64 ")",
                          where.c_str(), count, valueTypeName(out->elemType), at, fileSize_);
      out->raw = c_.here();
      if (out->elemType == ValueType::Bool)
        for (uint64_t i = 0; i < count; ++i)
          if (out->raw[i] > 1)
            return makeStatus(StatusCode::kDataLoss,
                              "%s: bool array element %" PRIu64 " at byte %" PRIu64
                              " is neither 0 nor 1",
                              where.c_str(), i, c_.pos() + i);
      c_.skip(bytes);
      return Status::ok();
    }
    // Each string needs at least its 8-byte length, each nested array 12 bytes of header:
    // bounding the count by that keeps a hostile count from allocating more than the file.
    uint64_t minElem = out->elemType == ValueType::String ? 8 : 12;
    if (count > c_.remaining() / minElem)
      return makeStatus(StatusCode::kDataLoss,
                        "%s: array of %" PRIu64 " %s at byte %" PRIu64
                        " cannot fit in the rest of the file (size %" PRIu64 ")",
                        where.c_str(), count, valueTypeName(out->elemType), at, fileSize_);
    if (out->elemType == ValueType::String) {
      out->strings.resize(count);
      for (uint64_t i = 0; i < count; ++i)
        GLM5_RETURN_IF_ERROR(string(&out->strings[i], where + strFormat(" element %" PRIu64, i)));
      return Status::ok();
    }
    if (depth + 1 >= maxDepth_)
      return makeStatus(StatusCode::kDataLoss,
                        "%s: arrays nested deeper than %u at byte %" PRIu64, where.c_str(),
                        maxDepth_, at);
    out->items.resize(count);
    for (uint64_t i = 0; i < count; ++i)
      GLM5_RETURN_IF_ERROR(parse(ValueType::Array, &out->items[i],
                                 where + strFormat(" element %" PRIu64, i), depth + 1));
    return Status::ok();
  }

  Status truncated(const std::string &where, uint64_t at, uint64_t need) {
    return makeStatus(StatusCode::kDataLoss,
                      "%s: value at byte %" PRIu64 " needs %" PRIu64
                      " bytes, past the end of the file (size %" PRIu64 ")",
                      where.c_str(), at, need, fileSize_);
  }

  Cursor &c_;
  uint64_t fileSize_;
  uint32_t maxDepth_;
};

uint64_t alignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

} // namespace

const char *valueTypeName(ValueType type) {
  switch (type) {
  case ValueType::U8: return "u8";
  case ValueType::I8: return "i8";
  case ValueType::U16: return "u16";
  case ValueType::I16: return "i16";
  case ValueType::U32: return "u32";
  case ValueType::I32: return "i32";
  case ValueType::F32: return "f32";
  case ValueType::Bool: return "bool";
  case ValueType::String: return "string";
  case ValueType::Array: return "array";
  case ValueType::U64: return "u64";
  case ValueType::I64: return "i64";
  case ValueType::F64: return "f64";
  }
  return "?";
}

uint32_t valueTypeSize(ValueType type) {
  switch (type) {
  case ValueType::U8: case ValueType::I8: case ValueType::Bool: return 1;
  case ValueType::U16: case ValueType::I16: return 2;
  case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
  case ValueType::U64: case ValueType::I64: case ValueType::F64: return 8;
  case ValueType::String: case ValueType::Array: return 0;
  }
  return 0;
}

static bool isSignedInt(ValueType t) {
  return t == ValueType::I8 || t == ValueType::I16 || t == ValueType::I32 || t == ValueType::I64;
}
static bool isUnsignedInt(ValueType t) {
  return t == ValueType::U8 || t == ValueType::U16 || t == ValueType::U32 || t == ValueType::U64;
}

bool Value::isInteger() const { return isSignedInt(type) || isUnsignedInt(type); }

std::optional<uint64_t> Value::asU64() const {
  if (isUnsignedInt(type))
    return num.u;
  if (isSignedInt(type) && num.i >= 0)
    return static_cast<uint64_t>(num.i);
  return std::nullopt;
}

std::optional<int64_t> Value::asI64() const {
  if (isSignedInt(type))
    return num.i;
  if (isUnsignedInt(type) && num.u <= static_cast<uint64_t>(INT64_MAX))
    return static_cast<int64_t>(num.u);
  return std::nullopt;
}

std::optional<double> Value::asF64() const {
  if (type == ValueType::F32 || type == ValueType::F64)
    return num.f;
  if (isSignedInt(type))
    return static_cast<double>(num.i);
  if (isUnsignedInt(type))
    return static_cast<double>(num.u);
  return std::nullopt;
}

std::optional<bool> Value::asBool() const {
  if (type == ValueType::Bool)
    return num.u != 0;
  return std::nullopt;
}

std::optional<std::string_view> Value::asString() const {
  if (type == ValueType::String)
    return str;
  return std::nullopt;
}

std::optional<int64_t> Value::elemI64(uint64_t i) const {
  if (type != ValueType::Array || i >= count || !raw)
    return std::nullopt;
  const uint8_t *p = raw + i * valueTypeSize(elemType);
  switch (elemType) {
  case ValueType::U8: case ValueType::Bool: return *p;
  case ValueType::I8: return static_cast<int8_t>(*p);
  case ValueType::U16: return loadLE<uint16_t>(p);
  case ValueType::I16: return loadLE<int16_t>(p);
  case ValueType::U32: return loadLE<uint32_t>(p);
  case ValueType::I32: return loadLE<int32_t>(p);
  case ValueType::I64: return loadLE<int64_t>(p);
  case ValueType::U64: {
    uint64_t v = loadLE<uint64_t>(p);
    if (v > static_cast<uint64_t>(INT64_MAX))
      return std::nullopt;
    return static_cast<int64_t>(v);
  }
  default: return std::nullopt;
  }
}

std::optional<double> Value::elemF64(uint64_t i) const {
  if (type != ValueType::Array || i >= count || !raw)
    return std::nullopt;
  if (elemType == ValueType::F32)
    return loadLE<float>(raw + 4 * i);
  if (elemType == ValueType::F64)
    return loadLE<double>(raw + 8 * i);
  if (elemType == ValueType::U64)
    return static_cast<double>(loadLE<uint64_t>(raw + 8 * i));
  if (auto v = elemI64(i))
    return static_cast<double>(*v);
  return std::nullopt;
}

static std::string quoteString(std::string_view s, size_t maxLen = 80) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < maxLen; ++i) {
    unsigned char ch = static_cast<unsigned char>(s[i]);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch < 0x20 || ch == 0x7f) {
      out += strFormat("\\x%02x", ch);
    } else {
      out += static_cast<char>(ch);
    }
  }
  if (s.size() > maxLen)
    out += "...";
  return out + "\"";
}

std::string Value::toString(size_t maxElems) const {
  switch (type) {
  case ValueType::String: return quoteString(str);
  case ValueType::Bool: return num.u ? "true" : "false";
  case ValueType::F32:
  case ValueType::F64: return strFormat("%.9g", num.f);
  case ValueType::Array: break;
  default:
    return isSignedInt(type) ? strFormat("%" PRId64, num.i) : strFormat("%" PRIu64, num.u);
  }
  std::string out = strFormat("[%s x %" PRIu64 "]", valueTypeName(elemType), count);
  if (count == 0)
    return out;
  out += " [";
  uint64_t shown = std::min<uint64_t>(count, maxElems);
  for (uint64_t i = 0; i < shown; ++i) {
    if (i)
      out += ", ";
    if (elemType == ValueType::String)
      out += quoteString(strings[i], 40);
    else if (elemType == ValueType::Array)
      out += items[i].toString(maxElems);
    else if (elemType == ValueType::F32 || elemType == ValueType::F64)
      out += strFormat("%.6g", *elemF64(i));
    else if (elemType == ValueType::Bool)
      out += raw[i] ? "true" : "false";
    else if (elemType == ValueType::U64)
      out += strFormat("%" PRIu64, loadLE<uint64_t>(raw + 8 * i));
    else
      out += strFormat("%" PRId64, *elemI64(i));
  }
  if (shown < count)
    out += ", ...";
  return out + "]";
}

std::string TensorInfo::shapeString() const {
  std::string s = "{";
  for (uint32_t i = 0; i < nDims; ++i)
    s += strFormat(i ? ", %" PRIu64 : "%" PRIu64, ne[i]);
  return s + "}";
}

std::string headerFingerprint(const GgufFile &file) {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x9ae16a3b2f90404full;
  for (uint32_t s = 0; s < file.shardCount(); ++s) {
    const uint8_t *p = file.shardData(s);
    uint64_t n = file.dataOffset(s);
    for (uint64_t i = 0; i < n; ++i) {
      a = (a ^ p[i]) * 0x100000001b3ull;
      b = (b ^ p[i]) * 0x100000001b3ull + (b >> 29);
    }
    a = (a ^ n) * 0x100000001b3ull;
  }
  return strFormat("%016" PRIx64 "%016" PRIx64, a, b);
}

std::string splitPath(const std::string &base, uint32_t index, uint32_t count) {
  return base + strFormat("-%05u-of-%05u.gguf", index, count);
}

std::optional<std::string> parseSplitPath(const std::string &path, uint32_t *index,
                                          uint32_t *count) {
  // "<base>-NNNNN-of-MMMMM.gguf": 20 characters after the base.
  static constexpr size_t kSuffix = 20;
  if (path.size() <= kSuffix)
    return std::nullopt;
  std::string_view tail(path.c_str() + path.size() - kSuffix, kSuffix);
  auto number = [&](size_t at, unsigned *out) {
    *out = 0;
    for (size_t i = at; i < at + 5; ++i) {
      if (tail[i] < '0' || tail[i] > '9')
        return false;
      *out = *out * 10 + static_cast<unsigned>(tail[i] - '0');
    }
    return true;
  };
  unsigned a = 0, b = 0;
  if (tail[0] != '-' || tail.substr(6, 4) != "-of-" || tail.substr(15) != ".gguf" ||
      !number(1, &a) || !number(10, &b) || a == 0 || a > b)
    return std::nullopt;
  *index = a;
  *count = b;
  return path.substr(0, path.size() - kSuffix);
}

Status GgufFile::parseShard(uint32_t shard, const OpenOptions &options) {
  const MappedFile &file = *files_[shard];
  const std::string &path = paths_[shard];
  const char *p = path.c_str();
  const uint64_t size = file.size();
  Cursor c(file.data(), size);

  uint32_t magic = 0, version = 0;
  uint64_t nTensors = 0, nKv = 0;
  if (size < 24)
    return makeStatus(StatusCode::kDataLoss,
                      "%s: file is %" PRIu64 " bytes, too short for a GGUF header (24 bytes)", p,
                      size);
  (void)c.read(&magic);
  (void)c.read(&version);
  (void)c.read(&nTensors);
  (void)c.read(&nKv);
  if (magic != kMagic)
    return makeStatus(StatusCode::kDataLoss,
                      "%s: bad magic 0x%08x at byte 0 (expected \"GGUF\", 0x%08x): not a GGUF file",
                      p, magic, kMagic);
  if (__builtin_bswap32(version) >= 1 && __builtin_bswap32(version) <= 3)
    return makeStatus(StatusCode::kUnimplemented,
                      "%s: version field at byte 4 is byte-swapped (%u): big-endian GGUF is not "
                      "supported", p, version);
  if (version != 2 && version != 3)
    return makeStatus(StatusCode::kUnimplemented,
                      "%s: unknown GGUF version %u at byte 4 (supported: 2, 3)", p, version);
  if (shard == 0)
    version_ = version;
  // The smallest key-value pair is 13 bytes (empty key, type, u8) and the smallest tensor info
  // 32 bytes (empty name, n_dims, one dim, type, offset): counts beyond that cannot be real.
  if (nKv > c.remaining() / 13)
    return makeStatus(StatusCode::kDataLoss,
                      "%s: metadata count %" PRIu64 " at byte 16 cannot fit in the file (size %"
                      PRIu64 ")", p, nKv, size);
  if (nTensors > c.remaining() / 32)
    return makeStatus(StatusCode::kDataLoss,
                      "%s: tensor count %" PRIu64 " at byte 8 cannot fit in the file (size %" PRIu64
                      ")", p, nTensors, size);

  std::vector<KeyValue> kvs(nKv);
  std::unordered_map<std::string_view, uint64_t> seenKeys;
  ValueParser values(c, size, options.maxArrayDepth);
  uint32_t alignment = 32;
  for (uint64_t k = 0; k < nKv; ++k) {
    KeyValue &kv = kvs[k];
    kv.offset = c.pos();
    GLM5_RETURN_IF_ERROR(values.string(&kv.key, strFormat("%s: key of metadata entry %" PRIu64,
                                                          p, k)));
    std::string where = strFormat("%s: key '%.*s' at byte %" PRIu64, p,
                                  static_cast<int>(std::min<size_t>(kv.key.size(), 200)),
                                  kv.key.data(), kv.offset);
    auto dup = seenKeys.emplace(kv.key, kv.offset);
    if (!dup.second)
      return makeStatus(StatusCode::kDataLoss, "%s: duplicate key (first at byte %" PRIu64 ")",
                        where.c_str(), dup.first->second);
    uint64_t typeAt = c.pos();
    uint32_t type;
    if (!c.read(&type))
      return makeStatus(StatusCode::kDataLoss, "%s: value type at byte %" PRIu64
                        " is past the end of the file (size %" PRIu64 ")", where.c_str(), typeAt,
                        size);
    if (!isValidValueType(type))
      return makeStatus(StatusCode::kDataLoss,
                        "%s: value type %u at byte %" PRIu64 " is not a GGUF value type",
                        where.c_str(), type, typeAt);
    GLM5_RETURN_IF_ERROR(values.parse(static_cast<ValueType>(type), &kv.value, where, 0));
    if (kv.key == "general.alignment") {
      if (kv.value.type != ValueType::U32)
        return makeStatus(StatusCode::kDataLoss, "%s: general.alignment must be u32, not %s",
                          where.c_str(), valueTypeName(kv.value.type));
      uint64_t a = kv.value.num.u;
      if (a == 0 || (a & (a - 1)) != 0)
        return makeStatus(StatusCode::kDataLoss,
                          "%s: general.alignment %" PRIu64 " is not a power of two",
                          where.c_str(), a);
      alignment = static_cast<uint32_t>(a);
    }
  }

  std::vector<TensorInfo> infos(nTensors);
  for (uint64_t t = 0; t < nTensors; ++t) {
    TensorInfo &ti = infos[t];
    ti.file = shard;
    ti.infoOffset = c.pos();
    GLM5_RETURN_IF_ERROR(values.string(
        &ti.name, strFormat("%s: name of tensor %" PRIu64 " at byte %" PRIu64, p, t,
                            ti.infoOffset)));
    std::string where = strFormat("%s: tensor '%.*s' (info at byte %" PRIu64 ")", p,
                                  static_cast<int>(std::min<size_t>(ti.name.size(), 200)),
                                  ti.name.data(), ti.infoOffset);
    if (ti.name.size() > kMaxTensorName)
      return makeStatus(StatusCode::kDataLoss, "%s: name is %zu bytes, longer than %" PRIu64,
                        where.c_str(), ti.name.size(), kMaxTensorName);
    uint64_t at = c.pos();
    if (!c.read(&ti.nDims))
      return makeStatus(StatusCode::kDataLoss, "%s: n_dims at byte %" PRIu64
                        " is past the end of the file (size %" PRIu64 ")", where.c_str(), at, size);
    if (ti.nDims == 0 || ti.nDims > kMaxDims)
      return makeStatus(StatusCode::kDataLoss, "%s: n_dims %u at byte %" PRIu64
                        " is outside 1..%u", where.c_str(), ti.nDims, at, kMaxDims);
    uint64_t elems = 1;
    for (uint32_t d = 0; d < ti.nDims; ++d) {
      at = c.pos();
      if (!c.read(&ti.ne[d]))
        return makeStatus(StatusCode::kDataLoss, "%s: dim %u at byte %" PRIu64
                          " is past the end of the file (size %" PRIu64 ")", where.c_str(), d, at,
                          size);
      if (ti.ne[d] > static_cast<uint64_t>(INT64_MAX))
        return makeStatus(StatusCode::kDataLoss, "%s: dim %u = %" PRIu64 " at byte %" PRIu64
                          " is negative as ggml's int64", where.c_str(), d, ti.ne[d], at);
      if (mulOverflows(elems, ti.ne[d], &elems) || elems > static_cast<uint64_t>(INT64_MAX))
        return makeStatus(StatusCode::kDataLoss,
                          "%s: dims product overflows 64 bits at dim %u (byte %" PRIu64 ")",
                          where.c_str(), d, at);
    }
    at = c.pos();
    uint32_t type;
    if (!c.read(&type))
      return makeStatus(StatusCode::kDataLoss, "%s: type at byte %" PRIu64
                        " is past the end of the file (size %" PRIu64 ")", where.c_str(), at, size);
    std::optional<GgmlTypeTraits> traits = ggmlTypeTraits(type);
    if (!traits)
      return makeStatus(StatusCode::kDataLoss, "%s: unknown ggml type %u at byte %" PRIu64,
                        where.c_str(), type, at);
    ti.type = traits->type;
    std::optional<uint64_t> bytes = ggmlTensorBytes(ti.type, ti.ne, ti.nDims);
    if (!bytes) {
      if (ti.ne[0] % traits->blockElems != 0)
        return makeStatus(StatusCode::kDataLoss,
                          "%s: ne[0] = %" PRIu64 " is not a multiple of %s's block of %u",
                          where.c_str(), ti.ne[0], traits->name, traits->blockElems);
      return makeStatus(StatusCode::kDataLoss, "%s: byte size of %s %s overflows 64 bits",
                        where.c_str(), traits->name, ti.shapeString().c_str());
    }
    ti.bytes = *bytes;
    at = c.pos();
    if (!c.read(&ti.offset))
      return makeStatus(StatusCode::kDataLoss, "%s: offset at byte %" PRIu64
                        " is past the end of the file (size %" PRIu64 ")", where.c_str(), at, size);
    if (ti.offset % alignment != 0)
      return makeStatus(StatusCode::kDataLoss,
                        "%s: data offset %" PRIu64 " (field at byte %" PRIu64
                        ") is not a multiple of the alignment %u",
                        where.c_str(), ti.offset, at, alignment);
  }

  uint64_t dataOffset = alignUp(c.pos(), alignment);
  if (nTensors > 0 && dataOffset > size)
    return makeStatus(StatusCode::kDataLoss,
                      "%s: data section would start at byte %" PRIu64
                      ", past the end of the file (size %" PRIu64 ")",
                      p, dataOffset, size);
  for (TensorInfo &ti : infos) {
    uint64_t start = 0, end = 0;
    // On overflow `start` wraps below dataOffset; the message then shows UINT64_MAX.
    if (addOverflows(dataOffset, ti.offset, &start) || addOverflows(start, ti.bytes, &end) ||
        end > size)
      return makeStatus(StatusCode::kDataLoss,
                        "%s: tensor '%.*s' (info at byte %" PRIu64 "): data at byte %" PRIu64
                        " + %" PRIu64 " bytes extends past the end of the file (size %" PRIu64 ")",
                        p, static_cast<int>(ti.name.size()), ti.name.data(), ti.infoOffset,
                        start < dataOffset ? UINT64_MAX : start, ti.bytes, size);
    ti.data = file.data() + start;
  }
  // Tensors may appear in any order in the table; sort by offset to find overlaps.
  std::vector<const TensorInfo *> byOffset;
  for (const TensorInfo &ti : infos)
    byOffset.push_back(&ti);
  std::sort(byOffset.begin(), byOffset.end(), [](const TensorInfo *a, const TensorInfo *b) {
    return a->offset != b->offset ? a->offset < b->offset : a->infoOffset < b->infoOffset;
  });
  for (size_t i = 1; i < byOffset.size(); ++i) {
    const TensorInfo *prev = byOffset[i - 1], *cur = byOffset[i];
    if (cur->offset < prev->offset + prev->bytes && cur->bytes > 0 && prev->bytes > 0)
      return makeStatus(StatusCode::kDataLoss,
                        "%s: tensor '%.*s' (info at byte %" PRIu64 "): data at byte %" PRIu64
                        " overlaps tensor '%.*s' (bytes %" PRIu64 "..%" PRIu64 ")",
                        p, static_cast<int>(cur->name.size()), cur->name.data(), cur->infoOffset,
                        dataOffset + cur->offset, static_cast<int>(prev->name.size()),
                        prev->name.data(), dataOffset + prev->offset,
                        dataOffset + prev->offset + prev->bytes);
  }

  dataOffsets_.push_back(dataOffset);
  if (shard == 0) {
    alignment_ = alignment;
    kvs_ = std::move(kvs);
  } else {
    // Later shards carry their own split.* keys; they must agree with their position.
    for (const KeyValue &kv : kvs) {
      if (kv.key == "split.no" && kv.value.asU64() != shard)
        return makeStatus(StatusCode::kDataLoss,
                          "%s: key 'split.no' at byte %" PRIu64 " is %s, expected %u", p,
                          kv.offset, kv.value.toString().c_str(), shard);
      if (kv.key == "split.count" && kv.value.asU64() != files_.size())
        return makeStatus(StatusCode::kDataLoss,
                          "%s: key 'split.count' at byte %" PRIu64 " is %s, expected %zu", p,
                          kv.offset, kv.value.toString().c_str(), files_.size());
    }
  }
  for (TensorInfo &ti : infos) {
    auto ins = tensorIndex_.emplace(ti.name, tensors_.size());
    if (!ins.second) {
      const TensorInfo &first = tensors_[ins.first->second];
      return makeStatus(StatusCode::kDataLoss,
                        "%s: tensor '%.*s' (info at byte %" PRIu64
                        "): duplicate name (first in %s at byte %" PRIu64 ")",
                        p, static_cast<int>(ti.name.size()), ti.name.data(), ti.infoOffset,
                        paths_[first.file].c_str(), first.infoOffset);
    }
    tensors_.push_back(ti);
  }
  return Status::ok();
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::open(const std::string &path,
                                                   const OpenOptions &options) {
  std::unique_ptr<GgufFile> gguf(new GgufFile());
  uint32_t index = 1, count = 1;
  std::optional<std::string> base = parseSplitPath(path, &index, &count);
  std::string first = base ? splitPath(*base, 1, count) : path;

  auto mapped = MappedFile::openRead(first);
  if (!mapped.isOk())
    return base && index != 1
               ? mapped.status().withContext(strFormat("%s is shard %u of %u", path.c_str(),
                                                       index, count))
               : mapped.status();
  gguf->paths_.push_back(first);
  gguf->files_.push_back(std::move(mapped).value());
  GLM5_RETURN_IF_ERROR(gguf->parseShard(0, options));
  GLM5_RETURN_IF_ERROR(gguf->finishOpen());

  // split.count in the first shard decides; the file name must agree with it.
  uint64_t splitCount = 1;
  if (const KeyValue *kv = gguf->find("split.count")) {
    std::optional<uint64_t> n = kv->value.asU64();
    if (!n || *n == 0 || *n > 99999)
      return makeStatus(StatusCode::kDataLoss,
                        "%s: key 'split.count' at byte %" PRIu64 " is %s, not a shard count",
                        first.c_str(), kv->offset, kv->value.toString().c_str());
    splitCount = *n;
    if (const KeyValue *no = gguf->find("split.no"); no && no->value.asU64() != 0u)
      return makeStatus(StatusCode::kDataLoss,
                        "%s: key 'split.no' at byte %" PRIu64 " is %s, expected 0 in the first "
                        "shard", first.c_str(), no->offset, no->value.toString().c_str());
  }
  if (splitCount != count) {
    if (splitCount > 1 && !base)
      return makeStatus(StatusCode::kDataLoss,
                        "%s: split.count is %" PRIu64 " but the name does not follow "
                        "<base>-00001-of-%05" PRIu64 ".gguf, so the other shards cannot be found",
                        first.c_str(), splitCount, splitCount);
    return makeStatus(StatusCode::kDataLoss,
                      "%s: the name says %u shards but split.count is %" PRIu64, first.c_str(),
                      count, splitCount);
  }
  for (uint32_t s = 1; s < splitCount; ++s) {
    std::string shardPath = splitPath(*base, s + 1, count);
    auto shard = MappedFile::openRead(shardPath);
    if (!shard.isOk())
      return shard.status().withContext(
          strFormat("shard %u of %u of %s", s + 1, count, first.c_str()));
    gguf->paths_.push_back(shardPath);
    gguf->files_.push_back(std::move(shard).value());
  }
  for (uint32_t s = 1; s < splitCount; ++s)
    GLM5_RETURN_IF_ERROR(gguf->parseShard(s, options));
  if (const KeyValue *kv = gguf->find("split.tensors.count")) {
    if (kv->value.asU64() != gguf->tensors_.size())
      return makeStatus(StatusCode::kDataLoss,
                        "%s: key 'split.tensors.count' at byte %" PRIu64
                        " is %s but the shards hold %zu tensors",
                        first.c_str(), kv->offset, kv->value.toString().c_str(),
                        gguf->tensors_.size());
  }
  return gguf;
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::openMemory(const std::string &name,
                                                         const uint8_t *data, uint64_t size,
                                                         const OpenOptions &options) {
  std::unique_ptr<GgufFile> gguf(new GgufFile());
  gguf->paths_.push_back(name);
  gguf->files_.push_back(MappedFile::borrow(name, data, size));
  GLM5_RETURN_IF_ERROR(gguf->parseShard(0, options));
  GLM5_RETURN_IF_ERROR(gguf->finishOpen());
  if (const KeyValue *kv = gguf->find("split.count"); kv && kv->value.asU64() != 1u)
    return makeStatus(StatusCode::kInvalidArgument,
                      "%s: key 'split.count' at byte %" PRIu64 " is %s: a split model must be "
                      "opened from its files", name.c_str(), kv->offset,
                      kv->value.toString().c_str());
  return gguf;
}

// Indexes the first shard's metadata (later shards add tensors, never keys).
Status GgufFile::finishOpen() {
  kvIndex_.clear();
  for (size_t i = 0; i < kvs_.size(); ++i)
    kvIndex_.emplace(kvs_[i].key, i);
  return Status::ok();
}

const KeyValue *GgufFile::find(std::string_view key) const {
  auto it = kvIndex_.find(key);
  return it == kvIndex_.end() ? nullptr : &kvs_[it->second];
}

const TensorInfo *GgufFile::findTensor(std::string_view name) const {
  auto it = tensorIndex_.find(name);
  return it == tensorIndex_.end() ? nullptr : &tensors_[it->second];
}

template <typename T, typename Fn>
static StatusOr<T> getTyped(const GgufFile &f, std::string_view key, const char *what, Fn fn) {
  const KeyValue *kv = f.find(key);
  if (!kv)
    return makeStatus(StatusCode::kNotFound, "%s: metadata key '%.*s' is missing",
                      f.path().c_str(), static_cast<int>(key.size()), key.data());
  std::optional<T> v = fn(kv->value);
  if (!v)
    return makeStatus(StatusCode::kDataLoss,
                      "%s: key '%.*s' at byte %" PRIu64 " is %s %s, expected %s", f.path().c_str(),
                      static_cast<int>(key.size()), key.data(), kv->offset,
                      valueTypeName(kv->value.type), kv->value.toString(3).c_str(), what);
  return *v;
}

StatusOr<uint64_t> GgufFile::getU64(std::string_view key) const {
  return getTyped<uint64_t>(*this, key, "a non-negative integer",
                            [](const Value &v) { return v.asU64(); });
}
StatusOr<double> GgufFile::getF64(std::string_view key) const {
  return getTyped<double>(*this, key, "a number", [](const Value &v) { return v.asF64(); });
}
StatusOr<bool> GgufFile::getBool(std::string_view key) const {
  return getTyped<bool>(*this, key, "a bool", [](const Value &v) { return v.asBool(); });
}
StatusOr<std::string_view> GgufFile::getString(std::string_view key) const {
  return getTyped<std::string_view>(*this, key, "a string",
                                    [](const Value &v) { return v.asString(); });
}

} // namespace glm5rt::gguf
