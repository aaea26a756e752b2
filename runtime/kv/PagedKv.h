// The paged KV cache's bookkeeping, shared by every backend that keeps the cache in pages (the
// GPU kernels' layout; codegen/kernels/elementwise.cuh, indexer.cuh, topk.cuh):
//
//   - KvGeometry: what one cached position costs (per layer: latent + rope key in the KV part,
//     indexer key in the index part, all in the plan's cache dtype) and the page size.
//   - planCapacity: how many pages to allocate, from `--ctx` or from the bytes free on the
//     device, with messages that say how many tokens would fit when the request does not.
//   - PagePool: the physical pages, handed out and returned through a free list.
//   - BlockTable: per sequence, logical page -> physical page (-1: unmapped), stored row-major
//     [seqs, pagesPerSeq] exactly as the kernels read it. Position p of sequence s lives in slot
//     table[s * pagesPerSeq + p / pageSize] * pageSize + p % pageSize of every layer's cache.
//
// Invariants: a physical page is owned by at most one (sequence, logical page); every mapped
// entry is in [0, pool.pages()); the pool's free pages are exactly the unmapped ones.
#pragma once

#include "runtime/schema/plan_generated.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <vector>

namespace glm5rt::kv {

struct KvGeometry {
  int64_t layers = 0;
  int64_t latent = 0;   // kv_lora_rank (512 for GLM-5)
  int64_t rope = 0;     // qk_rope_head_dim (64)
  int64_t indexDim = 0; // indexer key width (128)
  int64_t pageSize = 0; // positions per page, a power of two
  int64_t dtypeBytes = 0;

  // Bytes one position takes in all layers (KV part plus index part).
  uint64_t bytesPerToken() const;
  uint64_t bytesPerPage() const { return bytesPerToken() * static_cast<uint64_t>(pageSize); }
  // Pages that hold `tokens` positions of one sequence.
  int64_t pagesFor(int64_t tokens) const { return (tokens + pageSize - 1) / pageSize; }
};

// The geometry of a verified plan's KV layout; an error names the field that is out of range.
StatusOr<KvGeometry> geometryOf(const glm5::plan::KVLayout &layout);

struct Capacity {
  int64_t pages = 0;   // physical pages to allocate
  int64_t tokens = 0;  // pages * pageSize: positions the cache holds in all
  uint64_t bytes = 0;  // pages * bytesPerPage
};

// The cache for `seqs` sequences. With requestedTokens > 0 (`--ctx`), each sequence gets room
// for that many positions, which must not exceed the model's context length (modelContext, 0 =
// unknown) and must fit in `freeBytes`. With requestedTokens == 0, the cache takes
// `fraction` of `freeBytes`, clamped to seqs * modelContext positions. An error says what was
// asked, what is free, and how many tokens would fit.
StatusOr<Capacity> planCapacity(const KvGeometry &g, int64_t seqs, int64_t requestedTokens,
                                int64_t modelContext, uint64_t freeBytes, double fraction = 0.9);

// Bytes the OS can give a host-side cache now (MemAvailable; the free pages where /proc is
// missing).
uint64_t availableHostBytes();

class PagePool {
public:
  explicit PagePool(int64_t pages);
  // The lowest free page, or kResourceExhausted naming the pool's size.
  StatusOr<int32_t> allocate();
  // Returns `page` to the pool; a page that is out of range or already free is an error.
  Status release(int32_t page);
  int64_t pages() const { return static_cast<int64_t>(used_.size()); }
  int64_t freePages() const { return free_; }

private:
  std::vector<uint8_t> used_;
  int64_t free_ = 0;
  int64_t next_ = 0; // no free page below this index
};

class BlockTable {
public:
  BlockTable(int64_t seqs, int64_t pagesPerSeq, int64_t pageSize);

  // Maps every page that positions [0, tokens) of `seq` touch, taking pages from `pool`. On
  // failure (sequence out of range, more positions than pagesPerSeq holds, pool empty) nothing
  // changes and the message says how many tokens the sequence can still take.
  Status reserve(PagePool &pool, int64_t seq, int64_t tokens);
  // Returns every page of `seq` to `pool`.
  Status release(PagePool &pool, int64_t seq);
  // The physical slot of position `pos` of `seq`, or -1 when unmapped or out of range.
  int64_t slot(int64_t seq, int64_t pos) const;
  // Positions of `seq` that are mapped (a multiple of pageSize).
  int64_t mappedTokens(int64_t seq) const;

  const int32_t *data() const { return table_.data(); }
  int64_t seqs() const { return seqs_; }
  int64_t pagesPerSeq() const { return pagesPerSeq_; }
  int64_t pageSize() const { return pageSize_; }

private:
  int64_t seqs_, pagesPerSeq_, pageSize_;
  std::vector<int32_t> table_;  // [seqs, pagesPerSeq]
  std::vector<int64_t> mapped_; // per sequence: leading mapped pages
};

} // namespace glm5rt::kv
