// Packed-panel MatMul for f32 / f16 / bf16 weights on the SIMD targets (AVX2, AVX-512): weights
// packed once at load into panels of L = Lanes(f32) output rows (16 on AVX-512, 8 on AVX2), so
// that one vector of weights holds one input element k of L rows and each x element is simply
// broadcast. Included by matmul-inl.h in the AVX2 / AVX3 / AVX3_DL passes (kHasFloatPanels).
//
// Panel layout (panel p = weight rows pL .. pL + L - 1, at p * FloatPanelStride):
//   f32, f16: K steps of L elements; step k, lane c = w[pL + c][k].
//   bf16:     ceil(K / 2) steps of L dwords; step j, lane c = w[pL + c][2j] in the low half and
//             w[pL + c][2j + 1] in the high half (odd K: high half 0). A bf16 is the top half of
//             its f32, so the two f32s of a dword are one shift and one mask away.
//   Rows past N are zero. Stride: the panel's bytes rounded up to 64.
// Why: decode then streams each worker's weights as a few long contiguous runs with software
// prefetch far ahead (row tiles read 4 rows of only 2-10 KB each and reached 8-15 GB/s on the
// Qwen2.5-0.5B shapes, against 27 GB/s for a plain read), and no lane sums are left to do.
//
// Numerics, per (x row r, weight row n), identical for every M, tile shape, lane and thread:
//   acc = 0; acc = fma(f32(w[n][k]), x[r][k], acc) for k = 0, 1, ..., K - 1 in order; y = acc.
// (bf16 weights: x arrives rounded to bf16, matmul.cc; with AVX512_BF16 each pair of k is one
// vdpbf16ps, Bf16DotPanelTile: both products are exact in f32, only the order of the two adds
// is the instruction's.) Every op is lane-wise, so a row's result depends on nothing else in
// its tile (batch invariance). Against the scalar twin only the rounding differs (it
// multiplies and adds separately).
// No include guard: matmul-inl.h includes it once per target pass, inside its own guard.

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using FloatTag = hn::ScalableTag<float>;

// Runs fn(WT{}) with WT the element type of float dtype t (float, hwy::float16_t,
// hwy::bfloat16_t); false (fn not run) for other dtypes.
template <class F>
HWY_INLINE bool WithFloatType(DType t, const F& fn) {
  switch (t) {
    case DType::kF32:
      fn(float{});
      return true;
    case DType::kF16:
      fn(hwy::float16_t{});
      return true;
    case DType::kBF16:
      fn(hwy::bfloat16_t{});
      return true;
    default:
      return false;
  }
}

// Output rows per panel (f32 lanes).
HWY_INLINE int64_t FloatPanelRows() { return static_cast<int64_t>(hn::Lanes(FloatTag())); }

// Input elements per panel step: bf16 steps hold pairs.
template <typename WT>
inline constexpr int64_t kFloatStepElems = std::is_same_v<WT, hwy::bfloat16_t> ? 2 : 1;

template <typename WT>
HWY_INLINE int64_t FloatPanelSteps(int64_t k) {
  return (k + kFloatStepElems<WT> - 1) / kFloatStepElems<WT>;
}

// Bytes of one panel step (one vector of weights: L elements, or L bf16 pairs).
template <typename WT>
HWY_INLINE int64_t FloatStepBytes() {
  return FloatPanelRows() * static_cast<int64_t>(sizeof(WT)) * kFloatStepElems<WT>;
}

template <typename WT>
HWY_INLINE int64_t FloatPanelStride(int64_t k) {
  return (FloatPanelSteps<WT>(k) * FloatStepBytes<WT>() + 63) / 64 * 64;
}

// Register tile: x rows x panels. Decode (M = 1) streams kFloatDecodePanels panels at once so
// that several FMA chains are in flight; GEMM tiles reuse each weight vector for several rows.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
inline constexpr int kFloatGemmRows = 4;
inline constexpr int kFloatGemmPanels = 4;
#else
// 4 x 2 tiles: 8 accumulators, 2 weight vectors (bf16: 4), one broadcast x; 40% less time than
// 2 x 2 for m = 128 on Zen 3 (docs/benchmarks.md).
inline constexpr int kFloatGemmRows = 4;
inline constexpr int kFloatGemmPanels = 2;
#endif
inline constexpr int kFloatDecodePanels = 4;
// How far ahead of a decode tile's loads each panel stream is prefetched (bytes).
inline constexpr int64_t kFloatPrefetchBytes = 4096;
// x rows per pass over the panels: a pass's activations (rows x K floats) stay in L2.
inline constexpr int64_t kFloatPassBytes = 512 * 1024;

