#include "cli/export_command.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "cli/default_model.h"
#include "cli/observability_flags.h"
#include "export/exporter.h"
#include "kernels/target.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln {
namespace {

struct ExportFlags {
  std::string source;
  std::string output;
  ExportOptions options;
  ObservabilityOptions observability;  // --json-output only
};

std::string Gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  return buf;
}

// OUT given as a folder (or ending in /): the source's stem with the .kiln extension inside it.
std::string OutputPath(const ExportFlags& f, const std::string& source_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (f.output.empty() || f.output.back() == '/' || fs::is_directory(f.output, ec)) {
    fs::path dir = f.output.empty() ? fs::path(".") : fs::path(f.output);
    fs::path src(source_path);
    std::string stem = fs::is_directory(src, ec) ? src.lexically_normal().filename().string()
                                                 : src.stem().string();
    if (stem.empty() || stem == ".") stem = "model";
    fs::create_directories(dir, ec);
    return (dir / (stem + "-" + f.options.dtype + ".kiln")).string();
  }
  return f.output;
}

void RunExport(const ExportFlags& f) {
  ApplyLogFlags(f.observability);
  const std::string source = ResolveModelId(f.source);
  const std::string out = OutputPath(f, source);
  log::Info(StrCat("exporting ", source, " (dtype ", f.options.dtype, ", target ", f.options.target,
                   ") to ", out));
  const ExportResult r = ExportModel(source, out, f.options);
  std::printf("%s: %d tensors (%d packed for %s), %s, in %.1f s\n", r.path.c_str(), r.tensors,
              r.packed_tensors, r.target.c_str(), Gib(r.bytes).c_str(), r.seconds);
}

std::string TargetHelp() {
  std::string names;
  for (const std::string& n : kernels::TargetNames()) names += (names.empty() ? "" : ", ") + n;
  return StrCat("Kernels target whose weight layout is written: native (this CPU's best, now ",
                kernels::NativeTarget(), ") or one of ", names,
                ". kiln serve refuses an artifact whose target this CPU cannot run, and runs "
                "a weaker target's artifact on that target");
}

}  // namespace

void AddExportCommand(CLI::App& app) {
  auto f = std::make_shared<ExportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Compile a model once into a Kiln artifact (.kiln): weights converted to --dtype and "
      "packed into the layout the kernels read on --target, page-aligned, with the tokenizer, "
      "chat template, configs and a manifest (source digest, options, per-tensor checksums, "
      "shape envelope). `kiln serve ARTIFACT` maps it and starts without touching the weights. "
      "kiln serve --model-id SOURCE does this itself into the cache (see kiln cache --help)");
  cmd->add_option("source", f->source,
                  "A GGUF file, a Hugging Face model folder (config.json, *.safetensors, "
                  "tokenizer.json), or a Hub id org/name[@revision][:file] in the local "
                  "Hugging Face cache")
      ->required();
  cmd->add_option("-o,--output", f->output,
                  "Artifact path, or a folder to write SOURCE-DTYPE.kiln into (default: the "
                  "current folder)");
  cmd->add_option("--dtype", f->options.dtype,
                  "Weights' type: source (as stored, K-quants included), f32, f16, bf16, q8_0, "
                  "q4_0 or q4_1 (converted as llama.cpp's reference quantizers do)")
      ->capture_default_str();
  cmd->add_option("--target", f->options.target, TargetHelp())->capture_default_str();
  cmd->add_option("--batch-size", f->options.batch_size,
                  "Static envelope: most sequences batched at once, which kiln serve then "
                  "enforces and reports in /info (0: none)")
      ->capture_default_str();
  cmd->add_option("--sequence-length", f->options.sequence_length,
                  "Static envelope: most tokens (prompt + generated) per sequence (0: none)")
      ->capture_default_str();
  AddLogFlags(cmd, f->observability);
  cmd->callback([f] { RunExport(*f); });
}

}  // namespace kiln
