// Unit tests of the GGUF reader and writer: round trips of every value type, split files, and the
// reader's rejection of hostile headers (built in memory byte by byte).
#include "runtime/gguf/gguf_reader.h"
#include "runtime/gguf/gguf_writer.h"
#include "runtime/gguf/glm5_layout.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

using namespace glm5rt;
using namespace glm5rt::gguf;

namespace {

std::string tempPath(const std::string &name) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/glm5c-gguf-test-" + std::to_string(getpid()) + "-" +
         name;
}

// Little-endian byte builder for hand-made headers.
struct Buf {
  std::vector<uint8_t> b;
  template <typename T> Buf &put(T v) {
    uint8_t tmp[sizeof(T)];
    std::memcpy(tmp, &v, sizeof(T));
    b.insert(b.end(), tmp, tmp + sizeof(T));
    return *this;
  }
  Buf &str(const std::string &s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Buf &header(uint64_t nTensors, uint64_t nKv, uint32_t version = 3) {
    return put<uint32_t>(0x46554747).put<uint32_t>(version).put<uint64_t>(nTensors).put<uint64_t>(
        nKv);
  }
  Buf &padTo(size_t align) {
    while (b.size() % align)
      b.push_back(0);
    return *this;
  }
};

Status openBytes(const Buf &buf) {
  auto f = GgufFile::openMemory("mem.gguf", buf.b.data(), buf.b.size());
  return f.isOk() ? Status::ok() : f.status();
}

void expectError(const Buf &buf, const std::string &needle) {
  Status s = openBytes(buf);
  ASSERT_FALSE(s.isOk()) << "expected an error containing: " << needle;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
}

} // namespace

TEST(GgufWriterReader, RoundTripsEveryValueTypeAndTensorData) {
  GgufWriter w;
  w.setString("general.architecture", "test");
  w.setU8("k.u8", 200);
  w.setU16("k.u16", 60000);
  w.setU32("k.u32", 4000000000u);
  w.setI32("k.i32", -7);
  w.setU64("k.u64", 1ull << 40);
  w.setF32("k.f32", 0.25f);
  w.setBool("k.bool", true);
  w.setStringArray("k.strs", {"a", "", "héllo"});
  w.setI32Array("k.i32s", {1, -2, 3});
  w.setF32Array("k.f32s", {1.5f, -2.5f});
  ASSERT_TRUE(w.addTensor("a", GgmlType::F32, {4, 2}).isOk());
  ASSERT_TRUE(w.addTensor("b", GgmlType::Q8_0, {64}).isOk());
  EXPECT_FALSE(w.addTensor("a", GgmlType::F32, {4}).isOk());   // duplicate
  EXPECT_FALSE(w.addTensor("c", GgmlType::Q4_K, {100}).isOk()); // not a whole block
  std::string path = tempPath("roundtrip.gguf");
  ASSERT_TRUE(w.create(path).isOk());
  float *a = reinterpret_cast<float *>(w.tensorData(0));
  for (int i = 0; i < 8; ++i)
    a[i] = static_cast<float>(i) * 0.5f;
  std::memset(w.tensorData(1), 7, w.tensorBytes(1));
  ASSERT_TRUE(w.finish().isOk());

  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.isOk()) << f.status().message();
  const GgufFile &g = **f;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(*g.getString("general.architecture"), "test");
  EXPECT_EQ(*g.getU64("k.u8"), 200u);
  EXPECT_EQ(*g.getU64("k.u16"), 60000u);
  EXPECT_EQ(*g.getU64("k.u32"), 4000000000u);
  EXPECT_EQ(g.find("k.i32")->value.asI64(), -7);
  EXPECT_FALSE(g.getU64("k.i32").isOk()); // negative is not a u64
  EXPECT_EQ(*g.getU64("k.u64"), 1ull << 40);
  EXPECT_EQ(*g.getF64("k.f32"), 0.25);
  EXPECT_TRUE(*g.getBool("k.bool"));
  const Value &strs = g.find("k.strs")->value;
  ASSERT_EQ(strs.count, 3u);
  EXPECT_EQ(strs.strings[2], "héllo");
  EXPECT_EQ(g.find("k.i32s")->value.elemI64(1), -2);
  EXPECT_EQ(g.find("k.f32s")->value.elemF64(1), -2.5);
  EXPECT_EQ(g.getU64("missing").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(g.getString("k.u8").status().code(), StatusCode::kDataLoss);

  ASSERT_EQ(g.tensors().size(), 2u);
  const TensorInfo *ta = g.findTensor("a");
  ASSERT_NE(ta, nullptr);
  EXPECT_EQ(ta->shapeString(), "{4, 2}");
  EXPECT_EQ(ta->bytes, 32u);
  float v[8];
  std::memcpy(v, ta->data, 32);
  EXPECT_EQ(v[7], 3.5f);
  const TensorInfo *tb = g.findTensor("b");
  EXPECT_EQ(tb->bytes, 68u);
  EXPECT_EQ(tb->offset % 32, 0u);
  EXPECT_EQ(tb->data[67], 7);
  std::remove(path.c_str());
}

