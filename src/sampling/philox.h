// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator, so the random number for a sequence's k-th token is a pure function of
// (seed, stream, k). Sampling thus gives the same tokens for the same seed whatever the batch,
// preemption or thread did before, and there is no generator state to carry or restore.
#pragma once

#include <array>
#include <cstdint>

namespace kiln {

using PhiloxBlock = std::array<uint32_t, 4>;

PhiloxBlock Philox4x32(PhiloxBlock counter, std::array<uint32_t, 2> key);

// Uniform in [0, 1) with 53 random bits. key = seed, counter = (index, stream).
double PhiloxUniform(uint64_t seed, uint64_t stream, uint64_t index);

}  // namespace kiln
