#include "http/client/url.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace kiln::http {
namespace {

TEST(Url, Forms) {
  Url a = ParseUrl("http://localhost:8080");
  EXPECT_EQ(a.host, "localhost");
  EXPECT_EQ(a.port, 8080);
  EXPECT_EQ(a.path, "/");
  EXPECT_EQ(a.HostHeader(), "localhost:8080");
  Url b = ParseUrl("127.0.0.1/v1/");
  EXPECT_EQ(b.port, 80);
  EXPECT_EQ(b.path, "/v1");
  EXPECT_EQ(b.Join("/models"), "/v1/models");
  EXPECT_EQ(b.HostHeader(), "127.0.0.1");
  Url c = ParseUrl("http://[::1]:9000/x");
  EXPECT_EQ(c.host, "::1");
  EXPECT_EQ(c.HostHeader(), "[::1]:9000");
  EXPECT_EQ(ParseUrl("http://h").Join("v1"), "/v1");
}

TEST(Url, Errors) {
  EXPECT_THROW(ParseUrl("https://example.com"), Error);
  EXPECT_THROW(ParseUrl("ftp://example.com"), Error);
  EXPECT_THROW(ParseUrl("http://:80"), Error);
  EXPECT_THROW(ParseUrl("http://h:99999"), Error);
  EXPECT_THROW(ParseUrl("http://h:x"), Error);
}

}  // namespace
}  // namespace kiln::http
