#include "formats/gguf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "formats/formats_test_util.h"
#include "formats/gguf_writer.h"
#include "util/error.h"

namespace kiln {
namespace {

using testing_util::Bytes;
using testing_util::ExpectKilnError;
using testing_util::PseudoRandomBytes;
using testing_util::ReadBytes;
using testing_util::TempDir;
using testing_util::WriteBytes;

std::string StoriesPath() { return std::string(KILN_TEST_DATA_DIR) + "/models/stories260K.gguf"; }

template <typename T>
const T& As(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.Get(key);
  if (v == nullptr) throw std::runtime_error("missing " + key);
  return std::get<T>(*v);
}

struct TensorSpec {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  Bytes data;
};

std::vector<TensorSpec> AllDtypeTensors() {
  std::vector<TensorSpec> specs = {
      {"f32", DType::kF32, {3, 4}, {}},
      {"f16", DType::kF16, {2, 8}, {}},
      {"bf16", DType::kBF16, {5}, {}},
      {"q8_0", DType::kQ8_0, {2, 64}, {}},
      {"q4_0", DType::kQ4_0, {1, 32}, {}},
      {"q4_1", DType::kQ4_1, {3, 2, 32}, {}},
      {"q4_k", DType::kQ4_K, {256}, {}},
      {"q5_k", DType::kQ5_K, {2, 256}, {}},
      {"q6_k", DType::kQ6_K, {1, 1, 1, 256}, {}},
      {"empty", DType::kF32, {0, 4}, {}},
  };
  uint32_t seed = 1;
  for (auto& s : specs) {
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    s.data = PseudoRandomBytes(*BytesForElements(s.dtype, static_cast<uint64_t>(n)), seed++);
  }
  return specs;
}

void FillAllTypes(GgufWriter& w) {
  w.Set("t.u8", uint8_t{200});
  w.Set("t.i8", int8_t{-5});
  w.Set("t.u16", uint16_t{65000});
  w.Set("t.i16", int16_t{-30000});
  w.SetUint32("t.u32", 4000000000u);
  w.SetInt32("t.i32", -2000000000);
  w.SetFloat32("t.f32", 1.5f);
  w.SetBool("t.bool", true);
  w.SetBool("t.false", false);
  w.SetString("t.str", "hello \xe2\x9c\x93");
  w.SetString("t.empty_str", "");
  w.SetUint64("t.u64", 18000000000000000000ull);
  w.SetUint64("t.u64_small", 7);
  w.SetInt64("t.i64", -9000000000000000000ll);
  w.SetFloat64("t.f64", 2.25);
  w.SetStringArray("t.strs", {"a", "", "ccc"});
  w.SetInt32Array("t.i32s", {1, -2, 3});
  w.SetUint32Array("t.u32s", {1, 2, 4000000000u});
  w.SetInt64Array("t.i64s", {-1, 1ll << 40});
  w.SetFloat32Array("t.f32s", {0.5f, -1.0f});
  GgufArray bools{kGgufBool, {true, false, true}};
  w.SetArray("t.bools", bools);
  GgufArray u64s{kGgufUint64, {uint64_t{1}, std::numeric_limits<uint64_t>::max()}};
  w.SetArray("t.u64s", u64s);
  GgufArray empty{kGgufUint8, {}};
  w.SetArray("t.empty_arr", empty);
  // An array of arrays of int8.
  GgufArray inner1{kGgufInt8, {int8_t{1}, int8_t{2}}};
  GgufArray inner2{kGgufInt8, {int8_t{-3}}};
  GgufArray outer{kGgufArray,
                  {std::make_shared<GgufArray>(inner1), std::make_shared<GgufArray>(inner2)}};
  w.SetArray("t.nested", outer);
}

TEST(GgufTest, RoundTripAllValueTypesAndDtypes) {
  TempDir dir;
  GgufWriter w;
  FillAllTypes(w);
  const auto specs = AllDtypeTensors();
  for (const auto& s : specs) w.AddTensor(s.name, s.dtype, s.shape, s.data);
  const std::string path = dir.File("all.gguf");
  w.Write(path);
  EXPECT_EQ(ReadBytes(path), w.Serialize());

  GgufFile f(path);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset() % 32, 0u);
  EXPECT_EQ(f.Describe(), path);

