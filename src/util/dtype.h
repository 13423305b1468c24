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
};

struct DTypeInfo {
  std::string_view name;  // "f32", "q4_1", ...
  int block_elems;        // elements per block (1 for plain types)
  int block_bytes;        // bytes per block
};

const DTypeInfo& GetDTypeInfo(DType t);

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
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);

}  // namespace kiln
