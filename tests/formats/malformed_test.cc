// Malformed-file corpus: byte-level mutations of valid files made by the writers, each written
// to disk and opened through the mmap readers. Every one must throw kiln::Error naming the file
// and the specific problem; none may crash or read out of bounds (run under ASan/UBSan too).
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/formats_test_util.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "formats/safetensors.h"
#include "formats/safetensors_writer.h"
#include "util/error.h"

namespace kiln {
namespace {

using testing_util::ByteBuilder;
using testing_util::Bytes;
using testing_util::ExpectKilnError;
using testing_util::GgufLayout;
using testing_util::LocateGguf;
using testing_util::Poke;
using testing_util::Prefix;
using testing_util::TempDir;
using testing_util::WriteBytes;
using testing_util::WriteText;

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

// ----------------------------------------------------------------------------------------------
// GGUF

// The valid file every GGUF case starts from: metadata of several types, three tensors
// (f32 [2, 8] at data offset 0, f32 [8] at 64, q8_0 [1, 32] at 96) and an empty tensor.
Bytes BaseGguf(uint32_t alignment = 32) {
  GgufWriter w(alignment);
  w.SetString("general.architecture", "llama");
  w.SetUint32("llama.block_count", 2);
  w.SetBool("test.flag", true);
  w.SetStringArray("tokenizer.ggml.tokens", {"a", "b", "c"});
  w.SetInt32Array("test.ints", {1, 2, 3});
  w.SetString("k.aa", "x");
  w.SetString("k.ab", "y");
  std::vector<float> a(16, 1.0f), b(8, 2.0f);
  w.AddTensorF32("tensor_a", {2, 8}, a);
  w.AddTensorF32("tensor_b", {8}, b);
  w.AddTensor("tensor_q", DType::kQ8_0, {1, 32}, Bytes(34, 1));
  w.AddTensorF32("tensor_z", {0, 8}, {});
  return w.Serialize();
}

using GgufMutation = std::function<void(Bytes&, const GgufLayout&)>;

std::function<Bytes()> MutateGguf(GgufMutation m, uint32_t alignment = 32) {
  return [m, alignment] {
    Bytes b = BaseGguf(alignment);
    const GgufLayout l = LocateGguf(b);
    m(b, l);
    return b;
  };
}

uint64_t DataStart(const GgufLayout& l, uint32_t alignment = 32) {
  return (l.infos_end + alignment - 1) / alignment * alignment;
}

// GGUF header + one metadata entry whose value is `depth` nested arrays.
Bytes NestedArrays(int depth) {
  ByteBuilder b;
  b.Raw("GGUF").U32(3).U64(0).U64(1).Str("deep").U32(kGgufArray);
  for (int i = 1; i < depth; ++i) b.U32(kGgufArray).U64(1);
  b.U32(kGgufUint8).U64(0);
  return b.b;
}

struct Case {
  std::string name;
  std::function<Bytes()> make;
  std::string phrase;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> GgufCases() {
  return {
      {"BadMagic", MutateGguf([](Bytes& b, const GgufLayout&) { b[0] = 'X'; }),
       "not a GGUF file (bad magic 'XGUF'"},
      {"EmptyFile", [] { return Bytes{}; }, "truncated file"},
      {"Version1", MutateGguf([](Bytes& b, const GgufLayout&) { Poke<uint32_t>(b, 4, 1); }),
       "GGUF version 1 is not supported"},
      {"Version4", MutateGguf([](Bytes& b, const GgufLayout&) { Poke<uint32_t>(b, 4, 4); }),
       "unsupported GGUF version 4"},
      {"VersionByteSwapped",
       MutateGguf([](Bytes& b, const GgufLayout&) { Poke<uint32_t>(b, 4, 0x03000000); }),
       "byte-swapped"},
      {"TruncatedHeader", [] { return Prefix(BaseGguf(), 12); },
       "truncated file: tensor count at offset 8 needs 8 bytes but only 4 remain"},
      {"TruncatedInKey",
       [] {
         Bytes b = BaseGguf();
         return Prefix(b, LocateGguf(b).Kv("k.ab").key_pos + 10);
       },
       "key of metadata entry #6 at offset 266 has length 4, which exceeds the 2 bytes"},
      {"TruncatedInValue",
       [] {
         Bytes b = BaseGguf();
         return Prefix(b, LocateGguf(b).Kv("k.ab").value_pos + 3);
       },
       "truncated file: length of value of metadata key 'k.ab' at offset 282 needs 8 bytes but "
       "only 3 remain"},
      {"KvCountTooLargeForFile", [] { return Prefix(BaseGguf(), 60); },
       "metadata key/value count 7 cannot fit in the 36 bytes remaining"},
      {"TruncatedInArray",
       [] {
         Bytes b = BaseGguf();
         return Prefix(b, LocateGguf(b).Kv("tokenizer.ggml.tokens").value_pos + 14);
       },
       "which cannot fit in the 2 bytes remaining"},
      {"TruncatedInTensorInfo",
       [] {
         Bytes b = BaseGguf();
         return Prefix(b, LocateGguf(b).Tensor("tensor_z").ne_pos + 12);
       },
       "truncated file: dimensions of tensor 'tensor_z' at offset"},
      {"TruncatedBeforeData",
       [] {
         Bytes b = BaseGguf();
         const GgufLayout l = LocateGguf(b);
         EXPECT_NE(l.infos_end % 32, 0u) << "base layout changed; pick another cut";
         return Prefix(b, l.infos_end);
       },
       "tensor data section would start at offset"},
      {"TruncatedInData",
       [] {
         Bytes b = BaseGguf();
         return Prefix(b, DataStart(LocateGguf(b)) + 64 + 10);
       },
       "tensor 'tensor_b' data [offset"},
      {"TensorCountHuge",
       MutateGguf([](Bytes& b, const GgufLayout&) { Poke<uint64_t>(b, 8, uint64_t{1} << 60); }),
       "tensor count 1152921504606846976 cannot fit"},
      {"KvCountHuge",
       MutateGguf([](Bytes& b, const GgufLayout&) { Poke<uint64_t>(b, 16, kU64Max); }),
       "metadata key/value count 18446744073709551615 cannot fit"},
      {"KeyLengthHuge", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint64_t>(b, l.kvs[0].key_pos, uint64_t{1} << 62);
       }),
       "has length 4611686018427387904, which exceeds"},
      {"StringValueLengthHuge", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint64_t>(b, l.Kv("general.architecture").value_pos, kU64Max);
       }),
       "value of metadata key 'general.architecture' at offset"},
      {"ArrayCountHuge", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint64_t>(b, l.Kv("tokenizer.ggml.tokens").value_pos + 4, uint64_t{1} << 61);
       }),
       "declares 2305843009213693952 elements of type string"},
      {"UnknownValueType", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint32_t>(b, l.Kv("llama.block_count").type_pos, 99);
       }),
       "metadata key 'llama.block_count' has unknown value type 99"},
      {"UnknownArrayElementType", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint32_t>(b, l.Kv("test.ints").value_pos, 13);
       }),
       "has unknown value type 13 for its elements"},
      {"InvalidBool",
       MutateGguf([](Bytes& b, const GgufLayout& l) { b[l.Kv("test.flag").value_pos] = 2; }),
       "invalid bool value 2"},
      {"DuplicateKey",
       MutateGguf([](Bytes& b, const GgufLayout& l) { b[l.Kv("k.ab").key_pos + 8 + 3] = 'a'; }),
       "duplicate metadata key 'k.aa'"},
      {"EmptyKey",
       [] {
         return ByteBuilder()
             .Raw("GGUF")
             .U32(3)
             .U64(0)
             .U64(1)
             .Str("")
             .U32(0)
             .Put<uint8_t>(1)
             .U64(0)
             .b;
       },
       "metadata entry #0 at offset 24 has an empty key"},
      {"ArraysNestedTooDeep", [] { return NestedArrays(kGgufMaxArrayDepth + 1); },
       "metadata key 'deep' has arrays nested deeper than 8 levels"},
      {"AlignmentZero",
       MutateGguf(
           [](Bytes& b, const GgufLayout& l) {
             Poke<uint32_t>(b, l.Kv("general.alignment").value_pos, 0);
           },
           64),
       "general.alignment 0 is not a nonzero power of two"},
      {"AlignmentNotPowerOfTwo",
       MutateGguf(
           [](Bytes& b, const GgufLayout& l) {
             Poke<uint32_t>(b, l.Kv("general.alignment").value_pos, 48);
           },
           64),
       "general.alignment 48 is not a nonzero power of two"},
      {"AlignmentWrongType",
       MutateGguf(
           [](Bytes& b, const GgufLayout& l) {
             Poke<uint32_t>(b, l.Kv("general.alignment").type_pos, kGgufInt32);
           },
           64),
       "general.alignment must be of type uint32, found int32"},
      {"NDimsTooMany", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint32_t>(b, l.Tensor("tensor_a").ndims_pos, 5);
       }),
       "tensor 'tensor_a' has n_dims 5 (must be 1..4)"},
      {"NDimsZero", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint32_t>(b, l.Tensor("tensor_b").ndims_pos, 0);
       }),
       "tensor 'tensor_b' has n_dims 0 (must be 1..4)"},
      {"DimsOverflow", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint64_t>(b, l.Tensor("tensor_a").ne_pos, uint64_t{1} << 40);
         Poke<uint64_t>(b, l.Tensor("tensor_a").ne_pos + 8, uint64_t{1} << 40);
       }),
       "tensor 'tensor_a' shape ne=[1099511627776, 1099511627776] element count overflows int64"},
      {"DimAboveInt64", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint64_t>(b, l.Tensor("tensor_b").ne_pos, uint64_t{1} << 63);
       }),
       "tensor 'tensor_b' dimension ne[0] = 9223372036854775808 is too large"},
      {"UnknownGgmlType", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint32_t>(b, l.Tensor("tensor_a").type_pos, 999);
       }),
       "tensor 'tensor_a' has unknown ggml type id 999"},
      {"UnsupportedGgmlType", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint32_t>(b, l.Tensor("tensor_a").type_pos, 10);
       }),
       "tensor 'tensor_a' has ggml type 10 (q2_K), which is not supported"},
      {"RowNotMultipleOfBlock", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint64_t>(b, l.Tensor("tensor_q").ne_pos, 16);
         Poke<uint64_t>(b, l.Tensor("tensor_q").ne_pos + 8, 2);
       }),
       "tensor 'tensor_q' of type q8_0 has row length ne[0] = 16, not a multiple of the block "
       "size 32"},
      {"MisalignedOffset", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint64_t>(b, l.Tensor("tensor_b").offset_pos, 68);
       }),
       "tensor 'tensor_b' data offset 68 is not a multiple of the alignment 32"},
      {"OffsetPastEnd", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint64_t>(b, l.Tensor("tensor_b").offset_pos, 1 << 20);
       }),
       "size 32] extends past end of file (size"},
      {"OffsetNearU64Max", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint64_t>(b, l.Tensor("tensor_b").offset_pos, kU64Max - 31);
       }),
       "+ 18446744073709551584, size 32] extends past end of file"},
      {"SizePastEnd", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint64_t>(b, l.Tensor("tensor_q").ne_pos + 8, 1000);  // 1000 rows of q8_0
       }),
       "size 34000] extends past end of file"},
      {"ZeroSizeTensorPastEnd", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint64_t>(b, l.Tensor("tensor_z").offset_pos, 1 << 20);
       }),
       "tensor 'tensor_z' data [offset"},
      {"OverlappingTensors", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint64_t>(b, l.Tensor("tensor_b").offset_pos, 32);
       }),
       "tensors 'tensor_a' [offset 0, size 64] and 'tensor_b' [offset 32, size 32] overlap"},
      {"DuplicateTensorName", MutateGguf([](Bytes& b, const GgufLayout& l) {
         b[l.Tensor("tensor_b").name_pos + 8 + 7] = 'a';
       }),
       "duplicate tensor name 'tensor_a' (tensor #1"},
      {"TensorNameLengthHuge", MutateGguf([](Bytes& b, const GgufLayout& l) {
         Poke<uint64_t>(b, l.Tensor("tensor_a").name_pos, uint64_t{1} << 40);
       }),
       "name of tensor #0 at offset"},
  };
}

