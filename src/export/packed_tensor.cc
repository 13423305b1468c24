#include "export/packed_tensor.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "kernels/ops.h"
#include "util/error.h"

namespace kiln {
namespace {

// A tensor's bytes in the dtype it is written in: the source's mapping, or a converted copy.
struct TensorBytes {
  DType dtype;
  std::vector<int64_t> shape;
  const uint8_t* data;
  uint64_t bytes;
  std::vector<uint8_t> owned;  // the converted copy, when there is one
};

kernels::Matrix AsMatrix(const TensorBytes& t) {
  const int64_t rows = t.shape[0], cols = t.shape[1];
  return kernels::Matrix{t.dtype, rows, cols, t.data, t.bytes / static_cast<uint64_t>(rows)};
}

// Runs fn(r0, r1) over [0, n) split across the CPUs.
template <typename Fn>
void ParallelRows(int64_t n, const Fn& fn) {
  const int64_t threads = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 8);
  std::vector<std::thread> pool;
  const int64_t step = (n + threads - 1) / threads;
  for (int64_t r0 = step; r0 < n; r0 += step) pool.emplace_back(fn, r0, std::min(n, r0 + step));
  fn(0, std::min(n, step));
  for (std::thread& t : pool) t.join();
}

// The matrix `t` in dtype `to`: each row dequantized to f32 and quantized again.
void Convert(TensorBytes& t, DType to, const std::string& name) {
  const kernels::Matrix from = AsMatrix(t);
  const std::optional<uint64_t> row_bytes = BytesForElements(to, static_cast<uint64_t>(from.cols));
  KILN_CHECK(row_bytes.has_value(), "tensor '", name, "': its ", from.cols,
             " columns are not a whole number of ", GetDTypeInfo(to).name, " blocks");
  std::vector<uint8_t> out(*row_bytes * static_cast<uint64_t>(from.rows));
  ParallelRows(from.rows, [&](int64_t r0, int64_t r1) {
    std::vector<float> row(static_cast<size_t>(from.cols));
    for (int64_t r = r0; r < r1; ++r) {
      kernels::DequantizeRow(from, r, row.data());
      kernels::QuantizeRow(to, row.data(), from.cols, out.data() + r * *row_bytes);
    }
  });
  t.dtype = to;
  t.owned = std::move(out);
  t.data = t.owned.data();
  t.bytes = t.owned.size();
}

// Writes `t` packed when this target's kernels pack its dtype, else as stored; true if packed.
bool WriteMatrix(const std::string& name, const TensorBytes& t, ArtifactWriter& writer) {
  const kernels::Matrix m = AsMatrix(t);
  const uint64_t bytes = kernels::PackedMatrixBytes(m);
  if (bytes == 0) {
    writer.AddTensor(name, t.dtype, t.shape, ArtifactLayout::kStored, t.data, t.bytes);
    return false;
  }
  const uint64_t alloc = (bytes + 63) / 64 * 64;
  std::unique_ptr<uint8_t, decltype(&std::free)> panels(
      static_cast<uint8_t*>(std::aligned_alloc(64, alloc)), &std::free);
  KILN_CHECK(panels != nullptr, "out of memory packing '", name, "' (", bytes, " bytes)");
  kernels::PackMatrix(m, panels.get());
  writer.AddTensor(name, t.dtype, t.shape, ArtifactLayout::kPacked, panels.get(), bytes);
  return true;
}

}  // namespace

PackedTensorCounts WritePackedTensors(const WeightSource& source, const ModelConfig& config,
                                      NameScheme scheme, const std::string& dtype,
                                      ArtifactWriter& writer) {
  const std::vector<std::string> names = MatMulWeightNames(config, scheme);
  const std::set<std::string> matmul(names.begin(), names.end());
  const std::string embed_name = EmbeddingName(scheme), head_name = LmHeadName(scheme);
  const std::optional<DType> named = DTypeFromName(dtype);
  const bool convert = dtype != "source" && named.has_value();
  const DType to = named.value_or(DType::kF32);
  PackedTensorCounts counts;
  TensorBytes embed{};
  for (const std::string& name : source.Names()) {
    const TensorView& v = *source.Find(name);
    TensorBytes t{v.dtype, v.shape, v.data, v.nbytes, {}};
    const bool is_matrix = matmul.count(name) > 0, is_embed = name == embed_name;
    if ((is_matrix || is_embed) && convert && to != t.dtype && t.shape.size() == 2) {
      Convert(t, to, name);
    }
    ++counts.tensors;
    if (is_matrix) {
      counts.packed += WriteMatrix(name, t, writer);
    } else {
      writer.AddTensor(name, t.dtype, t.shape, ArtifactLayout::kStored, t.data, t.bytes);
    }
    if (is_embed) embed = std::move(t);
  }
  if (config.tie_word_embeddings && source.Find(head_name) == nullptr && embed.data != nullptr) {
    // Only a packed head is worth its bytes: the stored one would be the embedding again.
    const kernels::Matrix m = AsMatrix(embed);
    if (kernels::PackedMatrixBytes(m) > 0) {
      ++counts.tensors;
      counts.packed += WriteMatrix(head_name, embed, writer);
    }
  }
  return counts;
}

}  // namespace kiln