  EXPECT_EQ(As<uint8_t>(f, "t.u8"), 200);
  EXPECT_EQ(As<int8_t>(f, "t.i8"), -5);
  EXPECT_EQ(As<uint16_t>(f, "t.u16"), 65000);
  EXPECT_EQ(As<int16_t>(f, "t.i16"), -30000);
  EXPECT_EQ(As<uint32_t>(f, "t.u32"), 4000000000u);
  EXPECT_EQ(As<int32_t>(f, "t.i32"), -2000000000);
  EXPECT_EQ(As<float>(f, "t.f32"), 1.5f);
  EXPECT_EQ(As<bool>(f, "t.bool"), true);
  EXPECT_EQ(As<std::string>(f, "t.str"), "hello \xe2\x9c\x93");
  EXPECT_EQ(As<uint64_t>(f, "t.u64"), 18000000000000000000ull);
  EXPECT_EQ(As<int64_t>(f, "t.i64"), -9000000000000000000ll);
  EXPECT_EQ(As<double>(f, "t.f64"), 2.25);

  // Typed getters.
  EXPECT_EQ(f.GetString("t.str"), "hello \xe2\x9c\x93");
  EXPECT_EQ(f.GetString("t.empty_str"), "");
  EXPECT_EQ(f.GetInt("t.u8"), 200);
  EXPECT_EQ(f.GetInt("t.i16"), -30000);
  EXPECT_EQ(f.GetInt("t.u32"), 4000000000ll);
  EXPECT_EQ(f.GetInt("t.u64_small"), 7);
  EXPECT_EQ(f.GetInt("t.i64"), -9000000000000000000ll);
  EXPECT_EQ(f.GetFloat("t.f32"), 1.5);
  EXPECT_EQ(f.GetFloat("t.f64"), 2.25);
  EXPECT_EQ(f.GetFloat("t.i32"), -2000000000.0);
  EXPECT_EQ(f.GetBool("t.bool"), true);
  EXPECT_EQ(f.GetBool("t.false"), false);
  EXPECT_EQ(f.GetStringArray("t.strs"), (std::vector<std::string>{"a", "", "ccc"}));
  EXPECT_EQ(f.GetIntArray("t.i32s"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(f.GetIntArray("t.u32s"), (std::vector<int64_t>{1, 2, 4000000000ll}));
  EXPECT_EQ(f.GetIntArray("t.i64s"), (std::vector<int64_t>{-1, 1ll << 40}));
  EXPECT_EQ(f.GetFloatArray("t.f32s"), (std::vector<double>{0.5, -1.0}));
  EXPECT_EQ(f.GetFloatArray("t.i32s"), (std::vector<double>{1, -2, 3}));
  EXPECT_EQ(f.GetIntArray("t.empty_arr"), std::vector<int64_t>{});
  EXPECT_EQ(f.GetStringArray("t.empty_arr"), std::vector<std::string>{});
  EXPECT_EQ(f.GetString("absent"), std::nullopt);
  EXPECT_EQ(f.GetInt("absent"), std::nullopt);
  EXPECT_EQ(f.GetFloat("absent"), std::nullopt);
  EXPECT_EQ(f.GetBool("absent"), std::nullopt);
  EXPECT_EQ(f.GetStringArray("absent"), std::nullopt);
  EXPECT_EQ(f.GetIntArray("absent"), std::nullopt);
  EXPECT_EQ(f.GetFloatArray("absent"), std::nullopt);

  const auto& bools = std::get<std::shared_ptr<GgufArray>>(*f.Get("t.bools"));
  EXPECT_EQ(bools->elem_type, kGgufBool);
  ASSERT_EQ(bools->values.size(), 3u);
  EXPECT_EQ(std::get<bool>(bools->values[1]), false);
  const auto& nested = std::get<std::shared_ptr<GgufArray>>(*f.Get("t.nested"));
  EXPECT_EQ(nested->elem_type, kGgufArray);
  ASSERT_EQ(nested->values.size(), 2u);
  const auto& in1 = std::get<std::shared_ptr<GgufArray>>(nested->values[0]);
  EXPECT_EQ(in1->elem_type, kGgufInt8);
  ASSERT_EQ(in1->values.size(), 2u);
  EXPECT_EQ(std::get<int8_t>(in1->values[1]), 2);
  EXPECT_EQ(GgufValueTypeName(*f.Get("t.nested")), "array of array of int8");

  // Wrong types throw, naming the file and the key.
  ExpectKilnError([&] { f.GetInt("t.str"); }, path, "metadata key 't.str' is string");
  ExpectKilnError([&] { f.GetInt("t.f32"); }, path, "expected an integer");
  ExpectKilnError([&] { f.GetInt("t.u64"); }, path, "does not fit in int64");
  ExpectKilnError([&] { f.GetInt("t.bool"); }, path, "expected an integer");
  ExpectKilnError([&] { f.GetString("t.u32"); }, path, "'t.u32' is uint32, expected string");
  ExpectKilnError([&] { f.GetBool("t.u8"); }, path, "expected bool");
  ExpectKilnError([&] { f.GetFloat("t.str"); }, path, "expected a number");
  ExpectKilnError([&] { f.GetStringArray("t.i32s"); }, path, "array of int32, expected array");
  ExpectKilnError([&] { f.GetStringArray("t.str"); }, path, "expected array of string");
  ExpectKilnError([&] { f.GetIntArray("t.f32s"); }, path, "expected array of integers");
  ExpectKilnError([&] { f.GetIntArray("t.u64s"); }, path, "does not fit in int64");
  ExpectKilnError([&] { f.GetFloatArray("t.strs"); }, path, "expected array of numbers");

  // Tensors: PyTorch-order shapes, exact bytes, aligned data.
  ASSERT_EQ(f.tensors().size(), specs.size());
  std::vector<std::string> names;
  for (const auto& s : specs) names.push_back(s.name);
  EXPECT_EQ(f.Names(), names);
  for (const auto& s : specs) {
    SCOPED_TRACE(s.name);
    const TensorView* t = f.Find(s.name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->name, s.name);
    EXPECT_EQ(t->dtype, s.dtype);
    EXPECT_EQ(t->shape, s.shape);
    EXPECT_EQ(t->nbytes, s.data.size());
    ASSERT_NE(t->data, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % 32, 0u);
    EXPECT_TRUE(std::equal(s.data.begin(), s.data.end(), t->data));
  }
  EXPECT_EQ(f.Find("q4_1")->Rows(), 6);
  EXPECT_EQ(f.Find("q4_1")->Cols(), 32);
  EXPECT_EQ(f.Find("q4_1")->NumElements(), 192);
  EXPECT_EQ(f.Find("empty")->NumElements(), 0);
  EXPECT_EQ(f.Find("nope"), nullptr);
}

TEST(GgufTest, AlignmentVersionAndEmptyFiles) {
  TempDir dir;
  for (uint32_t alignment : {1u, 8u, 64u, 4096u}) {
    SCOPED_TRACE(alignment);
    GgufWriter w(alignment);
    w.SetString("general.architecture", "llama");
    w.AddTensorF32("a", {3}, {1, 2, 3});
    w.AddTensorF32("b", {2, 2}, {4, 5, 6, 7});
    const std::string path = dir.File("align" + std::to_string(alignment) + ".gguf");
    w.Write(path);
    GgufFile f(path);
    EXPECT_EQ(f.alignment(), alignment);
    EXPECT_EQ(f.GetInt("general.alignment"), alignment);
    EXPECT_EQ(f.data_offset() % alignment, 0u);
    const TensorView* b = f.Find("b");
    ASSERT_NE(b, nullptr);
    const uint64_t off = static_cast<uint64_t>(b->data - f.Find("a")->data);
    EXPECT_EQ(off, (12 + alignment - 1) / alignment * alignment);
    float v[4];
    std::memcpy(v, b->data, sizeof(v));
    EXPECT_EQ(v[3], 7.0f);
  }
  {
    GgufWriter w(32, 2);
    w.SetUint32("x", 1);
    w.AddTensorF32("a", {1}, {1});
    const std::string path = dir.File("v2.gguf");
    w.Write(path);
    GgufFile f(path);
    EXPECT_EQ(f.version(), 2u);
    EXPECT_EQ(f.GetInt("x"), 1);
  }
  {
    GgufWriter w;
    const std::string path = dir.File("empty.gguf");
    w.Write(path);
    EXPECT_EQ(ReadBytes(path).size(), 32u);  // padded to the alignment, as llama.cpp does
    GgufFile f(path);
    EXPECT_TRUE(f.metadata().empty());
    EXPECT_TRUE(f.tensors().empty());
  }
}

TEST(GgufTest, WriterRejectsMisuse) {
  GgufWriter w;
  w.SetUint32("a", 1);
  EXPECT_THROW(w.SetUint32("a", 2), Error);
  EXPECT_THROW(w.SetUint32("", 2), Error);
  EXPECT_THROW(w.SetUint64("general.alignment", 32), Error);
  EXPECT_THROW(w.SetUint32("general.alignment", 64), Error);
  EXPECT_THROW(w.SetArray("bad", GgufArray{kGgufString, {uint32_t{1}}}), Error);
  EXPECT_THROW(GgufWriter(0), Error);
  EXPECT_THROW(GgufWriter(48), Error);
  EXPECT_THROW(GgufWriter(32, 1), Error);
  w.AddTensorF32("t", {2}, {1, 2});
  EXPECT_THROW(w.AddTensorF32("t", {2}, {1, 2}), Error);
  EXPECT_THROW(w.AddTensorF32(std::string(64, 'x'), {1}, {1}), Error);
  w.AddTensorF32(std::string(63, 'x'), {1}, {1});
  EXPECT_THROW(w.AddTensorF32("u", {3}, {1, 2}), Error);
  EXPECT_THROW(w.AddTensorF32("u", {}, {}), Error);
  EXPECT_THROW(w.AddTensorF32("u", {1, 1, 1, 1, 1}, {1}), Error);
  EXPECT_THROW(w.AddTensorF32("u", {-1}, {}), Error);
  EXPECT_THROW(w.AddTensor("u", DType::kQ8_0, {16}, Bytes(17)), Error);
}

// Reads the converted llama2.c "stories260K" checkpoint shipped with the tests.
TEST(GgufTest, ReadsStories260K) {
  GgufFile f(StoriesPath());
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset(), 14176u);
  EXPECT_EQ(f.GetString("general.architecture"), "llama");
  EXPECT_EQ(f.GetString("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(f.GetInt("llama.block_count"), 5);
  EXPECT_EQ(f.GetInt("llama.embedding_length"), 64);
  EXPECT_EQ(f.GetInt("llama.feed_forward_length"), 172);
  EXPECT_EQ(f.GetInt("llama.attention.head_count"), 8);
  EXPECT_EQ(f.GetInt("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(f.GetInt("llama.context_length"), 128);
  EXPECT_EQ(f.GetInt("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(f.GetInt("tokenizer.ggml.eos_token_id"), 2);
  EXPECT_EQ(f.GetInt("tokenizer.ggml.padding_token_id"), 4294967295ll);
  EXPECT_NEAR(*f.GetFloat("llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-9);
  const auto tokens = f.GetStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.has_value());
  ASSERT_EQ(tokens->size(), 512u);
  EXPECT_EQ((*tokens)[0], "<unk>");
  EXPECT_EQ((*tokens)[1], "<s>");
  EXPECT_EQ((*tokens)[3], "<0x00>");
  EXPECT_EQ(f.GetFloatArray("tokenizer.ggml.scores")->size(), 512u);
  const auto types = f.GetIntArray("tokenizer.ggml.token_type");
  ASSERT_EQ(types->size(), 512u);
  EXPECT_EQ((*types)[0], 2);
  EXPECT_EQ((*types)[3], 6);

  EXPECT_EQ(f.tensors().size(), 48u);
  EXPECT_EQ(f.Names().size(), 48u);
  struct Want {
    const char* name;
    std::vector<int64_t> shape;
  };
  const Want wants[] = {
      {"token_embd.weight", {512, 64}},     {"output.weight", {512, 64}},
      {"output_norm.weight", {64}},         {"blk.0.attn_q.weight", {64, 64}},
      {"blk.0.attn_k.weight", {32, 64}},    {"blk.0.attn_v.weight", {32, 64}},
      {"blk.4.ffn_gate.weight", {172, 64}}, {"blk.4.ffn_down.weight", {64, 172}},
      {"blk.4.ffn_up.weight", {172, 64}},   {"blk.4.ffn_norm.weight", {64}},
  };
  for (const Want& want : wants) {
    SCOPED_TRACE(want.name);
    const TensorView* t = f.Find(want.name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->dtype, DType::kF32);
    EXPECT_EQ(t->shape, want.shape);
    EXPECT_EQ(t->nbytes, static_cast<uint64_t>(t->NumElements()) * 4);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % 32, 0u);
  }
  const TensorView* embd = f.Find("token_embd.weight");
  EXPECT_EQ(embd->Rows(), 512);
  EXPECT_EQ(embd->Cols(), 64);
  EXPECT_EQ(f.Find("blk.4.ffn_norm.weight")->data - embd->data, 1170944);
  // RMSNorm weights of a trained model are finite and mostly positive.
  float norm[64];
  std::memcpy(norm, f.Find("output_norm.weight")->data, sizeof(norm));
  for (float x : norm) EXPECT_TRUE(std::isfinite(x));
}

// Rewriting stories260K with GgufWriter (same keys in the same order, same tensors) must
// reproduce the llama.cpp-written file byte for byte.
TEST(GgufTest, WriterReproducesLlamaCppFileExactly) {
  const Bytes original = ReadBytes(StoriesPath());
  GgufFile f(StoriesPath());
  const testing_util::GgufLayout layout = testing_util::LocateGguf(original);
  GgufWriter w(f.alignment(), f.version());
  for (const auto& kv : layout.kvs) w.Set(kv.key, *f.Get(kv.key));
  for (const TensorView& t : f.tensors()) w.AddTensor(t.name, t.dtype, t.shape, t.data, t.nbytes);
  const Bytes rewritten = w.Serialize();
  ASSERT_EQ(rewritten.size(), original.size());
  EXPECT_TRUE(rewritten == original);
}

}  // namespace
}  // namespace kiln
