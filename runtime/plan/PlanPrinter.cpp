// Plan description (see PlanPrinter.h). Floats print as "%e", like the compiler's MLIR output.
#include "runtime/plan/PlanPrinter.h"

#include "runtime/plan/Plan.h"
#include "runtime/support/status.h"

#include <algorithm>
#include <cinttypes>

namespace glm5rt::plan {

namespace pl = glm5::plan;

std::string describePlan(const pl::Plan &p, bool steps) {
  std::string s;
  auto str = [](const flatbuffers::String *x) { return x ? x->str() : std::string(); };
  s += strFormat("plan: format %u, from %s (header fingerprint %s)\n", p.format_version(),
                 str(p.gguf_name()).c_str(), str(p.gguf_fingerprint()).c_str());
  s += strFormat("target: tiles %s, code %s, %d SMs, %d B shared memory per block\n",
                 str(p.target()->tiles()).c_str(), str(p.target()->code_arch()).c_str(),
                 p.target()->sm_count(), p.target()->max_shared_per_block());
  s += strFormat("activations: %s, attention %s\n", pl::EnumNameDType(p.activation_dtype()),
                 pl::EnumNameAttentionMode(p.attention()));
  const auto *c = p.config();
  s += strFormat("config: hidden %d, layers %d (%d dense), heads %d, kv_lora %d, nope %d, rope %d, "
                 "v %d, experts %d top-%d, indexer %d x %d top-k %d, vocab %d\n",
                 c->hidden(), c->layers(), c->dense_layers(), c->heads(), c->kv_lora(), c->nope(),
                 c->rope(), c->v(), c->experts(), c->experts_used(), c->indexer_heads(),
                 c->indexer_dim(), c->index_topk(), c->vocab());
  s += strFormat("kv cache: %d layers x (latent %d + rope %d + index key %d), page size %d, %s\n",
                 p.kv()->layers(), p.kv()->latent(), p.kv()->rope(), p.kv()->index_dim(),
                 p.kv()->page_size(), pl::EnumNameDType(p.kv()->dtype()));
  uint64_t wbytes = 0;
  for (const auto *w : *p.weights())
    wbytes += loadedBytes(*w);
  uint32_t boxes = 0;
  for (const auto *w : *p.weights())
    boxes += w->view_offset() && w->view_offset()->size() > 0;
  s += strFormat("weights: %u tensors, %" PRIu64 " bytes\n", p.weights()->size(), wbytes);
  if (p.ranks() > 1) {
    uint64_t most = 0; // the largest rank's weights: what one GPU must hold
    for (int r = 0; r < p.ranks(); ++r) {
      const std::vector<bool> mine = weightsOfRank(p, r);
      uint64_t b = 0;
      for (uint32_t i = 0; i < p.weights()->size(); ++i)
        if (mine[i])
          b += loadedBytes(*p.weights()->Get(i));
      most = std::max(most, b);
    }
    s += strFormat("ranks: %d (%u weights are a rank's box of a tensor; at most %" PRIu64
                   " weight bytes per rank)\n", p.ranks(), boxes, most);
  }
  s += strFormat("kernels: %u\n", p.kernels() ? p.kernels()->size() : 0u);
  if (p.kernels())
    for (const auto *k : *p.kernels()) {
      s += strFormat("  %s: %d threads, %d B static + %d B dynamic shared memory, %d B spills, "
                     "ptx %zu B, cubin %u B, entries",
                     str(k->variant()).c_str(), k->threads(), k->static_smem(), k->dynamic_smem(),
                     k->spill_bytes(), k->ptx() ? k->ptx()->size() : size_t(0),
                     k->cubin() ? k->cubin()->size() : 0u);
      for (const auto *e : *k->entries())
        s += " " + e->str();
      if (k->params()) {
        s += ", params";
        for (const auto *a : *k->params())
          s += strFormat(" %s=%lld", str(a->key()).c_str(), static_cast<long long>(a->i()));
      }
      s += "\n";
    }
  s += strFormat("buffers: %u\n", p.buffers()->size());
  for (const auto *e : *p.entries()) {
    s += strFormat("entry %s%s: %u steps, max tokens %d, arena %" PRIu64
                   " B per token, output buffer %d\n",
                   str(e->name()).c_str(),
                   p.ranks() > 1 ? strFormat(" (rank %d)", e->rank()).c_str() : "",
                   e->steps()->size(), e->max_tokens(), e->arena_bytes_per_token(), e->output());
    if (!steps)
      continue;
    for (const auto *st : *e->steps()) {
      s += strFormat("  %s %s", opKindName(st->op()), str(st->name()).c_str());
      if (st->layer() >= 0)
        s += strFormat(" layer %d", st->layer());
      if (st->kernel() >= 0)
        s += " kernel " + str(p.kernels()->Get(st->kernel())->variant());
      if (st->extra_kernels())
        for (int32_t k : *st->extra_kernels())
          s += " + " + str(p.kernels()->Get(k)->variant());
      s += " in";
      for (int32_t i : *st->inputs())
        s += strFormat(" %d", i);
      s += " out";
      for (int32_t i : *st->outputs())
        s += strFormat(" %d", i);
      for (const auto *a : *st->attrs())
        s += " " + str(a->key()) + "=" +
             (a->is_float() ? strFormat("%e", a->f()) : strFormat("%" PRId64, a->i()));
      s += "\n";
    }
  }
  return s;
}

} // namespace glm5rt::plan
