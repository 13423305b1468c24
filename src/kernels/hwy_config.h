// Highway target selection shared by every kernels translation unit and the kernel tests.
// Include this before any hwy header: all TUs must agree on HWY_TARGETS, otherwise the
// dispatch tables and hwy's inline helpers would differ between them.
#pragma once

// AVX3_DL (Ice Lake / Zen 4: AVX-512 VNNI, VBMI2, ...) is opt-in in Highway 1.0.3; the int8
// dot products use its VNNI instructions. Caveat: Highway 1.0.3 compiles AVX3_DL with GCC's
// "avxvnni" (the VEX AVX-VNNI of Alder Lake) although its runtime check only requires AVX-512
// VNNI, so 256-bit vpdpbusd would be VEX-encoded and fault on Zen 4 / Ice Lake. Kernels use
// 512-bit VNNI only (see matmul.cc and qdot_avx512-inl.h).
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL
#endif

// x86 builds compile SCALAR (the fallback for anything without AVX2), AVX2, AVX3 and AVX3_DL.
// SSSE3/SSE4 would only serve pre-2013 CPUs and double the compile time of every kernel.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#endif
