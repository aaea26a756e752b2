// The cuda backend (see Backend.h). One launcher per op kind: the argument order is each
// kernel's signature in codegen/kernels, the grid comes from runtime/launch.
#include "runtime/cuda/Backend.h"

#include "runtime/cuda/Compatibility.h"
#include "runtime/launch/Attention.h"
#include "runtime/launch/Elementwise.h"
#include "runtime/launch/HeadLinear.h"
#include "runtime/launch/Moe.h"
#include "runtime/launch/QLinear.h"
#include "runtime/support/half.h"
#include "runtime/support/progress.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <unistd.h>

namespace glm5rt::cuda {

namespace pl = glm5::plan;

namespace {

constexpr uint64_t kAlign = 256;
uint64_t alignUp(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }
using plan::dtypeBytes;

// One buffer element as float and back (the host view of traced and forced outputs).
float loadElement(const uint8_t *e, pl::DType dt) {
  if (dt == pl::DType::BF16) {
    uint16_t h;
    std::memcpy(&h, e, 2);
    return bf16ToFloat(h);
  }
  if (dt == pl::DType::I32) {
    int32_t i;
    std::memcpy(&i, e, 4);
    return static_cast<float>(i);
  }
  float x;
  std::memcpy(&x, e, 4);
  return x;
}

void storeElement(uint8_t *e, pl::DType dt, float x) {
  if (dt == pl::DType::BF16) {
    const uint16_t h = floatToBf16(x);
    std::memcpy(e, &h, 2);
  } else if (dt == pl::DType::I32) {
    const int32_t i = static_cast<int32_t>(x);
    std::memcpy(e, &i, 4);
  } else {
    std::memcpy(e, &x, 4);
  }
}

std::string mib(uint64_t bytes) { return Progress::bytesText(static_cast<double>(bytes)); }

} // namespace

Backend::~Backend() {
  if (!drv_)
    return;
  (void)drv_->synchronize(stream_);
  for (DevicePtr p : allocations_)
    (void)drv_->free(p);
}

Status Backend::alloc(DevicePtr *p, uint64_t bytes, const std::string &what) {
  *p = 0;
  if (bytes == 0)
    return Status::ok();
  Status st = drv_->malloc(p, bytes, what);
  if (!st.isOk()) {
    size_t freeB = 0, total = 0;
    (void)drv_->memInfo(&freeB, &total);
    return makeStatus(StatusCode::kResourceExhausted,
                      "out of GPU memory allocating %s: %s needed, %s free of %s on %s (%s "
                      "already held by this run); a smaller --ctx or --chunk, or a smaller "
                      "quantization of the model, would help",
                      what.c_str(), mib(bytes).c_str(), mib(freeB).c_str(), mib(total).c_str(),
                      drv_->info().name.c_str(), mib(allocated_).c_str());
  }
  allocations_.push_back(*p);
  allocated_ += bytes;
  return Status::ok();
}

StatusOr<std::unique_ptr<Backend>> Backend::create(const plan::LoadedPlan &loaded,
                                                    const gguf::GgufFile &gguf,
                                                    const BackendOptions &o) {
  const pl::Plan &p = loaded.plan();
  GLM5_RETURN_IF_ERROR(plan::checkGguf(p, gguf, loaded.path()));
  if (p.ranks() > 1 && (!o.comm || o.comm->ranks() != p.ranks()))
    return makeStatus(StatusCode::kInvalidArgument,
                      "%s has %d ranks (glm5c compile --tp): each runs in its own process on its "
                      "own GPU with an NCCL communicator (glm5-run starts them); this backend got "
                      "%s",
                      loaded.path().c_str(), p.ranks(),
                      o.comm ? strFormat("a communicator of %d ranks", o.comm->ranks()).c_str()
                             : "none");
  // A chunk's tokens are the grid's y dimension of the per-token kernels (the indexer score,
  // top-k, sparse MLA), which CUDA caps at 65535.
  if (o.chunk < 1 || o.chunk > kMaxChunk)
    return makeStatus(StatusCode::kInvalidArgument,
                      "the prefill chunk must be 1..%d tokens on the cuda backend (got %lld): "
                      "the per-token kernels' grids put a chunk's tokens on CUDA's y dimension",
                      static_cast<int>(kMaxChunk), static_cast<long long>(o.chunk));
  std::unique_ptr<Backend> b(new Backend(p));
  b->useGraphs_ = o.graphs;
  b->overlap_ = o.overlap;
  b->mlaKernel_ = o.mlaKernel;
  b->mlaSpread_ = o.mlaSpread;
  b->comm_ = p.ranks() > 1 ? o.comm : nullptr;
  b->rank_ = b->comm_ ? b->comm_->rank() : 0;
  GLM5_ASSIGN_OR_RETURN(b->drv_, Driver::get());
  GLM5_RETURN_IF_ERROR(b->loadKernels());
  GLM5_RETURN_IF_ERROR(b->drv_->streamCreate(&b->stream_));
  GLM5_RETURN_IF_ERROR(b->uploadWeights(gguf, o.progress));
  GLM5_RETURN_IF_ERROR(b->planMemory(o));
  return b;
}

Status Backend::loadKernels() {
  // Which image of each kernel (cubin or PTX) this device takes, or why none runs here.
  GLM5_ASSIGN_OR_RETURN(std::vector<KernelImage> images, chooseKernelImages(plan_, drv_->info()));
  functions_.resize(images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    const pl::Kernel *k = plan_.kernels()->Get(static_cast<flatbuffers::uoffset_t>(i));
    const std::string what = "plan kernel " + k->variant()->str() +
                             (images[i].cubin ? " (cubin)" : " (PTX, JIT-compiled)");
    Module m = nullptr;
    GLM5_RETURN_IF_ERROR(drv_->loadModule(images[i].data, &m, what));
    modules_.push_back(m);
    int64_t collect = 0, clusterKeys = 0;
    if (k->params())
      for (const pl::Attr *a : *k->params()) {
        if (a->key()->str() == "collect_smem")
          collect = a->i();
        if (a->key()->str() == "cluster_keys")
          clusterKeys = a->i();
      }
    for (const auto *e : *k->entries()) {
      Function f = nullptr;
      GLM5_RETURN_IF_ERROR(drv_->getFunction(m, e->c_str(), &f));
      // topk_seg_collect, topk_cluster and topk_grid have their own dynamic sizes; every other
      // entry the kernel's.
      const int64_t smem = e->str() == "topk_seg_collect" ? collect
                           : e->str() == "topk_cluster"   ? launch::topKClusterSmem(clusterKeys)
                           : e->str() == "topk_grid" ? launch::topKGridSmem(launch::kTopKGridKeys)
                                                     : int64_t(k->dynamic_smem());
      if (smem > 0)
        GLM5_RETURN_IF_ERROR(drv_->setMaxDynamicSmem(f, smem, what + " " + e->str()));
      functions_[i][e->str()] = f;
    }
  }
  return Status::ok();
}

Status Backend::uploadWeights(const gguf::GgufFile &gguf, bool progress) {
  const auto *ws = plan_.weights();
  // A rank uploads the weights its entry points use: its boxes (gathered on the host into
  // contiguous tensors) and the replicated tensors.
  const std::vector<bool> mine = plan::weightsOfRank(plan_, rank_);
  std::vector<std::vector<uint8_t>> boxes(ws->size());
  std::vector<uint64_t> offsets, bytes(ws->size(), 0);
  for (uint32_t i = 0; i < ws->size(); ++i) {
    const pl::Weight *w = ws->Get(i);
    if (mine[i] && w->view_offset() && w->view_offset()->size() > 0) {
      uint64_t ne[4];
      GLM5_RETURN_IF_ERROR(plan::gatherBox(*w, *gguf.findTensor(w->name()->str()), &boxes[i], ne));
      bytes[i] = boxes[i].size();
    } else if (mine[i]) {
      bytes[i] = w->bytes();
    }
    offsets.push_back(weightBytes_);
    weightBytes_ += alignUp(bytes[i]);
  }
  size_t freeB = 0, total = 0;
  GLM5_RETURN_IF_ERROR(drv_->memInfo(&freeB, &total));
  if (weightBytes_ > freeB)
    return makeStatus(StatusCode::kResourceExhausted,
                      "the weights need %s of GPU memory and %s has %s free (of %s): use a "
                      "smaller quantization of the model, a GPU with more memory, or "
                      "--device host",
                      mib(weightBytes_).c_str(), drv_->info().name.c_str(), mib(freeB).c_str(),
                      mib(total).c_str());
  GLM5_RETURN_IF_ERROR(alloc(&weights_, weightBytes_, "the weights"));
  std::unique_ptr<Progress> bar;
  if (progress && weightBytes_ >= (256ull << 20)) // small models upload in a blink
    bar = std::make_unique<Progress>("uploading weights", weightBytes_, stderr,
                                     isatty(fileno(stderr)) != 0);
  for (uint32_t i = 0; i < ws->size(); ++i) {
    const pl::Weight *w = ws->Get(i);
    const gguf::TensorInfo *t = gguf.findTensor(w->name()->str());
    // checkGguf verified presence, type, shape and extent.
    weightPtr_.push_back(weights_ + offsets[i]);
    if (bytes[i] == 0) // another rank's box
      continue;
    const void *src = boxes[i].empty() ? static_cast<const void *>(t->data) : boxes[i].data();
    GLM5_RETURN_IF_ERROR(drv_->copyToDevice(weightPtr_.back(), src, bytes[i])
                             .withContext("uploading " + w->name()->str()));
    boxes[i] = {};
    if (bar)
      bar->advance(alignUp(bytes[i]));
  }
  if (bar)
    bar->finish();
  return Status::ok();
}

DevicePtr Backend::buffer(int id) const {
  if (perContext_[static_cast<size_t>(id)])
    return perContext_[static_cast<size_t>(id)];
  return arena_ + plan_.buffers()->Get(id)->offset_per_token() * static_cast<uint64_t>(chunk_);
}

uint64_t Backend::bufferBytes(int id, int64_t T) const {
  const pl::Buffer *b = plan_.buffers()->Get(id);
  return static_cast<uint64_t>(T) * b->elems_per_token() * dtypeBytes(b->dtype());
}

Status Backend::planMemory(const BackendOptions &o) {
  const pl::Plan &p = plan_;
  chunk_ = o.chunk;
  // Per-context buffers (dims spanning the cached positions: the indexer's scores): greedy
  // slots by lifetime within each entry; entries never run at once, so they share slots.
  std::vector<int> slotOf(p.buffers()->size(), -1);
  int slots = 0;
  for (const pl::EntryPoint *e : *p.entries()) {
    if (e->rank() != rank_)
      continue;
    std::vector<std::pair<int, int>> live; // buffer -> (def, last use)
    std::map<int, std::pair<int, int>> range;
    for (uint32_t i = 0; i < e->steps()->size(); ++i) {
      const pl::Step *s = e->steps()->Get(i);
      for (int in : *s->inputs())
        if (in >= 0 && range.count(in))
          range[in].second = static_cast<int>(i);
      for (int out : *s->outputs())
        if (p.buffers()->Get(out)->per_context())
          range[out] = {static_cast<int>(i), static_cast<int>(i)};
    }
    std::vector<int> slotFreeAfter; // per slot: the last use of its current buffer
    for (auto &[id, r] : range) {
      int chosen = -1;
      for (size_t s = 0; s < slotFreeAfter.size(); ++s)
        if (slotFreeAfter[s] < r.first) {
          chosen = static_cast<int>(s);
          break;
        }
      if (chosen < 0) {
        chosen = static_cast<int>(slotFreeAfter.size());
        slotFreeAfter.push_back(0);
      }
      slotFreeAfter[static_cast<size_t>(chosen)] = r.second;
      slotOf[static_cast<size_t>(id)] = chosen;
    }
    slots = std::max(slots, static_cast<int>(slotFreeAfter.size()));
  }
  uint64_t perContextPerPos = 0; // bytes per cached position of every slot (rows: the chunk)
  uint64_t maxElems = 0;
  for (uint32_t i = 0; i < p.buffers()->size(); ++i)
    if (slotOf[i] >= 0)
      maxElems = std::max<uint64_t>(maxElems, std::max<uint64_t>(1, p.buffers()->Get(i)->elems_per_token()) *
                                                  dtypeBytes(p.buffers()->Get(i)->dtype()));
  perContextPerPos = static_cast<uint64_t>(slots) * maxElems * static_cast<uint64_t>(chunk_);

  uint64_t arenaBytes = 0;
  for (const pl::EntryPoint *e : *p.entries())
    if (e->rank() == rank_)
      arenaBytes = std::max<uint64_t>(arenaBytes, e->arena_bytes_per_token() * chunk_);

  // The KV cache gets the free memory left after the arena, in proportion to what a cached
  // position costs in the cache against the per-context buffers and the top-k candidates.
  GLM5_ASSIGN_OR_RETURN(geometry_, kv::geometryOf(*p.kv()));
  size_t freeB = 0, total = 0;
  GLM5_RETURN_IF_ERROR(drv_->memInfo(&freeB, &total));
  const uint64_t reserve = 256ull << 20; // workspaces, module images, the driver's own
  const uint64_t topkPerPos = static_cast<uint64_t>(std::min<int64_t>(chunk_, drv_->info().smCount)) * 8;
  const uint64_t kvPerPos = geometry_.bytesPerToken();
  uint64_t avail = freeB > arenaBytes + reserve ? freeB - arenaBytes - reserve : 0;
  uint64_t kvShare = static_cast<uint64_t>(static_cast<double>(avail) * kvPerPos /
                                           (kvPerPos + perContextPerPos + topkPerPos));
  GLM5_ASSIGN_OR_RETURN(kv::Capacity cap,
                        kv::planCapacity(geometry_, 1, o.contextTokens,
                                         p.config()->context_length(), kvShare));
  capacity_ = o.contextTokens > 0 ? o.contextTokens : cap.tokens;
  slots_ = cap.tokens;
  pool_ = std::make_unique<kv::PagePool>(cap.pages);
  table_ = std::make_unique<kv::BlockTable>(1, cap.pages, geometry_.pageSize);

  // Memory in the order of need: the arena, the per-context slots, the cache, then workspaces.
  GLM5_RETURN_IF_ERROR(alloc(&arena_, arenaBytes, "the activation arena"));
  perContext_.assign(p.buffers()->size(), 0);
  std::vector<DevicePtr> slotPtr(static_cast<size_t>(slots));
  for (auto &s : slotPtr)
    GLM5_RETURN_IF_ERROR(alloc(&s, maxElems * chunk_ * capacity_, "indexer scores"));
  for (uint32_t i = 0; i < p.buffers()->size(); ++i)
    if (slotOf[i] >= 0)
      perContext_[i] = slotPtr[static_cast<size_t>(slotOf[i])];
  const uint64_t dt = dtypeBytes(p.kv()->dtype());
  GLM5_RETURN_IF_ERROR(alloc(&kv_, geometry_.layers * slots_ * (geometry_.latent + geometry_.rope) * dt,
                             "the KV cache"));
  GLM5_RETURN_IF_ERROR(alloc(&index_, geometry_.layers * slots_ * geometry_.indexDim * dt,
                             "the indexer key cache"));
  GLM5_RETURN_IF_ERROR(alloc(&blockTable_, static_cast<uint64_t>(cap.pages) * 4, "the block table"));
  GLM5_RETURN_IF_ERROR(drv_->memsetD8(blockTable_, 0xff, static_cast<uint64_t>(cap.pages) * 4));

  // Workspaces: a dry run of every launch for every chunk length takes their maximum sizes.
  for (const pl::EntryPoint *e : *p.entries()) {
    if (e->rank() != rank_)
      continue;
    const int64_t maxT = e->max_tokens() > 0 ? std::min<int64_t>(e->max_tokens(), chunk_) : chunk_;
    for (int64_t T = 1; T <= maxT; ++T)
      for (const pl::Step *s : *e->steps())
        GLM5_RETURN_IF_ERROR(launchStep(*s, T, capacity_ - 1, /*dry=*/true)
                                 .withContext(e->name()->str() + " " + s->name()->str()));
  }
  const Needs &n = needs_;
  struct {
    DevicePtr *p;
    int64_t bytes;
    const char *what;
    bool zero;
  } ws[] = {
      {&tokens_, chunk_ * 4, "tokens", false},
      {&positions_, chunk_ * 4, "positions", false},
      {&seqIds_, chunk_ * 4, "sequence ids", true},
      {&embedErr_, 4, "embedding check", true},
      {&splitWs_, n.splitWs, "split-K partials", false},
      {&splitCounters_, n.splitCounters, "split-K counters", true},
      {&routerLogits_, n.routerLogits, "router logits", false},
      {&routerCounters_, n.routerCounters, "router counters", true},
      {&moeOffsets_, 4 * (p.config()->experts() + 1), "expert offsets", false},
      {&moePairOf_, n.moePairs * 4, "expert pairs", false},
      {&moeH_, n.moeH, "expert activations", false},
      {&moeOut_, n.moeOut, "expert outputs", false},
      {&topkWs_, n.topkWs, "top-k state", true},
      // topk_grid's own: the multi-CTA launches leave their candidate pairs behind, where
      // topk_grid keeps state that must be zero.
      {&topkGridWs_, n.topkGridWs, "top-k grid state", true},
      {&topkPos_, n.topkPos, "top-k positions", false},
      {&mlaOPart_, n.mlaOPart, "sparse MLA partials", false},
      {&mlaLsePart_, n.mlaLsePart, "sparse MLA partial lse", false},
      {&mlaCounters_, n.mlaCounters, "sparse MLA merge counters", true},
      {&gatherWs_, n.gather, "all-gather staging", false},
  };
  for (auto &w : ws) {
    GLM5_RETURN_IF_ERROR(alloc(w.p, static_cast<uint64_t>(w.bytes), w.what));
    if (w.zero && w.bytes > 0)
      GLM5_RETURN_IF_ERROR(drv_->memsetD8(*w.p, 0, static_cast<uint64_t>(w.bytes)));
  }
  return Status::ok();
}

StatusOr<Backend::Fn> Backend::fn(const pl::Step &s, int part, const char *name) const {
  int k = part == 0 ? s.kernel()
                    : s.extra_kernels() && static_cast<uint32_t>(part - 1) < s.extra_kernels()->size()
                          ? s.extra_kernels()->Get(static_cast<flatbuffers::uoffset_t>(part - 1))
                          : -1;
  if (k < 0 || static_cast<uint32_t>(k) >= plan_.kernels()->size())
    return makeStatus(StatusCode::kDataLoss, "step %s has no kernel %d", s.name()->c_str(), part);
  auto it = functions_[static_cast<size_t>(k)].find(name);
  if (it == functions_[static_cast<size_t>(k)].end())
    return makeStatus(StatusCode::kDataLoss, "plan kernel %s has no entry %s",
                      plan_.kernels()->Get(k)->variant()->c_str(), name);
  return Fn{it->second, plan_.kernels()->Get(k)};
}

Status Backend::launchStep(const pl::Step &s, int64_t T, int64_t last, bool dry) {
  const int sm = drv_->info().smCount;
  auto in = [&](int i) -> int { return s.inputs()->Get(static_cast<flatbuffers::uoffset_t>(i)); };
  auto out = [&](int i) -> int { return s.outputs()->Get(static_cast<flatbuffers::uoffset_t>(i)); };
  auto buf = [&](int id) -> const pl::Buffer & { return *plan_.buffers()->Get(id); };
  auto elems = [&](int id) -> int64_t { return static_cast<int64_t>(buf(id).elems_per_token()); };
  auto lastDim = [&](int id) -> int64_t { return buf(id).shape()->Get(buf(id).shape()->size() - 1); };
  // Device addresses (only meaningful when not dry).
  auto ptr = [&](int id) -> DevicePtr {
    if (id == -1)
      return tokens_;
    if (id == -2)
      return positions_;
    return dry ? 0 : buffer(id);
  };
  auto attrI = [&](const char *k) { return plan::stepInt(s, k); };
  auto attrF = [&](const char *k) { return plan::stepFloat(s, k); };
  auto weightId = [&](const char *k) -> int64_t { return attrI((std::string("weight.") + k).c_str()); };
  auto weight = [&](const char *k) -> DevicePtr {
    return dry ? 0 : weightPtr_[static_cast<size_t>(weightId(k))];
  };
  auto go = [&](const Fn &f, unsigned gx, unsigned gy, unsigned gz, unsigned threads,
                unsigned smem, std::vector<void *> args) -> Status {
    if (dry || gx == 0 || gy == 0 || gz == 0)
      return Status::ok();
    // Every plan kernel begins with glm_grid_chain (plan format 2), so it may overlap.
    if (overlap_)
      return drv_->launchOverlapped(f.f, gx, gy, gz, threads, 1, smem, stream_, args.data(),
                                    f.k->variant()->str());
    return drv_->launch(f.f, gx, gy, gz, threads, 1, 1, smem, stream_, args.data(),
                        f.k->variant()->str());
  };
  auto goClustered = [&](const Fn &f, unsigned gx, unsigned gy, unsigned clusterX, unsigned threads,
                         unsigned smem, std::vector<void *> args) -> Status {
    if (dry || gx == 0 || gy == 0)
      return Status::ok();
    if (overlap_)
      return drv_->launchOverlapped(f.f, gx, gy, 1, threads, clusterX, smem, stream_,
                                    args.data(), f.k->variant()->str());
    return drv_->launchClustered(f.f, gx, gy, 1, threads, clusterX, smem, stream_, args.data(),
                                 f.k->variant()->str());
  };
  auto grow = [&](int64_t &need, int64_t bytes) { need = std::max(need, bytes); };
  const int64_t layer = s.layer();
  const uint64_t cacheBytes = dtypeBytes(plan_.kv()->dtype());

  switch (s.op()) {
  case pl::OpKind::Embed: {
    GLM5_ASSIGN_OR_RETURN(Fn f, fn(s, 0, "qlinear_embed"));
    GLM5_ASSIGN_OR_RETURN(launch::QLinearParams lp, launch::qlinearParamsOf(*f.k));
    const pl::Weight *w = plan_.weights()->Get(static_cast<flatbuffers::uoffset_t>(weightId("table")));
    int V = static_cast<int>(w->shape()->Get(1)), H = static_cast<int>(w->shape()->Get(0));
    launch::QLinearGrid g = launch::qlinearGrid(lp, sm, T, V, H);
    DevicePtr tab = weight("table"), tok = ptr(-1), y = ptr(out(0)), err = embedErr_;
    return go(f, g.gridX, g.gridY, 1, g.threads, g.smem, {&tab, &tok, &y, &err, &V, &H});
  }
  case pl::OpKind::RmsNorm:
  case pl::OpKind::LayerNorm: {
    const bool rms = s.op() == pl::OpKind::RmsNorm;
    GLM5_ASSIGN_OR_RETURN(Fn f, fn(s, 0, rms ? "rms_norm" : "layer_norm"));
    GLM5_ASSIGN_OR_RETURN(launch::NormParams np, launch::normParamsOf(*f.k));
    const int64_t D = lastDim(out(0));
    int rows = static_cast<int>(T * elems(out(0)) / D);
    long long ld = D;
    float eps = attrF("eps");
    DevicePtr x = ptr(in(0)), w = weight("weight"), y = ptr(out(0));
    unsigned gx = static_cast<unsigned>(launch::normGrid(np, rows));
    if (rms)
      return go(f, gx, 1, 1, static_cast<unsigned>(np.threads), 0, {&x, &w, &y, &rows, &ld, &eps});
    DevicePtr bias = weight("bias");
    return go(f, gx, 1, 1, static_cast<unsigned>(np.threads), 0,
              {&x, &w, &bias, &y, &rows, &ld, &eps});
  }
  case pl::OpKind::Linear:
  case pl::OpKind::Logits: {
    const pl::Kernel *k = plan_.kernels()->Get(s.kernel());
    GLM5_ASSIGN_OR_RETURN(launch::QLinearParams lp, launch::qlinearParamsOf(*k));
    int N = static_cast<int>(elems(out(0))), K = static_cast<int>(elems(in(0)));
    launch::QLinearGrid g = launch::qlinearGrid(lp, sm, T, N, K);
    DevicePtr w = weight("weight"), x = ptr(in(0)), y = ptr(out(0));
    if (lp.kind == launch::QLinearKind::kDecode) {
      if (T != lp.tokens)
        return makeStatus(StatusCode::kInvalidArgument,
                          "the matrix-vector kernel %s was compiled for %d tokens, not %" PRId64,
                          k->variant()->c_str(), lp.tokens, T);
      grow(needs_.splitWs, g.workspaceBytes);
      grow(needs_.splitCounters, g.counters * 4);
      GLM5_ASSIGN_OR_RETURN(Fn f, fn(s, 0, "qlinear_decode"));
      DevicePtr ws = splitWs_, ctr = splitCounters_;
      int kps = g.kPerSplit;
      return go(f, g.gridX, g.gridY, 1, g.threads, g.smem, {&w, &x, &y, &ws, &ctr, &N, &K, &kps});
    }
    GLM5_ASSIGN_OR_RETURN(Fn f, fn(s, 0, "qlinear_prefill"));
    int t = static_cast<int>(T);
    return go(f, g.gridX, g.gridY, 1, g.threads, g.smem, {&w, &x, &y, &t, &N, &K});
  }
  case pl::OpKind::Linears: {
    // Two to four products of one x in one launch (product i: weight w<i>, output i).
    GLM5_ASSIGN_OR_RETURN(Fn f, fn(s, 0, "qlinear_decode_multi"));
    GLM5_ASSIGN_OR_RETURN(launch::QLinearParams lp, launch::qlinearParamsOf(*f.k));
    const int n = static_cast<int>(s.outputs()->size());
    if (lp.kind != launch::QLinearKind::kDecode || T != lp.tokens || n < 2 || n > 4)
      return makeStatus(StatusCode::kInvalidArgument,
                        "the multi-product kernel %s takes %d tokens and 2-4 products, not %" PRId64
                        " and %d", f.k->variant()->c_str(), lp.tokens, T, n);
    launch::QLinearMultiArgs a;
    std::vector<int64_t> N;
    for (int i = 0; i < n; ++i) {
      N.push_back(elems(out(i)));
      a.w[i] = weight(("w" + std::to_string(i)).c_str());
      a.y[i] = ptr(out(i));
      a.n[i] = static_cast<int32_t>(N.back());
    }
    int K = static_cast<int>(elems(in(0)));
    launch::QLinearGrid g = launch::qlinearMultiGrid(lp, sm, N, K);
    grow(needs_.splitWs, g.workspaceBytes);
    grow(needs_.splitCounters, g.counters * 4);
    DevicePtr x = ptr(in(0)), ws = splitWs_, ctr = splitCounters_;
    int kps = g.kPerSplit;
    return go(f, g.gridX, g.gridY, 1, g.threads, g.smem, {&a, &x, &ws, &ctr, &K, &kps});
  }
  case pl::OpKind::GateUp: {
    // One token: both weights streamed by one kernel, SwiGLU in its epilogue; the grid of one
    // MoE pair (row blocks, 1, K splits).
    GLM5_ASSIGN_OR_RETURN(Fn f, fn(s, 0, "qlinear_decode_gate_up"));
    GLM5_ASSIGN_OR_RETURN(launch::QLinearParams lp, launch::qlinearParamsOf(*f.k));
    if (T != 1 || lp.kind != launch::QLinearKind::kDecode || lp.tokens != 1)
      return makeStatus(StatusCode::kInvalidArgument,
                        "the gate/up kernel %s takes one token, not %" PRId64,
                        f.k->variant()->c_str(), T);
    int F = static_cast<int>(elems(out(0))), H = static_cast<int>(elems(in(0)));
    // qlinearSplits' load model, not the MoE phases' one-wave rule: for this kernel the latter
    // lost up to 10% (Q4_K, bench/RESULTS.md 2026-12-02, fifth session).
    const launch::MoeDecodeGrid g = launch::moeDecodeGrid(lp, true, sm, 1, 1, F, H);
    grow(needs_.splitWs, g.workspaceBytes);
    grow(needs_.splitCounters, g.counters * 4);
    DevicePtr wg = weight("gate"), wu = weight("up"), x = ptr(in(0)), h = ptr(out(0));
    DevicePtr ws = splitWs_, ctr = splitCounters_;
    int kps = g.kPerSplit;
    return go(f, g.gridX, g.gridY, g.gridZ, g.threads, g.smem,
              {&wg, &wu, &x, &h, &ws, &ctr, &F, &H, &kps});
  }
  case pl::OpKind::HeadLinear: {
    GLM5_ASSIGN_OR_RETURN(Fn f, fn(s, 0, "head_linear"));
    GLM5_ASSIGN_OR_RETURN(launch::HeadLinearParams hp, launch::headLinearParamsOf(*f.k));
    launch::HeadLinearGrid g = launch::headLinearGrid(hp, sm, T);
    DevicePtr w = weight("weight"), x = ptr(in(0)), y = ptr(out(0));
    int t = static_cast<int>(T), b = static_cast<int>(hp.b), H = static_cast<int>(hp.heads);
    return go(f, g.gridX, g.gridY, g.gridZ, g.threads, g.smem, {&w, &x, &y, &t, &b, &H});
  }
  case pl::OpKind::Slice: {
    GLM5_ASSIGN_OR_RETURN(Fn f, fn(s, 0, "slice_copy"));
    GLM5_ASSIGN_OR_RETURN(launch::SliceParams sp, launch::sliceParamsOf(*f.k));
    int inW = static_cast<int>(lastDim(in(0))), outW = static_cast<int>(lastDim(out(0)));
    int off = static_cast<int>(attrI("offset"));
    long long rows = T * elems(in(0)) / inW;
    launch::SliceGrid g = launch::sliceGrid(sp, sm, rows, inW, outW, off);
    DevicePtr x = ptr(in(0)), y = ptr(out(0));
    return go(f, g.gridX, 1, 1, g.threads, 0, {&x, &y, &rows, &inW, &outW, &off});
  }
  case pl::OpKind::Rope: {
    // The kernel rotates in place: copy the input to the output first.
    GLM5_ASSIGN_OR_RETURN(Fn f, fn(s, 0, "rope"));
    DevicePtr y = ptr(out(0)), pos = ptr(-2);
    float theta = attrF("theta");
    if (!dry)
      GLM5_RETURN_IF_ERROR(drv_->copyDeviceToDevice(y, ptr(in(0)), bufferBytes(out(0), T), stream_));
    return go(f, static_cast<unsigned>(launch::ropeGrid(T)), 1, 1,
              static_cast<unsigned>(f.k->threads()), 0, {&y, &pos, &theta});
  }
  case pl::OpKind::CacheAppend:
  case pl::OpKind::RopeCacheAppend: {
    const bool rot = s.op() == pl::OpKind::RopeCacheAppend;
    GLM5_ASSIGN_OR_RETURN(Fn f, fn(s, 0, rot ? "rope_cache_append" : "cache_append"));
    GLM5_ASSIGN_OR_RETURN(launch::CacheAppendParams cp, launch::cacheAppendParamsOf(*f.k));
    DevicePtr lat = ptr(in(1)), rk = ptr(in(2)), ik = ptr(in(3)), pos = ptr(-2), seq = seqIds_;
    long long ldl = lastDim(in(1)), ldr = lastDim(in(2)), ldi = lastDim(in(3));
    DevicePtr bt = blockTable_;
    int pps = static_cast<int>(table_->pagesPerSeq());
    DevicePtr kvl = kv_ + static_cast<uint64_t>(layer * slots_ * (geometry_.latent + geometry_.rope)) * cacheBytes;
    DevicePtr ixl = index_ + static_cast<uint64_t>(layer * slots_ * geometry_.indexDim) * cacheBytes;
    long long ns = slots_;
    int t = static_cast<int>(T);
    float theta = attrF("theta");
    return go(f, static_cast<unsigned>(launch::cacheAppendGrid(cp, T)), 1, 1,
              static_cast<unsigned>(cp.threads), 0,
              {&lat, &ldl, &rk, &ldr, &ik, &ldi, &pos, &seq, &bt, &pps, &kvl, &ixl, &ns, &t, &theta});
  }
  case pl::OpKind::IndexerScore: {
    GLM5_ASSIGN_OR_RETURN(Fn f, fn(s, 0, "indexer_score"));
    GLM5_ASSIGN_OR_RETURN(launch::IndexerScoreParams ip, launch::indexerScoreParamsOf(*f.k));
    // One wave of the CTAs this device holds of this code (the plan's ctas_per_sm is the tile
    // target's: SM120's shared memory holds two, an H200 SM four of the same tile).
    GLM5_ASSIGN_OR_RETURN(ip.ctasPerSm, ctasPerSm(f.f, ip.threads, ip.dynamicSmem));
    const int64_t cols = last + 1;
    launch::IndexerScoreGrid g = launch::indexerScoreGrid(ip, sm, T, cols);
    DevicePtr q = ptr(in(0)), w = ptr(in(1)), pos = ptr(-2), sc = ptr(out(0)), bt = blockTable_;
    DevicePtr keys = index_ + static_cast<uint64_t>(layer * slots_ * geometry_.indexDim) * cacheBytes;
    int bts = static_cast<int>(table_->pagesPerSeq()), rps = static_cast<int>(T);
    int ld = static_cast<int>(capacity_), nCols = static_cast<int>(cols);
    int ns = static_cast<int>(slots_), chunk = g.chunk;
    float scale = attrF("scale");
    return go(f, g.gridX, g.gridY, 1, g.threads, g.smem,
              {&q, &w, &keys, &bt, &bts, &rps, &pos, &sc, &ld, &nCols, &ns, &chunk, &scale});
  }
  case pl::OpKind::TopK: {
    GLM5_ASSIGN_OR_RETURN(launch::TopKParams tp,
                          launch::topKParamsOf(*plan_.kernels()->Get(s.kernel())));
    int k = static_cast<int>(attrI("k"));
    const int64_t cols = last + 1;
    GLM5_ASSIGN_OR_RETURN(Fn cl, fn(s, 0, "topk_cluster"));
    GLM5_ASSIGN_OR_RETURN(const int maxCluster, topkCluster(cl.f, tp));
    GLM5_ASSIGN_OR_RETURN(const int resident, topkResident(cl.f, tp, maxCluster, cols));
    // topk_grid's barriers need every CTA resident: the CTAs the device holds at its largest
    // shared memory.
    GLM5_ASSIGN_OR_RETURN(Fn gr, fn(s, 0, "topk_grid"));
    GLM5_ASSIGN_OR_RETURN(const int gridPerSm,
                          ctasPerSm(gr.f, tp.threads, launch::topKGridSmem(launch::kTopKGridKeys)));
    launch::TopKGrid g =
        launch::topKGrid(tp, sm, T, cols, k, maxCluster, resident, gridPerSm * sm);
    grow(g.grid > 0 ? needs_.topkGridWs : needs_.topkWs, g.workspaceBytes);
    grow(needs_.topkPos, T * k * 4);
    DevicePtr sc = ptr(in(0)), pos = ptr(-2), idx = topkPos_, slots = ptr(out(0)), bt = blockTable_;
    DevicePtr ws = g.grid > 0 ? topkGridWs_ : topkWs_;
    int ld = static_cast<int>(capacity_), nCols = static_cast<int>(cols);
    int bts = static_cast<int>(table_->pagesPerSeq()), rps = static_cast<int>(T);
    const unsigned threads = static_cast<unsigned>(tp.threads);
    // The kernels write positions (`indices`, kept for --check) and physical slots (the step's
    // output, what sparse MLA gathers by).
    if (g.grid > 0)
      return go(gr, static_cast<unsigned>(g.grid), static_cast<unsigned>(T), 1, threads,
                static_cast<unsigned>(g.gridSmem),
                {&sc, &ld, &nCols, &pos, &k, &idx, &slots, &bt, &bts, &rps, &ws});
    if (g.cluster > 0)
      return goClustered(cl, static_cast<unsigned>(g.cluster), static_cast<unsigned>(T),
                         static_cast<unsigned>(g.cluster), threads,
                         static_cast<unsigned>(g.clusterSmem),
                         {&sc, &ld, &nCols, &pos, &k, &idx, &slots, &bt, &bts, &rps});
    if (!g.multi()) {
      GLM5_ASSIGN_OR_RETURN(Fn f, fn(s, 0, "topk_row"));
      return go(f, static_cast<unsigned>(T), 1, 1, threads, static_cast<unsigned>(tp.rowSmem),
                {&sc, &ld, &nCols, &pos, &k, &idx, &slots, &bt, &bts, &rps});
    }
    GLM5_ASSIGN_OR_RETURN(Fn h, fn(s, 0, "topk_seg_hist0"));
    GLM5_ASSIGN_OR_RETURN(Fn c, fn(s, 0, "topk_seg_collect"));
    int seg = g.segmentLen;
    GLM5_RETURN_IF_ERROR(go(h, static_cast<unsigned>(g.segments), static_cast<unsigned>(T), 1,
                            threads, 0, {&sc, &ld, &nCols, &pos, &k, &ws, &seg}));
    return go(c, static_cast<unsigned>(g.segments), static_cast<unsigned>(T), 1, threads,
              static_cast<unsigned>(tp.collectSmem),
              {&sc, &ld, &nCols, &pos, &k, &ws, &seg, &idx, &slots, &bt, &bts, &rps});
  }
  case pl::OpKind::SparseMla: {
    GLM5_ASSIGN_OR_RETURN(launch::SparseMlaParams mp,
                          launch::sparseMlaParamsOf(*plan_.kernels()->Get(s.kernel())));
    const int64_t H = buf(in(0)).shape()->Get(0);
    // The split count wants the CTAs per SM of this device and this code, and the cluster size
    // one the device can place (halved until it can: a GPU partition with few SMs per GPC may
    // not hold 8 of these CTAs at once). Asked once per kernel.
    auto occupancy = [&](const Fn &d, launch::SparseMlaParams &p) -> Status {
      auto it = mlaOccupancy_.find(d.f);
      if (it == mlaOccupancy_.end()) {
        const size_t smem = static_cast<size_t>(p.dynamicSmem);
        int ctas = 1, cluster = launch::kSparseMlaMaxCluster;
        GLM5_RETURN_IF_ERROR(drv_->occupancy(d.f, p.threads, smem, &ctas));
        for (; cluster > 1; cluster /= 2) {
          int n = 0;
          // A failed query counts as "cannot place": unclustered launches are always valid.
          if (drv_->clusterOccupancy(d.f, static_cast<unsigned>(cluster), p.threads, smem,
                                     static_cast<unsigned>(cluster), &n)
                  .isOk() &&
              n > 0)
            break;
        }
        it = mlaOccupancy_.emplace(d.f, std::make_pair(std::max(ctas, 1), cluster)).first;
      }
      p.ctasPerSm = it->second.first;
      p.maxCluster = it->second.second;
      return Status::ok();
    };
    // bf16: every kernel of the op (the step's and its extra ones: the 32-heads-per-CTA one, the
    // two-CTAs-per-SM form), each with its occupancy here; launch::sparseMlaPick chooses.
    int part = 0;
    if (!mp.f32) {
      const int parts = 1 + (s.extra_kernels() ? static_cast<int>(s.extra_kernels()->size()) : 0);
      std::vector<launch::SparseMlaParams> ps(static_cast<size_t>(parts));
      std::vector<launch::SparseMlaCandidate> cands(static_cast<size_t>(parts));
      for (int i = 0; i < parts; ++i) {
        GLM5_ASSIGN_OR_RETURN(Fn f, fn(s, i, "sparse_mla_decode"));
        GLM5_ASSIGN_OR_RETURN(ps[i], launch::sparseMlaParamsOf(*f.k));
        GLM5_RETURN_IF_ERROR(occupancy(f, ps[i]));
        cands[i] = {ps[i].headsPerCta, ps[i].ctasPerSm};
      }
      part = launch::sparseMlaPick(cands, sm, T, H, mlaKernel_);
      mp = ps[static_cast<size_t>(part)];
      mp.spreadMerge = mlaSpread_;
    }
    launch::SparseMlaGrid g = launch::sparseMlaGrid(mp, sm, T, H);
    DevicePtr ql = ptr(in(0)), qr = ptr(in(1)), idx = ptr(in(2)), o = ptr(out(0)), lse = ptr(out(1));
    DevicePtr kvl = kv_ + static_cast<uint64_t>(layer * slots_ * (geometry_.latent + geometry_.rope)) * cacheBytes;
    int heads = static_cast<int>(H), ns = static_cast<int>(slots_);
    float scale = attrF("scale");
    if (mp.f32) {
      GLM5_ASSIGN_OR_RETURN(Fn f, fn(s, 0, "sparse_mla_f32"));
      return go(f, g.gridX, g.gridY, 1, g.threads, g.smem,
                {&ql, &qr, &kvl, &idx, &o, &lse, &heads, &ns, &scale});
    }
    grow(needs_.mlaOPart, g.oPartBytes);
    grow(needs_.mlaLsePart, g.lsePartBytes);
    grow(needs_.mlaCounters, g.countersBytes);
    GLM5_ASSIGN_OR_RETURN(Fn d, fn(s, part, "sparse_mla_decode"));
    DevicePtr op = mlaOPart_, lp = mlaLsePart_, ctr = mlaCounters_;
    int splits = g.splits, per = g.tokensPerSplit, spread = g.spread ? 1 : 0;
    float scaleLog2 = scale * 1.4426950408889634f;
    return goClustered(d, g.gridX, g.gridY, g.cluster, g.threads, g.smem,
                       {&ql, &qr, &kvl, &idx, &op, &lp, &o, &lse, &ctr, &heads, &ns, &splits, &per,
                        &scaleLog2, &spread});
  }
  case pl::OpKind::MoERouter: {
    GLM5_ASSIGN_OR_RETURN(Fn f, fn(s, 0, "moe_router"));
    GLM5_ASSIGN_OR_RETURN(launch::MoeRouterParams rp, launch::moeRouterParamsOf(*f.k));
    launch::MoeRouterGrid g = launch::moeRouterGrid(rp, sm, T);
    grow(needs_.routerLogits, g.logitsBytes);
    grow(needs_.routerCounters, g.counters * 4);
    DevicePtr x = ptr(in(0)), w = weight("weight"), bias = weight("bias"), lg = routerLogits_;
    DevicePtr ctr = routerCounters_, wts = ptr(out(0)), ids = ptr(out(1));
    float scale = attrF("scale");
    return go(f, g.gridX, g.gridY, 1, g.threads, g.smem, {&x, &w, &bias, &lg, &ctr, &wts, &ids, &scale});
  }
  case pl::OpKind::MoEExperts: {
    // moe_group -> moe_expert_gate_up -> moe_expert_down -> moe_combine; for a few tokens
    // moe_expert_decode_gate_up -> moe_expert_decode_down -> moe_combine.
    GLM5_ASSIGN_OR_RETURN(Fn group, fn(s, 0, "moe_group"));
    GLM5_ASSIGN_OR_RETURN(Fn combine, fn(s, 0, "moe_combine"));
    GLM5_ASSIGN_OR_RETURN(Fn gu, fn(s, 1, "moe_expert_gate_up"));
    GLM5_ASSIGN_OR_RETURN(Fn dn, fn(s, 2, "moe_expert_down"));
    GLM5_ASSIGN_OR_RETURN(launch::MoeFfnParams gp, launch::moeFfnParamsOf(*gu.k));
    GLM5_ASSIGN_OR_RETURN(launch::MoeFfnParams dp, launch::moeFfnParamsOf(*dn.k));
    launch::MoeFfnGrid gg = launch::moeFfnGrid(gp, T), dg = launch::moeFfnGrid(dp, T);
    grow(needs_.moePairs, gg.pairs);
    grow(needs_.moeH, gg.hBytes);
    grow(needs_.moeOut, gg.pairs * dp.hidden * 4);
    DevicePtr x = ptr(in(0)), wts = ptr(in(1)), ids = ptr(in(2)), y = ptr(out(0));
    DevicePtr off = moeOffsets_, pairOf = moePairOf_, h = moeH_, eo = moeOut_;
    DevicePtr wg = weight("gate"), wu = weight("up"), wd = weight("down");
    int pairs = static_cast<int>(gg.pairs), t = static_cast<int>(T);
    // A rank's range of the experts (kernel param shard): it starts at the gate box's dim 2.
    bool shard = false;
    if (group.k->params())
      for (const pl::Attr *a : *group.k->params())
        shard |= a->key()->str() == "shard" && a->i() != 0;
    int first = shard ? static_cast<int>(plan::firstExpert(plan_, s)) : 0;
    std::vector<void *> groupArgs = {&ids, &pairs, &off, &pairOf}, combineArgs = {&eo, &wts, &y, &t};
    if (shard) {
      groupArgs.push_back(&first);
      combineArgs.push_back(&ids);
      combineArgs.push_back(&first);
    }
    if (T <= launch::kMoeDecodeMaxTokens && s.extra_kernels() && s.extra_kernels()->size() >= 4) {
      // A few tokens: one matrix-vector product per (token, expert) pair, no grouping.
      GLM5_ASSIGN_OR_RETURN(Fn mgu, fn(s, 3, "moe_expert_decode_gate_up"));
      GLM5_ASSIGN_OR_RETURN(Fn mdn, fn(s, 4, "moe_expert_decode_down"));
      GLM5_ASSIGN_OR_RETURN(launch::QLinearParams qg, launch::qlinearParamsOf(*mgu.k));
      GLM5_ASSIGN_OR_RETURN(launch::QLinearParams qd, launch::qlinearParamsOf(*mdn.k));
      int E = static_cast<int>(gp.experts), k = static_cast<int>(gp.topk);
      int F = static_cast<int>(gp.ffn), H = static_cast<int>(gp.hidden);
      // The pairs expected on this rank's E experts (of the model's), which size the K splits.
      const int64_t all = std::max<int64_t>(plan_.config()->experts(), E);
      const int64_t active = std::max<int64_t>(1, (pairs * int64_t(E) + all - 1) / all);
      // Each phase's K splits fill one wave of the CTAs this device holds of its kernel.
      GLM5_ASSIGN_OR_RETURN(int occA, ctasPerSm(mgu.f, qg.threads, qg.dynamicSmem));
      GLM5_ASSIGN_OR_RETURN(int occB, ctasPerSm(mdn.f, qd.threads, qd.dynamicSmem));
      const launch::MoeDecodeGrid a =
          launch::moeDecodeGrid(qg, true, sm, pairs, active, F, H, occA);
      const launch::MoeDecodeGrid b =
          launch::moeDecodeGrid(qd, false, sm, pairs, active, H, F, occB);
      grow(needs_.splitWs, std::max(a.workspaceBytes, b.workspaceBytes));
      grow(needs_.splitCounters, std::max(a.counters, b.counters) * 4);
      DevicePtr ws = splitWs_, ctr = splitCounters_;
      int kpsA = a.kPerSplit, kpsB = b.kPerSplit;
      GLM5_RETURN_IF_ERROR(go(mgu, a.gridX, a.gridY, a.gridZ, a.threads, a.smem,
                              {&wg, &wu, &x, &ids, &h, &ws, &ctr, &first, &E, &k, &F, &H, &kpsA}));
      GLM5_RETURN_IF_ERROR(go(mdn, b.gridX, b.gridY, b.gridZ, b.threads, b.smem,
                              {&wd, &h, &ids, &eo, &ws, &ctr, &first, &E, &F, &H, &kpsB}));
    } else {
      GLM5_RETURN_IF_ERROR(
          go(group, 1, 1, 1, static_cast<unsigned>(group.k->threads()), 0, groupArgs));
      GLM5_RETURN_IF_ERROR(go(gu, gg.gridX, gg.gridY, 1, gg.threads, gg.smem,
                              {&x, &wg, &wu, &off, &pairOf, &h}));
      GLM5_RETURN_IF_ERROR(go(dn, dg.gridX, dg.gridY, 1, dg.threads, dg.smem,
                              {&h, &wd, &off, &pairOf, &eo}));
    }
    return go(combine, static_cast<unsigned>(T), 1, 1, static_cast<unsigned>(combine.k->threads()),
              0, combineArgs);
  }
  case pl::OpKind::AllReduce: {
    // The ranks' partial sums (attention output, FFN / MoE) added by NCCL on this stream.
    if (!comm_)
      return makeStatus(StatusCode::kFailedPrecondition,
                        "an all-reduce step without a communicator (a one-rank backend)");
    if (dry)
      return Status::ok();
    return comm_->allReduce(ptr(in(0)), ptr(out(0)), static_cast<uint64_t>(T * elems(out(0))),
                            buf(out(0)).dtype() == pl::DType::BF16, stream_);
  }
  case pl::OpKind::AllGather: {
    // out [T, ranks C] = the ranks' [T, C] slices side by side. NCCL concatenates whole buffers
    // ([ranks][T C]): one token is already that layout; several are staged and each rank's
    // [T, C] block is copied to its columns with one 2D copy.
    if (!comm_)
      return makeStatus(StatusCode::kFailedPrecondition,
                        "an all-gather step without a communicator (a one-rank backend)");
    const int64_t C = elems(in(0)), R = comm_->ranks();
    if (elems(out(0)) != C * R)
      return makeStatus(StatusCode::kDataLoss,
                        "all-gather of %lld values per token into %lld over %lld ranks",
                        static_cast<long long>(C), static_cast<long long>(elems(out(0))),
                        static_cast<long long>(R));
    const bool bf16 = buf(out(0)).dtype() == pl::DType::BF16;
    const size_t esz = bf16 ? 2 : 4;
    if (T > 1)
      grow(needs_.gather, T * C * R * static_cast<int64_t>(esz));
    if (dry)
      return Status::ok();
    if (T == 1)
      return comm_->allGather(ptr(in(0)), ptr(out(0)), static_cast<uint64_t>(C), bf16, stream_);
    GLM5_RETURN_IF_ERROR(
        comm_->allGather(ptr(in(0)), gatherWs_, static_cast<uint64_t>(T * C), bf16, stream_));
    for (int64_t r = 0; r < R; ++r)
      GLM5_RETURN_IF_ERROR(drv_->copy2DDeviceToDevice(
          ptr(out(0)) + static_cast<DevicePtr>(r * C * esz), static_cast<size_t>(R * C) * esz,
          gatherWs_ + static_cast<DevicePtr>(r * T * C * esz), static_cast<size_t>(C) * esz,
          static_cast<size_t>(C) * esz, static_cast<size_t>(T), stream_));
    return Status::ok();
  }
  case pl::OpKind::SwiGLUMul:
  case pl::OpKind::Add: {
    GLM5_ASSIGN_OR_RETURN(Fn f, fn(s, 0, s.op() == pl::OpKind::Add ? "add" : "swiglu_mul"));
    long long n = T * elems(out(0));
    DevicePtr a = ptr(in(0)), b = ptr(in(1)), y = ptr(out(0));
    unsigned gx = static_cast<unsigned>(launch::pointwiseGrid(f.k->threads(), sm, n));
    return go(f, gx, 1, 1, static_cast<unsigned>(f.k->threads()), 0, {&a, &b, &y, &n});
  }
  case pl::OpKind::MoEGate:
  case pl::OpKind::SwiGLU:
    break;
  }
  return makeStatus(StatusCode::kUnimplemented,
                    "op kind %s has no GPU kernel (the compiler's glm-pipeline fuses or lowers "
                    "it; recompile the plan)",
                    plan::opKindName(s.op()));
}

// The host-side view of output `o` of step `s` (see StepTrace): where it lives, its dtype, its
// row count, values per row and row stride.
struct Backend::OutputView {
  DevicePtr ptr;
  pl::DType dtype;
  int64_t rows, cols, ld;
};

Backend::OutputView Backend::outputView(const pl::Step &s, int o, int64_t T, int64_t last) const {
  const int id = s.outputs()->Get(static_cast<flatbuffers::uoffset_t>(o));
  const pl::Buffer *b = plan_.buffers()->Get(id);
  if (s.op() == pl::OpKind::TopK) {
    const int64_t k = plan::stepAttr(s, "k") ? plan::stepAttr(s, "k")->i() : 0;
    return {topkPos_, pl::DType::I32, T, k, k};
  }
  if (b->per_context())
    return {buffer(id), b->dtype(), T, last + 1, capacity_};
  const int64_t n = static_cast<int64_t>(b->elems_per_token());
  return {buffer(id), b->dtype(), T, n, n};
}

Status Backend::traceStep(const std::string &entry, const pl::Step &s, int index, int64_t T,
                          int64_t last, const int32_t *positions) {
  if (!s.outputs() || s.outputs()->size() == 0)
    return Status::ok();
  GLM5_RETURN_IF_ERROR(drv_->synchronize(stream_));
  std::vector<std::vector<float>> outs;
  for (int o = 0; o < static_cast<int>(s.outputs()->size()); ++o) {
    const OutputView w = outputView(s, o, T, last);
    const uint64_t eb = dtypeBytes(w.dtype);
    std::vector<uint8_t> raw(static_cast<size_t>(w.rows * w.ld) * eb);
    GLM5_RETURN_IF_ERROR(drv_->copyToHost(raw.data(), w.ptr, raw.size()));
    std::vector<float> v(static_cast<size_t>(w.rows * w.cols));
    for (int64_t r = 0; r < w.rows; ++r)
      for (int64_t c = 0; c < w.cols; ++c)
        v[static_cast<size_t>(r * w.cols + c)] =
            loadElement(raw.data() + static_cast<size_t>(r * w.ld + c) * eb, w.dtype);
    outs.push_back(std::move(v));
  }
  traceLast_ = last;
  trace_({&entry, &s, index, &outs, T, positions});
  return Status::ok();
}

Status Backend::setStepOutputs(const StepTrace &t, const std::vector<std::vector<float>> &values) {
  const pl::Step &s = *t.step;
  GLM5_RETURN_IF_ERROR(checkOutputCount(t, values.size()));
  for (int o = 0; o < static_cast<int>(values.size()); ++o) {
    const OutputView w = outputView(s, o, t.T, traceLast_);
    const std::vector<float> &v = values[static_cast<size_t>(o)];
    if (static_cast<int64_t>(v.size()) != w.rows * w.cols)
      return makeStatus(StatusCode::kInvalidArgument, "step %s output %d: %zu values, not %" PRId64,
                        s.name()->c_str(), o, v.size(), w.rows * w.cols);
    const uint64_t eb = dtypeBytes(w.dtype);
    std::vector<uint8_t> raw(static_cast<size_t>(w.rows * w.ld) * eb);
    GLM5_RETURN_IF_ERROR(drv_->copyToHost(raw.data(), w.ptr, raw.size()));
    for (int64_t r = 0; r < w.rows; ++r)
      for (int64_t c = 0; c < w.cols; ++c)
        storeElement(raw.data() + static_cast<size_t>(r * w.ld + c) * eb, w.dtype,
                     v[static_cast<size_t>(r * w.cols + c)]);
    GLM5_RETURN_IF_ERROR(drv_->copyToDevice(w.ptr, raw.data(), raw.size()));
    if (s.op() == pl::OpKind::TopK) {
      // The step's own output holds the physical slots of the positions.
      std::vector<int32_t> slots(v.size());
      for (size_t i = 0; i < v.size(); ++i)
        slots[i] = v[i] < 0 ? -1 : static_cast<int32_t>(table_->slot(0, static_cast<int64_t>(v[i])));
      GLM5_RETURN_IF_ERROR(drv_->copyToDevice(buffer(s.outputs()->Get(0)), slots.data(),
                                              slots.size() * 4));
    }
  }
  return Status::ok();
}

Status Backend::run(const std::string &entry, const int32_t *tokens, const int32_t *positions,
                    int64_t T, std::vector<float> *logits) {
  GLM5_ASSIGN_OR_RETURN(const pl::EntryPoint *ep, plan::findEntry(plan_, entry, rank_));
  const int64_t maxT = ep->max_tokens() > 0 ? std::min<int64_t>(ep->max_tokens(), chunk_) : chunk_;
  if (T <= 0 || T > maxT)
    return makeStatus(StatusCode::kInvalidArgument, "%s takes 1..%" PRId64 " tokens, not %" PRId64,
                      entry.c_str(), maxT, T);
  // Consecutive positions: indexer_score copies the keys below positions[0] before its grid
  // chain's wait (codegen/kernels/indexer.cuh), which needs every key this call appends at or
  // past it.
  for (int64_t t = 0; t < T; ++t) {
    if (positions[t] != positions[0] + t)
      return makeStatus(StatusCode::kInvalidArgument,
                        "the positions of one call must be consecutive (index %" PRId64 ": %d)",
                        t, positions[t]);
    if (tokens[t] < 0 || tokens[t] >= vocab())
      return makeStatus(StatusCode::kInvalidArgument,
                        "token %d at index %" PRId64 " is outside the vocabulary of %" PRId64,
                        tokens[t], t, vocab());
  }
  const int64_t last = positions[T - 1];
  if (positions[0] < 0 || last >= capacity_)
    return makeStatus(StatusCode::kResourceExhausted,
                      "position %" PRId64 " is beyond the context capacity of %" PRId64
                      " tokens (raise --ctx)",
                      last, capacity_);
  GLM5_RETURN_IF_ERROR(table_->reserve(*pool_, 0, last + 1));
  if (table_->mappedTokens(0) != tableUploaded_) {
    GLM5_RETURN_IF_ERROR(drv_->copyToDevice(blockTable_, table_->data(),
                                            static_cast<size_t>(table_->pagesPerSeq()) * 4));
    tableUploaded_ = table_->mappedTokens(0);
  }
  GLM5_RETURN_IF_ERROR(drv_->copyToDevice(tokens_, tokens, static_cast<size_t>(T) * 4));
  GLM5_RETURN_IF_ERROR(drv_->copyToDevice(positions_, positions, static_cast<size_t>(T) * 4));
  GLM5_RETURN_IF_ERROR(drv_->memsetD8(embedErr_, 0, 4));
  // One-token steps replay a CUDA graph of the whole step list, captured at the first call of
  // each column bound (graphColumns): the indexer and top-k take the bound as their column
  // count, which is exact for any bound past the last position (both kernels bound each row by
  // its position). Traced runs launch step by step.
  const bool graph = useGraphs_ && !trace_ && !profile_ && ep->max_tokens() == 1;
  if (graph && decodeGraphFailed_.isOk()) {
    GLM5_ASSIGN_OR_RETURN(const int64_t cols, graphColumns(*ep, last));
    auto it = decodeGraphs_.find(cols);
    if (it == decodeGraphs_.end()) {
      decodeGraphFailed_ = captureGraph(*ep, cols);
      it = decodeGraphs_.find(cols);
    }
    if (it != decodeGraphs_.end()) {
      const bool timed = graphEvents_[0] != nullptr;
      if (timed)
        GLM5_RETURN_IF_ERROR(drv_->eventRecord(graphEvents_[0], stream_));
      GLM5_RETURN_IF_ERROR(drv_->graphLaunch(it->second, stream_).withContext(entry));
      if (timed)
        GLM5_RETURN_IF_ERROR(drv_->eventRecord(graphEvents_[1], stream_));
      GLM5_RETURN_IF_ERROR(finishRun(*ep, T, logits)); // synchronizes
      if (timed) {
        float ms = 0;
        GLM5_RETURN_IF_ERROR(drv_->eventElapsedMs(&ms, graphEvents_[0], graphEvents_[1]));
        graphMs_.push_back(ms);
      }
      return Status::ok();
    }
  }
  int index = 0;
  if (profile_)
    while (profEvents_.size() <= ep->steps()->size()) {
      profEvents_.push_back(nullptr);
      GLM5_RETURN_IF_ERROR(drv_->eventCreate(&profEvents_.back()));
    }
  for (const pl::Step *s : *ep->steps()) {
    if (profile_)
      GLM5_RETURN_IF_ERROR(drv_->eventRecord(profEvents_[static_cast<size_t>(index)], stream_));
    Status st = launchStep(*s, T, last, /*dry=*/false);
    if (st.isOk() && trace_)
      st = traceStep(entry, *s, index, T, last, positions);
    if (!st.isOk())
      return st.withContext(strFormat("%s step %d (%s %s)", entry.c_str(), index,
                                      plan::opKindName(s->op()), s->name()->c_str()));
    ++index;
  }
  if (!profile_)
    return finishRun(*ep, T, logits);
  GLM5_RETURN_IF_ERROR(drv_->eventRecord(profEvents_[static_cast<size_t>(index)], stream_));
  GLM5_RETURN_IF_ERROR(finishRun(*ep, T, logits));
  return profileAccumulate(*ep);
}

Status Backend::enableProfile() {
  profile_ = true;
  return Status::ok();
}

Status Backend::enableGraphTime() {
  if (!useGraphs_)
    return makeStatus(StatusCode::kInvalidArgument, "graph timing needs graphs (not --no-graph)");
  for (Event &e : graphEvents_)
    if (e == nullptr)
      GLM5_RETURN_IF_ERROR(drv_->eventCreate(&e));
  return Status::ok();
}

std::string Backend::graphTimeReport() const {
  if (graphMs_.empty())
    return "decode graph: no replays timed\n";
  std::vector<float> v = graphMs_;
  std::sort(v.begin(), v.end());
  return strFormat("decode graph: %zu replays, device time per step: median %.1f us, lowest "
                   "%.1f, highest %.1f\n",
                   v.size(), 1000.0 * v[v.size() / 2], 1000.0 * v.front(), 1000.0 * v.back());
}

Status Backend::profileAccumulate(const pl::EntryPoint &ep) {
  const std::string entry = ep.name()->str();
  ++profileCalls_[entry];
  size_t i = 0;
  for (const pl::Step *s : *ep.steps()) {
    float ms = 0;
    GLM5_RETURN_IF_ERROR(drv_->eventElapsedMs(&ms, profEvents_[i], profEvents_[i + 1]));
    ++i;
    std::string what = plan::opKindName(s->op());
    if (s->kernel() >= 0)
      what += " " + plan_.kernels()->Get(static_cast<uint32_t>(s->kernel()))->variant()->str();
    ProfileRow &row = profileRows_[{entry, what}];
    ++row.calls;
    row.ms += ms;
  }
  return Status::ok();
}

std::string Backend::profileReport() const {
  std::string out;
  for (const auto &[entry, calls] : profileCalls_) {
    std::vector<std::pair<std::string, ProfileRow>> rows;
    double total = 0;
    for (const auto &[key, row] : profileRows_)
      if (key.first == entry) {
        rows.push_back({key.second, row});
        total += row.ms;
      }
    std::sort(rows.begin(), rows.end(),
              [](const auto &a, const auto &b) { return a.second.ms > b.second.ms; });
    out += strFormat("%s: %" PRId64 " calls, %.3f ms of device time per call (steps launched "
                     "one by one, no graph)\n",
                     entry.c_str(), calls, total / static_cast<double>(calls));
    out += strFormat("  %8s %6s %10s  %s\n", "ms/call", "%", "us/launch",
                     "op kernel (launches per call)");
    for (const auto &[what, row] : rows)
      out += strFormat("  %8.3f %5.1f%% %10.1f  %s (%" PRId64 ")\n",
                       row.ms / static_cast<double>(calls), 100.0 * row.ms / total,
                       1000.0 * row.ms / static_cast<double>(row.calls), what.c_str(),
                       row.calls / calls);
  }
  return out;
}

StatusOr<int> Backend::ctasPerSm(Function f, int threads, int64_t smem) {
  auto it = occupancy_.find(f);
  if (it == occupancy_.end()) {
    int ctas = 0;
    GLM5_RETURN_IF_ERROR(drv_->occupancy(f, threads, static_cast<size_t>(smem), &ctas));
    it = occupancy_.emplace(f, std::max(ctas, 1)).first;
  }
  return it->second;
}

StatusOr<int> Backend::topkCluster(Function f, const launch::TopKParams &p) {
  auto it = topkClusters_.find(f);
  if (it != topkClusters_.end())
    return it->second;
  // The largest cluster (halved from 8) of which the device can place one at topk_cluster's
  // largest shared memory; a failed query counts as "cannot place", 1 turns the entry off.
  int cluster = p.clusterKeys > 0 ? launch::kTopKMaxCluster : 1;
  const size_t smem = static_cast<size_t>(launch::topKClusterSmem(p.clusterKeys));
  for (; cluster > 1; cluster /= 2) {
    int n = 0;
    const unsigned c = static_cast<unsigned>(cluster);
    if (drv_->clusterOccupancy(f, c, p.threads, smem, c, &n).isOk() && n > 0)
      break;
  }
  topkClusters_.emplace(f, cluster);
  return cluster;
}

StatusOr<int> Backend::topkResident(Function f, const launch::TopKParams &p, int cluster,
                                     int64_t cols) {
  if (cluster <= 1)
    return 0;
  const int64_t smem = launch::topKClusterLaunchSmem(cols, cluster);
  auto it = topkResident_.find({f, smem});
  if (it != topkResident_.end())
    return it->second;
  int n = 0;
  const unsigned c = static_cast<unsigned>(cluster);
  if (!drv_->clusterOccupancy(f, c, p.threads, static_cast<size_t>(smem), c, &n).isOk())
    n = 0; // unknown: topKGrid's estimate
  topkResident_.emplace(std::make_pair(f, smem), n);
  return n;
}

StatusOr<int64_t> Backend::graphColumns(const pl::EntryPoint &ep, int64_t last) {
  if (rowTopkCols_ < 0) {
    // One row per call: topKGrid takes topk_row while the columns are within topKRowCols, then
    // topk_cluster up to topKClusterRowCols; for every top-k step the smallest of each.
    rowTopkCols_ = clusterTopkCols_ = 0;
    auto low = [](int64_t have, int64_t v) { return have == 0 ? v : std::min(have, v); };
    for (const pl::Step *s : *ep.steps()) {
      if (s->op() != pl::OpKind::TopK)
        continue;
      GLM5_ASSIGN_OR_RETURN(launch::TopKParams tp,
                            launch::topKParamsOf(*plan_.kernels()->Get(s->kernel())));
      GLM5_ASSIGN_OR_RETURN(Fn cl, fn(*s, 0, "topk_cluster"));
      GLM5_ASSIGN_OR_RETURN(const int maxCluster, topkCluster(cl.f, tp));
      rowTopkCols_ = low(rowTopkCols_, launch::topKRowCols(tp));
      clusterTopkCols_ = low(clusterTopkCols_, launch::topKClusterRowCols(tp, maxCluster));
    }
  }
  return launch::decodeGraphColumns({rowTopkCols_, clusterTopkCols_}, capacity_, last);
}

Status Backend::captureGraph(const pl::EntryPoint &ep, int64_t cols) {
  GLM5_RETURN_IF_ERROR(drv_->beginCapture(stream_));
  Status st;
  for (const pl::Step *s : *ep.steps()) {
    st = launchStep(*s, 1, cols - 1, /*dry=*/false);
    if (!st.isOk())
      break;
  }
  Graph g = nullptr;
  Status end = drv_->endCapture(stream_, &g);
  GLM5_RETURN_IF_ERROR(st);
  GLM5_RETURN_IF_ERROR(end);
  GraphExec exec = nullptr;
  GLM5_RETURN_IF_ERROR(drv_->instantiate(&exec, g));
  decodeGraphs_[cols] = exec;
  return Status::ok();
}

Status Backend::finishRun(const pl::EntryPoint &ep, int64_t T, std::vector<float> *logits) {
  const std::string entry = ep.name()->str();
  GLM5_RETURN_IF_ERROR(drv_->synchronize(stream_).withContext(entry));
  int32_t bad = 0;
  GLM5_RETURN_IF_ERROR(drv_->copyToHost(&bad, embedErr_, 4));
  if (bad != 0)
    return makeStatus(StatusCode::kInternal, "the embedding kernel saw an out-of-range token at "
                      "index %d", bad - 1);
  const int out = ep.output();
  const pl::Buffer *ob = plan_.buffers()->Get(out);
  const int64_t n = T * static_cast<int64_t>(ob->elems_per_token());
  logits->resize(static_cast<size_t>(n));
  if (ob->dtype() == pl::DType::BF16) {
    std::vector<uint16_t> raw(static_cast<size_t>(n));
    GLM5_RETURN_IF_ERROR(drv_->copyToHost(raw.data(), buffer(out), raw.size() * 2));
    for (int64_t i = 0; i < n; ++i)
      (*logits)[static_cast<size_t>(i)] = bf16ToFloat(raw[static_cast<size_t>(i)]);
  } else {
    GLM5_RETURN_IF_ERROR(drv_->copyToHost(logits->data(), buffer(out), static_cast<size_t>(n) * 4));
  }
  return Status::ok();
}

} // namespace glm5rt::cuda
