#!/usr/bin/env python3
"""Writes the audio corpus that tests/io/audio_corpus_test.cpp decodes (io::load_audio), into OUT_DIR.

Every file is made by Debian's ffmpeg program (the encoders phones, editors and recorders use: AAC in M4A and
MP4, MP3 through LAME, FLAC, Vorbis and Opus in Ogg, WAV of 8 to 32 bits) from a speech-like test signal: a
voiced tone gliding in pitch, with pink noise, different in each channel. Beside each, the samples
librosa.load(path, sr=16000[, offset, duration]) gives, as Wan2.2's S2V audio encoder loads its audio (librosa
reads through soundfile / libsndfile, else audioread and the ffmpeg program; resamples with soxr HQ), as raw
float32 bytes, which io::load_audio must reproduce.

Covered: sample rates 8000 to 48000 (16000 too, where nothing is resampled); mono, stereo and 5.1; PCM u8, s16,
s24, s32, float; FLAC; MP3 (CBR stereo, mono at 16 kHz); AAC in M4A (stereo, mono) and in an MP4 beside an H.264
video; Ogg Vorbis; Opus in Ogg and in WebM; spans cut by offset and duration.

Run it in the reference environment (tools/reference/setup.sh):
  tools/reference/.venv/bin/python tools/reference/audio_corpus.py OUT_DIR
then OMNI_AUDIO_CORPUS=OUT_DIR build/tests/io/audio_corpus_test. OUT_DIR/corpus.json lists the cases.
"""

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import librosa
import numpy as np
import soundfile
import soxr

SECONDS = 2.7


def source(rate: int, channels: int) -> str:
    """A lavfi graph: per channel, a tone gliding between 110 and 330 Hz with its harmonics, plus pink noise."""
    parts = []
    for c in range(channels):
        f0 = 110 + 40 * c
        tone = (f"aevalsrc='0.3*sin(2*PI*({f0}*t+60*t*t))+0.1*sin(4*PI*({f0}*t+60*t*t))"
                f"+0.05*sin(6*PI*({f0}*t+60*t*t))':s={rate}:d={SECONDS}")
        noise = f"anoisesrc=color=pink:sample_rate={rate}:duration={SECONDS}:amplitude=0.08:seed={11 + c}"
        parts.append(f"{tone}[t{c}];{noise}[n{c}];[t{c}][n{c}]amix=inputs=2:normalize=0[c{c}]")
    inputs = "".join(f"[c{c}]" for c in range(channels))
    layout = {1: "mono", 2: "stereo", 6: "5.1"}[channels]
    if channels == 1:
        return ";".join(parts) + ";[c0]anull[out]"
    return ";".join(parts) + f";{inputs}join=inputs={channels}:channel_layout={layout}[out]"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        sys.exit("audio_corpus: no ffmpeg program (Debian's ffmpeg package)")
    cases = []

    def add(name, rate, channels, encode, note="", video=False, spans=((None, None),)):
        path = out / name
        cmd = [ffmpeg, "-v", "error", "-y"]
        if video:  # a clip with sound: an H.264 picture beside the audio
            cmd += ["-f", "lavfi", "-i", f"testsrc2=size=64x48:rate=16:duration={SECONDS}"]
        cmd += ["-filter_complex", source(rate, channels), "-map", "[out]"]
        if video:
            cmd += ["-map", "0:v", "-c:v", "libx264", "-pix_fmt", "yuv420p"]
        cmd += [*encode.split(), str(path)]
        subprocess.run(cmd, check=True)
        try:
            soundfile.info(str(path))
            reader = "soundfile"
        except Exception:  # librosa falls back to audioread (the ffmpeg program, 16-bit)
            reader = "audioread"
        for offset, duration in spans:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "PySoundFile failed. Trying audioread instead."
                y, sr = librosa.load(str(path), sr=16000, offset=offset or 0.0, duration=duration)
            assert sr == 16000 and y.dtype == np.float32 and y.ndim == 1
            expected = f"{name}.{len(cases)}.f32"
            (out / expected).write_bytes(y.tobytes())
            cases.append({"file": name, "expected": expected, "samples": int(y.shape[0]), "rate": rate,
                          "channels": channels, "offset": offset, "duration": duration, "reader": reader,
                          "encode": encode, "note": note})

    add("pcm16_8k_mono.wav", 8000, 1, "-c:a pcm_s16le", "a telephone-band recording")
    add("pcm16_16k_stereo.wav", 16000, 2, "-c:a pcm_s16le", "16 kHz: not resampled")
    add("pcm16_44k_stereo.wav", 44100, 2, "-c:a pcm_s16le", "CD rate", spans=((None, None), (0.37, 1.21)))
    add("pcm24_48k_stereo.wav", 48000, 2, "-c:a pcm_s24le", "a field recorder's 24-bit")
    add("pcm32_32k_mono.wav", 32000, 1, "-c:a pcm_s32le")
    add("float_48k_stereo.wav", 48000, 2, "-c:a pcm_f32le", "a DAW's float export")
    add("u8_11k_mono.wav", 11025, 1, "-c:a pcm_u8")
    add("flac_22k_stereo.flac", 22050, 2, "-c:a flac", spans=((None, None), (1.0, None)))
    add("mp3_44k_stereo.mp3", 44100, 2, "-c:a libmp3lame -b:a 128k", "a podcast's MP3")
    add("mp3_16k_mono.mp3", 16000, 1, "-c:a libmp3lame -b:a 48k")
    add("aac_48k_stereo.m4a", 48000, 2, "-c:a aac -b:a 128k", "a phone's voice memo",
        spans=((None, None), (0.5, 1.0)))
    add("aac_22k_mono.m4a", 22050, 1, "-c:a aac -b:a 64k")
    add("aac_44k_51.m4a", 44100, 6, "-c:a aac -b:a 256k", "5.1")
    add("clip_aac_44k.mp4", 44100, 2, "-c:a aac -b:a 128k", "a phone video's sound", video=True)
    add("vorbis_22k_stereo.ogg", 22050, 2, "-c:a libvorbis -q:a 4")
    add("opus_48k_stereo.opus", 48000, 2, "-c:a libopus -b:a 64k", "a messenger's voice note")
    add("opus_48k_mono.webm", 48000, 1, "-c:a libopus -b:a 32k", "WebM: audioread")

    manifest = {"librosa": librosa.__version__, "soundfile": soundfile.__version__,
                "libsndfile": soundfile.__libsndfile_version__, "soxr": soxr.__version__,
                "libsoxr": soxr.__libsoxr_version__, "cases": cases}
    (out / "corpus.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"audio_corpus: {len(cases)} cases into {out} (librosa {librosa.__version__}, libsndfile "
          f"{soundfile.__libsndfile_version__}, libsoxr {soxr.__libsoxr_version__})")


if __name__ == "__main__":
    main()
