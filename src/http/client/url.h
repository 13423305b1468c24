// A parsed http:// URL: what the client needs to connect and to build request targets.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::http {

struct Url {
  std::string host;  // name or address; IPv6 literals without brackets
  uint16_t port = 80;
  std::string path;  // starts with '/'; no trailing '/' unless it is just "/"

  // "host:port" as sent in the Host header (IPv6 literals bracketed).
  std::string HostHeader() const;
  // path joined with `suffix` ("/v1" + "/chat/completions"), without doubled slashes.
  std::string Join(const std::string& suffix) const;
};

// Accepts http://host[:port][/path] and bare host[:port][/path]. https:// is refused with a
// clear error (no TLS in the client: put a TLS-terminating proxy in front). Throws kiln::Error.
Url ParseUrl(const std::string& text);

}  // namespace kiln::http
