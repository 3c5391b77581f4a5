// The cluster view's text: what the publisher renders is what a planner parses, every section
// counted, and anything else refused naming the line; the signature line is cut off exactly; the
// file form trusts by owner or, for a signed view, by nothing about the file.
#include "vgpu/contract/cluster_view.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

namespace vgpu::contract {
namespace {

namespace fs = std::filesystem;

ClusterView sample_view() {
  ClusterView view;
  view.taken_at = 1764790000;
  view.period_s = 5;
  view.pending = {"42|infer|4294|2026-12-03T10:00:00|Resources|gres/vgpu:1g.10gb:2|1|alice|60|(null)"};
  view.nodes = {{"n1", "NodeName=n1 Arch=x86_64 Gres=vgpu:1g.10gb:2 GresUsed=vgpu:1g.10gb:1 State=MIXED"},
                {"n2", "NodeName=n2 Arch=x86_64 Gres=vgpu:free:12 State=IDLE"}};
  view.running = {{41, "n[1-2]"}, {43, "n1"}};
  return view;
}

std::string error_of(std::string_view text) {
  auto r = parse_cluster_view(text, "view");
  return r ? std::string("parsed") : r.error().message;
}

TEST(ClusterView, WhatIsRenderedIsParsedBack) {
  const auto view = sample_view();
  auto back = parse_cluster_view(render_cluster_view(view), "view");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, view);
  EXPECT_EQ(back->stale_after_s(), 15);
  back->period_s = 30;
  EXPECT_EQ(back->stale_after_s(), 90);
}

TEST(ClusterView, AnEmptyClusterIsAView) {
  ClusterView empty;
  auto back = parse_cluster_view(render_cluster_view(empty), "view");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, empty);
}

TEST(ClusterView, ANodesOwnViewSaysWhoseItIs) {
  auto view = sample_view();
  view.for_node = "n1";
  const auto text = render_cluster_view(view);
  EXPECT_NE(text.find("\nfor n1\n"), std::string::npos);
  auto back = parse_cluster_view(text, "view");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->for_node, "n1");
  EXPECT_TRUE(is_view_node_name("gpu-07.rack2"));
  for (std::string_view bad : {"", "a b", "n|1", "../n1", "n\x01"}) EXPECT_FALSE(is_view_node_name(bad)) << bad;
  EXPECT_FALSE(is_view_node_name(std::string(256, 'n')));
}

TEST(ClusterView, AWholeViewOfTheReleaseBeforeIsStillRead) {
  std::string v1 = render_cluster_view(sample_view());
  v1.replace(v1.find("cluster-view 2"), 14, "cluster-view 1");
  v1.erase(v1.find("for *\n"), 6);
  auto back = parse_cluster_view(v1, "view");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, sample_view());
  EXPECT_EQ(back->for_node, kWholeCluster);
  v1.insert(v1.find("pending"), "for n1\n");  // version 1 has no such line
  EXPECT_NE(error_of(v1).find("line 4: expected \"pending <number>\""), std::string::npos) << error_of(v1);
}

