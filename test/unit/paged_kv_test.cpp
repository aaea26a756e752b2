// Paged KV-cache bookkeeping: geometry from a plan layout, capacity planning and its messages,
// the page pool and the block table in the layout the kernels read.
#include "runtime/kv/PagedKv.h"

#include <gtest/gtest.h>

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <random>
#include <set>

namespace glm5rt::kv {
namespace {

// GLM-5's cache: 78 layers, latent 512 + rope 64, indexer keys 128, bf16, pages of 64.
KvGeometry glm5Geometry() {
  KvGeometry g;
  g.layers = 78;
  g.latent = 512;
  g.rope = 64;
  g.indexDim = 128;
  g.pageSize = 64;
  g.dtypeBytes = 2;
  return g;
}

const glm5::plan::KVLayout *layout(flatbuffers::FlatBufferBuilder &fbb, int layers, int latent,
                                   int rope, int index, int page, glm5::plan::DType dtype) {
  fbb.Finish(glm5::plan::CreateKVLayout(fbb, layers, latent, rope, index, page, dtype));
  return flatbuffers::GetRoot<glm5::plan::KVLayout>(fbb.GetBufferPointer());
}

TEST(PagedKv, GeometryFromLayout) {
  flatbuffers::FlatBufferBuilder fbb;
  auto g = geometryOf(*layout(fbb, 78, 512, 64, 128, 64, glm5::plan::DType::BF16));
  ASSERT_TRUE(g.isOk()) << g.status().message();
  // 78 * (512 + 64 + 128) * 2 bytes per position.
  EXPECT_EQ(g->bytesPerToken(), 78u * 704u * 2u);
  EXPECT_EQ(g->bytesPerPage(), 78u * 704u * 2u * 64u);
  EXPECT_EQ(g->pagesFor(1), 1);
  EXPECT_EQ(g->pagesFor(64), 1);
  EXPECT_EQ(g->pagesFor(65), 2);
}

TEST(PagedKv, GeometryRejectsBadLayouts) {
  struct Case {
    int layers, latent, rope, index, page;
    glm5::plan::DType dtype;
    const char *needle;
  } cases[] = {
      {0, 512, 64, 128, 64, glm5::plan::DType::BF16, "kv.layers"},
      {78, -1, 64, 128, 64, glm5::plan::DType::BF16, "kv.latent"},
      {78, 512, 64, 128, 48, glm5::plan::DType::BF16, "kv.page_size is 48"},
      {78, 512, 64, 128, 0, glm5::plan::DType::BF16, "kv.page_size is 0"},
      {78, 512, 64, 128, 64, glm5::plan::DType::I32, "kv.dtype I32"},
  };
  for (const Case &c : cases) {
    flatbuffers::FlatBufferBuilder fbb;
    auto g = geometryOf(*layout(fbb, c.layers, c.latent, c.rope, c.index, c.page, c.dtype));
    ASSERT_FALSE(g.isOk()) << c.needle;
    EXPECT_NE(g.status().message().find(c.needle), std::string::npos) << g.status().message();
  }
}

TEST(PagedKv, CapacityFromCtx) {
  KvGeometry g = glm5Geometry();
  const uint64_t gib = uint64_t(1) << 30;
  auto c = planCapacity(g, /*seqs=*/1, /*ctx=*/100000, /*modelContext=*/202752, 40 * gib);
  ASSERT_TRUE(c.isOk()) << c.status().message();
  EXPECT_EQ(c->pages, (100000 + 63) / 64);
  EXPECT_EQ(c->tokens, c->pages * 64);
  EXPECT_EQ(c->bytes, static_cast<uint64_t>(c->pages) * g.bytesPerPage());
}

TEST(PagedKv, CapacityTooLargeSaysWhatFits) {
  KvGeometry g = glm5Geometry();
  // 1 GiB holds floor(2^30 / (109824 * 64)) = 152 pages = 9728 tokens.
  auto c = planCapacity(g, 1, 200000, 202752, uint64_t(1) << 30);
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  const std::string m = c.status().message();
  EXPECT_NE(m.find("200000 tokens"), std::string::npos) << m;
  EXPECT_NE(m.find("1024.0 MiB is free"), std::string::npos) << m;
  EXPECT_NE(m.find("9728 tokens per sequence would fit"), std::string::npos) << m;
}

TEST(PagedKv, CapacityBeyondModelContext) {
  auto c = planCapacity(glm5Geometry(), 1, 300000, 202752, uint64_t(1) << 40);
  ASSERT_FALSE(c.isOk());
  EXPECT_NE(c.status().message().find("context length is 202752"), std::string::npos)
      << c.status().message();
}

TEST(PagedKv, CapacityFromFreeMemoryIsClampedToContext) {
  KvGeometry g = glm5Geometry();
  // Plenty of memory: the model's context bounds the cache.
  auto big = planCapacity(g, 2, 0, 4096, uint64_t(1) << 40);
  ASSERT_TRUE(big.isOk()) << big.status().message();
  EXPECT_EQ(big->pages, 2 * 64);
  // Little memory: 90% of it, in whole pages per sequence.
  const uint64_t free = 10 * g.bytesPerPage() + 123;
  auto small = planCapacity(g, 2, 0, 4096, free);
  ASSERT_TRUE(small.isOk()) << small.status().message();
  EXPECT_EQ(small->pages, 2 * 4); // floor(0.9 * 10.0x / 2) = 4 pages each
  EXPECT_LE(small->bytes, free);
  // Not even one page each.
  auto none = planCapacity(g, 2, 0, 4096, g.bytesPerPage());
  ASSERT_FALSE(none.isOk());
  EXPECT_NE(none.status().message().find("does not fit"), std::string::npos)
      << none.status().message();
}

TEST(PagedKv, PoolHandsOutLowestFreePage) {
  PagePool pool(3);
  EXPECT_EQ(*pool.allocate(), 0);
  EXPECT_EQ(*pool.allocate(), 1);
  EXPECT_EQ(*pool.allocate(), 2);
  EXPECT_FALSE(pool.allocate().isOk());
  EXPECT_TRUE(pool.release(1).isOk());
  EXPECT_FALSE(pool.release(1).isOk()); // twice
  EXPECT_FALSE(pool.release(3).isOk()); // out of range
  EXPECT_FALSE(pool.release(-1).isOk());
  EXPECT_EQ(pool.freePages(), 1);
  EXPECT_EQ(*pool.allocate(), 1);
}

TEST(PagedKv, BlockTableMapsPositionsToSlots) {
  PagePool pool(8);
  BlockTable table(/*seqs=*/2, /*pagesPerSeq=*/3, /*pageSize=*/4);
  ASSERT_TRUE(table.reserve(pool, 0, 5).isOk()); // pages 0, 1
  ASSERT_TRUE(table.reserve(pool, 1, 1).isOk()); // page 2
  ASSERT_TRUE(table.reserve(pool, 0, 9).isOk()); // page 3
  EXPECT_EQ(table.mappedTokens(0), 12);
  EXPECT_EQ(table.slot(0, 0), 0);
  EXPECT_EQ(table.slot(0, 5), 1 * 4 + 1);
  EXPECT_EQ(table.slot(0, 9), 3 * 4 + 1);
  EXPECT_EQ(table.slot(1, 3), 2 * 4 + 3);
  EXPECT_EQ(table.slot(1, 4), -1); // unmapped
  EXPECT_EQ(table.slot(0, 12), -1); // past pagesPerSeq
  EXPECT_EQ(table.slot(2, 0), -1);
  // The raw table, as the kernels read it: [seqs, pagesPerSeq], -1 unmapped.
  const std::vector<int32_t> raw(table.data(), table.data() + 6);
  EXPECT_EQ(raw, (std::vector<int32_t>{0, 1, 3, 2, -1, -1}));
  // Too long for the sequence, and a failed reserve changes nothing.
  auto s = table.reserve(pool, 1, 13);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("holds at most 12"), std::string::npos) << s.message();
  EXPECT_EQ(table.mappedTokens(1), 4);
  ASSERT_TRUE(table.release(pool, 0).isOk());
  EXPECT_EQ(pool.freePages(), 7);
  EXPECT_EQ(table.slot(0, 0), -1);
}

TEST(PagedKv, BlockTableFailsWholeWhenPoolRunsDry) {
  PagePool pool(3);
  BlockTable table(2, 4, 2);
  ASSERT_TRUE(table.reserve(pool, 0, 4).isOk()); // 2 pages
  auto s = table.reserve(pool, 1, 4);           // needs 2, 1 free
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("the free pages hold 2 more"), std::string::npos) << s.message();
  EXPECT_EQ(pool.freePages(), 1);
  EXPECT_EQ(table.mappedTokens(1), 0);
}

