// libFuzzer target for the plan loader: any byte string must be refused with a Status or load
// into a plan whose every index the hot path will use is in range — never a crash or an
// out-of-bounds read. Accepted plans are walked the way `glm5c inspect` and the host backend
// walk them.
#include "runtime/plan/Plan.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto loaded = glm5rt::plan::LoadedPlan::fromBytes("fuzz.plan", data, size);
  if (!loaded.isOk())
    return 0;
  const glm5::plan::Plan &p = (*loaded)->plan();
  volatile uint64_t sink = 0;
  for (const auto *e : *p.entries())
    for (const auto *s : *e->steps()) {
      sink += static_cast<uint64_t>(s->op()) + glm5rt::plan::opKindName(s->op())[0];
      if (s->inputs())
        for (int32_t id : *s->inputs())
          if (id >= 0)
            sink += p.buffers()->Get(static_cast<flatbuffers::uoffset_t>(id))->elems_per_token();
      if (s->outputs())
        for (int32_t id : *s->outputs())
          sink += p.buffers()->Get(static_cast<flatbuffers::uoffset_t>(id))->elems_per_token();
      if (s->weights())
        for (int32_t id : *s->weights())
          sink += p.weights()->Get(static_cast<flatbuffers::uoffset_t>(id))->bytes();
      if (s->kernel() >= 0)
        sink += p.kernels()->Get(static_cast<flatbuffers::uoffset_t>(s->kernel()))->threads();
      if (s->extra_kernels())
        for (int32_t id : *s->extra_kernels())
          sink += p.kernels()->Get(static_cast<flatbuffers::uoffset_t>(id))->threads();
      if (s->attrs())
        for (const auto *a : *s->attrs())
          sink += a->key() ? a->key()->size() : 0;
    }
  (void)sink;
  return 0;
}