// The R x P accumulator vectors of a register tile and their store.
template <int R, int P>
struct PanelAccumulators {
  using V = hn::Vec<FloatTag>;
  V acc[R][P];

  HWY_INLINE void Zero() {
    for (int r = 0; r < R; ++r) {
      for (int p = 0; p < P; ++p) acc[r][p] = hn::Zero(FloatTag());
    }
  }

  // y[r * y_stride + p * L + c] for lanes c in [lo, hi) of each panel (lo, hi: 0, L when whole).
  HWY_INLINE void Store(float* y, int64_t y_stride, int64_t lo, int64_t hi) const {
    const FloatTag df;
    const int64_t lanes = FloatPanelRows();
    for (int r = 0; r < R; ++r) {
      for (int p = 0; p < P; ++p) {
        float* out = y + r * y_stride + p * lanes;
        if (lo == 0 && hi == lanes) {
          hn::StoreU(acc[r][p], df, out);
        } else {
          HWY_ALIGN float tmp[hn::MaxLanes(df)];
          hn::Store(acc[r][p], df, tmp);
          for (int64_t c = lo; c < hi; ++c) out[c] = tmp[c];
        }
      }
    }
  }
};

// acc[r][p] += step s of P panels (p0 + p * stride) against f32 x rows r < R (x_stride floats
// apart) at element e = k.
template <typename WT, int R, int P>
struct FloatPanelTile : PanelAccumulators<R, P> {
  using typename PanelAccumulators<R, P>::V;
  using PanelAccumulators<R, P>::acc;
  using PanelAccumulators<R, P>::Zero;
  using XType = float;

  // One weight vector w of every panel times x[r][e] (broadcast) into every accumulator.
  HWY_INLINE void Fma(const V (&w)[P], const float* x, int64_t x_stride, int64_t e) {
    const FloatTag df;
    for (int r = 0; r < R; ++r) {
      const V xv = hn::Set(df, x[r * x_stride + e]);
      for (int p = 0; p < P; ++p) acc[r][p] = hn::MulAdd(w[p], xv, acc[r][p]);
    }
  }

  // Runs the whole K of panels at `panel` (P of them, `stride` apart) against x [R, k].
  // prefetch > 0: prefetches each panel's stream that many bytes ahead.
  HWY_INLINE void Run(const uint8_t* panel, int64_t stride, const float* x, int64_t x_stride,
                      int64_t k, int64_t prefetch) {
    const FloatTag df;
    const int64_t step_bytes = FloatStepBytes<WT>();
    const int64_t steps = FloatPanelSteps<WT>(k);
    Zero();
    for (int64_t s = 0; s < steps; ++s) {
      const uint8_t* at = panel + s * step_bytes;
      if (prefetch > 0 && (s * step_bytes) % 64 == 0) {
        for (int p = 0; p < P; ++p) hwy::Prefetch(at + p * stride + prefetch);
      }
      V w[P];
      if constexpr (std::is_same_v<WT, hwy::bfloat16_t>) {
        const hn::RebindToUnsigned<FloatTag> du;
        V hi[P];
        for (int p = 0; p < P; ++p) {
          const auto pair = hn::LoadU(du, reinterpret_cast<const uint32_t*>(at + p * stride));
          w[p] = hn::BitCast(df, hn::ShiftLeft<16>(pair));
          hi[p] = hn::BitCast(df, hn::And(pair, hn::Set(du, 0xFFFF0000u)));
        }
        Fma(w, x, x_stride, 2 * s);
        if (2 * s + 1 < k) Fma(hi, x, x_stride, 2 * s + 1);
      } else {
        for (int p = 0; p < P; ++p) {
          w[p] = LoadWeights(df, reinterpret_cast<const WT*>(at + p * stride));
        }
        Fma(w, x, x_stride, s);
      }
    }
  }
};

// FloatPanelTile with its weight type bound, as the Tile<R, P> of PanelColumns.
template <typename WT>
struct FloatTileOf {
  template <int R, int P>
  using Tile = FloatPanelTile<WT, R, P>;
};

