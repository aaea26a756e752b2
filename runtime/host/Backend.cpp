// Host execution of plan steps (see Backend.h). Each step's semantics come from its kind and
// attributes (docs/plan.md); shapes from its buffers.
#include "runtime/host/Backend.h"
#include "runtime/host/Mesh.h"
#include "runtime/kv/PagedKv.h"
#include "runtime/support/half.h"

#include <cinttypes>
#include <cmath>
#include <cstring>

namespace glm5rt::host {

namespace pl = glm5::plan;

namespace {

void roundToBf16(std::vector<float> &v) {
  for (float &x : v)
    x = bf16ToFloat(floatToBf16(x));
}

} // namespace

StatusOr<std::unique_ptr<Backend>> Backend::create(const plan::LoadedPlan &loaded,
                                                   const gguf::GgufFile &gguf,
                                                   int64_t capacity, int rank, Mesh *mesh) {
  const pl::Plan &p = loaded.plan();
  GLM5_RETURN_IF_ERROR(plan::checkGguf(p, gguf, loaded.path()));
  if (rank < 0 || rank >= p.ranks() || (p.ranks() > 1 && (!mesh || mesh->ranks() != p.ranks())))
    return makeStatus(StatusCode::kInvalidArgument, "rank %d of a %d-rank plan needs a mesh of "
                      "%d ranks", rank, p.ranks(), p.ranks());
  std::unique_ptr<Backend> b(new Backend(p));
  b->rank_ = rank;
  b->mesh_ = mesh;
  const std::vector<bool> mine = plan::weightsOfRank(p, rank);
  for (uint32_t i = 0; i < p.weights()->size(); ++i) {
    const pl::Weight *w = p.weights()->Get(i);
    if (!mine[i]) { // another rank's box: never read here
      b->weights_.emplace_back();
      continue;
    }
    const gguf::TensorInfo *t = gguf.findTensor(w->name()->str());
    Weight hw;
    hw.type = t->type;
    hw.data = t->data;
    hw.nDims = t->nDims;
    for (uint32_t d = 0; d < 4; ++d)
      hw.ne[d] = t->ne[d];
    if (w->view_offset() && w->view_offset()->size() > 0) {
      b->boxes_.emplace_back();
      GLM5_RETURN_IF_ERROR(plan::gatherBox(*w, *t, &b->boxes_.back(), hw.ne));
      hw.data = b->boxes_.back().data();
    }
    GLM5_RETURN_IF_ERROR(checkWeight(hw, w->name()->c_str()));
    b->weights_.push_back(hw);
  }
  if (capacity <= 0 || capacity > (1 << 24))
    return makeStatus(StatusCode::kInvalidArgument, "context capacity %" PRId64
                      " must be in 1..16777216", capacity);
  // The host cache is f32 in host memory and position-indexed: before allocating it, check that
  // it fits what the OS can give (and the model's context), so the error says how many tokens
  // would fit instead of the allocation failing.
  auto geometry = kv::geometryOf(*p.kv());
  if (!geometry.isOk())
    return geometry.status();
  geometry->dtypeBytes = 4;
  auto fits = kv::planCapacity(*geometry, /*seqs=*/1, capacity, p.config()->context_length(),
                               kv::availableHostBytes());
  if (!fits.isOk())
    return fits.status();
  auto cache = KVCache::create(p.kv()->layers(), capacity, p.kv()->latent(), p.kv()->rope(),
                               p.kv()->index_dim());
  if (!cache.isOk())
    return cache.status();
  b->cache_ = std::move(cache).value();
  b->f_.resize(p.buffers()->size());
  b->i_.resize(p.buffers()->size());
  b->contextWidth_.assign(p.buffers()->size(), 0);
  return b;
}

Status Backend::run(const std::string &entry, const int32_t *tokens, const int32_t *positions,
                    int64_t T, std::vector<float> *logits) {
  GLM5_ASSIGN_OR_RETURN(const pl::EntryPoint *ep, plan::findEntry(plan_, entry, rank_));
  if (T <= 0 || (ep->max_tokens() > 0 && T > ep->max_tokens()))
    return makeStatus(StatusCode::kInvalidArgument, "%s takes 1..%d tokens, not %" PRId64,
                      entry.c_str(), ep->max_tokens() > 0 ? ep->max_tokens() : INT32_MAX, T);
  for (int64_t t = 0; t < T; ++t)
    if (positions[t] < 0 || positions[t] >= cache_.capacity())
      return makeStatus(StatusCode::kResourceExhausted,
                        "position %d is beyond the context capacity of %" PRId64 " tokens",
                        positions[t], cache_.capacity());
  int index = 0;
  for (const pl::Step *s : *ep->steps()) {
    Status st = runStep(*s, T, tokens, positions);
    if (!st.isOk())
      return st.withContext(strFormat("%s step %d (%s %s)", entry.c_str(), index,
                                      plan::opKindName(s->op()), s->name()->c_str()));
    // Outputs the plan stores in bf16 are rounded as the GPU stores them (the kernels compute
    // in fp32 too): the host backend executes the plan's precision, not a better one.
    for (int out : *s->outputs())
      if (plan_.buffers()->Get(out)->dtype() == pl::DType::BF16)
        roundToBf16(f_[out]);
    if (trace_ && s->outputs() && s->outputs()->size() > 0) {
      std::vector<std::vector<float>> outs;
      for (int out : *s->outputs())
        if (plan_.buffers()->Get(out)->dtype() == pl::DType::I32)
          outs.emplace_back(i_[out].begin(), i_[out].end());
        else
          outs.push_back(f_[out]);
      trace_({&entry, s, index, &outs, T, positions});
    }
    ++index;
  }
  *logits = f_[ep->output()];
  return Status::ok();
}

Status Backend::setStepOutputs(const StepTrace &t, const std::vector<std::vector<float>> &values) {
  const pl::Step &s = *t.step;
  GLM5_RETURN_IF_ERROR(checkOutputCount(t, values.size()));
  for (size_t o = 0; o < values.size(); ++o) {
    const int out = s.outputs()->Get(static_cast<flatbuffers::uoffset_t>(o));
    const size_t have = plan_.buffers()->Get(out)->dtype() == pl::DType::I32 ? i_[out].size()
                                                                             : f_[out].size();
    if (values[o].size() != have)
      return makeStatus(StatusCode::kInvalidArgument, "step %s output %zu: %zu values, not %zu",
                        s.name()->c_str(), o, values[o].size(), have);
    if (plan_.buffers()->Get(out)->dtype() == pl::DType::I32)
      i_[out].assign(values[o].begin(), values[o].end());
    else
      f_[out] = values[o];
  }
  return Status::ok();
}

Status Backend::runStep(const pl::Step &s, int64_t T, const int32_t *tokens,
                        const int32_t *positions) {
  auto attrI = [&](const char *k) { return plan::stepInt(s, k); };
  auto attrF = [&](const char *k) { return plan::stepFloat(s, k); };
  auto weight = [&](const char *k) -> const Weight & {
    return weights_[static_cast<size_t>(attrI((std::string("weight.") + k).c_str()))];
  };
  auto in = [&](int i) -> int { return s.inputs()->Get(static_cast<flatbuffers::uoffset_t>(i)); };
  auto out = [&](int i) -> int { return s.outputs()->Get(static_cast<flatbuffers::uoffset_t>(i)); };
  auto buf = [&](int id) -> const pl::Buffer & { return *plan_.buffers()->Get(id); };
  auto elems = [&](int id) -> int64_t { return static_cast<int64_t>(buf(id).elems_per_token()); };
  auto lastDim = [&](int id) -> int64_t {
    return buf(id).shape()->Get(buf(id).shape()->size() - 1);
  };
  // Output buffers are sized for this chunk (per-context ones by the caller below).
  auto outF = [&](int i) -> float * {
    std::vector<float> &v = f_[out(i)];
    v.assign(static_cast<size_t>(T * elems(out(i))), 0.f);
    return v.data();
  };
  auto outI = [&](int i) -> int32_t * {
    std::vector<int32_t> &v = i_[out(i)];
    v.assign(static_cast<size_t>(T * elems(out(i))), -1);
    return v.data();
  };
  auto inF = [&](int i) -> const float * { return f_[in(i)].data(); };
  auto inI = [&](int i) -> const int32_t * { return i_[in(i)].data(); };
  const int64_t layer = s.layer();

  switch (s.op()) {
  case pl::OpKind::Embed:
    return embed(tokens, T, weight("table"), outF(0));
  case pl::OpKind::RmsNorm: {
    int64_t D = lastDim(out(0));
    return rmsNorm(inF(0), T * elems(out(0)) / D, D, weight("weight"), attrF("eps"), outF(0));
  }
  case pl::OpKind::LayerNorm: {
    int64_t D = lastDim(out(0));
    return layerNorm(inF(0), T * elems(out(0)) / D, D, weight("weight"), weight("bias"),
                     attrF("eps"), outF(0));
  }
  case pl::OpKind::Linear:
  case pl::OpKind::Logits:
    return linear(inF(0), T, elems(in(0)), weight("weight"), outF(0));
  case pl::OpKind::HeadLinear:
    return headLinear(inF(0), T, buf(in(0)).shape()->size() == 1, weight("weight"),
                      attrI("transpose") != 0, outF(0));
  case pl::OpKind::Slice: {
    int64_t inW = lastDim(in(0)), outW = lastDim(out(0)), off = attrI("offset");
    int64_t rows = T * elems(in(0)) / inW;
    float *y = outF(0);
    const float *x = inF(0);
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(y + r * outW, x + r * inW + off, sizeof(float) * outW);
    return Status::ok();
  }
  case pl::OpKind::Rope: {
    int64_t W = lastDim(out(0));
    float *y = outF(0);
    std::memcpy(y, inF(0), sizeof(float) * T * elems(out(0)));
    rope(y, T, elems(out(0)) / W, W, positions, attrF("theta"), attrI("dim"), attrI("offset"));
    return Status::ok();
  }
  case pl::OpKind::CacheAppend:
  case pl::OpKind::RopeCacheAppend: {
    // Inputs after positions (-2): latent, rope key, index key.
    const float *latent = inF(1);
    std::vector<float> kpe(f_[in(2)].begin(), f_[in(2)].end());
    std::vector<float> kidx(f_[in(3)].begin(), f_[in(3)].end());
    if (s.op() == pl::OpKind::RopeCacheAppend) {
      int64_t d = attrI("rope_dim");
      rope(kpe.data(), T, 1, lastDim(in(2)), positions, attrF("theta"), d, 0);
      rope(kidx.data(), T, 1, lastDim(in(3)), positions, attrF("theta"), d, 0);
      if (plan_.kv()->dtype() == pl::DType::BF16) { // the cache's storage precision
        roundToBf16(kpe);
        roundToBf16(kidx);
      }
    }
    return cache_.append(layer, positions, T, latent, kpe.data(), kidx.data());
  }
  case pl::OpKind::IndexerScore: {
    int64_t HI = lastDim(in(1)), DI = lastDim(in(0)), n = cache_.length(layer);
    std::vector<float> &v = f_[out(0)];
    v.assign(static_cast<size_t>(T * n), 0.f);
    contextWidth_[out(0)] = n;
    indexerScore(inF(0), inF(1), T, HI, DI, cache_.indexKey(layer), n, positions, attrF("scale"),
                 v.data());
    return Status::ok();
  }
  case pl::OpKind::TopK: {
    int64_t n = contextWidth_[in(0)], k = attrI("k");
    topK(inF(0), T, n, positions, k, outI(0));
    return Status::ok();
  }
  case pl::OpKind::SparseMla: {
    int64_t H = buf(in(0)).shape()->Get(0), L = lastDim(in(0)), R = lastDim(in(1));
    int64_t K = lastDim(in(2));
    sparseMla(inF(0), inF(1), T, H, L, R, cache_.latent(layer), cache_.ropeKey(layer),
              cache_.length(layer), inI(2), K, attrF("scale"), outF(0), outF(1));
    return Status::ok();
  }
  case pl::OpKind::MoEGate:
    return moeGate(inF(0), T, lastDim(in(0)), weight("bias"), attrI("top_k"),
                   attrI("normalize") != 0, attrF("scale"), outF(0), outI(1));
  case pl::OpKind::MoERouter: {
    const Weight &w = weight("weight");
    std::vector<float> logits(static_cast<size_t>(T * w.ne[1]));
    GLM5_RETURN_IF_ERROR(linear(inF(0), T, elems(in(0)), w, logits.data()));
    return moeGate(logits.data(), T, static_cast<int64_t>(w.ne[1]), weight("bias"),
                   attrI("top_k"), attrI("normalize") != 0, attrF("scale"), outF(0), outI(1));
  }
  case pl::OpKind::MoEExperts: {
    return moeExperts(inF(0), T, inF(1), inI(2), lastDim(in(1)), weight("gate"), weight("up"),
                      weight("down"), outF(0), plan::firstExpert(plan_, s),
                      plan_.config()->experts());
  }
  case pl::OpKind::AllReduce: {
    const int64_t n = T * elems(out(0));
    if (!mesh_)
      return makeStatus(StatusCode::kFailedPrecondition, "an all-reduce step outside a mesh");
    std::vector<float> partial = f_[in(0)]; // the output may share the input's buffer id
    return mesh_->allReduce(rank_, partial.data(), n, outF(0));
  }
  case pl::OpKind::AllGather: {
    if (!mesh_)
      return makeStatus(StatusCode::kFailedPrecondition, "an all-gather step outside a mesh");
    const int64_t cols = elems(in(0));
    if (elems(out(0)) != cols * mesh_->ranks())
      return makeStatus(StatusCode::kDataLoss,
                        "all-gather of %lld values per token into %lld over %d ranks",
                        static_cast<long long>(cols), static_cast<long long>(elems(out(0))),
                        mesh_->ranks());
    std::vector<float> slice(inF(0), inF(0) + T * cols);
    return mesh_->allGather(rank_, slice.data(), T, cols, outF(0));
  }
  case pl::OpKind::SwiGLU:
    return swiglu(inF(0), T, weight("gate"), weight("up"), weight("down"), outF(0));
  case pl::OpKind::GateUp:
    return gateUp(inF(0), T, weight("gate"), weight("up"), outF(0));
  case pl::OpKind::Linears: // product i: weight w<i> to output i
    for (int i = 0; i < static_cast<int>(s.outputs()->size()); ++i)
      GLM5_RETURN_IF_ERROR(linear(inF(0), T, elems(in(0)),
                                  weight(("w" + std::to_string(i)).c_str()), outF(i)));
    return Status::ok();
  case pl::OpKind::SwiGLUMul: {
    int64_t n = T * elems(out(0));
    const float *g = inF(0), *u = inF(1);
    float *y = outF(0);
    for (int64_t i = 0; i < n; ++i)
      y[i] = static_cast<float>(g[i] / (1.0 + std::exp(-static_cast<double>(g[i])))) * u[i];
    return Status::ok();
  }
  case pl::OpKind::Add: {
    int64_t n = T * elems(out(0));
    const float *a = inF(0), *b = inF(1);
    add(a, b, n, outF(0));
    return Status::ok();
  }
  }
  return makeStatus(StatusCode::kUnimplemented, "op kind %u has no host implementation",
                    static_cast<unsigned>(s.op()));
}

} // namespace glm5rt::host