TEST(GgufWriterReader, SplitFilesOpenAsOneModel) {
  GgufWriter w;
  w.setString("general.architecture", "test");
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(w.addTensor("t" + std::to_string(i), GgmlType::F32, {8}).isOk());
  std::string path = tempPath("split.gguf");
  ASSERT_TRUE(w.create(path, 3).isOk());
  for (size_t i = 0; i < 5; ++i)
    std::memset(w.tensorData(i), static_cast<int>(i + 1), 32);
  ASSERT_TRUE(w.finish().isOk());
  ASSERT_EQ(w.outputPaths().size(), 3u);
  EXPECT_NE(w.outputPaths()[1].find("-00002-of-00003.gguf"), std::string::npos);

  // Any shard's name opens the whole model.
  auto f = GgufFile::open(w.outputPaths()[2]);
  ASSERT_TRUE(f.isOk()) << f.status().message();
  EXPECT_EQ((*f)->shardCount(), 3u);
  ASSERT_EQ((*f)->tensors().size(), 5u);
  EXPECT_EQ((*f)->findTensor("t4")->file, 2u);
  EXPECT_EQ((*f)->findTensor("t4")->data[0], 5);
  EXPECT_EQ(*(*f)->getString("general.architecture"), "test");

  // A missing shard is an error naming it.
  std::remove(w.outputPaths()[1].c_str());
  auto g = GgufFile::open(w.outputPaths()[0]);
  ASSERT_FALSE(g.isOk());
  EXPECT_NE(g.status().message().find("-00002-of-00003.gguf"), std::string::npos)
      << g.status().message();
  std::remove(w.outputPaths()[0].c_str());
  std::remove(w.outputPaths()[2].c_str());
}

TEST(GgufSplitPath, ParsesOnlyWellFormedNames) {
  uint32_t i = 0, n = 0;
  EXPECT_EQ(parseSplitPath("dir/m-00002-of-00010.gguf", &i, &n), "dir/m");
  EXPECT_EQ(i, 2u);
  EXPECT_EQ(n, 10u);
  EXPECT_FALSE(parseSplitPath("m-00011-of-00010.gguf", &i, &n));
  EXPECT_FALSE(parseSplitPath("m-0001a-of-00010.gguf", &i, &n));
  EXPECT_FALSE(parseSplitPath("m.gguf", &i, &n));
  EXPECT_EQ(splitPath("m", 1, 3), "m-00001-of-00003.gguf");
}

TEST(GgufReaderHardening, RejectsBadMagicAndVersion) {
  Buf bad;
  bad.put<uint32_t>(0x46554746).put<uint32_t>(3).put<uint64_t>(0).put<uint64_t>(0);
  expectError(bad, "bad magic");
  expectError(Buf().header(0, 0, 4), "unknown GGUF version 4 at byte 4");
  expectError(Buf().header(0, 0, 0x03000000), "big-endian");
  Buf shortFile;
  shortFile.put<uint32_t>(0x46554747);
  expectError(shortFile, "too short for a GGUF header");
  EXPECT_TRUE(openBytes(Buf().header(0, 0, 2)).isOk()); // v2 accepted
}

TEST(GgufReaderHardening, RejectsCountsAndLengthsBeyondTheFile) {
  expectError(Buf().header(0, 1ull << 60), "metadata count 1152921504606846976 at byte 16");
  expectError(Buf().header(1ull << 40, 0), "tensor count 1099511627776 at byte 8");
  expectError(Buf().header(0, 1).str("k").put<uint32_t>(8).put<uint64_t>(1000),
              "key 'k' at byte 24: string length 1000 at byte 37");
  expectError(Buf().header(0, 1).put<uint64_t>(500).put<uint64_t>(0).put<uint64_t>(0),
              "key of metadata entry 0: string length 500 at byte 24");
  // An array of 2^61 u64 would overflow the byte count.
  expectError(Buf().header(0, 1).str("arr").put<uint32_t>(9).put<uint32_t>(10).put<uint64_t>(
                  1ull << 61),
              "key 'arr' at byte 24: array of 2305843009213693952 u64");
  expectError(Buf().header(0, 1).str("arr").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(
                  1ull << 40),
              "array of 1099511627776 string");
  expectError(Buf().header(0, 1).str("t").put<uint32_t>(13), "value type 13 at byte 33");
  expectError(Buf().header(0, 1).str("b").put<uint32_t>(7).put<uint8_t>(2), "bool value 2");
}

