// Implementation of `glm5-gguf inspect` and `glm5-gguf dequant` (see inspect.h).
#include "tools/glm5-gguf/inspect.h"

#include "runtime/gguf/gguf_reader.h"
#include "runtime/gguf/gguf_writer.h"
#include "runtime/gguf/glm5_layout.h"
#include "runtime/gguf/quant.h"
#include "runtime/support/parallel.h"

#include <algorithm>
#include <cinttypes>
#include <map>
#include <vector>

namespace glm5c::gguftool {

using glm5rt::Status;
using glm5rt::StatusCode;
using glm5rt::makeStatus;
using glm5rt::strFormat;
using namespace glm5rt::gguf;

namespace {

// 753862502400 -> "753.86 B"
std::string humanCount(uint64_t n) {
  if (n >= 1000000000ull)
    return strFormat("%.2f B", n / 1e9);
  if (n >= 1000000ull)
    return strFormat("%.2f M", n / 1e6);
  if (n >= 1000ull)
    return strFormat("%.2f K", n / 1e3);
  return strFormat("%" PRIu64, n);
}

std::string humanBytes(uint64_t n) {
  if (n >= (1ull << 30))
    return strFormat("%.2f GiB", n / double(1ull << 30));
  if (n >= (1ull << 20))
    return strFormat("%.2f MiB", n / double(1ull << 20));
  if (n >= (1ull << 10))
    return strFormat("%.2f KiB", n / double(1ull << 10));
  return strFormat("%" PRIu64 " B", n);
}

Status printTensor(const GgufFile &f, const InspectOptions &opt, FILE *out) {
  const TensorInfo *t = f.findTensor(opt.tensor);
  if (!t)
    return makeStatus(StatusCode::kNotFound, "%s: no tensor named '%s'", f.path().c_str(),
                      opt.tensor.c_str());
  uint64_t rows = t->elements() / std::max<uint64_t>(t->ne[0], 1);
  uint64_t end = opt.rowEnd ? opt.rowEnd : opt.rowBegin + 1;
  if (opt.rowBegin >= end || end > rows)
    return makeStatus(StatusCode::kInvalidArgument,
                      "tensor '%s' has %" PRIu64 " rows; --rows %" PRIu64 ":%" PRIu64
                      " is out of range", opt.tensor.c_str(), rows, opt.rowBegin, end);
  if (!canDequantize(t->type))
    return makeStatus(StatusCode::kUnimplemented, "tensor '%s' is %s, which has no dequantizer",
                      opt.tensor.c_str(), ggmlTypeName(t->type));
  uint64_t rowBytes = *ggmlRowBytes(t->type, t->ne[0]);
  std::fprintf(out, "tensor %s %s %s rows %" PRIu64 ":%" PRIu64 "\n", opt.tensor.c_str(),
               ggmlTypeName(t->type), t->shapeString().c_str(), opt.rowBegin, end);
  std::vector<float> row(t->ne[0]);
  for (uint64_t r = opt.rowBegin; r < end; ++r) {
    GLM5_RETURN_IF_ERROR(
        dequantizeRow(t->type, t->data + r * rowBytes, rowBytes, row.data(), t->ne[0]));
    std::fprintf(out, "row %" PRIu64 ":", r);
    for (float v : row)
      std::fprintf(out, " %.6g", v);
    std::fprintf(out, "\n");
  }
  return Status::ok();
}

} // namespace

Status inspect(const InspectOptions &opt, FILE *out) {
  auto opened = GgufFile::open(opt.path);
  if (!opened.isOk())
    return opened.status();
  const GgufFile &f = **opened;
  if (!opt.tensor.empty())
    return printTensor(f, opt, out);

  uint64_t totalFileBytes = 0;
  for (size_t s = 0; s < f.shardCount(); ++s)
    totalFileBytes += f.fileSize(static_cast<uint32_t>(s));
  std::fprintf(out, "file: %s\n", f.path().c_str());
  std::fprintf(out, "format: GGUF v%u, alignment %u, %zu shard%s, %" PRIu64 " bytes (%s)\n",
               f.version(), f.alignment(), f.shardCount(), f.shardCount() == 1 ? "" : "s",
               totalFileBytes, humanBytes(totalFileBytes).c_str());
  for (size_t s = 0; s < f.shardCount(); ++s)
    std::fprintf(out, "  shard %zu: %s, data section at byte %" PRIu64 "\n", s,
                 f.paths()[s].c_str(), f.dataOffset(static_cast<uint32_t>(s)));

  std::fprintf(out, "metadata: %zu keys\n", f.metadata().size());
  for (const KeyValue &kv : f.metadata()) {
    std::string type = kv.value.isArray()
                           ? strFormat("%s[]", valueTypeName(kv.value.elemType))
                           : valueTypeName(kv.value.type);
    std::fprintf(out, "  %-48.*s %-9s %s\n", static_cast<int>(kv.key.size()), kv.key.data(),
                 type.c_str(), kv.value.toString().c_str());
  }

  std::fprintf(out, "tensors: %zu\n", f.tensors().size());
  if (opt.tensorsTable) {
    std::fprintf(out, "  %-40s %-7s %-24s %14s %5s %14s\n", "name", "type", "shape", "bytes",
                 "shard", "offset");
    for (const TensorInfo &t : f.tensors())
      std::fprintf(out, "  %-40.*s %-7s %-24s %14" PRIu64 " %5u %14" PRIu64 "\n",
                   static_cast<int>(t.name.size()), t.name.data(), ggmlTypeName(t.type),
                   t.shapeString().c_str(), t.bytes, t.file, t.offset);
  }

  struct Totals {
    uint64_t tensors = 0, params = 0, bytes = 0;
  };
  std::map<uint32_t, Totals> byType;
  Totals all;
  for (const TensorInfo &t : f.tensors()) {
    Totals &x = byType[static_cast<uint32_t>(t.type)];
    for (Totals *y : {&x, &all}) {
      y->tensors += 1;
      y->params += t.elements();
      y->bytes += t.bytes;
    }
  }
  std::fprintf(out, "by type:\n");
  for (const auto &[type, x] : byType)
    std::fprintf(out, "  %-7s %6" PRIu64 " tensors %18" PRIu64 " params %18" PRIu64
                 " bytes (%.3f bits/param)\n",
                 ggmlTypeName(static_cast<GgmlType>(type)), x.tensors, x.params, x.bytes,
                 x.params ? 8.0 * x.bytes / x.params : 0.0);
  std::fprintf(out, "total: %" PRIu64 " tensors, %" PRIu64 " params (%s), %" PRIu64
               " bytes (%s), %.3f bits/param\n",
               all.tensors, all.params, humanCount(all.params).c_str(), all.bytes,
               humanBytes(all.bytes).c_str(), all.params ? 8.0 * all.bytes / all.params : 0.0);

  auto config = readGlm5Config(f);
  if (!config.isOk()) {
    std::fprintf(out, "GLM-5 check: FAILED: %s\n", config.status().message().c_str());
    return config.status();
  }
  const Glm5Config &c = *config;
  std::fprintf(out,
               "GLM-5 config: %u main layers (%u dense + %u MoE) + %u MTP, hidden %u, heads %u, "
               "q_lora %u, kv_lora %u, qk_nope %u, qk_rope %u, v %u, indexer %u x %u top-k %u, "
               "experts %u top-%u + %u shared of width %u, dense width %u, vocab %u, "
               "rms eps %g, rope theta %g\n",
               c.mainLayers(), c.leadingDense, c.mainLayers() - c.leadingDense, c.nextnLayers,
               c.hidden, c.heads, c.qLoraRank, c.kvLoraRank, c.qkNopeDim, c.qkRopeDim, c.vHeadDim,
               c.indexerHeads, c.indexerHeadDim, c.indexerTopK, c.experts, c.expertsUsed,
               c.sharedExperts, c.expertFfn, c.denseFfn, c.vocab, c.rmsEps, c.ropeTheta);
  std::vector<std::string> problems = checkGlm5Tensors(f, c);
  if (problems.empty()) {
    std::fprintf(out, "GLM-5 check: ok, all %zu tensors present with the expected shapes\n",
                 f.tensors().size());
    return Status::ok();
  }
  for (const std::string &p : problems)
    std::fprintf(out, "GLM-5 check: %s\n", p.c_str());
  return makeStatus(StatusCode::kDataLoss, "%s: GLM-5 check found %zu problem%s (first: %s)",
                    f.path().c_str(), problems.size(), problems.size() == 1 ? "" : "s",
                    problems.front().c_str());
}

Status dequantToF32(const std::string &input, const std::string &output, uint32_t threads) {
  auto opened = GgufFile::open(input);
  if (!opened.isOk())
    return opened.status();
  const GgufFile &f = **opened;
  GgufWriter w(f.alignment());
  for (const KeyValue &kv : f.metadata()) {
    std::string key(kv.key);
    if (key.rfind("split.", 0) == 0)
      continue; // the copy is one file
    w.setValue(key, kv.value);
  }
  w.setU32("general.file_type", 0); // ALL_F32
  for (const TensorInfo &t : f.tensors()) {
    if (!canDequantize(t.type))
      return makeStatus(StatusCode::kUnimplemented, "%s: tensor '%.*s' is %s, which has no "
                        "dequantizer", input.c_str(), static_cast<int>(t.name.size()),
                        t.name.data(), ggmlTypeName(t.type));
    GLM5_RETURN_IF_ERROR(w.addTensor(std::string(t.name), GgmlType::F32,
                                     std::vector<uint64_t>(t.ne, t.ne + t.nDims)));
  }
  GLM5_RETURN_IF_ERROR(w.create(output));
  GLM5_RETURN_IF_ERROR(glm5rt::parallelFor(f.tensors().size(), threads, [&](size_t i) {
    const TensorInfo &t = f.tensors()[i];
    return dequantizeRow(t.type, t.data, t.bytes, reinterpret_cast<float *>(w.tensorData(i)),
                         t.elements())
        .withContext(std::string(t.name));
  }));
  return w.finish();
}

} // namespace glm5c::gguftool
