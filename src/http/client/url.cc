#include "http/client/url.h"

#include <charconv>

#include "util/error.h"

namespace kiln::http {
namespace {

uint16_t ParsePort(const std::string& text, const std::string& url) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  KILN_CHECK(ec == std::errc() && end == text.data() + text.size() && value > 0 && value < 65536,
             "URL '", url, "': bad port '", text, "'");
  return static_cast<uint16_t>(value);
}

}  // namespace

std::string Url::HostHeader() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  std::string out = ipv6 ? "[" + host + "]" : host;
  if (port != 80) out += ":" + std::to_string(port);
  return out;
}

std::string Url::Join(const std::string& suffix) const {
  std::string base = path == "/" ? "" : path;
  if (suffix.empty()) return base.empty() ? "/" : base;
  return suffix.front() == '/' ? base + suffix : base + "/" + suffix;
}

Url ParseUrl(const std::string& text) {
  std::string rest = text;
  const std::string http = "http://";
  KILN_CHECK(rest.rfind("https://", 0) != 0, "URL '", text,
             "': https is not supported by kiln bench; use http:// (or a TLS-terminating proxy)");
  if (rest.rfind(http, 0) == 0) rest = rest.substr(http.size());
  KILN_CHECK(rest.find("://") == std::string::npos, "URL '", text, "': only http:// is supported");

  Url url;
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  url.path = slash == std::string::npos ? "/" : rest.substr(slash);
  while (url.path.size() > 1 && url.path.back() == '/') url.path.pop_back();

  if (!authority.empty() && authority.front() == '[') {  // [v6]:port
    const size_t close = authority.find(']');
    KILN_CHECK(close != std::string::npos, "URL '", text, "': unterminated '['");
    url.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      KILN_CHECK(authority[close + 1] == ':', "URL '", text, "': junk after ']'");
      url.port = ParsePort(authority.substr(close + 2), text);
    }
  } else {
    const size_t colon = authority.rfind(':');
    url.host = authority.substr(0, colon);
    if (colon != std::string::npos) url.port = ParsePort(authority.substr(colon + 1), text);
  }
  KILN_CHECK(!url.host.empty(), "URL '", text, "': no host");
  return url;
}

}  // namespace kiln::http
