#include "export/hub_id.h"

#include "util/error.h"

namespace kiln::hub {
namespace {

constexpr size_t kMaxNameLength = 96;       // huggingface_hub's REPO_ID_REGEX
constexpr size_t kMaxRevisionLength = 255;  // one path under refs/, kept within NAME_MAX

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// One part of a repo id (namespace or name): [\w.-]+ that starts and ends with \w.
std::string PartProblem(std::string_view part, std::string_view what) {
  if (part.empty()) return StrCat("the ", what, " is empty");
  for (char c : part) {
    if (!IsWordChar(c) && c != '-' && c != '.') {
      return StrCat("the ", what, " may only use letters, digits, '_', '-' and '.'");
    }
  }
  if (!IsWordChar(part.front()) || !IsWordChar(part.back())) {
    return StrCat("the ", what, " cannot start or end with '-' or '.'");
  }
  return "";
}

// git check-ref-format's rules for one '/'-separated component.
std::string RefComponentProblem(std::string_view part) {
  if (part.empty()) return "it has an empty '/'-separated part";
  if (part.front() == '.') return "a '/'-separated part starts with '.'";
  if (part.size() >= 5 && part.substr(part.size() - 5) == ".lock") {
    return "a '/'-separated part ends with '.lock'";
  }
  return "";
}

}  // namespace

std::string RepoIdProblem(std::string_view repo_id) {
  const size_t slash = repo_id.find('/');
  if (slash != std::string_view::npos && repo_id.find('/', slash + 1) != std::string_view::npos) {
    return "a repo id is 'name' or 'org/name', with one '/' at most";
  }
  const std::string_view name =
      slash == std::string_view::npos ? repo_id : repo_id.substr(slash + 1);
  if (slash != std::string_view::npos) {
    if (std::string p = PartProblem(repo_id.substr(0, slash), "org"); !p.empty()) return p;
  }
  if (std::string p = PartProblem(name, "name"); !p.empty()) return p;
  if (name.size() > kMaxNameLength) return StrCat("the name is longer than ", kMaxNameLength);
  if (repo_id.find("--") != std::string_view::npos ||
      repo_id.find("..") != std::string_view::npos) {
    return "a repo id cannot contain '--' or '..'";
  }
  if (name.size() >= 4 && name.substr(name.size() - 4) == ".git") {
    return "a repo id cannot end with '.git'";
  }
  return "";
}

std::string RevisionProblem(std::string_view revision) {
  if (revision.empty()) return "the revision is empty";
  if (revision.size() > kMaxRevisionLength) return "the revision is too long";
  for (char c : revision) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || std::string_view(" ~^:?*[\\").find(c) != std::string_view::npos) {
      return "the revision contains a character git does not allow in a ref name";
    }
  }
  if (revision == "@" || revision.find("@{") != std::string_view::npos) {
    return "the revision cannot be '@' or contain '@{'";
  }
  size_t start = 0;
  while (true) {
    const size_t slash = revision.find('/', start);
    const std::string_view part = revision.substr(start, slash - start);
    if (std::string p = RefComponentProblem(part); !p.empty()) return "in the revision, " + p;
    if (slash == std::string_view::npos) return "";
    start = slash + 1;
  }
}

bool IsCommitHash(std::string_view revision) {
  if (revision.size() != 40) return false;
  for (char c : revision) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

HubId ParseHubId(std::string_view text) {
  auto check = [text](bool ok, std::string_view problem) {
    KILN_CHECK(ok, "'", text, "' is not a Hugging Face Hub id: ", problem,
               " (one is org/name[@revision][:file])");
  };
  check(!text.empty(), "it is empty");
  HubId id;
  // ':' and '@' cannot occur in repo ids, nor ':' in git refs: the first of each splits.
  const size_t colon = text.find(':');
  const std::string_view head = text.substr(0, colon);
  if (colon != std::string_view::npos) {
    id.file = std::string(text.substr(colon + 1));
    check(!id.file.empty(), "nothing after ':'");
  }
  const size_t at = head.find('@');
  id.repo_id = std::string(head.substr(0, at));
  if (at != std::string_view::npos) id.revision = std::string(head.substr(at + 1));
  const std::string repo_problem = RepoIdProblem(id.repo_id);
  check(repo_problem.empty(), repo_problem);
  const std::string rev_problem = RevisionProblem(id.revision);
  check(rev_problem.empty(), rev_problem);
  return id;
}

std::string RepoFolderName(std::string_view repo_id) {
  std::string out = "models--";
  for (char c : repo_id) {
    if (c == '/') {
      out += "--";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Describe(const HubId& id) {
  std::string out = id.repo_id;
  if (id.revision != kDefaultRevision) out += "@" + id.revision;
  if (!id.file.empty()) out += ":" + id.file;
  return out;
}

}  // namespace kiln::hub
