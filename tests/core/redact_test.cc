// tests/core/redact_test.cc — RedactUrl, RedactUrlsInText, IsSensitiveHeader
// and the process-wide rules (mulligan/http/redact.h). Every expected string
// is written out by hand from the rules of the header comment.

#include "mulligan/http/redact.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace mulligan {
namespace {

// Restores the default rules when a test that changed them ends.
class RedactRulesTest : public ::testing::Test {
 protected:
  void TearDown() override { ASSERT_TRUE(SetRedactionRules(RedactionRules{}).ok()); }
};

TEST(RedactTest, TheDefaultListsAreTheDocumentedOnes) {
  const std::vector<std::string> params = {
      "access_token", "refresh_token", "id_token", "client_secret", "api_key", "apikey",
      "key", "token", "private_token", "auth", "password", "secret", "signature", "sig",
      "x-amz-signature", "x-amz-security-token", "x-goog-signature"};
  EXPECT_EQ(DefaultSensitiveQueryParams(), params);
  const std::vector<std::string> headers = {"authorization", "proxy-authorization", "cookie",
                                            "set-cookie"};
  EXPECT_EQ(AlwaysSensitiveHeaders(), headers);
  EXPECT_EQ(kRedacted, "[redacted]");
  EXPECT_EQ(RedactionRules{}.query_params, params);
  EXPECT_TRUE(RedactionRules{}.extra_headers.empty());
}

TEST(RedactTest, UserinfoIsMaskedWholeUserAndPassword) {
  EXPECT_EQ(RedactUrl("http://user:s3cr3t-9f2c@host/path"), "http://[redacted]@host/path");
  // A token as the user name (GitHub's https://<token>@github.com).
  EXPECT_EQ(RedactUrl("https://s3cr3t-9f2c@host"), "https://[redacted]@host");
  EXPECT_EQ(RedactUrl("https://user:pw@host:8443"), "https://[redacted]@host:8443");
  EXPECT_EQ(RedactUrl("HTTP://User:Pw@Host/A"), "HTTP://[redacted]@Host/A");
  // A raw '@' in the password: the last '@' of the authority ends it.
  EXPECT_EQ(RedactUrl("http://u:p@ss@host/"), "http://[redacted]@host/");
  // An empty userinfo hides nothing.
  EXPECT_EQ(RedactUrl("http://@host/"), "http://@host/");
}

TEST(RedactTest, AnAtOutsideTheAuthorityIsLeftAlone) {
  EXPECT_EQ(RedactUrl("http://host/users/@alice"), "http://host/users/@alice");
  EXPECT_EQ(RedactUrl("https://registry.example/@types%2fnode"),
            "https://registry.example/@types%2fnode");
  EXPECT_EQ(RedactUrl("http://host/?mail=a@b.example"), "http://host/?mail=a@b.example");
  EXPECT_EQ(RedactUrl("http://host/#me@here"), "http://host/#me@here");
}

TEST(RedactTest, MalformedUrlsAreMaskedToo) {
  // What invalid-URL messages show: a space, one slash, no scheme.
  EXPECT_EQ(RedactUrl("http://user:s3 cr3t@host/"), "http://[redacted]@host/");
  EXPECT_EQ(RedactUrl("http:/user:pw@host/x"), "http:/[redacted]@host/x");
  EXPECT_EQ(RedactUrl("ftp://user:pw@host/x"), "ftp://[redacted]@host/x");
  EXPECT_EQ(RedactUrl("//user:pw@host/x"), "//[redacted]@host/x");
  // "user:" looks like a scheme, but no slash follows: user and password.
  EXPECT_EQ(RedactUrl("user:s3cr3t-9f2c@host/x"), "[redacted]@host/x");
  EXPECT_EQ(RedactUrl("localhost:8080/a?token=t"), "localhost:8080/a?token=[redacted]");
  // A password with a raw '/', '?' or '#' ends the authority inside it; the
  // port then is not digits, and the userinfo runs to the last '@'.
  EXPECT_EQ(RedactUrl("http://user:pa/ss@host/x"), "http://[redacted]@host/x");
  EXPECT_EQ(RedactUrl("http://user:pa?ss@host/x?token=t"),
            "http://[redacted]@host/x?token=[redacted]");
  EXPECT_EQ(RedactUrl("http://user:pa#ss@host"), "http://[redacted]@host");
  // Digits after the colon are a port: an '@' in the path stays.
  EXPECT_EQ(RedactUrl("http://host:8080/@me"), "http://host:8080/@me");
  EXPECT_EQ(RedactUrl("http://[::1]:8080/@me"), "http://[::1]:8080/@me");
  EXPECT_EQ(RedactUrl("http://[::1/@me"), "http://[::1/@me");
  EXPECT_EQ(RedactUrl("http://host:/@me"), "http://host:/@me");
  EXPECT_EQ(RedactUrl(""), "");
  EXPECT_EQ(RedactUrl("not a url"), "not a url");
  EXPECT_EQ(RedactUrl("@"), "@");
}

TEST(RedactTest, SensitiveQueryValuesAreMaskedByName) {
  EXPECT_EQ(RedactUrl("http://host/p?a=1&api_key=s3cr3t&b=2"),
            "http://host/p?a=1&api_key=[redacted]&b=2");
  // Case-insensitive, after percent-decoding; every occurrence.
  EXPECT_EQ(RedactUrl("http://h/?API%5FKey=v&Token=w&token=x"),
            "http://h/?API%5FKey=[redacted]&Token=[redacted]&token=[redacted]");
  EXPECT_EQ(RedactUrl("https://b.s3.example/o?X-Amz-Signature=ab12&X-Amz-Expires=60"),
            "https://b.s3.example/o?X-Amz-Signature=[redacted]&X-Amz-Expires=60");
  // A value holding '=' is masked whole.
  EXPECT_EQ(RedactUrl("http://h/?sig=a=b&x=1"), "http://h/?sig=[redacted]&x=1");
  // No value, or no '=', leaves nothing to hide; a name merely containing a
  // listed one is another name.
  EXPECT_EQ(RedactUrl("http://h/?token=&token&x=1"), "http://h/?token=&token&x=1");
  EXPECT_EQ(RedactUrl("http://h/?mytoken=1&token_type=bearer"),
            "http://h/?mytoken=1&token_type=bearer");
  EXPECT_EQ(RedactUrl("http://h/?token=a&"), "http://h/?token=[redacted]&");
  EXPECT_EQ(RedactUrl("http://h/?"), "http://h/?");
}

TEST(RedactTest, FragmentParametersAreMaskedAsTheQueryIs) {
  // OAuth's implicit grant answers in the fragment.
  EXPECT_EQ(RedactUrl("http://h/cb#access_token=abc&state=x"),
            "http://h/cb#access_token=[redacted]&state=x");
  EXPECT_EQ(RedactUrl("http://u:p@h/cb?token=1#key=2"),
            "http://[redacted]@h/cb?token=[redacted]#key=[redacted]");
  // A '?' after the '#' belongs to the fragment.
  EXPECT_EQ(RedactUrl("http://h/p#a?token=1"), "http://h/p#a?token=1");
}

TEST(RedactTest, ExplicitRulesReplaceTheDefaults) {
  RedactionRules rules;
  rules.query_params = {"session", "api key"};
  EXPECT_EQ(RedactUrl("http://h/?token=a&session=b&api+key=c&api%20key=d", rules),
            "http://h/?token=a&session=[redacted]&api+key=[redacted]&api%20key=[redacted]");
  rules.query_params.clear();
  // Userinfo is masked whatever the rules.
  EXPECT_EQ(RedactUrl("http://u:p@h/?token=a", rules), "http://[redacted]@h/?token=a");
}

TEST(RedactTest, UrlsInsideATextAreMasked) {
  EXPECT_EQ(RedactUrlsInText("Could not connect to proxy http://u:s3cr3t@proxy:3128 (refused)"),
            "Could not connect to proxy http://[redacted]@proxy:3128 (refused)");
  EXPECT_EQ(RedactUrlsInText("'https://a:b@h/x?sig=1' then \"http://c@d\" and ftp://e:f@g"),
            "'https://[redacted]@h/x?sig=[redacted]' then \"http://[redacted]@d\" and "
            "ftp://[redacted]@g");
  EXPECT_EQ(RedactUrlsInText("Connection refused"), "Connection refused");
  EXPECT_EQ(RedactUrlsInText("odd ://a@b and 12://c@d"), "odd ://a@b and 12://c@d");
  EXPECT_EQ(RedactUrlsInText(""), "");
}

TEST(RedactTest, SensitiveHeadersByDefault) {
  for (const char* name : {"Authorization", "authorization", "PROXY-AUTHORIZATION", "Cookie",
                           "set-cookie", "Set-Cookie"}) {
    EXPECT_TRUE(IsSensitiveHeader(name)) << name;
  }
  for (const char* name : {"Accept", "X-Api-Key", "Cookies", "Authorization2", ""}) {
    EXPECT_FALSE(IsSensitiveHeader(name)) << name;
  }
}

TEST_F(RedactRulesTest, SetRedactionRulesGovernsTheOneArgumentForms) {
  RedactionRules rules;
  rules.query_params = {"session"};
  rules.extra_headers = {"X-Api-Key"};
  ASSERT_TRUE(SetRedactionRules(rules).ok());
  EXPECT_EQ(RedactUrl("http://h/?token=a&SESSION=b"), "http://h/?token=a&SESSION=[redacted]");
  EXPECT_TRUE(IsSensitiveHeader("x-api-key"));
  EXPECT_TRUE(IsSensitiveHeader("Authorization"));  // the four stay masked
  EXPECT_EQ(CurrentRedactionRules().query_params, rules.query_params);
  EXPECT_EQ(CurrentRedactionRules().extra_headers, rules.extra_headers);
}

TEST_F(RedactRulesTest, BadRulesAreRefusedAndChangeNothing) {
  RedactionRules before;
  before.query_params = {"session"};
  ASSERT_TRUE(SetRedactionRules(before).ok());
  RedactionRules bad;
  bad.query_params = {"ok", ""};
  Status s = SetRedactionRules(bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "sensitive query parameter name 2 is empty");
  bad.query_params = {"a\nb"};
  s = SetRedactionRules(bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "sensitive query parameter name 1 contains a control character");
  bad.query_params = {"ok"};
  bad.extra_headers = {"X Api"};
  s = SetRedactionRules(bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "sensitive header name \"X Api\" is not a token (RFC 9110 section 5.6.2)");
  bad.extra_headers = {""};
  EXPECT_EQ(SetRedactionRules(bad).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CurrentRedactionRules().query_params, before.query_params);
  EXPECT_TRUE(CurrentRedactionRules().extra_headers.empty());
}

TEST_F(RedactRulesTest, RulesChangeWhileOtherThreadsRender) {
  // A reader sees the old rules or the new ones, never a mix (ThreadSanitizer
  // runs this suite too).
  RedactionRules a;
  a.query_params = {"x"};
  RedactionRules b;
  b.query_params = {"y"};
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::thread reader([&] {
    while (!stop.load()) {
      const std::string r = RedactUrl("http://h/?x=1&y=2");
      if (r != "http://h/?x=[redacted]&y=2" && r != "http://h/?x=1&y=[redacted]" &&
          r != "http://h/?x=1&y=2") {
        ++bad;
      }
      (void)IsSensitiveHeader("x-y");
    }
  });
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(SetRedactionRules(i % 2 == 0 ? a : b).ok());
  stop = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace mulligan
