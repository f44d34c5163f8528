#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "engine/timeline.h"
#include "json_check.h"

namespace kolo {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string temp_path(const std::string& leaf) { return ::testing::TempDir() + leaf; }

TEST(Timeline, WritesAChromeTraceThatParses) {
  const std::string path = temp_path("kolo_timeline_test.json");
  std::unique_ptr<Timeline> t;
  ASSERT_TRUE(Timeline::open(path, 0, &t, 100.0).ok());
  ASSERT_NE(t, nullptr);
  t->span("grad/\"w\"", "NEGOTIATE", 100.0, 100.5);
  t->span("grad/\"w\"", "COLLECTIVE", 100.5, 100.75, "{\"fused\":2}");
  t->instant("b", "ERROR", 101.0, "{\"message\":" + Timeline::json_string("bad\nnews") + "}");
  t->close();
  const std::string text = read_file(path);
  EXPECT_TRUE(testing::JsonCheck::valid(text)) << text;
  EXPECT_EQ(text,
            "[\n"
            "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"grad/\\\"w\\\"\"}},\n"
            "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":1,\"args\":{\"sort_index\":1}},\n"
            "{\"name\":\"NEGOTIATE\",\"ph\":\"X\",\"pid\":1,\"tid\":0,\"ts\":0,\"dur\":500000},\n"
            "{\"name\":\"COLLECTIVE\",\"ph\":\"X\",\"pid\":1,\"tid\":0,\"ts\":500000,\"dur\":250000,\"args\":{\"fused\":2}},\n"
            "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":2,\"args\":{\"name\":\"b\"}},\n"
            "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":2,\"args\":{\"sort_index\":2}},\n"
            "{\"name\":\"ERROR\",\"ph\":\"i\",\"s\":\"p\",\"pid\":2,\"tid\":0,\"ts\":1000000,\"args\":{\"message\":\"bad\\nnews\"}}\n"
            "]\n");
  std::remove(path.c_str());
}

TEST(Timeline, AnUnclosedTraceIsAnArrayMissingOnlyItsEnd) {
  const std::string path = temp_path("kolo_timeline_unclosed.json");
  std::unique_ptr<Timeline> t;
  ASSERT_TRUE(Timeline::open(path, 0, &t, 0.0).ok());
  t->span("a", "QUEUE", 0.0, 1.0);
  t->flush_if_due(10.0);
  const std::string text = read_file(path);  // as a crashed job would leave it
  EXPECT_TRUE(testing::JsonCheck::valid(text + "\n]")) << text;
  t->close();
  std::remove(path.c_str());
}

TEST(Timeline, TheFileHoldsOnlyWholeEventsWhenTheyAreWrittenBeforeAFlush) {
  const std::string path = temp_path("kolo_timeline_whole.json");
  std::unique_ptr<Timeline> t;
  ASSERT_TRUE(Timeline::open(path, 0, &t, 0.0).ok());
  t->span("a", "QUEUE", 0.0, 1.0);
  EXPECT_EQ(read_file(path), "[\n");  // not due yet: kept
  // Past a MiB of events, they are written without a flush, and only whole: as a rank killed then would leave it.
  const std::string args = "{\"pad\":" + Timeline::json_string(std::string(1000, 'x')) + "}";
  for (int i = 0; i < 1100; ++i) t->span("a", "COLLECTIVE", 0.0, 1.0, args);
  const std::string text = read_file(path);
  EXPECT_GT(text.size(), size_t{1} << 20);
  EXPECT_EQ(text.back(), '}');
  EXPECT_TRUE(testing::JsonCheck::valid(text + "\n]"));
  t->close();
  EXPECT_TRUE(testing::JsonCheck::valid(read_file(path)));
  std::remove(path.c_str());
}

TEST(Timeline, OnlyRankZeroWritesUnlessThePathNamesTheRank) {
  std::unique_ptr<Timeline> t;
  ASSERT_TRUE(Timeline::open(temp_path("kolo_tl.json"), 3, &t).ok());
  EXPECT_EQ(t, nullptr);
  ASSERT_TRUE(Timeline::open(temp_path("kolo_tl_%r.json"), 3, &t).ok());
  ASSERT_NE(t, nullptr);
  t->close();
  EXPECT_TRUE(testing::JsonCheck::valid(read_file(temp_path("kolo_tl_3.json"))));
  std::remove(temp_path("kolo_tl_3.json").c_str());
}

TEST(Timeline, UnwritablePathIsAClearError) {
  std::unique_ptr<Timeline> t;
  Status s = Timeline::open("/nonexistent-dir/t.json", 0, &t);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "KOLO_TIMELINE: cannot write '/nonexistent-dir/t.json': No such file or directory");
}

}  // namespace
}  // namespace kolo
