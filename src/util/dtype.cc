#include "util/dtype.h"

#include <iterator>

namespace kiln {
namespace {

// GGML type ids (ggml.h enum ggml_type).
constexpr uint32_t kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ4_0 = 2, kGgmlQ4_1 = 3, kGgmlQ5_0 = 6,
                   kGgmlQ5_1 = 7, kGgmlQ8_0 = 8, kGgmlQ4_K = 12, kGgmlQ5_K = 13, kGgmlQ6_K = 14,
                   kGgmlBF16 = 30;

const DTypeInfo kInfos[] = {
    {"f32", 1, 4},         {"f16", 1, 2},         {"bf16", 1, 2},
    {"q8_0", 32, 34},      {"q4_0", 32, 18},      {"q4_1", 32, 20},
    {"q4_K", 256, 144},    {"q5_K", 256, 176},    {"q6_K", 256, 210},
    {"q5_0", 32, 22},      {"q5_1", 32, 24},
};

}  // namespace

const DTypeInfo& GetDTypeInfo(DType t) { return kInfos[static_cast<int>(t)]; }

std::optional<DType> DTypeFromName(std::string_view name) {
  for (size_t i = 0; i < std::size(kInfos); ++i) {
    if (kInfos[i].name == name) return static_cast<DType>(i);
  }
  return std::nullopt;
}

std::optional<uint64_t> BytesForElements(DType t, uint64_t n) {
  const DTypeInfo& info = GetDTypeInfo(t);
  if (n % info.block_elems != 0) return std::nullopt;
  uint64_t blocks = n / info.block_elems;
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(info.block_bytes), &bytes)) {
    return std::nullopt;
  }
  return bytes;
}

std::optional<DType> DTypeFromGgmlType(uint32_t ggml_type) {
  switch (ggml_type) {
    case kGgmlF32: return DType::kF32;
    case kGgmlF16: return DType::kF16;
    case kGgmlBF16: return DType::kBF16;
    case kGgmlQ8_0: return DType::kQ8_0;
    case kGgmlQ4_0: return DType::kQ4_0;
    case kGgmlQ4_1: return DType::kQ4_1;
    case kGgmlQ4_K: return DType::kQ4_K;
    case kGgmlQ5_K: return DType::kQ5_K;
    case kGgmlQ6_K: return DType::kQ6_K;
    case kGgmlQ5_0: return DType::kQ5_0;
    case kGgmlQ5_1: return DType::kQ5_1;
    default: return std::nullopt;
  }
}

uint32_t GgmlTypeOf(DType t) {
  switch (t) {
    case DType::kF32: return kGgmlF32;
    case DType::kF16: return kGgmlF16;
    case DType::kBF16: return kGgmlBF16;
    case DType::kQ8_0: return kGgmlQ8_0;
    case DType::kQ4_0: return kGgmlQ4_0;
    case DType::kQ4_1: return kGgmlQ4_1;
    case DType::kQ4_K: return kGgmlQ4_K;
    case DType::kQ5_K: return kGgmlQ5_K;
    case DType::kQ6_K: return kGgmlQ6_K;
    case DType::kQ5_0: return kGgmlQ5_0;
    case DType::kQ5_1: return kGgmlQ5_1;
  }
  return kGgmlF32;
}

}  // namespace kiln
