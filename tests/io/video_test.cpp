// Video output and input: a synthetic clip through libx264 into MP4, checked with ffprobe (an independent
// reader), decoded back by video_reader and by the ffmpeg program; atomic writes and the output checks.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "io/image_reader.h"
#include "io/safetensors.h"
#include "io/video_reader.h"
#include "io/video_writer.h"
#include "media_test_util.h"

namespace omni::media_test {
namespace {

using io::VideoWriteOptions;

nlohmann::json ffprobe(const std::string& path) {
  std::string out;
  int rc =
      run_command("ffprobe -v error -show_streams -show_format -count_frames -of json '" + path + "'", &out, false);
  EXPECT_EQ(rc, 0) << out;
  return nlohmann::json::parse(out);
}

VideoWriteOptions clip_options() {
  VideoWriteOptions o;
  o.fps_num = 16;
  o.metadata = {{"title", "omni test clip"},
                {"comment", "A cat playing piano"},
                {"prompt", "A cat playing piano, \"quoted\" & unicode: caf\xC3\xA9"},
                {"seed", "42"},
                {"model", "Wan-AI/Wan2.2-T2V-A14B-Diffusers"}};
  return o;
}

TEST(VideoWriter, SyntheticClipProbesAndDecodes) {
  TempDir dir;
  const std::string path = dir / "clip.mp4";
  at::Tensor frames = gradient_clip(9, 32, 48);  // [9, 32, 48, 3]
  io::write_video(path, frames, clip_options());
  EXPECT_EQ(list_dir(dir.path()), std::set<std::string>{"clip.mp4"}) << "temporary file left behind";

  // ffprobe, independent of our reader.
  nlohmann::json probe = ffprobe(path);
  ASSERT_EQ(probe["streams"].size(), 1u);
  const auto& st = probe["streams"][0];
  EXPECT_EQ(st["codec_name"], "h264");
  EXPECT_EQ(st["pix_fmt"], "yuv420p");
  EXPECT_EQ(st["width"], 48);
  EXPECT_EQ(st["height"], 32);
  EXPECT_EQ(st["nb_read_frames"], "9");
  EXPECT_EQ(st["r_frame_rate"], "16/1");
  EXPECT_EQ(st["avg_frame_rate"], "16/1");
  EXPECT_EQ(st["color_space"], "smpte170m");  // BT.601 matrix
  EXPECT_EQ(st["color_primaries"], "bt709");
  EXPECT_EQ(st["color_range"], "tv");
  const auto& tags = probe["format"]["tags"];
  EXPECT_EQ(tags["title"], "omni test clip");
  EXPECT_EQ(tags["comment"], "A cat playing piano");
  EXPECT_EQ(tags["prompt"], "A cat playing piano, \"quoted\" & unicode: caf\xC3\xA9");
  EXPECT_EQ(tags["seed"], "42");
  EXPECT_EQ(tags["model"], "Wan-AI/Wan2.2-T2V-A14B-Diffusers");

  // Our reader: stream info, metadata and the pixels.
  io::Video v = io::read_video(path);
  EXPECT_EQ(v.info.codec, "h264");
  EXPECT_EQ(v.info.pixel_format, "yuv420p");
  EXPECT_EQ(v.info.width, 48);
  EXPECT_EQ(v.info.height, 32);
  EXPECT_EQ(v.info.frame_count, 9);
  EXPECT_EQ(v.info.fps_num, 16);
  EXPECT_EQ(v.info.fps_den, 1);
  EXPECT_EQ(v.info.color_space, "smpte170m");
  EXPECT_EQ(v.info.color_range, "tv");
  for (const auto& kv : clip_options().metadata) EXPECT_EQ(v.info.metadata[kv.first], kv.second) << kv.first;
  ASSERT_EQ(v.frames.sizes(), frames.sizes());
  EXPECT_EQ(v.frames.scalar_type(), at::kFloat);
  EXPECT_GE(v.frames.min().item<float>(), 0.0f);
  EXPECT_LE(v.frames.max().item<float>(), 1.0f);
  double min_psnr = INFINITY;
  for (int64_t f = 0; f < 9; ++f) min_psnr = std::min(min_psnr, psnr(v.frames[f], frames[f]));
  const double max_abs = (v.frames - frames).abs().max().item<double>();
  std::printf("decoded vs written: min PSNR %.2f dB, max abs %.4f\n", min_psnr, max_abs);
  EXPECT_GT(min_psnr, 35.0);

  // The ffmpeg program's RGB decode, with its default matrix and range choice and the same scaler precision
  // flags as video_reader, must give the same bytes: a different matrix (BT.709) would move colors by up to
  // ~29 levels here. (ffmpeg's default flags take a faster, less exact path: printed for information.)
  auto ffmpeg_rgb = [&](const std::string& flags) {
    std::string raw;
    EXPECT_EQ(run_command("ffmpeg -v error -i '" + path + "' " + flags + " -f rawvideo -pix_fmt rgb24 -", &raw, false),
              0);
    EXPECT_EQ(raw.size(), 9u * 32 * 48 * 3);
    raw.resize(9u * 32 * 48 * 3);
    return at::from_blob(raw.data(), {9, 32, 48, 3}, at::kByte).clone();
  };
  at::Tensor ours = v.frames.mul(255.0).round().to(at::kByte);
  at::Tensor accurate = ffmpeg_rgb("-sws_flags bicubic+accurate_rnd+full_chroma_int");
  const int64_t vs_accurate = (accurate.to(at::kInt) - ours.to(at::kInt)).abs().max().item<int64_t>();
  at::Tensor fast = ffmpeg_rgb("");
  const double vs_fast = (fast.to(at::kFloat) - ours.to(at::kFloat)).abs().mean().item<double>();
  std::printf(
      "video_reader vs ffmpeg rgb24: max abs %ld levels (same scaler flags), mean abs %.2f levels "
      "(ffmpeg's default flags)\n",
      (long)vs_accurate, vs_fast);
  EXPECT_EQ(vs_accurate, 0);

  // max_frames stops early.
  io::Video first3 = io::read_video(path, 3);
  EXPECT_EQ(first3.frames.size(0), 3);
  EXPECT_EQ((first3.frames - v.frames.slice(0, 0, 3)).abs().max().item<float>(), 0.0f);
}

TEST(VideoWriter, FixtureFramesRoundTrip) {
  // Real decoder output: the i2v fixture's frames (random weights, so busy, saturated content where 4:2:0 chroma
  // subsampling alone costs about 25 dB of RGB PSNR). Luma (BT.601 weights) carries the detail and must survive.
  io::SafetensorsFile ref(std::string(OMNI_TEST_DATA_DIR) + "/reference/i2v-a14b-tiny/expected.safetensors");
  at::Tensor frames = ref.read("frames", at::kFloat)[0];  // [9, 32, 48, 3]
  at::Tensor weights = at::tensor({0.299f, 0.587f, 0.114f});
  TempDir dir;
  VideoWriteOptions o;
  double luma[2], rgb[2];
  for (int i = 0; i < 2; ++i) {
    o.crf = i == 0 ? 0 : 18;
    const std::string path = dir / ("fixture" + std::to_string(o.crf) + ".mp4");
    io::write_video(path, frames, o);
    io::Video v = io::read_video(path);
    ASSERT_EQ(v.frames.sizes(), frames.sizes());
    luma[i] = rgb[i] = INFINITY;
    for (int64_t f = 0; f < frames.size(0); ++f) {
      rgb[i] = std::min(rgb[i], psnr(v.frames[f], frames[f]));
      luma[i] = std::min(luma[i], psnr(v.frames[f].matmul(weights), frames[f].matmul(weights)));
    }
    std::printf("fixture frames at crf %d: min PSNR RGB %.2f dB, luma %.2f dB\n", o.crf, rgb[i], luma[i]);
  }
  EXPECT_GT(luma[0], 45.0);  // crf 0: lossless luma up to 8-bit rounding
  EXPECT_GT(luma[1], 35.0);
  EXPECT_GT(rgb[1], 20.0);
  EXPECT_GE(rgb[0], rgb[1]);
}

TEST(VideoWriter, SameFramesSameBytes) {
  // A fixed x264 thread count: the same frames give the same file, here and on any machine. (Across processes,
  // over heaps that held other bytes, ctest compare.runs: video_writer.cpp's SameBytesFromAllocations.)
  TempDir dir;
  at::Tensor frames = gradient_clip(5, 256, 384);
  io::write_video(dir / "a.mp4", frames, clip_options());
  io::write_video(dir / "b.mp4", frames, clip_options());
  const std::string a = read_file(dir / "a.mp4");
  EXPECT_GT(a.size(), 1000u);
  EXPECT_TRUE(a == read_file(dir / "b.mp4")) << "two encodes of the same frames differ";
}

// What write_video did to frames before frames_to_uint8 existed: on the host, in float32.
at::Tensor host_levels(const at::Tensor& frames) {
  return frames.detach().to(at::kCPU, at::kFloat).clamp(0.0, 1.0).mul(255.0).round().to(at::kByte).contiguous();
}

TEST(FramesToUint8, SameLevelsAsTheHostConversion) {
  // Out-of-range values, exact halves between levels (k + 0.5 after x 255, rounded half to even), the ends, and
  // random values, in the dtypes the VAE decodes in.
  std::vector<float> edge = {-1.0f, -0.0f, 0.0f, 1.0f, 2.0f, 0.5f, 1.0f / 255, 254.5f / 255, 0.5f / 255, 1.5f / 255};
  for (int k = 0; k < 255; ++k) edge.push_back((k + 0.5f) / 255.0f);
  const int64_t random = 4 * 6 * 10 * 3 - static_cast<int64_t>(edge.size());
  const at::Tensor values = at::cat({at::tensor(edge), at::rand({random}) * 1.2 - 0.1});  // [F * H * W * 3]
  const at::Tensor clip = values.view({4, 6, 10, 3});                                     // [F, H, W, 3]
  for (auto dtype : {at::kFloat, at::kBFloat16, at::kHalf, at::kDouble}) {
    const at::Tensor frames = clip.to(dtype);
    const at::Tensor expected = host_levels(frames);
    const at::Tensor got = io::frames_to_uint8(frames);
    ASSERT_EQ(got.scalar_type(), at::kByte);
    ASSERT_EQ(got.sizes(), frames.sizes());
    EXPECT_TRUE(got.is_contiguous());
    EXPECT_TRUE(at::equal(got, expected)) << dtype;
    // In pieces (one frame, two frames, and three frames then the rest): the same levels.
    for (int64_t chunk : {int64_t{1}, int64_t{6 * 10 * 3}, int64_t{2 * 6 * 10 * 3 + 7}, int64_t{3 * 6 * 10 * 3}})
      EXPECT_TRUE(at::equal(io::frames_to_uint8(frames, chunk), expected)) << dtype << " chunk " << chunk;
  }
  // The float32 input is left as it was (the conversion never works in place on the caller's tensor).
  const at::Tensor before = clip.clone();
  io::frames_to_uint8(clip, 1);
  EXPECT_TRUE(at::equal(clip, before));
}

TEST(FramesToUint8, PipelineLayout) {
  // The pipeline's [1, 3, F, H, W] video permuted to [1, F, H, W, 3] (not contiguous): pieces along F.
  const at::Tensor video = at::rand({1, 3, 5, 4, 6}).to(at::kBFloat16);
  const at::Tensor frames = video.permute({0, 2, 3, 4, 1});  // [1, F, H, W, 3]
  const at::Tensor expected = host_levels(frames);
  for (int64_t chunk : {int64_t{1}, int64_t{4 * 6 * 3 * 2}, io::kLevelsChunkSamples}) {
    const at::Tensor got = io::frames_to_uint8(frames, chunk);
    EXPECT_EQ(got.sizes(), (std::vector<int64_t>{1, 5, 4, 6, 3}));
    EXPECT_TRUE(got.is_contiguous());
    EXPECT_TRUE(at::equal(got, expected)) << "chunk " << chunk;
  }
  // Empty and scalar tensors; anything but floating point is refused.
  EXPECT_EQ(io::frames_to_uint8(at::zeros({0, 4, 6, 3})).sizes(), (std::vector<int64_t>{0, 4, 6, 3}));
  EXPECT_EQ(io::frames_to_uint8(at::scalar_tensor(0.5)).item<uint8_t>(), 128);
  EXPECT_THROW(io::frames_to_uint8(at::zeros({2, 4, 6, 3}, at::kByte)), std::exception);
}

TEST(VideoWriter, Uint8FramesSameBytesAsFloat) {
  // The pipeline hands the writer uint8 levels; float frames are converted to the same levels, so the two give
  // the same file (frames large enough for x264's output to be reproducible: SameFramesSameBytes).
  TempDir dir;
  at::Tensor frames = gradient_clip(5, 256, 384);
  io::write_video(dir / "float.mp4", frames, clip_options());
  io::write_video(dir / "uint8.mp4", io::frames_to_uint8(frames), clip_options());
  io::write_video(dir / "bf16.mp4", frames.to(at::kBFloat16), clip_options());
  const std::string a = read_file(dir / "float.mp4");
  EXPECT_TRUE(a == read_file(dir / "uint8.mp4")) << "uint8 levels and float frames encode differently";
  // bfloat16 frames: the levels of the bfloat16 values, not of the float32 ones they came from.
  io::write_video(dir / "bf16_levels.mp4", host_levels(frames.to(at::kBFloat16)), clip_options());
  EXPECT_TRUE(read_file(dir / "bf16.mp4") == read_file(dir / "bf16_levels.mp4"));
  expect_error(
      [&] {
        io::write_video(dir / "int.mp4", at::zeros({2, 16, 16, 3}, at::kInt), VideoWriteOptions{});
      },
      ExitCode::kFailure, {"uint8 levels or floating point"});
}

TEST(VideoWriter, RationalFpsAndOtherContainers) {
  TempDir dir;
  at::Tensor frames = gradient_clip(5, 16, 32);
  VideoWriteOptions o;
  o.fps_num = 24000;
  o.fps_den = 1001;
  o.metadata = {{"prompt", "mkv keeps any key"}};
  io::write_video(dir / "clip.mkv", frames, o);
  nlohmann::json probe = ffprobe(dir / "clip.mkv");
  EXPECT_NE(probe["format"]["format_name"].get<std::string>().find("matroska"), std::string::npos);
  EXPECT_EQ(probe["streams"][0]["r_frame_rate"], "24000/1001");
  EXPECT_EQ(probe["streams"][0]["nb_read_frames"], "5");
  io::Video v = io::read_video(dir / "clip.mkv");
  EXPECT_EQ(v.info.fps_num, 24000);
  EXPECT_EQ(v.info.fps_den, 1001);
  EXPECT_EQ(v.info.metadata["PROMPT"].empty() ? v.info.metadata["prompt"] : v.info.metadata["PROMPT"],
            "mkv keeps any key");

  // An unknown extension gets MP4; a container that cannot hold H.264 is refused before anything is written.
  io::write_video(dir / "clip.video", frames, VideoWriteOptions{});
  EXPECT_NE(ffprobe(dir / "clip.video")["format"]["format_name"].get<std::string>().find("mp4"), std::string::npos);
  expect_error([&] { io::write_video(dir / "clip.gif", frames, VideoWriteOptions{}); }, ExitCode::kUsage,
               {"clip.gif", "cannot hold H.264"});
  EXPECT_EQ(list_dir(dir.path()), (std::set<std::string>{"clip.mkv", "clip.video"}));
}

TEST(VideoWriter, ExistingFileNeedsOverwrite) {
  TempDir dir;
  const std::string path = dir / "out.mp4";
  write_file(path, "old contents");
  at::Tensor frames = gradient_clip(3, 16, 16);
  expect_error([&] { io::check_output_writable(path, false); }, ExitCode::kUsage, {path, "--overwrite"});
  expect_error([&] { io::write_video(path, frames, VideoWriteOptions{}); }, ExitCode::kUsage,
               {path, "already exists", "--overwrite"});
  EXPECT_EQ(read_file(path), "old contents");
  EXPECT_EQ(list_dir(dir.path()), std::set<std::string>{"out.mp4"});

  VideoWriteOptions o;
  o.overwrite = true;
  io::check_output_writable(path, true);
  io::write_video(path, frames, o);
  EXPECT_NE(read_file(path), "old contents");
  EXPECT_EQ(io::read_video(path).info.frame_count, 3);
  EXPECT_EQ(list_dir(dir.path()), std::set<std::string>{"out.mp4"});
  // The new file gets the usual permissions (not the 0600 of a mkstemp file).
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
}

TEST(VideoWriter, OutputFolderChecks) {
  TempDir dir;
  at::Tensor frames = gradient_clip(3, 16, 16);
  // Missing parent folder.
  expect_error([&] { io::check_output_writable(dir / "missing/out.mp4", false); }, ExitCode::kUsage,
               {dir / "missing", "does not exist"});
  expect_error([&] { io::write_video(dir / "missing/out.mp4", frames, VideoWriteOptions{}); }, ExitCode::kUsage,
               {"does not exist"});
  // A parent that is a regular file.
  write_file(dir / "file", "x");
  expect_error([&] { io::check_output_writable(dir / "file/out.mp4", false); }, ExitCode::kUsage,
               {dir / "file", "not a folder"});
  // The output path is a folder.
  ASSERT_EQ(::mkdir((dir / "sub").c_str(), 0755), 0);
  expect_error([&] { io::check_output_writable(dir / "sub", true); }, ExitCode::kUsage, {dir / "sub", "folder"});
  expect_error([&] { io::check_output_writable("", false); }, ExitCode::kUsage, {"empty"});
  // A folder no one may create files in: /proc refuses even root, and access() alone would let root through.
  expect_error([&] { io::check_output_writable("/proc/omni_media_test.mp4", false); }, ExitCode::kUsage, {"/proc"});
  if (::geteuid() != 0) {  // as a normal user a read-only folder is refused too
    ASSERT_EQ(::chmod((dir / "sub").c_str(), 0555), 0);
    expect_error([&] { io::check_output_writable(dir / "sub/out.mp4", false); }, ExitCode::kUsage,
                 {dir / "sub", "not writable"});
    ASSERT_EQ(::chmod((dir / "sub").c_str(), 0755), 0);
  }
  // A relative name uses the current folder.
  io::check_output_writable("omni_media_relative_check.mp4", false);
  EXPECT_EQ(list_dir(dir.path()), (std::set<std::string>{"file", "sub"}));
  EXPECT_TRUE(list_dir(dir / "sub").empty()) << "probe file left behind";
}

TEST(VideoWriter, FailuresLeaveNothingBehind) {
  TempDir dir;
  // Odd sizes cannot be 4:2:0.
  expect_error([&] { io::write_video(dir / "odd.mp4", gradient_clip(2, 15, 16), VideoWriteOptions{}); },
               ExitCode::kUsage, {"even", "16x15"});
  expect_error([&] { io::write_video(dir / "odd.mp4", gradient_clip(2, 16, 17), VideoWriteOptions{}); },
               ExitCode::kUsage, {"even", "17x16"});
  // A failure after the temporary file exists (x264 rejects the preset when it opens) removes it.
  VideoWriteOptions bad;
  bad.preset = "no-such-preset";
  expect_error([&] { io::write_video(dir / "bad.mp4", gradient_clip(2, 16, 16), bad); }, ExitCode::kUsage,
               {"no-such-preset"});
  VideoWriteOptions crf;
  crf.crf = 60;
  expect_error([&] { io::write_video(dir / "crf.mp4", gradient_clip(2, 16, 16), crf); }, ExitCode::kUsage,
               {"--crf", "60"});
  EXPECT_TRUE(list_dir(dir.path()).empty()) << "left behind: " << *list_dir(dir.path()).begin();
  // Wrong tensor layout is a programming error.
  expect_error(
      [&] {
        io::write_video(dir / "x.mp4", at::zeros({2, 16, 16}), VideoWriteOptions{});
      },
      ExitCode::kFailure, {"[F, H, W, 3]"});
}

TEST(VideoReader, BadInputsNameTheFile) {
  TempDir dir;
  expect_error([&] { io::read_video(dir / "none.mp4"); }, ExitCode::kInput, {dir / "none.mp4"});
  write_file(dir / "text.mp4", "this is not a video at all");
  expect_error([&] { io::read_video(dir / "text.mp4"); }, ExitCode::kInput, {dir / "text.mp4"});
  expect_error([&] { io::read_video(dir.path()); }, ExitCode::kInput, {dir.path(), "folder"});
  // A truncated MP4 (the index is at the front with faststart, the data cut off) still names the file.
  io::write_video(dir / "ok.mp4", gradient_clip(9, 32, 48), VideoWriteOptions{});
  std::string bytes = read_file(dir / "ok.mp4");
  write_file(dir / "cut.mp4", bytes.substr(0, bytes.size() / 3));
  try {
    io::Video v = io::read_video(dir / "cut.mp4");
    EXPECT_LT(v.info.frame_count, 9) << "a third of the file cannot hold every frame";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kInput) << e.what();
    EXPECT_NE(std::string(e.what()).find("cut.mp4"), std::string::npos) << e.what();
  }
}

// Sets the first track header's matrix of the MP4 / MOV at `path` to turn the picture `degrees` clockwise, as a
// phone writes a portrait clip (FFmpeg 5.1's muxer no longer takes a "rotate" tag; its demuxer reads the matrix
// as the display matrix).
void set_track_rotation(const std::string& path, int degrees) {
  std::string data = read_file(path);
  const size_t pos = data.find("tkhd");
  ASSERT_NE(pos, std::string::npos) << path;
  ASSERT_EQ(data[pos + 4], 0) << "a version-0 tkhd";
  const int32_t one = 0x10000;
  // a b u / c d v / x y w: 16.16 for a b c d, 2.30 for u v w.
  const int32_t cos = degrees == 180 ? -one : 0, sin = degrees == 90 ? one : degrees == 270 ? -one : 0;
  const int32_t matrix[9] = {cos, sin, 0, -sin, cos, 0, 0, 0, 0x40000000};
  for (int i = 0; i < 9; ++i)
    for (int b = 0; b < 4; ++b)  // big-endian
      data[pos + 44 + 4 * i + b] = static_cast<char>((static_cast<uint32_t>(matrix[i]) >> (24 - 8 * b)) & 0xFF);
  std::ofstream(path, std::ios::binary) << data;
}

// kAsFfmpeg is what `ffmpeg -i FILE -pix_fmt rgb24` gives (the bytes diffusers' load_video reads through imageio's
// ffmpeg): the scale filter's default conversion and the command line's autorotation, on the encodings phones and
// editors write. Each clip is made by the ffmpeg program, and its RGB24 decode is the reference, byte for byte.
TEST(VideoReader, AsFfmpegIsTheCommandLinesRgb24) {
  TempDir dir;
  // testsrc2 makes even sizes only: an odd one is scaled to ("64x40,scale=61:35").
  const std::string src = "-f lavfi -i 'testsrc2=size=%SIZE%,noise=alls=20:allf=t' -r 16 -frames:v 6 ";
  const struct {
    const char* name;
    const char* size;  // as stored; rotation 90 shows it turned
    const char* encode;
    int64_t height, width;  // upright
    int rotation;
  } clips[] = {
      {"h264.mp4", "64x40", "-c:v libx264 -pix_fmt yuv420p -colorspace bt709", 40, 64, 0},
      {"odd.mp4", "64x40,scale=61:35", "-c:v libx264 -pix_fmt yuv444p", 35, 61, 0},  // no matrix: BT.601
      {"full.mp4", "48x32", "-c:v libx264 -pix_fmt yuvj420p", 32, 48, 0},
      {"x265.mkv", "96x64", "-c:v libx265 -x265-params log-level=none -pix_fmt yuv422p10le", 64, 96, 0},
      {"vp9.webm", "48x32", "-c:v libvpx-vp9 -pix_fmt yuv444p -colorspace bt470bg", 32, 48, 0},
      {"turned.mp4", "64x40", "-c:v libx264 -pix_fmt yuv420p", 64, 40, 90},
      {"upside.mov", "48x32", "-c:v libx264 -pix_fmt yuv420p", 32, 48, 180},
      {"left.mp4", "64x40", "-c:v libx264 -pix_fmt yuv420p", 64, 40, 270},
  };
  for (const auto& c : clips) {
    SCOPED_TRACE(c.name);
    std::string cmd = "ffmpeg -v error -y " + src + c.encode + " '" + (dir / c.name) + "'";
    cmd.replace(cmd.find("%SIZE%"), 6, c.size);
    std::string log;
    ASSERT_EQ(run_command(cmd, &log), 0) << log;
    if (c.rotation != 0) set_track_rotation(dir / c.name, c.rotation);
    const io::VideoLevels ours = io::read_video_levels(dir / c.name, -1, io::RgbConversion::kAsFfmpeg);
    ASSERT_EQ(ours.frames.sizes(), (std::vector<int64_t>{6, c.height, c.width, 3}));
    EXPECT_EQ(ours.info.rotation, c.rotation);
    EXPECT_EQ(io::video_size(dir / c.name), std::make_pair(c.height, c.width));
    std::string raw;
    ASSERT_EQ(run_command("ffmpeg -v error -i '" + (dir / c.name) + "' -f rawvideo -pix_fmt rgb24 -", &raw, false), 0);
    ASSERT_EQ(raw.size(), static_cast<size_t>(ours.frames.numel()));
    const at::Tensor theirs = at::from_blob(raw.data(), ours.frames.sizes(), at::kByte);
    const int64_t worst = (theirs.to(at::kInt) - ours.frames.to(at::kInt)).abs().max().item<int64_t>();
    EXPECT_EQ(worst, 0) << "levels apart from ffmpeg's rgb24";
  }
}

// The conditioning clip: the first frames, each resized and mapped as an image is; too few frames is an input
// error naming both numbers.
TEST(VideoReader, ConditioningClipTakesTheFirstFramesResized) {
  TempDir dir;
  const std::string path = dir / "clip.mp4";
  std::string log;
  ASSERT_EQ(run_command("ffmpeg -v error -y -f lavfi -i 'testsrc2=size=64x40:rate=16' -frames:v 7 -c:v libx264 "
                        "-pix_fmt yuv420p '" +
                            path + "'",
                        &log),
            0)
      << log;
  const at::Tensor clip = io::load_conditioning_video(path, 5, 32, 48);  // [1, 3, 5, 32, 48]
  ASSERT_EQ(clip.sizes(), (std::vector<int64_t>{1, 3, 5, 32, 48}));
  const io::VideoLevels levels = io::read_video_levels(path, -1, io::RgbConversion::kAsFfmpeg);
  for (int64_t f = 0; f < 5; ++f) {
    const at::Tensor one = io::conditioning_image(levels.frames[f], 32, 48);  // [1, 3, 32, 48]
    EXPECT_TRUE(at::equal(clip.select(2, f), one)) << "frame " << f;
  }
  EXPECT_GE(clip.min().item<float>(), -1.0f);
  EXPECT_LE(clip.max().item<float>(), 1.0f);
  expect_error([&] { io::load_conditioning_video(path, 9, 32, 48); }, ExitCode::kInput, {path, "has 7 frames", "9"});
}

}  // namespace
}  // namespace omni::media_test
