// lib/job's logic where it lives: the prompts file (plain text and JSON Lines: each key, bad types, bad lines)
// and the video queue (assignments over data-parallel groups, resume). The end-to-end scripts run these through
// the executable; here each rule is checked on its own.
#include "job/video_list.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "config/options.h"
#include "core/error.h"
#include "job/video_queue.h"
#include "job_test_util.h"

namespace {

namespace fs = std::filesystem;
using omni::job::VideoSpec;

class PromptsFile : public omni::job::test::ScratchTest {
 protected:
  // The run's options as main resolves them (the T2V preset), with --prompts-file FILE holding `text`.
  omni::config::GenerateOptions run_with(const std::string& name, const std::string& text) {
    return omni::job::test::resolve_args({"--prompts-file", write(name, text), "--output", path("out.mp4")});
  }
  // The usage error reading `line` as the second line of a .jsonl file (the first is valid).
  std::string error_of(const std::string& line) {
    const auto run = run_with("bad.jsonl", "{\"prompt\": \"a fox\"}\n" + line + "\n");
    return omni::job::test::usage_error_of([&] { omni::job::read_video_list(run); }, "(no error)");
  }
};

TEST_F(PromptsFile, PlainTextSkipsBlankAndCommentLinesAndNumbersOutputs) {
  const auto run = run_with("list.txt", "A cat playing piano\n\n# a comment\n  \nA fox in the snow\n");
  const auto videos = omni::job::read_video_list(run);
  ASSERT_EQ(videos.size(), 2u);
  EXPECT_EQ(videos[0].opts.prompt, "A cat playing piano");
  EXPECT_EQ(videos[1].opts.prompt, "A fox in the snow");
  EXPECT_EQ(videos[0].line, 1);
  EXPECT_EQ(videos[1].line, 5);
  EXPECT_EQ(fs::path(videos[0].output).filename(), "out-0000.mp4");
  EXPECT_EQ(fs::path(videos[1].output).filename(), "out-0001.mp4");
}

TEST_F(PromptsFile, JsonLinesKeysOverrideTheRunForThatVideoOnly) {
  const auto run = run_with("list.jsonl",
                            "{\"prompt\": \"a\", \"seed\": 7, \"num_frames\": 33, \"negative-prompt\": \"blur\"}\n"
                            "{\"prompt\": \"b\", \"output\": \"" +
                                path("b.mp4") + "\", \"guidance_scale\": 3.5}\n");
  const auto videos = omni::job::read_video_list(run);
  ASSERT_EQ(videos.size(), 2u);
  EXPECT_EQ(videos[0].opts.seed, 7);
  EXPECT_EQ(videos[0].opts.num_frames, 33);
  EXPECT_EQ(videos[0].opts.negative_prompt, "blur");  // kebab-case as the flag spells it
  EXPECT_EQ(videos[1].opts.seed, run.seed);           // the run's, not the line above's
  EXPECT_EQ(videos[1].opts.num_frames, run.num_frames);
  EXPECT_EQ(videos[1].opts.negative_prompt, run.negative_prompt);
  EXPECT_DOUBLE_EQ(videos[1].opts.guidance_scale, 3.5);
  EXPECT_EQ(videos[1].output, path("b.mp4"));
}

TEST_F(PromptsFile, JsonLinesTakeTheFirstAndLastImages) {
  // First-last-frame per line (snake_case and kebab-case alike); a line without them has none.
  const auto run = run_with("flf.jsonl",
                            "{\"prompt\": \"a\", \"image\": \"first.jpg\", \"last_image\": \"last.png\"}\n"
                            "{\"prompt\": \"b\", \"image\": \"x.jpg\", \"last-image\": \"y.png\"}\n"
                            "{\"prompt\": \"c\"}\n");
  const auto videos = omni::job::read_video_list(run);
  ASSERT_EQ(videos.size(), 3u);
  EXPECT_EQ(videos[0].opts.image, "first.jpg");
  EXPECT_EQ(videos[0].opts.last_image, "last.png");
  EXPECT_TRUE(videos[0].params().last_image);
  EXPECT_EQ(videos[1].opts.last_image, "y.png");
  EXPECT_EQ(videos[2].opts.last_image, "");
  EXPECT_FALSE(videos[2].params().last_image);
  // The last frame without the first is refused on its line.
  const std::string e = error_of("{\"prompt\": \"a\", \"last_image\": \"last.png\"}");
  EXPECT_NE(e.find("line 2"), std::string::npos) << e;
  EXPECT_NE(e.find("--last-image needs --image"), std::string::npos) << e;
}

TEST_F(PromptsFile, JsonLinesTakeTheVaceInputs) {
  // control_video, mask_video, reference_images (a list, in order; one string is one image) and
  // conditioning_scale (a number, or one per VACE layer) per line; a line without them has the run's.
  const auto run = run_with("vace.jsonl",
                            "{\"prompt\": \"a\", \"control_video\": \"pose.mp4\", \"mask_video\": \"m.mp4\", "
                            "\"reference_images\": [\"cat.jpg\", \"hat.png\"], \"conditioning_scale\": [0.5, 1.25]}\n"
                            "{\"prompt\": \"b\", \"reference_images\": \"dog.jpg\", \"conditioning_scale\": 0.7}\n"
                            "{\"prompt\": \"c\"}\n");
  const auto videos = omni::job::read_video_list(run);
  ASSERT_EQ(videos.size(), 3u);
  EXPECT_EQ(videos[0].opts.control_video, "pose.mp4");
  EXPECT_EQ(videos[0].opts.mask_video, "m.mp4");
  EXPECT_EQ(videos[0].opts.reference_images, (std::vector<std::string>{"cat.jpg", "hat.png"}));
  EXPECT_EQ(videos[0].opts.conditioning_scale, (std::vector<double>{0.5, 1.25}));
  EXPECT_EQ(videos[0].params().reference_images, 2);
  EXPECT_TRUE(videos[0].params().control_video);
  EXPECT_EQ(videos[1].opts.reference_images, (std::vector<std::string>{"dog.jpg"}));
  EXPECT_EQ(videos[1].opts.conditioning_scale, (std::vector<double>{0.7}));
  EXPECT_TRUE(videos[2].opts.reference_images.empty());
  EXPECT_EQ(videos[2].opts.conditioning_scale, run.conditioning_scale);
  EXPECT_FALSE(videos[2].params().control_video);
  // A mask without its video, and a list of the wrong items, are refused on their line.
  std::string e = error_of("{\"prompt\": \"a\", \"mask_video\": \"m.mp4\"}");
  EXPECT_NE(e.find("line 2"), std::string::npos) << e;
  EXPECT_NE(e.find("--mask-video needs --control-video"), std::string::npos) << e;
  e = error_of("{\"prompt\": \"a\", \"conditioning_scale\": [\"high\"]}");
  EXPECT_NE(e.find("must be a list of numbers"), std::string::npos) << e;
  e = error_of("{\"prompt\": \"a\", \"reference_images\": [1]}");
  EXPECT_NE(e.find("must be a list of file names"), std::string::npos) << e;
}

TEST_F(PromptsFile, JsonNullIsAKeyNotGiven) {
  // null is "not set on this line": the run's value, never the text "null".
  const auto run = run_with("null.jsonl", "{\"prompt\": \"a\", \"negative_prompt\": null, \"seed\": null}\n");
  const auto videos = omni::job::read_video_list(run);
  ASSERT_EQ(videos.size(), 1u);
  EXPECT_EQ(videos[0].opts.negative_prompt, run.negative_prompt);
  EXPECT_EQ(videos[0].opts.seed, run.seed);
  EXPECT_NE(error_of("{\"prompt\": null}").find("line 2: no \"prompt\""), std::string::npos)
      << error_of("{\"prompt\": null}");
}

TEST_F(PromptsFile, BadLinesAreOneUsageErrorNamingTheLine) {
  const struct {
    const char* line;
    const char* says;
  } cases[] = {
      {"{\"promt\": \"a\"}", "unknown key 'promt'; did you mean 'prompt'?"},
      {"{\"prompt\": \"a\", \"num_inference_steps\": 10}", "'num_inference_steps' cannot vary per video"},
      {"{\"prompt\": [\"a\"]}", "key 'prompt' must be a string or a number, got array"},
      {"{\"prompt\": \"a\", \"seed\": true}", "key 'seed' must be a string or a number, got boolean"},
      {"{\"prompt\": \"a\"", "not valid JSON at column"},
      {"[\"a\"]", "expected a JSON object"},
      {"{\"prompt\": \"\"}", "no \"prompt\""},
      {"{\"prompt\": \"a\", \"guidance_scale\": 1}", "turns guidance off"},
      {"{\"prompt\": \"\\ud800\"}", "half of a surrogate pair"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of(c.line);
    EXPECT_NE(e.find("line 2"), std::string::npos) << c.line << " -> " << e;
    EXPECT_NE(e.find(c.says), std::string::npos) << c.line << " -> " << e;
  }
}

TEST_F(PromptsFile, TwoLinesWritingOnePathAreRefused) {
  const std::string out = path("same.mp4");
  const auto run = run_with("dup.jsonl", "{\"prompt\": \"a\", \"output\": \"" + out +
                                             "\"}\n{\"prompt\": \"b\", \"output\": \"" + out + "\"}\n");
  try {
    omni::job::read_video_list(run);
    FAIL() << "two videos writing one path were accepted";
  } catch (const omni::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("1"), std::string::npos) << what;
    EXPECT_NE(what.find("2"), std::string::npos) << what;
  }
}

std::vector<std::pair<int, bool>> plain(const std::vector<omni::job::Assignment>& a) {
  std::vector<std::pair<int, bool>> out;
  for (const auto& x : a) out.emplace_back(x.video, x.real);
  return out;
}

TEST(VideoQueue, PendingVideosGoRoundRobinAndEveryGroupRunsTheSameRounds) {
  // Seven videos, 1 and 4 written by an earlier run (resume): pending 0 2 3 5 6.
  omni::job::VideoQueue q(std::vector<VideoSpec>(7), {false, true, false, false, true, false, false});
  EXPECT_EQ(q.count(omni::job::VideoStatus::kSkipped), 2);
  EXPECT_EQ(q.count(omni::job::VideoStatus::kPending), 5);
  using V = std::vector<std::pair<int, bool>>;
  // dp 2: group 0 gets pending 0, 2, 4 (videos 0 3 6); group 1 pending 1, 3 (videos 2 5) and repeats 5 unreal.
  EXPECT_EQ(plain(q.assignments_of(0, 2)), (V{{0, true}, {3, true}, {6, true}}));
  EXPECT_EQ(plain(q.assignments_of(1, 2)), (V{{2, true}, {5, true}, {5, false}}));
  // More groups than pending videos: the spare group runs one unreal repeat of the last pending video.
  EXPECT_EQ(plain(q.assignments_of(6, 7)), (V{{6, false}}));
  // Nothing pending: no rounds.
  omni::job::VideoQueue done(std::vector<VideoSpec>(2), {true, true});
  EXPECT_FALSE(done.has_work());
  EXPECT_TRUE(done.assignments_of(0, 2).empty());
}

}  // namespace