// Random reserve/release traffic keeps the invariants: no physical page is mapped twice, and
// the pool's free count equals the pages nobody maps.
TEST(PagedKv, RandomTrafficKeepsPagesExclusive) {
  std::mt19937 rng(7);
  const int64_t seqs = 5, perSeq = 6, pageSize = 8;
  PagePool pool(17);
  BlockTable table(seqs, perSeq, pageSize);
  for (int step = 0; step < 2000; ++step) {
    const int64_t seq = rng() % seqs;
    if (rng() % 4 == 0)
      ASSERT_TRUE(table.release(pool, seq).isOk());
    else
      (void)table.reserve(pool, seq, rng() % (perSeq * pageSize + 4));
    std::set<int32_t> seen;
    int64_t mapped = 0;
    for (int64_t s = 0; s < seqs; ++s)
      for (int64_t p = 0; p < perSeq; ++p) {
        const int32_t page = table.data()[s * perSeq + p];
        ASSERT_EQ(page >= 0, p < table.mappedTokens(s) / pageSize);
        if (page < 0)
          continue;
        ASSERT_LT(page, pool.pages());
        ASSERT_TRUE(seen.insert(page).second) << "page " << page << " mapped twice";
        ++mapped;
      }
    ASSERT_EQ(pool.freePages(), pool.pages() - mapped);
  }
}

} // namespace
} // namespace glm5rt::kv