TEST(GgufReaderHardening, NestedArraysParseAndDepthIsBounded) {
  Buf ok;
  ok.header(0, 1).str("nest").put<uint32_t>(9).put<uint32_t>(9).put<uint64_t>(2);
  ok.put<uint32_t>(4).put<uint64_t>(1).put<uint32_t>(42);              // [u32 x 1]
  ok.put<uint32_t>(8).put<uint64_t>(2).str("x").str("yz");              // [string x 2]
  auto f = GgufFile::openMemory("mem.gguf", ok.b.data(), ok.b.size());
  ASSERT_TRUE(f.isOk()) << f.status().message();
  const Value &v = (*f)->find("nest")->value;
  ASSERT_EQ(v.items.size(), 2u);
  EXPECT_EQ(v.items[0].elemI64(0), 42);
  EXPECT_EQ(v.items[1].strings[1], "yz");

  Buf deep;
  deep.header(0, 1).str("deep").put<uint32_t>(9);
  for (int i = 0; i < 20; ++i)
    deep.put<uint32_t>(9).put<uint64_t>(1);
  deep.put<uint32_t>(0).put<uint64_t>(0);
  expectError(deep, "nested deeper than 8");
}

TEST(GgufReaderHardening, RejectsBadTensorInfos) {
  auto tensor = [](Buf &b, const std::string &name, std::vector<uint64_t> ne, uint32_t type,
                   uint64_t offset) {
    b.str(name).put<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne)
      b.put<uint64_t>(d);
    b.put<uint32_t>(type).put<uint64_t>(offset);
  };
  {
    Buf b;
    b.header(1, 0);
    tensor(b, "w", {1ull << 40, 1ull << 40}, 0, 0);
    expectError(b, "tensor 'w' (info at byte 24): dims product overflows 64 bits");
  }
  {
    Buf b;
    b.header(1, 0);
    tensor(b, "w", {32}, 99, 0);
    expectError(b, "tensor 'w' (info at byte 24): unknown ggml type 99 at byte 45");
  }
  {
    Buf b;
    b.header(1, 0);
    tensor(b, "w", {100}, static_cast<uint32_t>(GgmlType::Q4_K), 0);
    expectError(b, "ne[0] = 100 is not a multiple of Q4_K's block of 256");
  }
  {
    Buf b;
    b.header(1, 0);
    tensor(b, "w", {8}, 0, 16);
    expectError(b, "data offset 16 (field at byte 49) is not a multiple of the alignment 32");
  }
  {
    Buf b;
    b.header(1, 0);
    tensor(b, "w", {8}, 0, 0);
    b.padTo(32).put<uint32_t>(1); // 4 of the 32 data bytes
    expectError(b, "tensor 'w' (info at byte 24): data at byte 64 + 32 bytes extends past the end");
  }
  {
    Buf b;
    b.header(2, 0);
    tensor(b, "w", {16}, 0, 0);
    tensor(b, "v", {8}, 0, 32);
    b.padTo(32);
    b.b.resize(b.b.size() + 64);
    expectError(b, "tensor 'v' (info at byte 57): data at byte 128 overlaps tensor 'w'");
  }
  {
    Buf b;
    b.header(2, 0);
    tensor(b, "w", {8}, 0, 0);
    tensor(b, "w", {8}, 0, 32);
    b.padTo(32);
    b.b.resize(b.b.size() + 64);
    expectError(b, "duplicate name");
  }
  {
    Buf b;
    b.header(1, 0);
    tensor(b, "w", {8, 1, 1, 1, 1}, 0, 0);
    expectError(b, "n_dims 5 at byte 33 is outside 1..4");
  }
  {
    Buf b;
    b.header(0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(48);
    expectError(b, "general.alignment 48 is not a power of two");
  }
  {
    Buf b;
    b.header(0, 2).str("a").put<uint32_t>(0).put<uint8_t>(1).str("a").put<uint32_t>(0).put<uint8_t>(
        2);
    expectError(b, "key 'a' at byte 38: duplicate key (first at byte 24)");
  }
}

TEST(Glm5Layout, FullShapeHasGlm5ParameterCount) {
  Glm5Config c; // defaults are GLM-5
  uint64_t params = 0, optional = 0;
  for (const ExpectedTensor &t : glm5Tensors(c)) {
    uint64_t n = 1;
    for (uint64_t d : t.ne)
      n *= d;
    (t.optional ? optional : params) += n;
  }
  // 753.86 B including the MTP block and the embeddings (docs/model.md "Parameter count").
  EXPECT_EQ(params / 10000000, 75386u) << params;
  EXPECT_EQ(optional, 2ull * 6144 * 154880);
}
