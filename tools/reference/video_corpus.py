#!/usr/bin/env python3
"""Writes the video corpus that tests/io/video_corpus_test.cpp decodes (io::read_video_levels, kAsFfmpeg), into
OUT_DIR.

Every clip is made by Debian's ffmpeg program (libx264, libx265, libvpx; what phones, editors and screen
recorders write) from a moving, grainy test pattern. Beside each, the frames diffusers.utils.load_video gives for
it (imageio's ffmpeg plugin, which runs the ffmpeg binary imageio-ffmpeg ships: FFmpeg 9.0.2; GIF through PIL)
as raw [F, H, W, 3] uint8 bytes, which io::read_video_levels must equal, and the frame rate load_video reports.

Covered: H.264 4:2:0 (BT.709, BT.601, unspecified matrix), 4:2:2, 4:4:4 at an odd size, full range (yuvj420p),
10-bit 4:2:0 (High 10); H.265 4:2:0 8 and 10 bit, 4:2:2 10 bit; VP9 4:2:0 and 4:4:4 in WebM; MP4, MOV, MKV and
WebM containers; display rotation 90, 180, 270; a variable frame rate; a GIF.

Run it in the reference environment (tools/reference/setup.sh):
  tools/reference/.venv/bin/python tools/reference/video_corpus.py OUT_DIR
then OMNI_VIDEO_CORPUS=OUT_DIR build/tests/io/video_corpus_test. OUT_DIR/corpus.json lists the cases.
"""

import json
import struct
import shutil
import subprocess
import sys
from pathlib import Path

import imageio_ffmpeg
import numpy as np
from diffusers.utils import load_video

# A finite source (palettegen waits for the end of its input).
SOURCE = "testsrc2=size={size}:rate={rate}:duration={seconds},noise=alls=20:allf=t"


def set_rotation(data: bytes, degrees: int) -> bytes:
    """The first track header's matrix set to turn the picture `degrees` clockwise, as a phone writes a portrait
    clip (FFmpeg 5.1's muxer no longer takes a "rotate" tag; demuxers read the matrix as the display matrix)."""
    one = 0x10000
    cos, sin = {90: (0, one), 180: (-one, 0), 270: (0, -one)}[degrees]
    pos = data.find(b"tkhd")
    assert pos > 0 and data[pos + 4] == 0, "a version-0 tkhd"
    matrix = struct.pack(">9i", cos, sin, 0, -sin, cos, 0, 0, 0, 0x40000000)  # 16.16 a b c d, 2.30 u v w
    return data[: pos + 44] + matrix + data[pos + 80 :]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        sys.exit("video_corpus: no ffmpeg program (Debian's ffmpeg package)")
    cases = []

    def add(name, size, encode, note="", frames=10, rate=16, filters="", rotation=0):
        path = out / name
        source = SOURCE.format(size=size, rate=rate, seconds=(frames + 2) / rate) + filters
        cmd = [ffmpeg, "-v", "error", "-y", "-f", "lavfi", "-i", source, "-frames:v", str(frames), *encode.split(),
               str(path)]
        subprocess.run(cmd, check=True)
        if rotation:
            path.write_bytes(set_rotation(path.read_bytes(), rotation))
        pictures, fps = load_video(str(path), return_fps=True)
        rgb = np.stack([np.asarray(p.convert("RGB")) for p in pictures])  # [F, H, W, 3] uint8
        expected = name + ".rgb"
        (out / expected).write_bytes(rgb.tobytes())
        cases.append({"file": name, "expected": expected, "frames": int(rgb.shape[0]), "height": int(rgb.shape[1]),
                      "width": int(rgb.shape[2]), "fps": fps, "encode": encode, "note": note})

    h264 = "-c:v libx264 -preset medium -crf 20"
    add("h264_bt709.mp4", "96x64", f"{h264} -pix_fmt yuv420p -colorspace bt709 -color_primaries bt709 "
        "-color_trc bt709", "a phone's clip")
    add("h264_bt601.mp4", "96x64", f"{h264} -pix_fmt yuv420p -colorspace smpte170m")
    add("h264_unspecified.mp4", "96x64", f"{h264} -pix_fmt yuv420p", "no matrix: BT.601")
    add("h264_422.mov", "96x64", f"{h264} -pix_fmt yuv422p")
    add("h264_444_odd.mkv", "96x64", f"{h264} -pix_fmt yuv444p", "odd size", filters=",scale=61:35")
    add("h264_full_range.mov", "96x64", f"{h264} -pix_fmt yuvj420p", "full range")
    add("h264_10bit.mp4", "96x64", f"{h264} -pix_fmt yuv420p10le", "High 10")
    x265 = "-c:v libx265 -x265-params log-level=none -crf 24"
    add("hevc.mp4", "96x64", f"{x265} -pix_fmt yuv420p -tag:v hvc1", "an iPhone's HEVC")
    add("hevc_10bit.mkv", "96x64", f"{x265} -pix_fmt yuv420p10le")
    add("hevc_422_10bit.mov", "96x64", f"{x265} -pix_fmt yuv422p10le")
    vp9 = "-c:v libvpx-vp9 -b:v 0 -crf 30 -deadline good"
    add("vp9.webm", "96x64", f"{vp9} -pix_fmt yuv420p")
    add("vp9_444.webm", "96x64", f"{vp9} -pix_fmt yuv444p")
    for degrees in (90, 180, 270):
        add(f"h264_rotate{degrees}.mp4", "96x64", f"{h264} -pix_fmt yuv420p", f"display matrix {degrees}: turned upright",
            rotation=degrees)
    add("h264_vfr.mkv", "96x64", f"{h264} -pix_fmt yuv420p -fps_mode vfr", "variable frame rate",
        frames=12, filters=",setpts='N/16/TB+if(gt(N,5),0.05/TB,0)'")
    add("clip.gif", "96x64", "-filter_complex split[a][b];[a]palettegen[p];[b][p]paletteuse", "GIF: PIL",
        frames=6)

    manifest = {"imageio_ffmpeg": imageio_ffmpeg.__version__, "ffmpeg": imageio_ffmpeg.get_ffmpeg_version(),
                "cases": cases}
    (out / "corpus.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"video_corpus: {len(cases)} clips into {out} (load_video through imageio-ffmpeg "
          f"{imageio_ffmpeg.__version__}, FFmpeg {manifest['ffmpeg']})")


if __name__ == "__main__":
    main()
