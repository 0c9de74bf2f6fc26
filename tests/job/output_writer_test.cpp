// OutputWriter's replace rules (job/output_writer.h), each on its own: an existing output is refused without
// --overwrite; a resumed prompts-file run may replace the partial outputs its own killed run left (a sidecar
// or tensor file naming the same video, whose MP4 was never written) and its own earlier report, and nothing
// else that merely sits at those paths.
#include "job/output_writer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/options.h"
#include "core/error.h"
#include "job/video_queue.h"
#include "job_test_util.h"

namespace {

class ReplaceRules : public omni::job::test::ScratchTest {
 protected:
  // The run's options: --prompt, or a prompts file (a list that can be resumed); --overwrite; --report.
  omni::config::GenerateOptions options(bool prompts_file, bool overwrite, bool report = false) {
    std::vector<std::string> args{"--output", path("v.mp4")};
    if (prompts_file) {
      args.insert(args.end(), {"--prompts-file", write("list.txt", "a cat\n")});
    } else {
      args.insert(args.end(), {"--prompt", "a cat"});
    }
    if (overwrite) args.push_back("--overwrite");
    if (report) args.insert(args.end(), {"--report", path("report.json")});
    return omni::job::test::resolve_args(args);
  }
  omni::job::VideoQueue queue_of(const omni::config::GenerateOptions& o) const {
    omni::job::VideoSpec v;
    v.opts = o;
    v.output = path("v.mp4");
    return omni::job::VideoQueue({v}, {false});
  }
  // The usage error check_paths gives, or "".
  std::string error_of(omni::job::OutputWriter& w, const omni::job::VideoQueue& q) const {
    return omni::job::test::usage_error_of([&] { w.check_paths(q); });
  }
};

TEST_F(ReplaceRules, AnExistingVideoIsRefusedWithoutOverwrite) {
  write("v.mp4", "not ours to replace");
  auto o = options(/*prompts_file=*/false, /*overwrite=*/false);
  omni::job::OutputWriter w(o);
  const std::string e = error_of(w, queue_of(o));
  EXPECT_NE(e.find(path("v.mp4")), std::string::npos) << e;
  EXPECT_NE(e.find("--overwrite"), std::string::npos) << e;

  auto ov = options(false, /*overwrite=*/true);
  omni::job::OutputWriter wo(ov);
  EXPECT_EQ(error_of(wo, queue_of(ov)), "");
  EXPECT_TRUE(wo.may_replace(0, path("v.mp4.json")));
}

TEST_F(ReplaceRules, AResumedListReplacesItsOwnPartialSidecarOnly) {
  // A killed run of ours left v.mp4.json (it names the video and holds settings) but no v.mp4.
  write("v.mp4.json", "{\"output\": \"" + path("v.mp4") + "\", \"settings\": {}}");
  auto o = options(/*prompts_file=*/true, /*overwrite=*/false);
  omni::job::OutputWriter w(o);
  EXPECT_EQ(error_of(w, queue_of(o)), "");
  EXPECT_TRUE(w.may_replace(0, path("v.mp4.json")));
  EXPECT_FALSE(w.may_replace(0, path("other.json")));

  // The same file from a single --prompt run is not a resumed list's: refused.
  auto single = options(/*prompts_file=*/false, false);
  omni::job::OutputWriter ws(single);
  EXPECT_NE(error_of(ws, queue_of(single)).find(path("v.mp4.json")), std::string::npos);
}

TEST_F(ReplaceRules, AFileThatOnlySitsAtTheSidecarPathIsNotReplaced) {
  write("v.mp4.json", "{\"output\": \"" + path("v.mp4") + "\"}");  // no settings: not a sidecar of ours
  auto o = options(true, false);
  omni::job::OutputWriter w(o);
  EXPECT_NE(error_of(w, queue_of(o)).find(path("v.mp4.json")), std::string::npos);
  write("v.mp4.json", "{\"output\": \"elsewhere.mp4\", \"settings\": {}}");  // another video's
  omni::job::OutputWriter w2(o);
  EXPECT_NE(error_of(w2, queue_of(o)).find(path("v.mp4.json")), std::string::npos);
}

TEST_F(ReplaceRules, AResumedListRewritesItsOwnEarlierReportOnly) {
  write("report.json", "{\"world_size\": 1, \"layout\": {}, \"videos\": []}");
  auto o = options(/*prompts_file=*/true, false, /*report=*/true);
  omni::job::OutputWriter w(o);
  EXPECT_EQ(error_of(w, queue_of(o)), "");
  EXPECT_TRUE(w.may_replace_report());

  write("report.json", "{\"something\": \"else\"}");
  omni::job::OutputWriter w2(o);
  EXPECT_NE(error_of(w2, queue_of(o)).find(path("report.json")), std::string::npos);
}

}  // namespace
