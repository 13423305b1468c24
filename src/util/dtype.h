// Element types of weights and their quantized block layouts (the GGML layouts, so GGUF
// tensors are used in place). Shared vocabulary of formats/ and kernels/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kQ8_0,  // 32 x int8, one f16 scale
  kQ4_0,  // 32 x 4-bit, one f16 scale, values (q - 8) * d
  kQ4_1,  // 32 x 4-bit, f16 scale and f16 min, values q * d + m
  kQ4_K,  // K-quants: 256-element super-blocks (room for them; kernels may not support all)
  kQ5_K,
  kQ6_K,
  kQ5_0,  // 32 x 5-bit, f16 scale, values (q - 16) * d (llama.cpp's fallback for q4_K rows
          // that are not whole super-blocks)
  kQ5_1,  // 32 x 5-bit, f16 scale and f16 min, values q * d + m (fallback for q5_K)
};

struct DTypeInfo {
  std::string_view name;  // "f32", "q4_1", ...
  int block_elems;        // elements per block (1 for plain types)
  int block_bytes;        // bytes per block
};

const DTypeInfo& GetDTypeInfo(DType t);
// The DType whose DTypeInfo::name is `name` ("q4_0"); nullopt for any other text.
std::optional<DType> DTypeFromName(std::string_view name);

// Bytes taken by `n` elements; nullopt when n is not a multiple of the block size
// or the result would overflow.
std::optional<uint64_t> BytesForElements(DType t, uint64_t n);

// GGML type ids as stored in GGUF tensor infos; nullopt for types Kiln does not load.
std::optional<DType> DTypeFromGgmlType(uint32_t ggml_type);
uint32_t GgmlTypeOf(DType t);

// Quantized block structs, byte-exact with GGML. `d` and `m` hold IEEE f16 bits.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[32];
};
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];  // element j in low nibble of qs[j], element j+16 in high nibble
};
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[16];
};
// Element j < 16: low nibble of qs[j] | bit j of qh (little-endian u32) << 4; element j + 16:
// high nibble of qs[j] | bit j + 16 of qh << 4.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[16];
};
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);

// K-quants: super-blocks of 256 elements (kernels/kquant.h has the element order).
inline constexpr int kQK_K = 256;
// 8 sub-blocks of 32, value = d * sc_s * q - dmin * m_s with 6-bit sc_s, m_s packed in
// `scales` and 4-bit q (q5_K: plus a fifth bit from qh).
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[128];
};
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
// 16 sub-blocks of 16, value = d * scales[s] * (q - 32), 6-bit q split into ql (4) and qh (2).
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
// GGML's activation type for K-quant dot products (not a weight type): value = d * qs[j];
// bsums[i] = sum of qs[16 i .. 16 i + 15].
struct BlockQ8_K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

}  // namespace kiln
