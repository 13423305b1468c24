// Scalar IEEE f16 and bfloat16 conversions (the SIMD versions live in kernels/).
#pragma once

#include <cstdint>
#include <bit>
#include <cstring>

namespace kiln {

inline float Bf16ToF32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even, NaN kept quiet (as torch does).
inline uint16_t F32ToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

inline float F16ToF32(uint16_t h) {
  return static_cast<float>(std::bit_cast<_Float16>(h));
}

inline uint16_t F32ToF16(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }

}  // namespace kiln
