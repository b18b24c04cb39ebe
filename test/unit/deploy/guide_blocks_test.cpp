#include "guide_blocks.h"

#include <cstdlib>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hybridjob::testing {
namespace {

using ::testing::HasSubstr;

TEST(GuideBlocksTest, OnlyMarkedBlocksRunAndManifestsAreApplied) {
  const std::string guide =
      "# Guide\n"
      "```sh\n"
      "kubectl get hj -w\n"
      "```\n"
      "<!-- guide-test: run -->\n"
      "```sh\n"
      "kubectl apply -f examples/a.yaml\n"
      "```\n"
      "\n"
      "- In a list:\n"
      "  <!-- guide-test: apply -->\n"
      "  ```yaml\n"
      "  kind: Namespace\n"
      "  metadata: {name: team-a}\n"
      "  ```\n";
  Result<std::vector<GuideBlock>> blocks = ExtractGuideBlocks(guide);
  ASSERT_TRUE(blocks.ok()) << blocks.status().message();
  ASSERT_EQ(blocks->size(), 2u);
  EXPECT_EQ((*blocks)[0].kind, GuideBlock::Kind::kRun);
  EXPECT_EQ((*blocks)[0].line, 6);
  EXPECT_EQ((*blocks)[0].text, "kubectl apply -f examples/a.yaml\n");
  EXPECT_EQ((*blocks)[1].kind, GuideBlock::Kind::kApply);
  EXPECT_EQ((*blocks)[1].line, 12);
  EXPECT_EQ((*blocks)[1].text, "kind: Namespace\nmetadata: {name: team-a}\n");

  const std::string script = GuideScript(*blocks, "guide.md");
  EXPECT_THAT(script, HasSubstr("set -euo pipefail\n"));
  EXPECT_THAT(script, HasSubstr("guide_block=6\n"));
  EXPECT_THAT(script, HasSubstr("kubectl apply -f examples/a.yaml\n"));
  EXPECT_THAT(script, HasSubstr("kubectl apply -f - <<'GUIDE_MANIFEST_END'\nkind: Namespace\n"));
  EXPECT_THAT(script, ::testing::Not(HasSubstr("-w\n")));
}

TEST(GuideBlocksTest, ARefusedManifestMustPrintTheOutputBlockAfterIt) {
  const std::string guide =
      "<!-- guide-test: refused -->\n"
      "```yaml\n"
      "kind: HybridJob\n"
      "```\n"
      "\n"
      "```\n"
      "The HybridJob \"bad\" is invalid: spec.x: Invalid value\n"
      "```\n"
      "<!-- guide-test: run -->\n"
      "```sh\n"
      "true\n"
      "```\n";
  Result<std::vector<GuideBlock>> blocks = ExtractGuideBlocks(guide);
  ASSERT_TRUE(blocks.ok()) << blocks.status().message();
  ASSERT_EQ(blocks->size(), 2u);
  EXPECT_EQ((*blocks)[0].kind, GuideBlock::Kind::kRefused);
  EXPECT_EQ((*blocks)[0].line, 2);
  EXPECT_EQ((*blocks)[0].text, "kind: HybridJob\n");
  EXPECT_EQ((*blocks)[0].refusal, "The HybridJob \"bad\" is invalid: spec.x: Invalid value\n");
  EXPECT_EQ((*blocks)[1].kind, GuideBlock::Kind::kRun);

  // The script fails when kubectl accepts the manifest, or prints anything
  // but the guide's output: run it with a stand-in kubectl of each kind.
  const std::string script = GuideScript(*blocks, "guide.md");
  auto run_with = [&](const std::string& fake_kubectl) {
    const std::string path = ::testing::TempDir() + "/guide-refused.sh";
    {
      std::ofstream out(path);
      out << "kubectl() { cat >/dev/null; " << fake_kubectl << "; }\n" << script;
    }
    return std::system(("bash " + path + " >/dev/null 2>&1").c_str());
  };
  EXPECT_EQ(run_with("echo 'The HybridJob \"bad\" is invalid: spec.x: Invalid value' >&2; "
                     "return 1"),
            0);
  EXPECT_NE(run_with("echo 'hybridjob.batch.hybridjob.io/bad created'"), 0);
  EXPECT_NE(run_with("echo 'The HybridJob \"bad\" is invalid: spec.y: Required' >&2; return 1"), 0);
}

TEST(GuideBlocksTest, MisplacedMarkersAndOpenFencesAreErrors) {
  EXPECT_THAT(
      ExtractGuideBlocks("<!-- guide-test: run -->\n\n```sh\ntrue\n```\n").status().message(),
      HasSubstr("line 1: a guide-test marker must be followed by a code fence"));
  EXPECT_THAT(ExtractGuideBlocks("<!-- guide-test: run -->\n```sh\ntrue\n").status().message(),
              HasSubstr("line 2: the code fence is not closed"));
  EXPECT_THAT(
      ExtractGuideBlocks("<!-- guide-test: apply -->\n```sh\ntrue\n```\n").status().message(),
      HasSubstr("an apply block must be a yaml block"));
  EXPECT_THAT(ExtractGuideBlocks("<!-- guide-test: refused -->\n```yaml\nkind: X\n```\ntext\n")
                  .status()
                  .message(),
              HasSubstr("must be followed by the block of what kubectl prints"));
  EXPECT_TRUE(ExtractGuideBlocks("no blocks at all\n").ok());
}

}  // namespace
}  // namespace hybridjob::testing