class GgufMalformedTest : public ::testing::TestWithParam<Case> {};

TEST_P(GgufMalformedTest, ThrowsKilnError) {
  TempDir dir;
  const std::string path = dir.File(GetParam().name + ".gguf");
  WriteBytes(path, GetParam().make());
  ExpectKilnError([&] { GgufFile f(path); }, path, GetParam().phrase);
}

INSTANTIATE_TEST_SUITE_P(Corpus, GgufMalformedTest, ::testing::ValuesIn(GgufCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

TEST(GgufMalformed, BaseFileIsValid) {
  TempDir dir;
  for (uint32_t alignment : {32u, 64u}) {
    WriteBytes(dir.File("base.gguf"), BaseGguf(alignment));
    GgufFile f(dir.File("base.gguf"));
    EXPECT_EQ(f.tensors().size(), 4u);
    EXPECT_EQ(f.Find("tensor_z")->nbytes, 0u);
  }
  // Nesting up to the limit is fine.
  WriteBytes(dir.File("nested.gguf"), NestedArrays(kGgufMaxArrayDepth));
  EXPECT_NO_THROW({ GgufFile f(dir.File("nested.gguf")); });
}

// Every proper prefix of the file is rejected (the last tensor is empty and sits at the very
// end, so even cutting the final padding loses it).
TEST(GgufMalformed, EveryTruncationThrows) {
  TempDir dir;
  const Bytes base = BaseGguf();
  const std::string path = dir.File("cut.gguf");
  for (size_t n = 0; n < base.size(); ++n) {
    SCOPED_TRACE(n);
    WriteBytes(path, Prefix(base, n));
    ExpectKilnError([&] { GgufFile f(path); }, path, ": ");
  }
  WriteBytes(path, base);
  EXPECT_NO_THROW({ GgufFile f(path); });
}

// Deterministic single- and multi-byte corruption of the header area: either a clean parse or
// a kiln::Error, never a crash (the sanitizer build checks memory safety).
TEST(GgufMalformed, RandomCorruptionNeverCrashes) {
  TempDir dir;
  const Bytes base = BaseGguf();
  const size_t header_end = DataStart(LocateGguf(base));
  const std::string path = dir.File("fuzz.gguf");
  uint32_t x = 12345;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x;
  };
  int errors = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    Bytes b = base;
    const int flips = 1 + static_cast<int>(next() % 3);
    for (int k = 0; k < flips; ++k) {
      const size_t pos = next() % header_end;
      const uint32_t r = next();
      b[pos] =
          (r & 0x100) ? static_cast<uint8_t>(r) : static_cast<uint8_t>(b[pos] ^ (1u << (r % 8)));
    }
    WriteBytes(path, b);
    try {
      GgufFile f(path);
      for (const TensorView& t : f.tensors()) {
        // Whatever parsed must lie inside the file.
        if (t.nbytes > 0) {
          volatile uint8_t sink = t.data[0] ^ t.data[t.nbytes - 1];
          (void)sink;
        }
      }
    } catch (const Error& e) {
      ++errors;
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(errors, 100);
}

// ----------------------------------------------------------------------------------------------
// safetensors

// Header text (padded to 8 with spaces) and `data_size` data bytes.
Bytes MakeSt(const std::string& header, size_t data_size) {
  std::string h = header;
  h.append((8 - h.size() % 8) % 8, ' ');
  ByteBuilder b;
  b.U64(h.size()).Raw(h);
  b.b.resize(b.b.size() + data_size, 0x11);
  return b.b;
}

const char kValidHeader[] =
    R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
    R"("b":{"dtype":"F16","shape":[4],"data_offsets":[16,24]}})";

Bytes BaseSt() { return MakeSt(kValidHeader, 24); }

// One-tensor file "w" with the given fields.
std::function<Bytes()> OneTensor(const std::string& fields, size_t data_size) {
  return [=] { return MakeSt(R"({"w":{)" + fields + "}}", data_size); };
}

std::vector<Case> SafetensorsCases() {
  return {
      {"TooSmall",
       [] {
         return Bytes{1, 2, 3, 4};
       },
       "truncated file: 4 bytes is too small for a safetensors header"},
      {"HeaderLengthHuge",
       [] {
         Bytes b = BaseSt();
         Poke<uint64_t>(b, 0, uint64_t{1} << 63);
         return b;
       },
       "header length 9223372036854775808 exceeds the limit of 104857600 bytes"},
      {"HeaderLengthJustOver100MiB",
       [] {
         Bytes b = BaseSt();
         Poke<uint64_t>(b, 0, (uint64_t{100} << 20) + 1);
         return b;
       },
       "header length 104857601 exceeds the limit"},
      {"HeaderLengthPastEnd",
       [] {
         Bytes b = BaseSt();
         Poke<uint64_t>(b, 0, b.size() - 7);
         return b;
       },
       "extends past end of file"},
      {"TruncatedInHeader", [] { return Prefix(BaseSt(), 30); }, "extends past end of file"},
      {"InvalidJson", [] { return MakeSt(R"({"w": {"dtype": )", 0); }, "invalid JSON header"},
      {"EmptyHeader", [] { return ByteBuilder().U64(0).b; }, "invalid JSON header"},
      {"InvalidUtf8", [] { return MakeSt("{\"w\xff\":{}}", 0); }, "invalid JSON header"},
      {"HeaderNotObject", [] { return MakeSt("[1,2]", 0); },
       "JSON header is not an object (it is array)"},
      {"EntryNotObject", [] { return MakeSt(R"({"w":5})", 0); },
       "entry for tensor 'w' must be an object"},
      {"MissingDtype", OneTensor(R"("shape":[1],"data_offsets":[0,4])", 4),
       "tensor 'w' is missing 'dtype'"},
      {"MissingDataOffsets", OneTensor(R"("dtype":"F32","shape":[1])", 4),
       "tensor 'w' is missing 'data_offsets'"},
      {"DtypeNotString", OneTensor(R"("dtype":3,"shape":[1],"data_offsets":[0,4])", 4),
       "dtype of tensor 'w' must be a string"},
      // A type Kiln skips is still checked: its size must match its shape.
      {"DtypeI64WrongSize", OneTensor(R"("dtype":"I64","shape":[2],"data_offsets":[0,8])", 8),
       "does not match shape [2] x I64"},
      {"DtypeUnknown", OneTensor(R"("dtype":"Q4","shape":[1],"data_offsets":[0,1])", 1),
       "unsupported dtype 'Q4' for tensor 'w'"},
      {"ShapeNotArray", OneTensor(R"("dtype":"F32","shape":"2x2","data_offsets":[0,16])", 16),
       "shape of tensor 'w' must be an array of non-negative integers"},
      {"ShapeNonInteger", OneTensor(R"("dtype":"F32","shape":[2,1.5],"data_offsets":[0,12])", 12),
       "shape of tensor 'w' must be an array of non-negative integers (found 1.5)"},
      {"ShapeNegative", OneTensor(R"("dtype":"F32","shape":[-2,2],"data_offsets":[0,16])", 16),
       "must be an array of non-negative integers (found -2)"},
      {"ShapeHugeNumber", OneTensor(R"("dtype":"F32","shape":[1e30],"data_offsets":[0,4])", 4),
       "must be an array of non-negative integers"},
      {"ShapeOverflow",
       OneTensor(R"("dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,16])",
                 16),
       "shape [1099511627776,1099511627776] of tensor 'w' overflows"},
      {"OffsetsReversed", OneTensor(R"("dtype":"F32","shape":[4],"data_offsets":[16,0])", 16),
       "data_offsets [16, 0] of tensor 'w' are reversed"},
      {"OffsetsWrongArity", OneTensor(R"("dtype":"F32","shape":[4],"data_offsets":[0,16,32])", 16),
       "data_offsets of tensor 'w' must be an array of two non-negative integers"},
      {"OffsetsNegative", OneTensor(R"("dtype":"F32","shape":[4],"data_offsets":[-16,0])", 16),
       "data_offsets of tensor 'w' must be an array of two"},
      {"OffsetsPastEnd", OneTensor(R"("dtype":"F32","shape":[250],"data_offsets":[0,1000])", 24),
       "data_offsets [0, 1000] of tensor 'w' extend past the data section (24 bytes"},
      {"OffsetsHuge",
       OneTensor(R"("dtype":"F32","shape":[4],"data_offsets":[18446744073709551600,)"
                 R"(18446744073709551615])",
                 16),
       "extend past the data section"},
      {"SizeMismatch", OneTensor(R"("dtype":"F32","shape":[2,2],"data_offsets":[0,12])", 12),
       "span 12 bytes, which does not match shape [2,2] x F32 = 16 bytes"},
      {"ZeroSizeShapeWithBytes",
       OneTensor(R"("dtype":"F32","shape":[0,4],"data_offsets":[0,16])", 16),
       "span 16 bytes, which does not match shape [0,4] x F32 = 0 bytes"},
      {"OverlappingTensors",
       [] {
         return MakeSt(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                       R"("b":{"dtype":"F16","shape":[4],"data_offsets":[8,16]}})",
                       16);
       },
       "tensors 'w' [0, 16) and 'b' [8, 16) overlap"},
      {"HoleBetweenTensors",
       [] {
         return MakeSt(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                       R"("b":{"dtype":"F16","shape":[4],"data_offsets":[20,28]}})",
                       28);
       },
       "data section bytes [16, 20) are not covered by any tensor (holes are not allowed)"},
      {"TrailingBytes", [] { return MakeSt(kValidHeader, 32); },
       "data section bytes [24, 32) after the last tensor are not covered"},
      {"TruncatedData", [] { return Prefix(BaseSt(), BaseSt().size() - 4); },
       "data_offsets [16, 24] of tensor 'b' extend past the data section (20 bytes"},
      {"DuplicateTensorName",
       [] {
         return MakeSt(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                       R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                       8);
       },
       "duplicate key 'w' in JSON header"},
      {"MetadataNotObject", [] { return MakeSt(R"({"__metadata__":"x"})", 0); },
       "__metadata__ must be an object of strings"},
      {"MetadataValueNotString", [] { return MakeSt(R"({"__metadata__":{"a":1}})", 0); },
       "__metadata__ value for key 'a' is not a string"},
      // Found by reasoning over tests/fuzz/safetensors_fuzz.cc (too large for its max_len): the
      // error message printed the shape with json::dump, which recurses once per level, so a
      // 2 MB header crashed the process with a stack overflow.
      {"HeaderNestedTooDeep",
       [] {
         const size_t depth = 1'000'000;
         return MakeSt(R"({"w":{"dtype":"F32","shape":[)" + std::string(depth, '[') +
                           std::string(depth, ']') + R"(],"data_offsets":[0,0]}})",
                       0);
       },
       "JSON header nested deeper than 64 levels"},
  };
}