#if HWY_TARGET == HWY_AVX3_DL
// The bf16 panels with AVX512_BF16 (matmul.cc compiles AVX3_DL code with it and sets
// MatMulArgs::bf16_dot only on CPUs that have it): acc[r][p] += one vdpbf16ps of panel p's step
// (L pairs) and x row r's pair s broadcast, against two FMAs plus the shift and mask that widen
// the pair in FloatPanelTile: half the instructions per multiply-add.
template <int R, int P>
struct Bf16DotPanelTile : PanelAccumulators<R, P> {
  using PanelAccumulators<R, P>::acc;
  using PanelAccumulators<R, P>::Zero;
  using XType = uint32_t;  // bf16 pairs (MatMulArgs::x_bf16)

  HWY_INLINE void Run(const uint8_t* panel, int64_t stride, const uint32_t* x, int64_t x_stride,
                      int64_t k, int64_t prefetch) {
    const int64_t steps = FloatPanelSteps<hwy::bfloat16_t>(k);
    static_assert(sizeof(__m512i) == 64);  // one step = one cache line
    Zero();
    for (int64_t s = 0; s < steps; ++s) {
      const uint8_t* at = panel + s * 64;
      __m512i w[P];
      for (int p = 0; p < P; ++p) {
        if (prefetch > 0) hwy::Prefetch(at + p * stride + prefetch);
        w[p] = _mm512_loadu_si512(at + p * stride);
      }
      for (int r = 0; r < R; ++r) {
        const __m512i xv = _mm512_set1_epi32(static_cast<int>(x[r * x_stride + s]));
        for (int p = 0; p < P; ++p) {
          acc[r][p].raw = _mm512_dpbf16_ps(acc[r][p].raw, reinterpret_cast<__m512bh>(w[p]),
                                           reinterpret_cast<__m512bh>(xv));
        }
      }
    }
  }
};
#endif

// x rows as a tile reads them: f32 (K floats apart) or bf16 pairs (ceil(K / 2) dwords apart).
template <typename XT>
struct PanelX {
  const XT* data;
  int64_t stride;
  const XT* Row(int64_t r) const { return data + r * stride; }
};

// y[r, n0:n1) for x rows [R, k] from the panels of w.packed, whole panels P at a time.
// Tile<R, P>: FloatPanelTile or Bf16DotPanelTile.
template <template <int, int> class Tile, int R, int P>
HWY_INLINE void PanelColumns(const MatMulArgs& a, int64_t panel_stride,
                             PanelX<typename Tile<R, P>::XType> x, int64_t r0, int64_t n0,
                             int64_t n1, int64_t prefetch) {
  const int64_t k = a.w->cols, n_out = a.w->rows, lanes = FloatPanelRows();
  float* y = a.y + r0 * n_out;
  Tile<R, P> tile;
  Tile<R, 1> one;
  int64_t n = n0 / lanes * lanes;
  while (n < n1) {
    const uint8_t* panel = a.w->packed + n / lanes * panel_stride;
    const int64_t lo = std::max<int64_t>(0, n0 - n);
    if (lo == 0 && n + P * lanes <= n1) {
      tile.Run(panel, panel_stride, x.Row(r0), x.stride, k, prefetch);
      tile.Store(y + n, n_out, 0, lanes);
      n += P * lanes;
    } else {
      // A panel only partly in [n0, n1), or fewer than P whole panels left.
      one.Run(panel, panel_stride, x.Row(r0), x.stride, k, prefetch);
      one.Store(y + n, n_out, lo, std::min(lanes, n1 - n));
      n += lanes;
    }
  }
}

