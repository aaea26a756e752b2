// Plan verification (see Plan.h).
#include "runtime/plan/Plan.h"
#include "runtime/gguf/ggml_types.h"
#include "runtime/gguf/glm5_layout.h"
#include <cstring>

#include <cinttypes>

namespace glm5rt::plan {

using glm5::plan::OpKind;

const glm5::plan::Attr *stepAttr(const glm5::plan::Step &s, const char *key) {
  if (!s.attrs())
    return nullptr;
  for (const glm5::plan::Attr *a : *s.attrs())
    if (a->key() && a->key()->str() == key)
      return a;
  return nullptr;
}

Status gatherBox(const glm5::plan::Weight &w, const gguf::TensorInfo &t, std::vector<uint8_t> *store,
                 uint64_t ne[4]) {
  const auto *off = w.view_offset();
  const auto *shp = w.view_shape();
  if (!shp || shp->size() != off->size() || off->size() != t.nDims)
    return makeStatus(StatusCode::kDataLoss, "plan weight %s: a box of %u offsets and %u dims "
                      "for a %u-dim tensor", w.name()->c_str(), off->size(),
                      shp ? shp->size() : 0u, t.nDims);
  uint64_t o[4] = {0, 0, 0, 0}, n[4] = {1, 1, 1, 1};
  for (uint32_t d = 0; d < t.nDims; ++d) {
    o[d] = off->Get(d);
    n[d] = shp->Get(d);
    if (n[d] == 0 || o[d] + n[d] > t.ne[d])
      return makeStatus(StatusCode::kDataLoss, "plan weight %s: box dim %u [%llu, +%llu) is "
                        "outside the tensor's %llu", w.name()->c_str(), d,
                        static_cast<unsigned long long>(o[d]), static_cast<unsigned long long>(n[d]),
                        static_cast<unsigned long long>(t.ne[d]));
  }
  const auto &tr = gguf::ggmlTypeTraits(t.type);
  if (o[0] % tr.blockElems || n[0] % tr.blockElems)
    return makeStatus(StatusCode::kDataLoss, "plan weight %s: box cuts %s blocks of %u in dim 0",
                      w.name()->c_str(), tr.name, tr.blockElems);
  const uint64_t rowBytes = t.ne[0] / tr.blockElems * tr.blockBytes;
  const uint64_t boxRow = n[0] / tr.blockElems * tr.blockBytes;
  const uint64_t skip = o[0] / tr.blockElems * tr.blockBytes;
  store->resize(boxRow * n[1] * n[2] * n[3]);
  uint8_t *dst = store->data();
  for (uint64_t i3 = 0; i3 < n[3]; ++i3)
    for (uint64_t i2 = 0; i2 < n[2]; ++i2)
      for (uint64_t i1 = 0; i1 < n[1]; ++i1) {
        const uint64_t row = ((o[3] + i3) * t.ne[2] + (o[2] + i2)) * t.ne[1] + (o[1] + i1);
        std::memcpy(dst, t.data + row * rowBytes + skip, boxRow);
        dst += boxRow;
      }
  for (uint32_t d = 0; d < 4; ++d)
    ne[d] = n[d];
  return Status::ok();
}


uint64_t loadedBytes(const glm5::plan::Weight &w) {
  if (!w.view_shape() || w.view_shape()->size() == 0 || !w.shape() ||
      w.view_shape()->size() != w.shape()->size())
    return w.bytes();
  const auto &tr = gguf::ggmlTypeTraits(static_cast<gguf::GgmlType>(w.ggml_type()));
  uint64_t rows = 1;
  for (uint32_t d = 1; d < w.view_shape()->size(); ++d)
    rows *= w.view_shape()->Get(d);
  return tr.blockElems ? w.view_shape()->Get(0) / tr.blockElems * tr.blockBytes * rows : w.bytes();
}

StatusOr<const glm5::plan::EntryPoint *> findEntry(const glm5::plan::Plan &p,
                                                   const std::string &name, int rank) {
  for (const auto *e : *p.entries())
    if (e->name()->str() == name && e->rank() == rank)
      return e;
  return makeStatus(StatusCode::kNotFound, "the plan has no entry point '%s'%s", name.c_str(),
                    p.ranks() > 1 ? strFormat(" for rank %d", rank).c_str() : "");
}

std::vector<bool> weightsOfRank(const glm5::plan::Plan &p, int rank) {
  std::vector<bool> used(p.weights()->size(), false);
  for (const auto *e : *p.entries())
    if (e->rank() == rank)
      for (const auto *s : *e->steps())
        if (s->weights())
          for (int32_t w : *s->weights())
            used[static_cast<size_t>(w)] = true; // ids are range-checked at load
  return used;
}

int64_t stepInt(const glm5::plan::Step &s, const char *key) {
  const glm5::plan::Attr *a = stepAttr(s, key);
  return a ? a->i() : 0;
}

float stepFloat(const glm5::plan::Step &s, const char *key) {
  const glm5::plan::Attr *a = stepAttr(s, key);
  return a ? static_cast<float>(a->f()) : 0.f;
}

int64_t firstExpert(const glm5::plan::Plan &p, const glm5::plan::Step &s) {
  const auto *g = p.weights()->Get(static_cast<flatbuffers::uoffset_t>(stepInt(s, "weight.gate")));
  return g->view_offset() && g->view_offset()->size() == 3
             ? static_cast<int64_t>(g->view_offset()->Get(2))
             : 0;
}

const char *opKindName(OpKind kind) {
  const char *name = glm5::plan::EnumNameOpKind(kind);
  return name && *name ? name : "?";
}

namespace {
// What the backends read of a step of each op kind (runtime/host, runtime/cuda): its first
// `inputs` inputs, of which those from `firstBuffer` on are activation buffers (before it: the
// tokens, -1, or the positions, -2), its first `outputs` outputs, and one weight per role
// (attribute "weight.<role>"). The backends index these without bounds checks, so the verifier
// requires them; Linears needs w<i> for each of its outputs (checked separately).
struct OpUse {
  OpKind op;
  int inputs, firstBuffer, outputs;
  const char *weights[3];
};
constexpr OpUse kOpUses[] = {
    {OpKind::Embed, 0, 0, 1, {"table"}},
    {OpKind::RmsNorm, 1, 0, 1, {"weight"}},
    {OpKind::LayerNorm, 1, 0, 1, {"weight", "bias"}},
    {OpKind::Linear, 1, 0, 1, {"weight"}},
    {OpKind::HeadLinear, 1, 0, 1, {"weight"}},
    {OpKind::Slice, 1, 0, 1, {}},
    {OpKind::Rope, 1, 0, 1, {}},
    {OpKind::CacheAppend, 4, 1, 0, {}},
    {OpKind::RopeCacheAppend, 4, 1, 0, {}},
    {OpKind::IndexerScore, 2, 0, 1, {}},
    {OpKind::TopK, 1, 0, 1, {}},
    {OpKind::SparseMla, 3, 0, 2, {}},
    {OpKind::MoEGate, 1, 0, 2, {"bias"}},
    {OpKind::MoERouter, 1, 0, 2, {"weight", "bias"}},
    {OpKind::MoEExperts, 3, 0, 1, {"gate", "up", "down"}},
    {OpKind::SwiGLU, 1, 0, 1, {"gate", "up", "down"}},
    {OpKind::Add, 2, 0, 1, {}},
    {OpKind::Logits, 1, 0, 1, {"weight"}},
    {OpKind::SwiGLUMul, 2, 0, 1, {}},
    {OpKind::AllReduce, 1, 0, 1, {}},
    {OpKind::AllGather, 1, 0, 1, {}},
    {OpKind::GateUp, 1, 0, 1, {"gate", "up"}},
    {OpKind::Linears, 1, 0, 1, {}},
};
static_assert(sizeof(kOpUses) / sizeof(kOpUses[0]) == static_cast<size_t>(OpKind::MAX) + 1,
              "every op kind has its row");

// The step's operands against its op kind's row: a message naming what is missing, or "".
std::string missingOperands(const glm5::plan::Step &st) {
  const OpUse *row = nullptr;
  for (const OpUse &r : kOpUses)
    if (r.op == st.op())
      row = &r;
  if (!row)
    return strFormat("no operand rule for op kind %s", opKindName(st.op()));
  const OpUse &u = *row;
  if (st.inputs()->size() < static_cast<uint32_t>(u.inputs))
    return strFormat("%u inputs, a %s step reads %d", st.inputs()->size(), opKindName(st.op()),
                     u.inputs);
  for (int i = u.firstBuffer; i < u.inputs; ++i)
    if (st.inputs()->Get(static_cast<uint32_t>(i)) < 0)
      return strFormat("input %d is not a buffer", i);
  if (st.outputs()->size() < static_cast<uint32_t>(u.outputs))
    return strFormat("%u outputs, a %s step writes %d", st.outputs()->size(),
                     opKindName(st.op()), u.outputs);
  auto hasWeight = [&](const std::string &role) {
    return stepAttr(st, ("weight." + role).c_str()) != nullptr;
  };
  for (const char *role : u.weights)
    if (role && !hasWeight(role))
      return strFormat("no weight.%s", role);
  if (st.op() == OpKind::Linears)
    for (uint32_t i = 0; i < st.outputs()->size(); ++i)
      if (!hasWeight("w" + std::to_string(i)))
        return strFormat("no weight.w%u for output %u", i, i);
  return "";
}
} // namespace

StatusOr<std::unique_ptr<LoadedPlan>> LoadedPlan::open(const std::string &path) {
  auto file = MappedFile::openRead(path);
  if (!file.isOk())
    return file.status();
  std::unique_ptr<LoadedPlan> p(new LoadedPlan());
  p->path_ = path;
  p->file_ = std::move(file).value();
  p->data_ = p->file_->data();
  p->size_ = p->file_->size();
  GLM5_RETURN_IF_ERROR(p->verify());
  return p;
}

StatusOr<std::unique_ptr<LoadedPlan>> LoadedPlan::fromBytes(const std::string &name,
                                                           const uint8_t *data, size_t size) {
  std::unique_ptr<LoadedPlan> p(new LoadedPlan());
  p->path_ = name;
  p->data_ = data;
  p->size_ = size;
  GLM5_RETURN_IF_ERROR(p->verify());
  return p;
}

namespace {
// flatbuffers' verifier (2.0) checks a vector's length word, not where its elements fall: a
// hostile plan can put an 8-byte vector at a 4-byte boundary, and reading it would be undefined
// behaviour. Every vector of 8-byte scalars the loader reads is checked with this (the buffer
// itself starts 8-byte aligned: checked first).
template <typename T> bool elementsAligned(const flatbuffers::Vector<T> *v) {
  return !v || reinterpret_cast<uintptr_t>(v->data()) % alignof(T) == 0;
}
} // namespace

Status LoadedPlan::verify() {
  const char *f = path_.c_str();
  if (reinterpret_cast<uintptr_t>(data_) % 8 != 0)
    return makeStatus(StatusCode::kInvalidArgument,
                      "%s: the plan's bytes are not 8-byte aligned in memory", f);
  if (size_ < 8 || !glm5::plan::PlanBufferHasIdentifier(data_))
    return makeStatus(StatusCode::kDataLoss, "%s: not a glm5c plan (no \"G5PL\" identifier)", f);
  flatbuffers::Verifier verifier(data_, size_, /*max_depth=*/64, /*max_tables=*/100000000);
  if (!glm5::plan::VerifyPlanBuffer(verifier))
    return makeStatus(StatusCode::kDataLoss,
                      "%s: the plan is corrupt (flatbuffers verification failed: truncated or "
                      "modified)", f);
  plan_ = glm5::plan::GetPlan(data_);
  const glm5::plan::Plan &p = *plan_;
  if (p.format_version() != kFormatVersion)
    return makeStatus(StatusCode::kUnimplemented,
                      "%s: plan format version %u, this runtime reads version %u: recompile the "
                      "plan with a matching glm5c", f, p.format_version(), kFormatVersion);
  if (!p.target() || !p.target()->tiles() || !p.config() || !p.kv() || !p.entries() ||
      !p.weights() || !p.buffers())
    return makeStatus(StatusCode::kDataLoss, "%s: plan lacks %s", f,
                      !p.target() ? "its target" : !p.config() ? "the model config"
                      : !p.kv() ? "the KV-cache layout" : !p.entries() ? "entry points"
                      : !p.weights() ? "the weight table" : "the buffer table");
  const auto *c = p.config();
  if (c->hidden() <= 0 || c->layers() <= 0 || c->heads() <= 0 || c->vocab() <= 0 ||
      c->kv_lora() <= 0 || c->rope() <= 0 || c->index_topk() <= 0)
    return makeStatus(StatusCode::kDataLoss, "%s: plan.config has non-positive dims", f);
  if (c->index_topk() > static_cast<int32_t>(glm5rt::gguf::kMaxIndexerTopK))
    return makeStatus(StatusCode::kDataLoss, "%s: plan.config.index_topk is %d, beyond %u", f,
                      c->index_topk(), glm5rt::gguf::kMaxIndexerTopK);
  // 0: the GGUF states no context length (the KV cache is then sized by memory and --ctx).
  if (c->context_length() < 0)
    return makeStatus(StatusCode::kDataLoss, "%s: plan.config.context_length is %d", f,
                      c->context_length());
  const uint32_t nWeights = p.weights()->size();
  const uint32_t nKernels = p.kernels() ? p.kernels()->size() : 0;
  const uint32_t nBuffers = p.buffers()->size();
  for (uint32_t i = 0; i < nWeights; ++i) {
    const auto *w = p.weights()->Get(i);
    if (!w->name() || !w->shape() || w->shape()->size() == 0 || w->shape()->size() > 4)
      return makeStatus(StatusCode::kDataLoss, "%s: plan.weights[%u] lacks a name or a shape", f,
                        i);
    if (!elementsAligned(w->shape()) || !elementsAligned(w->view_offset()) ||
        !elementsAligned(w->view_shape()))
      return makeStatus(StatusCode::kDataLoss, "%s: plan.weights[%u] has a misaligned dims vector",
                        f, i);
    const uint32_t nView = w->view_offset() ? w->view_offset()->size() : 0;
    if (nView != (w->view_shape() ? w->view_shape()->size() : 0) ||
        (nView && nView != w->shape()->size()))
      return makeStatus(StatusCode::kDataLoss, "%s: plan.weights[%u] \"%s\" has a malformed box",
                        f, i, w->name()->c_str());
    for (uint32_t d = 0; d < nView; ++d)
      if (w->view_shape()->Get(d) == 0 ||
          w->view_offset()->Get(d) + w->view_shape()->Get(d) > w->shape()->Get(d))
        return makeStatus(StatusCode::kDataLoss, "%s: plan.weights[%u] \"%s\": box dim %u is "
                          "outside the tensor", f, i, w->name()->c_str(), d);
  }
  for (uint32_t i = 0; i < nKernels; ++i) {
    const auto *k = p.kernels()->Get(i);
    if (!k->variant() || !k->entries() || k->entries()->size() == 0 ||
        (!k->cubin() && !k->ptx()))
      return makeStatus(StatusCode::kDataLoss,
                        "%s: plan.kernels[%u] lacks a variant name, entries or code", f, i);
    if (k->threads() <= 0 || k->threads() > 1024 || k->dynamic_smem() < 0 ||
        k->static_smem() < 0)
      return makeStatus(StatusCode::kDataLoss,
                        "%s: plan.kernels[%u] \"%s\" has an impossible launch shape", f, i,
                        k->variant()->c_str());
    // Launch parameters are named integers (runtime/launch reads them); a kernel compiled for
    // a cache page size must match the plan's KV layout, or its slots would address garbage.
    if (k->params())
      for (const auto *a : *k->params()) {
        if (!a->key() || a->is_float() || a->is_string())
          return makeStatus(StatusCode::kDataLoss,
                            "%s: plan.kernels[%u] \"%s\" has a malformed launch parameter", f, i,
                            k->variant()->c_str());
        if (a->key()->str() == "page" && a->i() != p.kv()->page_size())
          return makeStatus(StatusCode::kDataLoss,
                            "%s: plan.kernels[%u] \"%s\" was compiled for cache pages of %lld "
                            "positions, but plan.kv.page_size is %d",
                            f, i, k->variant()->c_str(), static_cast<long long>(a->i()),
                            p.kv()->page_size());
      }
  }
  // Buffers: the backends take a buffer's row length from its shape's last dim and its bytes
  // from elems_per_token, so both must describe the same positive extent (-1: the cached
  // positions, only in a per-context buffer).
  for (uint32_t i = 0; i < nBuffers; ++i) {
    const auto *b = p.buffers()->Get(i);
    if (b->elems_per_token() == 0 || b->elems_per_token() > (1ull << 32))
      return makeStatus(StatusCode::kDataLoss, "%s: plan.buffers[%u] has %" PRIu64
                        " elements per token", f, i, b->elems_per_token());
    if (!b->shape() || b->shape()->size() == 0)
      return makeStatus(StatusCode::kDataLoss, "%s: plan.buffers[%u] lacks a shape", f, i);
    if (!elementsAligned(b->shape()))
      return makeStatus(StatusCode::kDataLoss, "%s: plan.buffers[%u] has a misaligned shape", f,
                        i);
    uint64_t elems = 1;
    for (int64_t d : *b->shape()) {
      if (d == 0 || d < -1 || (d == -1 && !b->per_context()) || d > (1ll << 32))
        return makeStatus(StatusCode::kDataLoss, "%s: plan.buffers[%u] has a dim of %lld", f, i,
                          static_cast<long long>(d));
      elems *= d > 0 ? static_cast<uint64_t>(d) : 1;
      if (elems > (1ull << 32))
        break;
    }
    if (!b->per_context() && elems != b->elems_per_token())
      return makeStatus(StatusCode::kDataLoss, "%s: plan.buffers[%u]'s shape does not hold its %"
                        PRIu64 " elements per token", f, i, b->elems_per_token());
  }
  if (p.ranks() < 1 || p.ranks() > 256)
    return makeStatus(StatusCode::kDataLoss, "%s: plan.ranks is %d, not 1..256", f, p.ranks());
  // Every rank has both entry points (prefill: bit 0, decode: bit 1).
  std::vector<int> entriesOf(static_cast<size_t>(p.ranks()), 0);
  for (uint32_t e = 0; e < p.entries()->size(); ++e) {
    const auto *entry = p.entries()->Get(e);
    if (!entry->name() || !entry->steps())
      return makeStatus(StatusCode::kDataLoss, "%s: plan.entries[%u] lacks a name or steps", f, e);
    if (entry->rank() < 0 || entry->rank() >= p.ranks())
      return makeStatus(StatusCode::kDataLoss, "%s: plan.entries[%u] is for rank %d of %d", f, e,
                        entry->rank(), p.ranks());
    entriesOf[static_cast<size_t>(entry->rank())] |=
        (entry->name()->str() == "prefill" ? 1 : 0) | (entry->name()->str() == "decode" ? 2 : 0);
    if (entry->output() < 0 || static_cast<uint32_t>(entry->output()) >= nBuffers)
      return makeStatus(StatusCode::kDataLoss, "%s: plan.entries[%u] output buffer %d out of "
                        "range (%u buffers)", f, e, entry->output(), nBuffers);
    if (p.buffers()->Get(static_cast<uint32_t>(entry->output()))->elems_per_token() !=
        static_cast<uint64_t>(c->vocab()))
      return makeStatus(StatusCode::kDataLoss, "%s: plan.entries[%u] output buffer %d is not a "
                        "row of %d logits", f, e, entry->output(), c->vocab());
    // Every arena buffer an entry touches lies within its bytes per token.
    auto inArena = [&](int id) {
      const auto *b = p.buffers()->Get(static_cast<uint32_t>(id));
      const uint64_t bytes = b->elems_per_token() * dtypeBytes(b->dtype());
      return b->per_context() || (b->offset_per_token() <= entry->arena_bytes_per_token() &&
                                  bytes <= entry->arena_bytes_per_token() - b->offset_per_token());
    };
    if (!inArena(entry->output()) || entry->arena_bytes_per_token() > (1ull << 40))
      return makeStatus(StatusCode::kDataLoss, "%s: plan.entries[%u]: buffer %d lies outside its "
                        "arena of %" PRIu64 " bytes per token", f, e, entry->output(),
                        entry->arena_bytes_per_token());
    const bool hostPlan = p.target()->tiles()->str() == "host";
    for (uint32_t s = 0; s < entry->steps()->size(); ++s) {
      const auto *st = entry->steps()->Get(s);
      if (!st->name() || !st->inputs() || !st->outputs())
        return makeStatus(StatusCode::kDataLoss, "%s: plan.entries[%u].steps[%u] lacks %s", f, e,
                          s, !st->name() ? "its name" : "its input or output list");
      const char *name = st->name()->c_str();
      if (static_cast<uint16_t>(st->op()) > static_cast<uint16_t>(OpKind::MAX))
        return makeStatus(StatusCode::kDataLoss, "%s: plan.entries[%u].steps[%u] \"%s\": unknown "
                          "op kind %u", f, e, s, name, static_cast<unsigned>(st->op()));
      if (st->kernel() < -1 || (st->kernel() >= 0 && static_cast<uint32_t>(st->kernel()) >= nKernels))
        return makeStatus(StatusCode::kDataLoss, "%s: plan.entries[%u].steps[%u] \"%s\": kernel %d "
                          "out of range (%u kernels)", f, e, s, name, st->kernel(), nKernels);
      // A GPU plan launches a kernel for every op but the collectives (NCCL's).
      if (!hostPlan && st->kernel() < 0 && st->op() != OpKind::AllReduce &&
          st->op() != OpKind::AllGather)
        return makeStatus(StatusCode::kDataLoss, "%s: plan.entries[%u].steps[%u] \"%s\": no "
                          "kernel in a %s plan", f, e, s, name, p.target()->tiles()->c_str());
      if (st->layer() < -1 || st->layer() >= c->layers())
        return makeStatus(StatusCode::kDataLoss, "%s: plan.entries[%u].steps[%u] \"%s\": layer %d "
                          "of %d", f, e, s, name, st->layer(), c->layers());
      auto checkIds = [&](const flatbuffers::Vector<int32_t> *ids, int lowest, uint32_t count,
                          const char *what) -> Status {
        if (!ids)
          return Status::ok();
        for (uint32_t i = 0; i < ids->size(); ++i)
          if (ids->Get(i) < lowest || (ids->Get(i) >= 0 && static_cast<uint32_t>(ids->Get(i)) >= count))
            return makeStatus(StatusCode::kDataLoss,
                              "%s: plan.entries[%u].steps[%u] \"%s\": %s %d out of range (%u)", f,
                              e, s, name, what, ids->Get(i), count);
        return Status::ok();
      };
      const std::string missing = missingOperands(*st);
      if (!missing.empty())
        return makeStatus(StatusCode::kDataLoss, "%s: plan.entries[%u].steps[%u] \"%s\" (%s): "
                          "%s", f, e, s, name, opKindName(st->op()), missing.c_str());
      GLM5_RETURN_IF_ERROR(checkIds(st->extra_kernels(), 0, nKernels, "extra kernel"));
      GLM5_RETURN_IF_ERROR(checkIds(st->inputs(), -2, nBuffers, "input buffer"));
      GLM5_RETURN_IF_ERROR(checkIds(st->outputs(), 0, nBuffers, "output buffer"));
      GLM5_RETURN_IF_ERROR(checkIds(st->weights(), 0, nWeights, "weight"));
      for (int id : *st->inputs())
        if (id >= 0 && !inArena(id))
          return makeStatus(StatusCode::kDataLoss, "%s: plan.entries[%u].steps[%u] \"%s\": "
                            "input buffer %d lies outside the arena", f, e, s, name, id);
      for (int id : *st->outputs())
        if (!inArena(id))
          return makeStatus(StatusCode::kDataLoss, "%s: plan.entries[%u].steps[%u] \"%s\": "
                            "output buffer %d lies outside the arena", f, e, s, name, id);
      // Weights named by attribute ("weight.<role>": a weight id) index the table directly.
      if (st->attrs())
        for (const auto *a : *st->attrs())
          if (a->key() && a->key()->str().rfind("weight.", 0) == 0 &&
              (a->is_float() || a->is_string() || a->i() < 0 ||
               static_cast<uint64_t>(a->i()) >= nWeights))
            return makeStatus(StatusCode::kDataLoss, "%s: plan.entries[%u].steps[%u] \"%s\": "
                              "attribute %s names no weight (%u weights)", f, e, s, name,
                              a->key()->c_str(), nWeights);
    }
  }
  for (int r = 0; r < p.ranks(); ++r)
    if (entriesOf[static_cast<size_t>(r)] != 3)
      return makeStatus(StatusCode::kDataLoss, "%s: plan lacks the %s entry point%s", f,
                        entriesOf[static_cast<size_t>(r)] & 1 ? "decode" : "prefill",
                        p.ranks() > 1 ? strFormat(" of rank %d", r).c_str() : "");
  const auto *kv = p.kv();
  if (kv->layers() != c->layers() || kv->latent() != c->kv_lora() || kv->rope() != c->rope() ||
      kv->index_dim() != c->indexer_dim() || kv->page_size() <= 0)
    return makeStatus(StatusCode::kDataLoss, "%s: plan.kv does not match the model config", f);
  return Status::ok();
}

Status checkGguf(const glm5::plan::Plan &p, const gguf::GgufFile &gguf,
                 const std::string &planPath) {
  std::string fp = gguf::headerFingerprint(gguf);
  if (!p.gguf_fingerprint() || p.gguf_fingerprint()->str() != fp)
    return makeStatus(StatusCode::kInvalidArgument,
                      "%s does not match the plan %s: the plan was compiled from %s (header "
                      "fingerprint %s), this file's fingerprint is %s; recompile the plan for it",
                      gguf.path().c_str(), planPath.c_str(),
                      p.gguf_name() ? p.gguf_name()->c_str() : "?",
                      p.gguf_fingerprint() ? p.gguf_fingerprint()->c_str() : "none", fp.c_str());
  for (uint32_t i = 0; i < p.weights()->size(); ++i) {
    const auto *w = p.weights()->Get(i);
    const gguf::TensorInfo *t = gguf.findTensor(w->name()->str());
    bool same = t && static_cast<uint32_t>(t->type) == w->ggml_type() &&
                t->nDims == w->shape()->size() && t->bytes == w->bytes();
    for (uint32_t d = 0; same && d < t->nDims; ++d)
      same = t->ne[d] == w->shape()->Get(d);
    if (!same)
      return makeStatus(StatusCode::kInvalidArgument,
                        "%s: tensor '%s' (plan.weights[%u]) is missing or differs from the plan",
                        gguf.path().c_str(), w->name()->c_str(), i);
  }
  return Status::ok();
}

} // namespace glm5rt::plan
