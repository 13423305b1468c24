// Activation quantization for the integer MatMul paths (internal to kernels/, exposed for tests).
//
// Before a quantized-weight MatMul, each x row [K] is quantized into blocks of 32 exactly as
// llama.cpp's x86 quantize_row_q8_0 / quantize_row_q8_1 do (their AVX2 code, which is what runs
// on the CPUs Kiln targets, not the *_ref C code):
//   amax = max |x_j|,  d = amax / 127,  id = amax != 0 ? 127 / amax : 0,
//   q_j  = round_half_even(x_j * id)          (in [-127, 127]),
//   stored d = f16(d),  stored s = f16(d * sum_j q_j)   (s only matters for q4_1 weights).
// The dots then use the f16-rounded d and s, as GGML does. Block sums of q are kept too: they
// turn (nibble - 8) * q into nibble * q - 8 * sum(q), so every dot is unsigned x signed bytes.
#pragma once

#include <cstdint>
#include <memory>

namespace kiln::kernels {

inline constexpr int64_t kQBlock = 32;  // elements per quantized block (q8_0, q4_0, q4_1)

// Non-owning view of quantized activations, `rows` x `k` (k a multiple of 32).
struct ActsView {
  int64_t k = 0;
  int8_t* qs = nullptr;     // [rows, k] quants
  float* ds = nullptr;      // [rows, k/32, 2]: {f16(d), f16(d * sum q)} as floats
  int32_t* sums = nullptr;  // [rows, k/32]: sum of the block's quants (exact)

  int64_t blocks() const { return k / kQBlock; }
  // The view starting at row r.
  ActsView Row(int64_t r) const {
    return {k, qs + r * k, ds + r * blocks() * 2, sums + r * blocks()};
  }
};

// Owns the memory behind an ActsView; grows on demand and never shrinks, so steady-state
// calls do not allocate. The three arrays are 64-byte aligned.
class ActsBuffer {
 public:
  ActsView Get(int64_t rows, int64_t k);

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t[], Free> mem_;
  uint64_t capacity_ = 0;
};

// Quantizes x [rows, out.k] (rows contiguous) into out's rows [0, rows). SIMD, dispatched.
void QuantizeActs(const float* x, int64_t rows, const ActsView& out);

}  // namespace kiln::kernels
