// Property: the rule a writer checks before recording a job's user (contract::record_text_problem)
// is exactly the rule the ledger's strict reader applies. A string the rule accepts is written and
// read back unchanged; one it refuses is refused by the reader too, so no writer that checks first
// can ever produce a ledger its own reader sets aside.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sample_ledger.h"
#include "vgpu/contract/names.h"
#include "vgpu/ledger/ledger_json.h"

namespace vgpu {
namespace {

// Strings a hostile or careless user name could be: printable ASCII, control characters, the
// bytes of multi-byte UTF-8 sequences (whole, cut short or overlong), stray bytes, long runs.
rc::Gen<std::string> user_names() {
  const std::vector<std::string> pieces = {"a",
                                           "Z",
                                           "0",
                                           " ",
                                           "-",
                                           ".",
                                           "_",
                                           "\\",
                                           "\"",
                                           "\t",
                                           "\n",
                                           "\r",
                                           std::string(1, '\0'),
                                           "\x1b",
                                           "\x7f",
                                           "\xc3\xa9",
                                           "\xe2\x82\xac",
                                           "\xf0\x9f\x98\x80",
                                           "\xc3",
                                           "\xe2\x82",
                                           "\xc0\xaf",
                                           "\xed\xa0\x80",
                                           "\xf4\x90\x80\x80",
                                           "\xff",
                                           "\x80",
                                           std::string(64, 'x')};
  return rc::gen::map(rc::gen::container<std::vector<std::size_t>>(rc::gen::inRange<std::size_t>(0, pieces.size())),
                      [pieces](const std::vector<std::size_t>& picks) {
                        std::string s;
                        for (auto i : picks) s += pieces[i];
                        return s;
                      });
}

Ledger with_user(const std::string& user) {
  Ledger l = testing::sample_ledger();
  l.instances[0].user = user;  // the instance job 42 holds
  return l;
}

RC_GTEST_PROP(LedgerRecordText, WhatTheWriterRuleAcceptsReadsBackAndWhatItRefusesTheReaderRefuses, ()) {
  const std::string user = *user_names();
  const std::string problem = contract::record_text_problem(user);
  if (problem.empty()) {
    auto back = parse_ledger(serialize_ledger(with_user(user)));
    RC_ASSERT(back.has_value());
    RC_ASSERT(back->instances[0].user == user);
    return;
  }
  // A refused string that JSON can carry at all (valid UTF-8) reaches the reader, which refuses it
  // naming the field. Invalid UTF-8 cannot be written as JSON: the writer's rule is what stops it.
  std::string text;
  try {
    text = serialize_ledger(with_user(user));
  } catch (const nlohmann::json::type_error&) {
    return;  // not UTF-8: refused above, and no JSON writer could have carried it
  }
  auto back = parse_ledger(text);
  RC_ASSERT(!back.has_value());
  RC_ASSERT(back.error().message.find("instances[0].user") != std::string::npos);
}

TEST(LedgerRecordText, TheRuleNamesWhatIsWrong) {
  EXPECT_EQ(contract::record_text_problem("alice"), "");
  EXPECT_EQ(contract::record_text_problem(""), "");
  EXPECT_EQ(contract::record_text_problem("\xc3\xa9lodie"), "");
  EXPECT_EQ(contract::record_text_problem(std::string(256, 'u')), "");
  EXPECT_EQ(contract::record_text_problem(std::string(257, 'u')), "longer than 256 bytes");
  EXPECT_EQ(contract::record_text_problem("a\tb"), "contains a control character (0x09)");
  EXPECT_EQ(contract::record_text_problem("a\xff"
                                          "b"),
            "is not valid UTF-8 (at byte 1)");
  EXPECT_EQ(contract::record_text_problem("\xc0\xaf"), "is not valid UTF-8 (at byte 0)") << "overlong '/'";
  EXPECT_EQ(contract::record_text_problem("\xed\xa0\x80"), "is not valid UTF-8 (at byte 0)") << "a surrogate";
  EXPECT_EQ(contract::record_text_problem("ab\xe2\x82"), "is not valid UTF-8 (at byte 2)") << "cut short";
}

}  // namespace
}  // namespace vgpu
