#include "util/metrics_merge.h"

namespace kiln {
namespace {

// The metric name of a "# HELP name ..." / "# TYPE name ..." line.
std::string_view CommentName(std::string_view line) {
  std::string_view rest = line.substr(7);  // after "# HELP " or "# TYPE "
  return rest.substr(0, rest.find(' '));
}

std::string_view SampleName(std::string_view sample) {
  return sample.substr(0, sample.find_first_of("{ "));
}

// The family a sample of `name` belongs to: `current` when `name` is it or one of its
// histogram / summary series (_bucket, _sum, _count), else `name` itself.
std::string_view FamilyOf(std::string_view name, std::string_view current) {
  if (!current.empty() && name.substr(0, current.size()) == current) {
    const std::string_view suffix = name.substr(current.size());
    if (suffix.empty() || suffix == "_bucket" || suffix == "_sum" || suffix == "_count") {
      return current;
    }
  }
  return name;
}

}  // namespace

std::string AddLabel(std::string_view sample, std::string_view label, std::string_view value) {
  if (label.empty()) return std::string(sample);
  const size_t name_end = sample.find_first_of("{ ");
  if (name_end == std::string_view::npos) return std::string(sample);
  std::string out(sample.substr(0, name_end));
  out += '{';
  out += label;
  out += "=\"";
  out += value;
  out += '"';
  if (sample[name_end] == '{') {
    const bool empty_labels = name_end + 1 < sample.size() && sample[name_end + 1] == '}';
    if (!empty_labels) out += ',';
    out += sample.substr(name_end + 1);
  } else {
    out += '}';
    out += sample.substr(name_end);
  }
  return out;
}

MetricsMerger::Family& MetricsMerger::FamilyNamed(std::string_view name) {
  for (Family& f : families_) {
    if (f.name == name) return f;
  }
  families_.push_back({std::string(name), "", "", {}});
  return families_.back();
}

void MetricsMerger::Add(std::string_view text, std::string_view label, std::string_view value) {
  std::string current;  // family of the last HELP / TYPE line
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const bool help = line.rfind("# HELP ", 0) == 0, type = line.rfind("# TYPE ", 0) == 0;
    if (help || type) {
      current = std::string(CommentName(line));
      Family& f = FamilyNamed(current);
      std::string& slot = help ? f.help_line : f.type_line;
      if (slot.empty()) slot = std::string(line);
      continue;
    }
    if (line.front() == '#') continue;
    FamilyNamed(FamilyOf(SampleName(line), current))
        .samples.push_back(AddLabel(line, label, value));
  }
}

std::string MetricsMerger::Render() const {
  std::string out;
  for (const Family& f : families_) {
    if (!f.help_line.empty()) out += f.help_line + "\n";
    if (!f.type_line.empty()) out += f.type_line + "\n";
    for (const std::string& s : f.samples) out += s + "\n";
  }
  return out;
}

}  // namespace kiln
