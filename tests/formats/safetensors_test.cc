#include "formats/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "formats/formats_test_util.h"
#include "formats/safetensors_writer.h"
#include "util/error.h"
#include "util/half.h"

namespace kiln {
namespace {

using testing_util::Bytes;
using testing_util::ExpectKilnError;
using testing_util::ReadBytes;
using testing_util::TempDir;
using testing_util::WriteBytes;
using testing_util::WriteText;

std::vector<float> Iota(size_t n, float start = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

// Byte-exact against the reference implementation's own test vector
// (huggingface/safetensors tensor.rs, test_serialization_forced_alignement).
TEST(SafetensorsTest, WriterMatchesReferenceBytes) {
  SafetensorsWriter w;
  w.AddTensorF32("attn0", {1, 1, 2, 3}, Iota(6));
  const Bytes want = {72,  0,   0,   0,   0,   0,   0,   0,   123, 34, 97, 116, 116, 110, 48,
                      34,  58,  123, 34,  100, 116, 121, 112, 101, 34, 58, 34,  70,  51,  50,
                      34,  44,  34,  115, 104, 97,  112, 101, 34,  58, 91, 49,  44,  49,  44,
                      50,  44,  51,  93,  44,  34,  100, 97,  116, 97, 95, 111, 102, 102, 115,
                      101, 116, 115, 34,  58,  91,  48,  44,  50,  52, 93, 125, 125, 32,  32,
                      32,  32,  32,  32,  32,  0,   0,   0,   0,   0,  0,  128, 63,  0,   0,
                      0,   64,  0,   0,   64,  64,  0,   0,   128, 64, 0,  0,   160, 64};
  EXPECT_EQ(w.Serialize(), want);

  SafetensorsWriter empty;
  EXPECT_EQ(empty.Serialize(), (Bytes{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', 32, 32, 32, 32, 32, 32}));
  SafetensorsWriter meta;
  meta.SetMetadata("framework", "pt");
  EXPECT_EQ(meta.Header(), std::string("{\"__metadata__\":{\"framework\":\"pt\"}}     "));

  TempDir dir;
  WriteBytes(dir.File("ref.safetensors"), want);
  SafetensorsFile f(dir.File("ref.safetensors"));
  const TensorView* t = f.Find("attn0");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{1, 1, 2, 3}));
  float v[6];
  std::memcpy(v, t->data, sizeof(v));
  EXPECT_EQ(v[5], 5.0f);
  WriteBytes(dir.File("empty.safetensors"), empty.Serialize());
  EXPECT_TRUE(SafetensorsFile(dir.File("empty.safetensors")).Names().empty());
}

TEST(SafetensorsTest, RoundTrip) {
  TempDir dir;
  SafetensorsWriter w;
  w.SetMetadata("format", "pt");
  w.SetMetadata("note", "x\"y");
  const std::vector<float> a = Iota(12, 1);
  std::vector<uint16_t> h(5), bf(3);
  for (size_t i = 0; i < h.size(); ++i) h[i] = F32ToF16(0.5f * static_cast<float>(i));
  for (size_t i = 0; i < bf.size(); ++i) bf[i] = F32ToBf16(-2.0f * static_cast<float>(i));
  w.AddTensorF32("model.a", {3, 4}, a);
  w.AddTensor("model.h", DType::kF16, {5}, h.data(), h.size() * 2);
  w.AddTensor("model.bf", DType::kBF16, {1, 3}, bf.data(), bf.size() * 2);
  w.AddTensorF32("scalar", {}, {42.0f});
  w.AddTensorF32("zero", {0, 3}, {});
  const std::string path = dir.File("rt.safetensors");
  w.Write(path);
  const Bytes bytes = ReadBytes(path);
  EXPECT_EQ(bytes, w.Serialize());
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes[8], '{');
  EXPECT_EQ(w.Header().size(), n);

  SafetensorsFile f(path);
  EXPECT_EQ(f.Describe(), path);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.metadata().at("note"), "x\"y");
  EXPECT_EQ(f.Names(),
            (std::vector<std::string>{"model.a", "model.bf", "model.h", "scalar", "zero"}));
  const TensorView* ta = f.Find("model.a");
  ASSERT_NE(ta, nullptr);
  EXPECT_EQ(ta->dtype, DType::kF32);
  EXPECT_EQ(ta->shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(ta->nbytes, 48u);
  EXPECT_EQ(std::memcmp(ta->data, a.data(), 48), 0);
  const TensorView* th = f.Find("model.h");
  EXPECT_EQ(th->dtype, DType::kF16);
  EXPECT_EQ(std::memcmp(th->data, h.data(), 10), 0);
  const TensorView* tb = f.Find("model.bf");
  EXPECT_EQ(tb->dtype, DType::kBF16);
  EXPECT_EQ(tb->shape, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(std::memcmp(tb->data, bf.data(), 6), 0);
  const TensorView* ts = f.Find("scalar");
  EXPECT_TRUE(ts->shape.empty());
  EXPECT_EQ(ts->NumElements(), 1);
  float s;
  std::memcpy(&s, ts->data, 4);
  EXPECT_EQ(s, 42.0f);
  EXPECT_EQ(f.Find("zero")->nbytes, 0u);
  EXPECT_EQ(f.Find("zero")->NumElements(), 0);
  EXPECT_EQ(f.Find("nope"), nullptr);
  // Largest element size first, so each tensor is aligned to its element size.
  for (const std::string& name : f.Names()) {
    const TensorView* t = f.Find(name);
    const uintptr_t elem = t->dtype == DType::kF32 ? 4 : 2;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % elem, 0u) << name;
  }
  EXPECT_LT(f.Find("scalar")->data, f.Find("model.bf")->data);

  // A checkpoint directory holding a single model.safetensors.
  w.Write(dir.File("model.safetensors"));
  SafetensorsCheckpoint ck(dir.path());
  EXPECT_EQ(ck.Describe(), dir.path());
  EXPECT_EQ(ck.Names(), f.Names());
  ASSERT_NE(ck.Find("model.h"), nullptr);
  EXPECT_EQ(std::memcmp(ck.Find("model.h")->data, h.data(), 10), 0);
}

TEST(SafetensorsTest, ShardedCheckpoint) {
  TempDir dir;
  SafetensorsWriter s1, s2;
  s1.AddTensorF32("embed", {2, 2}, Iota(4));
  s1.AddTensorF32("layer.0", {2}, Iota(2, 10));
  s2.AddTensorF32("layer.1", {3}, Iota(3, 20));
  s2.AddTensorF32("unlisted", {1}, {7});
  s1.Write(dir.File("model-00001-of-00002.safetensors"));
  s2.Write(dir.File("model-00002-of-00002.safetensors"));
  nlohmann::json index = {{"metadata", {{"total_size", 36}}},
                          {"weight_map",
                           {{"embed", "model-00001-of-00002.safetensors"},
                            {"layer.0", "model-00001-of-00002.safetensors"},
                            {"layer.1", "model-00002-of-00002.safetensors"}}}};
  WriteText(dir.File("model.safetensors.index.json"), index.dump(2));
  // The index wins over a stray model.safetensors.
  WriteText(dir.File("model.safetensors"), "garbage");

  SafetensorsCheckpoint ck(dir.path());
  EXPECT_EQ(ck.Names(), (std::vector<std::string>{"embed", "layer.0", "layer.1"}));
  EXPECT_EQ(ck.Find("unlisted"), nullptr);  // the index is authoritative
  const TensorView* l1 = ck.Find("layer.1");
  ASSERT_NE(l1, nullptr);
  float v[3];
  std::memcpy(v, l1->data, sizeof(v));
  EXPECT_EQ(v[2], 22.0f);
  float e[4];
  std::memcpy(e, ck.Find("embed")->data, sizeof(e));
  EXPECT_EQ(e[3], 3.0f);
}

TEST(SafetensorsTest, WriterRejectsMisuse) {
  SafetensorsWriter w;
  w.AddTensorF32("a", {2}, {1, 2});
  EXPECT_THROW(w.AddTensorF32("a", {2}, {1, 2}), Error);
  EXPECT_THROW(w.AddTensorF32("__metadata__", {1}, {1}), Error);
  EXPECT_THROW(w.AddTensorF32("b", {3}, {1, 2}), Error);
  EXPECT_THROW(w.AddTensorF32("b", {-1}, {}), Error);
  EXPECT_THROW(w.AddTensor("b", "Q4", {1}, "x", 1), Error);
  EXPECT_THROW(w.AddTensor("b", DType::kQ8_0, {32}, Bytes(34).data(), 34), Error);
  const int64_t v = 5;
  w.AddTensor("i64", "I64", {1}, &v, 8);  // writable, though Kiln will not load it
}

// transformers' BERT checkpoints carry an int64 position_ids buffer: the file loads, the
// buffer is left out (and listed), the float tensors are served.
TEST(Safetensors, SkipsTensorsOfTypesKilnDoesNotLoad) {
  SafetensorsWriter w;
  const int64_t ids[3] = {0, 1, 2};
  w.AddTensor("embeddings.position_ids", "I64", {1, 3}, ids, sizeof(ids));
  w.AddTensorF32("weight", {2}, {1.5f, -2.0f});
  const std::string path = ::testing::TempDir() + "/skips_i64.safetensors";
  w.Write(path);
  SafetensorsFile f(path);
  EXPECT_EQ(f.Find("embeddings.position_ids"), nullptr);
  ASSERT_NE(f.Find("weight"), nullptr);
  EXPECT_EQ(f.Names(), std::vector<std::string>{"weight"});
  EXPECT_EQ(f.skipped(), std::vector<std::string>{"embeddings.position_ids (I64)"});
}

}  // namespace
}  // namespace kiln
