// Paged KV-cache bookkeeping (see PagedKv.h).
#include "runtime/kv/PagedKv.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace glm5rt::kv {

namespace {

std::string mib(uint64_t bytes) { return strFormat("%.1f MiB", bytes / (1024.0 * 1024.0)); }

long long ll(int64_t x) { return static_cast<long long>(x); }

} // namespace

uint64_t KvGeometry::bytesPerToken() const {
  return static_cast<uint64_t>(layers) * static_cast<uint64_t>(latent + rope + indexDim) *
         static_cast<uint64_t>(dtypeBytes);
}

StatusOr<KvGeometry> geometryOf(const glm5::plan::KVLayout &l) {
  KvGeometry g;
  g.layers = l.layers();
  g.latent = l.latent();
  g.rope = l.rope();
  g.indexDim = l.index_dim();
  g.pageSize = l.page_size();
  switch (l.dtype()) {
  case glm5::plan::DType::F32:
    g.dtypeBytes = 4;
    break;
  case glm5::plan::DType::BF16:
    g.dtypeBytes = 2;
    break;
  default:
    return makeStatus(StatusCode::kDataLoss, "plan: kv.dtype %s is not a cache dtype",
                      glm5::plan::EnumNameDType(l.dtype()));
  }
  // Bounds keep every product below 2^63: layers * width * 4 * pageSize <= 2^12 * 2^16 * 4 * 2^12.
  auto bad = [](const char *field, int64_t v, int64_t lo, int64_t hi) {
    return makeStatus(StatusCode::kDataLoss, "plan: kv.%s is %lld, outside [%lld, %lld]", field,
                      ll(v), ll(lo), ll(hi));
  };
  if (g.layers < 1 || g.layers > 4096)
    return bad("layers", g.layers, 1, 4096);
  if (g.latent < 1 || g.latent > 16384)
    return bad("latent", g.latent, 1, 16384);
  if (g.rope < 0 || g.rope > 16384)
    return bad("rope", g.rope, 0, 16384);
  if (g.indexDim < 0 || g.indexDim > 16384)
    return bad("index_dim", g.indexDim, 0, 16384);
  if (g.pageSize < 1 || g.pageSize > 4096 || (g.pageSize & (g.pageSize - 1)))
    return makeStatus(StatusCode::kDataLoss,
                      "plan: kv.page_size is %lld, not a power of two in [1, 4096]",
                      ll(g.pageSize));
  return g;
}

StatusOr<Capacity> planCapacity(const KvGeometry &g, int64_t seqs, int64_t requestedTokens,
                                int64_t modelContext, uint64_t freeBytes, double fraction) {
  if (seqs < 1 || requestedTokens < 0 || modelContext < 0 || !(fraction > 0 && fraction <= 1))
    return makeStatus(StatusCode::kInvalidArgument,
                      "KV cache: bad request (%lld sequences, %lld tokens, fraction %g)", ll(seqs),
                      ll(requestedTokens), fraction);
  const uint64_t perPage = g.bytesPerPage();
  // Whole pages per sequence that the free memory holds, and the tokens that makes.
  const uint64_t fitPagesTotal = freeBytes / perPage;
  const int64_t fitTokensPerSeq =
      static_cast<int64_t>(std::min<uint64_t>(fitPagesTotal / static_cast<uint64_t>(seqs),
                                              uint64_t(1) << 40)) *
      g.pageSize;
  Capacity c;
  if (requestedTokens > 0) {
    if (modelContext > 0 && requestedTokens > modelContext)
      return makeStatus(StatusCode::kInvalidArgument,
                        "KV cache: %lld tokens asked for, but the model's context length is %lld",
                        ll(requestedTokens), ll(modelContext));
    const int64_t pagesPerSeq = g.pagesFor(requestedTokens);
    if (static_cast<uint64_t>(pagesPerSeq) > fitPagesTotal / static_cast<uint64_t>(seqs))
      return makeStatus(
          StatusCode::kResourceExhausted,
          "KV cache: %lld tokens x %lld sequences need %s (%s per token over %lld layers), but "
          "only %s is free; %lld tokens per sequence would fit (lower --ctx, or free memory)",
          ll(requestedTokens), ll(seqs),
          mib(static_cast<uint64_t>(pagesPerSeq) * static_cast<uint64_t>(seqs) * perPage).c_str(),
          strFormat("%llu B", static_cast<unsigned long long>(g.bytesPerToken())).c_str(),
          ll(g.layers), mib(freeBytes).c_str(), ll(fitTokensPerSeq));
    c.pages = pagesPerSeq * seqs;
  } else {
    const uint64_t budget = static_cast<uint64_t>(static_cast<double>(freeBytes) * fraction);
    int64_t pagesPerSeq = static_cast<int64_t>(
        std::min<uint64_t>(budget / perPage / static_cast<uint64_t>(seqs), uint64_t(1) << 40));
    if (modelContext > 0)
      pagesPerSeq = std::min(pagesPerSeq, g.pagesFor(modelContext));
    if (pagesPerSeq < 1)
      return makeStatus(StatusCode::kResourceExhausted,
                        "KV cache: one page (%lld tokens, %s) per sequence for %lld sequences "
                        "does not fit in %s of %s free",
                        ll(g.pageSize), mib(perPage).c_str(), ll(seqs),
                        strFormat("%.0f%%", fraction * 100).c_str(), mib(freeBytes).c_str());
    c.pages = pagesPerSeq * seqs;
  }
  if (c.pages > std::numeric_limits<int32_t>::max())
    return makeStatus(StatusCode::kResourceExhausted,
                      "KV cache: %lld pages exceed the block table's 32-bit page ids; use a "
                      "larger page size",
                      ll(c.pages));
  c.tokens = c.pages * g.pageSize;
  c.bytes = static_cast<uint64_t>(c.pages) * perPage;
  return c;
}