TEST(ClusterView, EveryDepartureFromTheFormatIsRefusedNamingItsLine) {
  const std::string good = render_cluster_view(sample_view());
  auto replaced = [&](std::string_view from, std::string_view to) {
    std::string text = good;
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  EXPECT_NE(error_of(replaced("cluster-view 2", "cluster-view 3")).find("line 1:"), std::string::npos);
  EXPECT_NE(error_of(replaced("taken_at 1764790000", "taken_at soon")).find("line 2: taken_at: \"soon\""),
            std::string::npos);
  EXPECT_NE(error_of(replaced("period_s 5", "period_s 0")).find("line 3: period_s: 0 is not a period"),
            std::string::npos);
  EXPECT_NE(error_of(replaced("for *", "for a b")).find("line 4: expected \"for <node name>\""), std::string::npos);
  EXPECT_NE(error_of(replaced("for *", "for ../n1")).find("line 4: expected"), std::string::npos);
  EXPECT_NE(error_of(replaced("for *\n", "")).find("line 4: expected \"for"), std::string::npos);
  EXPECT_NE(error_of(replaced("pending 1", "pending 2")).find("line 8: expected \"nodes <number>\""), std::string::npos)
      << error_of(replaced("pending 1", "pending 2"));
  EXPECT_NE(error_of(replaced("NodeName=n2", "NodeName=n1")).find("node n1 listed twice"), std::string::npos);
  EXPECT_NE(error_of(replaced("43|n1", "43x|n1")).find("is not <job id>|<nodes>"), std::string::npos);
  EXPECT_NE(error_of(replaced("43|n1", "43|")).find("is not <job id>|<nodes>"), std::string::npos);
  EXPECT_NE(error_of(replaced("(null)", "(nu\tll)")).find("a control character"), std::string::npos);
  EXPECT_NE(error_of(good + "extra\n").find("text after the running jobs"), std::string::npos);
  EXPECT_NE(error_of(good.substr(0, good.size() - 1)).find("no newline at its end"), std::string::npos);
  EXPECT_NE(error_of(good.substr(0, good.find("running"))).find("ends before running"), std::string::npos);
}

TEST(ClusterView, TheSignatureLineIsCutOffExactly) {
  const std::string body = render_cluster_view(sample_view());
  const std::string raw(64, '\xa5');
  const std::string text = body + signature_line(raw);  // the split's body is a view into it
  auto split = split_view_signature(text, "view");
  ASSERT_TRUE(split) << split.error().message;
  EXPECT_EQ(split->body, body);
  ASSERT_TRUE(split->signature);
  EXPECT_EQ(*split->signature, raw);

  auto unsigned_view = split_view_signature(body, "view");
  ASSERT_TRUE(unsigned_view);
  EXPECT_EQ(unsigned_view->body, body);
  EXPECT_FALSE(unsigned_view->signature);

  std::string short_line = signature_line(raw);
  short_line.erase(20, 2);
  EXPECT_FALSE(split_view_signature(body + short_line, "view"));
  std::string upper = signature_line(raw);
  upper[20] = 'A';
  EXPECT_FALSE(split_view_signature(body + upper, "view"));
  EXPECT_FALSE(split_view_signature(body + signature_line(raw).substr(0, 40), "view"));
}

class ClusterViewFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = (fs::temp_directory_path() / ("vgpu-view-" + std::to_string(::getpid()))).string();
    fs::create_directories(dir);
    path = dir + "/view";
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string dir, path;
};

TEST_F(ClusterViewFile, WrittenWorldReadableAndReadBackByOwner) {
  const mode_t old = ::umask(077);
  const auto text = render_cluster_view(sample_view());
  ASSERT_TRUE(write_cluster_view_file(posix_file_system(), path, text));
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  auto back = read_cluster_view_file(posix_file_system(), path, ::geteuid(), ViewTrust::owner);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, text);
}

TEST_F(ClusterViewFile, OwnerTrustRefusesWhatOthersMayWriteSignatureTrustLeavesItToTheSignature) {
  ASSERT_TRUE(write_cluster_view_file(posix_file_system(), path, "x\n"));
  ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
  auto by_owner = read_cluster_view_file(posix_file_system(), path, ::geteuid(), ViewTrust::owner);
  ASSERT_FALSE(by_owner);
  EXPECT_NE(by_owner.error().message.find("lets everyone write it"), std::string::npos) << by_owner.error().message;
  auto by_signature = read_cluster_view_file(posix_file_system(), path, ::geteuid(), ViewTrust::signature);
  ASSERT_TRUE(by_signature) << by_signature.error().message;
  EXPECT_EQ(*by_signature, "x\n");
}

TEST_F(ClusterViewFile, NeitherTrustFollowsASymbolicLink) {
  ASSERT_TRUE(write_cluster_view_file(posix_file_system(), path, "x\n"));
  fs::create_symlink(path, dir + "/link");
  EXPECT_FALSE(read_cluster_view_file(posix_file_system(), dir + "/link", ::geteuid(), ViewTrust::owner));
  EXPECT_FALSE(read_cluster_view_file(posix_file_system(), dir + "/link", ::geteuid(), ViewTrust::signature));
}

}  // namespace
}  // namespace vgpu::contract
