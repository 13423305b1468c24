// Repacks a model's weight matrices once, at load, into the layout the active SIMD target's
// matmul kernels read (kernels::PackMatrix; q8_0/q4_0/q4_1 become 16-row panels on AVX-512 VNNI
// CPUs and 8-row panels on AVX2, so decode streams each matrix as one contiguous run instead of
// strided rows; float weights become f32-lane panels on AVX2 and AVX-512). The copies live in one
// buffer on transparent huge pages; the file mapping stays for embedding lookups. KILN_REPACK=0
// skips this (for measurement).
#pragma once

#include <cstdint>
#include <vector>

#include "model/weights.h"
#include "util/huge_buffer.h"

namespace kiln {

// Packs every matrix of `w` that the kernels pack on this CPU, points its Matrix::packed into
// the returned buffer (empty when nothing was packed) and returns it; the buffer must outlive
// `w`'s use. The tied LM head is packed once (the embedding itself is only row-indexed).
HugeBuffer PackWeights(ModelWeights& w);
// The same for any list of matrices (an encoder's); each listed once.
HugeBuffer PackMatrices(const std::vector<kernels::Matrix*>& matrices);

}  // namespace kiln
