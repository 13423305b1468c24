// `kiln export`: turns a model (a GGUF file or a Hugging Face folder) into a Kiln artifact
// (formats/kiln_artifact.h) that `kiln serve` maps and runs without touching the weights:
// every matrix the forward pass multiplies by is converted to the requested dtype and packed
// into the panels the kernels read on the requested target; the embedding, norms and the
// tokenizer, chat template, config and generation config travel as stored.
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

struct ExportOptions {
  // Weights' dtype: "source" (as stored), or f32, f16, bf16, q8_0, q4_0, q4_1 (converted as
  // llama.cpp's reference quantizers do).
  std::string dtype = "source";
  // Kernels target (kernels/target.h) or "native": this CPU's best.
  std::string target = "native";
  // Static shape envelope recorded in the manifest (0: none): the most sequences in a batch
  // and the most tokens (prompt + generated) per sequence that `kiln serve` then allows.
  int64_t batch_size = 0;
  int64_t sequence_length = 0;
};

struct ExportResult {
  std::string path;
  std::string target;  // resolved ("native" named)
  uint64_t bytes = 0;
  int tensors = 0;
  int packed_tensors = 0;
  double seconds = 0;
};

// "q4_0" etc. are accepted; throws kiln::Error listing the accepted names otherwise.
void CheckExportDType(const std::string& dtype);

// Writes the artifact for `source` to `out` atomically (a temporary file in the same folder,
// fsynced, then renamed over `out`). Pins the kernels to the target (kernels::UseTarget) for
// the rest of the process. Throws kiln::Error on a bad source or option.
ExportResult ExportModel(const std::string& source, const std::string& out,
                         const ExportOptions& options);

}  // namespace kiln