// The panel MatMul y[:, n0:n1) (one worker's share of the output rows) with Tile.
template <template <int, int> class Tile>
HWY_INLINE void PanelRows(const MatMulArgs& a, int64_t panel_stride,
                          PanelX<typename Tile<1, 1>::XType> x, int64_t n0, int64_t n1) {
  const int64_t m = a.m;
  if (m == 1) {
    // Decode: one pass over this worker's weights, prefetched ahead where that helps (matmul.cc).
    const int64_t ahead = a.float_decode_prefetch ? kFloatPrefetchBytes : 0;
    PanelColumns<Tile, 1, kFloatDecodePanels>(a, panel_stride, x, 0, n0, n1, ahead);
    return;
  }
  constexpr int R = kFloatGemmRows;
  const int64_t row_bytes = x.stride * static_cast<int64_t>(sizeof(*x.data));
  const int64_t pass_rows = std::max<int64_t>(R, kFloatPassBytes / row_bytes / R * R);
  for (int64_t p0 = 0; p0 < m; p0 += pass_rows) {
    const int64_t p1 = std::min(m, p0 + pass_rows);
    // Weight panels of one group stay in L2 while all x tiles of the pass sweep them.
    const int64_t group = kFloatGemmPanels * FloatPanelRows();
    for (int64_t g0 = n0, g1; g0 < n1; g0 = g1) {
      g1 = std::min(n1, (g0 / group + 1) * group);
      // The first x tile brings the group in from memory: it prefetches.
      const auto ahead = [&](int64_t r) { return a.prefetch && r == p0 ? kFloatPrefetchBytes : 0; };
      int64_t r = p0;
      for (; r + R <= p1; r += R) {
        PanelColumns<Tile, R, kFloatGemmPanels>(a, panel_stride, x, r, g0, g1, ahead(r));
      }
      // 2 or 3 rows left (batched decode of a few sequences): one more pass over the group
      // for 2 of them rather than one per row.
      if (r + 2 <= p1) {
        PanelColumns<Tile, 2, kFloatGemmPanels>(a, panel_stride, x, r, g0, g1, ahead(r));
        r += 2;
      }
      for (; r < p1; ++r) {
        PanelColumns<Tile, 1, kFloatGemmPanels>(a, panel_stride, x, r, g0, g1, ahead(r));
      }
    }
  }
}

#if HWY_TARGET == HWY_AVX3_DL
// The AMX tiles' MatMul over the same bf16 panels (fgemm_amx-inl.h), for k pairs a multiple of 16.
inline constexpr int64_t kAmxBf16StepMultiple = 16;
inline void AmxBf16PanelRows(const MatMulArgs& a, int64_t panel_stride, int64_t steps, int64_t n0,
                             int64_t n1);
#endif

// The packed float MatMul: y[:, n0:n1) (one worker's share of the output rows).
template <typename WT>
void FloatPanelRowsT(const MatMulArgs& a, int64_t n0, int64_t n1) {
  const int64_t k = a.w->cols, panel_stride = FloatPanelStride<WT>(k);
#if HWY_TARGET == HWY_AVX3_DL
  if constexpr (std::is_same_v<WT, hwy::bfloat16_t>) {
    // Every M of a matrix takes the same path (batch invariance): AMX where K allows it.
    const int64_t steps = FloatPanelSteps<WT>(k);
    if (a.amx_bf16 && k % (2 * kAmxBf16StepMultiple) == 0) {
      AmxBf16PanelRows(a, panel_stride, steps, n0, n1);
      return;
    }
    if (a.bf16_dot) {
      PanelRows<Bf16DotPanelTile>(a, panel_stride, {a.x_bf16, steps}, n0, n1);
      return;
    }
  }
#endif
  PanelRows<FloatTileOf<WT>::template Tile>(a, panel_stride, {a.x, k}, n0, n1);
}

// Writes w's panels (ceil(rows / L) of FloatPanelStride bytes) to dst.
template <typename WT>
void PackFloatMatrixT(const Matrix& w, uint8_t* dst) {
  const int64_t k = w.cols, lanes = FloatPanelRows();
  const int64_t stride = FloatPanelStride<WT>(k), steps = FloatPanelSteps<WT>(k);
  constexpr int64_t kElems = kFloatStepElems<WT>;
  for (int64_t n = 0; n < w.rows; n += lanes) {
    WT* panel = reinterpret_cast<WT*>(dst + n / lanes * stride);
    std::memset(panel, 0, static_cast<size_t>(stride));
    for (int64_t c = 0; c < std::min(lanes, w.rows - n); ++c) {
      const WT* row = reinterpret_cast<const WT*>(w.data + (n + c) * w.row_bytes);
      for (int64_t s = 0; s < steps; ++s) {
        for (int64_t e = 0; e < kElems && s * kElems + e < k; ++e) {
          panel[(s * lanes + c) * kElems + e] = row[s * kElems + e];
        }
      }
    }
  }
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();
