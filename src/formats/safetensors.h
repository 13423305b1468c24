// safetensors reader: one file, or a sharded checkpoint described by
// model.safetensors.index.json. Header JSON, dtypes, shapes and data_offsets are validated
// against the file (offsets in bounds, sizes equal to shape x dtype, no overlaps, header
// length sane) before any tensor is exposed; errors name the file and the problem.
//
// As the safetensors spec requires, the tensors must tile the data section exactly (sorted by
// offset: no overlap, no hole, nothing after the last one), and duplicate JSON keys are
// rejected. Kiln loads F32, F16 and BF16; other dtypes are rejected by name. Data pointers are
// file + 8 + N + begin: aligned to the element size when the writer padded the header to a
// multiple of 8 and ordered tensors by element size (the reference writer and
// SafetensorsWriter both do), but a hand-made file can hold unaligned tensors, so consumers
// should not assume alignment.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "formats/tensor.h"
#include "util/mmap_file.h"

namespace kiln {

// Largest JSON header accepted (the reference implementation uses a similar 100 MB cap).
inline constexpr uint64_t kSafetensorsMaxHeader = uint64_t{100} << 20;

class SafetensorsFile : public WeightSource {
 public:
  explicit SafetensorsFile(const std::string& path);

  const TensorView* Find(const std::string& name) const override;
  std::vector<std::string> Names() const override;  // sorted
  std::string Describe() const override { return file_.path(); }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Tensors of a valid safetensors type Kiln does not load (I64, F64, U8, BOOL, ...), as
  // "name (TYPE)": checked, then left out.
  const std::vector<std::string>& skipped() const { return skipped_; }

 private:
  MappedFile file_;
  std::vector<std::string> skipped_;
  std::map<std::string, TensorView> tensors_;
  std::map<std::string, std::string> metadata_;  // "__metadata__"
};

// All shards of a checkpoint directory: model.safetensors, or the shards listed in
// model.safetensors.index.json (each tensor must be in the shard the index names; shard names
// must be plain file names in the directory; only tensors listed in the weight_map are served).
// The index wins when both files exist.
class SafetensorsCheckpoint : public WeightSource {
 public:
  explicit SafetensorsCheckpoint(const std::string& dir);

  const TensorView* Find(const std::string& name) const override;
  std::vector<std::string> Names() const override;
  std::string Describe() const override { return dir_; }

 private:
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::map<std::string, const TensorView*> index_;
};

}  // namespace kiln
