// safetensors reader: one file, or a sharded checkpoint described by
// model.safetensors.index.json. Header JSON, dtypes, shapes and data_offsets are validated
// against the file (offsets in bounds, sizes equal to shape x dtype, no overlaps, header
// length sane) before any tensor is exposed; errors name the file and the problem.
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
  std::vector<std::string> Names() const override;
  std::string Describe() const override { return file_.path(); }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  MappedFile file_;
  std::map<std::string, TensorView> tensors_;
  std::map<std::string, std::string> metadata_;  // "__metadata__"
};

// All shards of a checkpoint directory: model.safetensors, or the shards listed in
// model.safetensors.index.json (each tensor must be in the shard the index names).
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