uint64_t availableHostBytes() {
  if (FILE *f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f))
      found = std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    std::fclose(f);
    if (found)
      return static_cast<uint64_t>(kib) * 1024;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(size) : 0;
}

PagePool::PagePool(int64_t pages) : used_(static_cast<size_t>(std::max<int64_t>(pages, 0)), 0) {
  free_ = static_cast<int64_t>(used_.size());
}

StatusOr<int32_t> PagePool::allocate() {
  while (next_ < pages() && used_[static_cast<size_t>(next_)])
    ++next_;
  if (next_ >= pages())
    return makeStatus(StatusCode::kResourceExhausted, "KV cache: all %lld pages are in use",
                      ll(pages()));
  used_[static_cast<size_t>(next_)] = 1;
  --free_;
  return static_cast<int32_t>(next_++);
}

Status PagePool::release(int32_t page) {
  if (page < 0 || page >= pages())
    return makeStatus(StatusCode::kInvalidArgument, "KV cache: page %d is outside [0, %lld)",
                      page, ll(pages()));
  if (!used_[static_cast<size_t>(page)])
    return makeStatus(StatusCode::kInvalidArgument, "KV cache: page %d released twice", page);
  used_[static_cast<size_t>(page)] = 0;
  ++free_;
  next_ = std::min<int64_t>(next_, page);
  return Status::ok();
}

BlockTable::BlockTable(int64_t seqs, int64_t pagesPerSeq, int64_t pageSize)
    : seqs_(std::max<int64_t>(seqs, 0)), pagesPerSeq_(std::max<int64_t>(pagesPerSeq, 0)),
      pageSize_(std::max<int64_t>(pageSize, 1)),
      table_(static_cast<size_t>(seqs_ * pagesPerSeq_), -1),
      mapped_(static_cast<size_t>(seqs_), 0) {}

Status BlockTable::reserve(PagePool &pool, int64_t seq, int64_t tokens) {
  if (seq < 0 || seq >= seqs_)
    return makeStatus(StatusCode::kInvalidArgument, "KV cache: sequence %lld of %lld", ll(seq),
                      ll(seqs_));
  if (tokens < 0)
    return makeStatus(StatusCode::kInvalidArgument, "KV cache: negative token count %lld",
                      ll(tokens));
  const int64_t want = (tokens + pageSize_ - 1) / pageSize_;
  int64_t &have = mapped_[static_cast<size_t>(seq)];
  if (want > pagesPerSeq_)
    return makeStatus(StatusCode::kResourceExhausted,
                      "KV cache: sequence %lld needs %lld tokens, but holds at most %lld",
                      ll(seq), ll(tokens), ll(pagesPerSeq_ * pageSize_));
  if (want - have > pool.freePages())
    return makeStatus(StatusCode::kResourceExhausted,
                      "KV cache: sequence %lld needs %lld tokens; the free pages hold %lld more "
                      "(%lld in all)",
                      ll(seq), ll(tokens), ll(pool.freePages() * pageSize_),
                      ll(have * pageSize_ + pool.freePages() * pageSize_));
  int32_t *row = table_.data() + seq * pagesPerSeq_;
  for (; have < want; ++have) {
    auto page = pool.allocate(); // cannot fail: free pages were counted above
    if (!page.isOk())
      return page.status();
    row[have] = *page;
  }
  return Status::ok();
}

Status BlockTable::release(PagePool &pool, int64_t seq) {
  if (seq < 0 || seq >= seqs_)
    return makeStatus(StatusCode::kInvalidArgument, "KV cache: sequence %lld of %lld", ll(seq),
                      ll(seqs_));
  int32_t *row = table_.data() + seq * pagesPerSeq_;
  int64_t &have = mapped_[static_cast<size_t>(seq)];
  for (; have > 0; --have) {
    Status s = pool.release(row[have - 1]);
    if (!s.isOk())
      return s;
    row[have - 1] = -1;
  }
  return Status::ok();
}

int64_t BlockTable::slot(int64_t seq, int64_t pos) const {
  if (seq < 0 || seq >= seqs_ || pos < 0 || pos / pageSize_ >= pagesPerSeq_)
    return -1;
  const int32_t page = table_[static_cast<size_t>(seq * pagesPerSeq_ + pos / pageSize_)];
  return page < 0 ? -1 : static_cast<int64_t>(page) * pageSize_ + pos % pageSize_;
}

int64_t BlockTable::mappedTokens(int64_t seq) const {
  if (seq < 0 || seq >= seqs_)
    return 0;
  return mapped_[static_cast<size_t>(seq)] * pageSize_;
}

} // namespace glm5rt::kv