class SafetensorsMalformedTest : public ::testing::TestWithParam<Case> {};

TEST_P(SafetensorsMalformedTest, ThrowsKilnError) {
  TempDir dir;
  const std::string path = dir.File(GetParam().name + ".safetensors");
  WriteBytes(path, GetParam().make());
  ExpectKilnError([&] { SafetensorsFile f(path); }, path, GetParam().phrase);
}

INSTANTIATE_TEST_SUITE_P(Corpus, SafetensorsMalformedTest, ::testing::ValuesIn(SafetensorsCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

TEST(SafetensorsMalformed, BaseFileIsValid) {
  TempDir dir;
  WriteBytes(dir.File("base.safetensors"), BaseSt());
  SafetensorsFile f(dir.File("base.safetensors"));
  EXPECT_EQ(f.Names(), (std::vector<std::string>{"b", "w"}));
  EXPECT_EQ(f.metadata().at("format"), "pt");
}

TEST(SafetensorsMalformed, EveryTruncationThrows) {
  TempDir dir;
  const Bytes base = BaseSt();
  const std::string path = dir.File("cut.safetensors");
  for (size_t n = 0; n < base.size(); ++n) {
    SCOPED_TRACE(n);
    WriteBytes(path, Prefix(base, n));
    ExpectKilnError([&] { SafetensorsFile f(path); }, path, ": ");
  }
}

TEST(SafetensorsMalformed, RandomCorruptionNeverCrashes) {
  TempDir dir;
  SafetensorsWriter w;
  w.SetMetadata("format", "pt");
  w.AddTensorF32("a", {2, 3}, std::vector<float>(6, 1.0f));
  w.AddTensorF32("b", {3}, std::vector<float>(3, 2.0f));
  const Bytes base = w.Serialize();
  const std::string path = dir.File("fuzz.safetensors");
  uint32_t x = 777;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x;
  };
  const char kInteresting[] = "0123456789[]{},:\"-.eE \xff";
  int errors = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    Bytes b = base;
    const size_t pos = next() % (w.Header().size() + 8);
    b[pos] = static_cast<uint8_t>(kInteresting[next() % (sizeof(kInteresting) - 1)]);
    WriteBytes(path, b);
    try {
      SafetensorsFile f(path);
      for (const std::string& name : f.Names()) {
        const TensorView* t = f.Find(name);
        if (t->nbytes > 0) {
          volatile uint8_t sink = t->data[0] ^ t->data[t->nbytes - 1];
          (void)sink;
        }
      }
    } catch (const Error& e) {
      ++errors;
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(errors, 100);
}

// ----------------------------------------------------------------------------------------------
// Sharded checkpoints

struct CheckpointCase {
  std::string name;
  // Fills `dir`; returns the path the error must name.
  std::function<std::string(const TempDir& dir)> setup;
  std::string phrase;
};

void PrintTo(const CheckpointCase& c, std::ostream* os) { *os << c.name; }

void WriteShard(const TempDir& dir, const std::string& file, const std::string& tensor) {
  SafetensorsWriter w;
  w.AddTensorF32(tensor, {2}, {1, 2});
  w.Write(dir.File(file));
}

std::string WriteIndex(const TempDir& dir, const nlohmann::json& weight_map) {
  const std::string path = dir.File("model.safetensors.index.json");
  WriteText(
      path,
      nlohmann::json{{"metadata", nlohmann::json::object()}, {"weight_map", weight_map}}.dump());
  return path;
}

std::vector<CheckpointCase> CheckpointCases() {
  return {
      {"EmptyDirectory", [](const TempDir& d) { return d.path(); },
       "no model.safetensors or model.safetensors.index.json in "},
      {"MissingShard",
       [](const TempDir& d) {
         WriteShard(d, "s1.safetensors", "x");
         return WriteIndex(d, {{"x", "s1.safetensors"}, {"y", "s2.safetensors"}});
       },
       "shard 's2.safetensors' (listed for tensor 'y') does not exist"},
      {"TensorNotInShard",
       [](const TempDir& d) {
         WriteShard(d, "s1.safetensors", "x");
         WriteShard(d, "s2.safetensors", "y");
         return WriteIndex(d, {{"x", "s2.safetensors"}, {"y", "s2.safetensors"}});
       },
       "weight_map puts tensor 'x' in shard 's2.safetensors', which does not contain it"},
      {"PathTraversal",
       [](const TempDir& d) {
         WriteShard(d, "s1.safetensors", "x");
         return WriteIndex(d, {{"x", "../s1.safetensors"}});
       },
       "'../s1.safetensors', which is not a plain file name"},
      {"AbsoluteShardPath",
       [](const TempDir& d) {
         WriteShard(d, "s1.safetensors", "x");
         return WriteIndex(d, {{"x", d.File("s1.safetensors")}});
       },
       "which is not a plain file name inside the checkpoint directory"},
      {"DotDotShard",
       [](const TempDir& d) {
         return WriteIndex(d, {{"x", ".."}});
       },
       "'..', which is not a plain file name"},
      {"IndexInvalidJson",
       [](const TempDir& d) {
         WriteText(d.File("model.safetensors.index.json"), "{\"weight_map\": {");
         return d.File("model.safetensors.index.json");
       },
       "invalid JSON index"},
      {"IndexNoWeightMap",
       [](const TempDir& d) {
         WriteText(d.File("model.safetensors.index.json"), "{\"metadata\": {}}");
         return d.File("model.safetensors.index.json");
       },
       "index has no 'weight_map' object"},
      {"WeightMapValueNotString",
       [](const TempDir& d) {
         return WriteIndex(d, {{"x", 3}});
       },
       "weight_map entry for tensor 'x' is not a string"},
      {"MalformedShard",
       [](const TempDir& d) {
         WriteBytes(d.File("s1.safetensors"), Prefix(BaseSt(), BaseSt().size() - 1));
         WriteIndex(d, {{"w", "s1.safetensors"}});
         return d.File("s1.safetensors");
       },
       "extend past the data section"},
      {"MalformedSingleFile",
       [](const TempDir& d) {
         WriteBytes(d.File("model.safetensors"), MakeSt("[]", 0));
         return d.File("model.safetensors");
       },
       "JSON header is not an object"},
  };
}

class CheckpointMalformedTest : public ::testing::TestWithParam<CheckpointCase> {};

TEST_P(CheckpointMalformedTest, ThrowsKilnError) {
  TempDir dir;
  const std::string path = GetParam().setup(dir);
  ExpectKilnError([&] { SafetensorsCheckpoint ck(dir.path()); }, path, GetParam().phrase);
}

INSTANTIATE_TEST_SUITE_P(Corpus, CheckpointMalformedTest, ::testing::ValuesIn(CheckpointCases()),
                         [](const ::testing::TestParamInfo<CheckpointCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace kiln
