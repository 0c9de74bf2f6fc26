#!/usr/bin/env python3
"""Fuzz of omni-generate's text inputs (issue 39): the command line, prompts files (plain and JSON Lines) and
--config YAML, fed random bytes, truncated, overlong and surrogate UTF-8, NUL, byte-order marks, CRLF, huge
lines, deeply nested JSON and YAML, and a "billion laughs" YAML of anchors and aliases.

Each case runs `omni-generate --dry-run` on the tiny T2V fixture and must end within --limit seconds with:
  - exit 2 (a usage error) and exactly one "omni-generate: error" line, for input that is not valid; or exit 0
    for input that is (decided here, independently: Python's own UTF-8 decoder, the same rules the issue states);
    where validity is not decided here (random YAML), either of the two, never anything else (a crash, 1);
  - nothing written in its output folder, and no model loaded ("loaded in" never printed).
The cases are drawn from a fixed seed, so a failure reproduces; each failing case prints its input.
  fuzz_inputs.py GENERATE MODEL_DIR WORK_DIR [--cases-per-kind N] [--limit SECONDS] [--np2 N]
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("gen")
ap.add_argument("model")
ap.add_argument("work")
ap.add_argument("--cases-per-kind", type=int, default=12)
ap.add_argument("--limit", type=float, default=60.0)
ap.add_argument("--np2", type=int, default=4, help="cases also run on 2 ranks under mpirun")
args = ap.parse_args()

rng = random.Random(20261204)
shutil.rmtree(args.work, ignore_errors=True)
os.makedirs(args.work)
common = ["--model", args.model, "--height", "32", "--width", "48", "--num-frames", "5",
          "--num-inference-steps", "1", "--max-sequence-length", "16", "--dry-run", "--log-level", "warn"]


def utf8_ok(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def random_bytes(n):
    # Mostly printable ASCII with some high bytes: valid and invalid UTF-8 both occur.
    out = bytearray()
    for _ in range(n):
        r = rng.random()
        if r < 0.7:
            out.append(rng.randint(0x20, 0x7E))
        elif r < 0.8:
            out += rng.choice(["é", "猫", "😀", "ß", "Ж"]).encode()
        else:
            out.append(rng.randint(0x80, 0xFF))
    return bytes(out)


# Sequences that are not UTF-8 (each also rejected by Python's decoder): truncated, overlong, surrogates,
# past U+10FFFF, stray continuation bytes, bytes never used.
BAD_SEQUENCES = [b"\xe2\x82", b"\xc3", b"\xf0\x9f\x98", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf",
                 b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf4\x90\x80\x80", b"\x80", b"\xbf\xbf", b"\xfe", b"\xff",
                 b"\xf8\x88\x80\x80\x80"]
for s in BAD_SEQUENCES:
    assert not utf8_ok(b"a" + s + b"b"), s

cases = []  # (name, argv extra (bytes items), files {name: bytes}, expected exit codes)


def case(name, extra, files=None, want=(2,)):
    cases.append((name, extra, files or {}, tuple(want)))


def prompt_arg(p):
    return [b"--prompt", b"a " + p.replace(b"\0", b"")]  # argv holds no NUL


n = args.cases_per_kind
for i in range(n):
    p = random_bytes(rng.randint(1, 120))
    case(f"--prompt random {i}", prompt_arg(p), want=(0,) if utf8_ok(p) else (2,))
for i, s in enumerate(BAD_SEQUENCES):
    case(f"--prompt bad sequence {s!r}", prompt_arg(b"cat " + s + b" dog"))
    case(f"--negative-prompt= bad sequence {s!r}", [b"--prompt", b"a cat", b"--negative-prompt=x" + s])
case("--output path not UTF-8", [b"--prompt", b"a cat", b"--output", b"OUT/v\xff.mp4"])
case("--config path not UTF-8", [b"--prompt", b"a cat", b"--config", b"OUT/c\xc3.yaml"])
case("a flag's name not UTF-8", [b"--prompt", b"a cat", b"--se\xffed", b"3"])

# Prompts files, plain text.
for i in range(n):
    lines = [random_bytes(rng.randint(0, 80)) for _ in range(rng.randint(1, 4))]
    body = b"\n".join(b"a " + l for l in lines) + b"\n"
    case(f"prompts .txt random {i}", [b"--prompts-file", b"FILE"], {"FILE": ("p.txt", body)},
         want=(0,) if utf8_ok(body) else (2,))
case("prompts .txt with NUL", [b"--prompts-file", b"FILE"], {"FILE": ("p.txt", b"a c\0at\n")}, want=(0, 2))
case("prompts .txt UTF-8 BOM and CRLF", [b"--prompts-file", b"FILE"],
     {"FILE": ("p.txt", b"\xef\xbb\xbfa cat\r\na dog\r\n")}, want=(0,))
for enc, bom in [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"), ("utf-32-le", b"\xff\xfe\0\0"),
                 ("utf-32-be", b"\0\0\xfe\xff")]:
    case(f"prompts .txt {enc} with BOM", [b"--prompts-file", b"FILE"],
         {"FILE": ("p.txt", bom + "a cat\na dog\n".encode(enc))})
    case(f"prompts .txt {enc} no BOM", [b"--prompts-file", b"FILE"],
         {"FILE": ("p.txt", "a cat playing\n".encode(enc))})
case("prompts .txt one 1 MB line", [b"--prompts-file", b"FILE"],
     {"FILE": ("p.txt", b"a " + b"cat " * 250000 + b"\n")}, want=(0,))
case("prompts .txt 5000 lines", [b"--prompts-file", b"FILE"],
     {"FILE": ("p.txt", b"".join(b"cat %d\n" % k for k in range(5000)))}, want=(0,))
case("prompts .txt empty", [b"--prompts-file", b"FILE"], {"FILE": ("p.txt", b"")})

# JSON Lines.
for i in range(n):
    p = random_bytes(rng.randint(1, 60)).replace(b"\\", b"/").replace(b'"', b"'")
    body = b'{"prompt": "a ' + p + b'"}\n'
    case(f"jsonl random prompt {i}", [b"--prompts-file", b"FILE"], {"FILE": ("p.jsonl", body)},
         want=(0,) if utf8_ok(body) and all(c >= 0x20 for c in p) else (2,))
for i in range(n):
    body = random_bytes(rng.randint(1, 80)) + b"\n"
    case(f"jsonl random bytes {i}", [b"--prompts-file", b"FILE"], {"FILE": ("p.jsonl", body)})
for depth in (100, 10000, 200000):
    case(f"jsonl nested arrays depth {depth}", [b"--prompts-file", b"FILE"],
         {"FILE": ("p.jsonl", b'{"prompt": ' + b"[" * depth + b"]" * depth + b"}\n")})
    case(f"jsonl nested objects depth {depth}", [b"--prompts-file", b"FILE"],
         {"FILE": ("p.jsonl", b'{"prompt": "a", "seed": ' + b'{"a":' * depth + b"1" + b"}" * depth + b"}\n")})
    case(f"jsonl unclosed nesting depth {depth}", [b"--prompts-file", b"FILE"],
         {"FILE": ("p.jsonl", b"[" * depth + b"\n")})
for name, line in [("lone surrogate", rb'{"prompt": "a\ud800b"}'), ("bad escape", rb'{"prompt": "a\qb"}'),
                   ("control char", b'{"prompt": "a\x01b"}'), ("seed 1e400", b'{"prompt": "a", "seed": 1e400}'),
                   ("seed huge", b'{"prompt": "a", "seed": 123456789012345678901234567890}'),
                   ("seed string", b'{"prompt": "a", "seed": "x"}'), ("not an object", b'"a cat"'),
                   ("trailing garbage", b'{"prompt": "a"} x'), ("NUL", b'{"prompt": "a\0"}'),
                   ("empty object", b"{}"), ("UTF-8 BOM", b'\xef\xbb\xbf{"prompt": "a"}')]:
    case(f"jsonl {name}", [b"--prompts-file", b"FILE"], {"FILE": ("p.jsonl", line + b"\n")},
         want=(0,) if name == "UTF-8 BOM" else (2,))

# --config YAML.
for i in range(n):
    body = random_bytes(rng.randint(1, 120))
    case(f"yaml random bytes {i}", [b"--prompt", b"a cat", b"--config", b"FILE"], {"FILE": ("c.yaml", body)},
         want=(0, 2) if utf8_ok(body) else (2,))
laughs = b'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
prev = b"a"
for k in "bcdefghij":
    laughs += k.encode() + b": &" + k.encode() + b" [" + b",".join([b"*" + prev] * 9) + b"]\n"
    prev = k.encode()
case("yaml billion laughs", [b"--prompt", b"a cat", b"--config", b"FILE"], {"FILE": ("c.yaml", laughs)})
case("yaml billion laughs under a known key", [b"--prompt", b"a cat", b"--config", b"FILE"],
     {"FILE": ("c.yaml", laughs.replace(b"j: &j", b"seed: &j"))})
for depth in (100, 10000, 100000):
    case(f"yaml nested flow depth {depth}", [b"--prompt", b"a cat", b"--config", b"FILE"],
         {"FILE": ("c.yaml", b"seed: " + b"[" * depth + b"]" * depth + b"\n")})
case("yaml nested block depth 2000", [b"--prompt", b"a cat", b"--config", b"FILE"],
     {"FILE": ("c.yaml", b"".join(b"  " * k + b"k%d:\n" % k for k in range(2000)))})
case("yaml UTF-16", [b"--prompt", b"a cat", b"--config", b"FILE"],
     {"FILE": ("c.yaml", b"\xff\xfe" + "seed: 3\n".encode("utf-16-le"))})
# yaml-cpp reads a tab-indented value where PyYAML refuses it: either is one clean outcome.
case("yaml tab indentation", [b"--prompt", b"a cat", b"--config", b"FILE"],
     {"FILE": ("c.yaml", b"seed:\n\t3\n")}, want=(0, 2))
case("yaml fine", [b"--prompt", b"a cat", b"--config", b"FILE"], {"FILE": ("c.yaml", b"seed: 3\n")}, want=(0,))


def run(idx, name, extra, files, want, np):
    out_dir = os.path.join(args.work, f"case{idx:03d}-np{np}")
    os.makedirs(out_dir)
    argv = []
    for a in extra:
        for key, (fname, body) in files.items():
            if a == key.encode():
                path = os.path.join(out_dir, fname)
                with open(path, "wb") as f:
                    f.write(body)
                a = path.encode()
        argv.append(a.replace(b"OUT/", out_dir.encode() + b"/"))
    listing = set(os.listdir(out_dir))
    cmd = [args.gen.encode()] + [c.encode() for c in common] + [b"--output", (out_dir + "/out.mp4").encode()] + argv
    if np > 1:
        cmd = [b"mpirun", b"-q", b"--oversubscribe", b"--allow-run-as-root", b"-np", b"2", b"-x",
               b"OMP_NUM_THREADS=1"] + cmd
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=args.limit)
        code, text = p.returncode, (p.stdout + p.stderr).decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        code, text = "timeout", ((e.stdout or b"") + (e.stderr or b"")).decode("utf-8", "replace")
    secs = time.monotonic() - t0
    problems = []
    if code not in want:
        problems.append(f"exit {code}, want {' or '.join(map(str, want))}")
    errors = [l for l in text.splitlines() if l.startswith("omni-generate: error")]
    if code == 2 and len(errors) != 1:  # one line for the job, however many ranks
        problems.append(f"{len(errors)} error lines on {np} rank(s), want 1")
    if code == 2 and any(s in l for l in errors for s in ("json.exception", "yaml-cpp", "YAML::", "terminate called",
                                                          "what():", "CLI11")):
        problems.append("a library's text reached the user")
    if "loaded in" in text:
        problems.append("a model was loaded")
    if set(os.listdir(out_dir)) - listing:
        problems.append(f"wrote {sorted(set(os.listdir(out_dir)) - listing)}")
    return code, secs, problems, text


failed = 0
slowest = (0.0, "")
codes = {}
for idx, (name, extra, files, want) in enumerate(cases):
    nps = [1] + ([2] if idx % max(1, len(cases) // max(1, args.np2)) == 0 and args.np2 > 0 else [])
    for np in nps:
        code, secs, problems, text = run(idx, name, extra, files, want, np)
        codes[code] = codes.get(code, 0) + 1
        slowest = max(slowest, (secs, name))
        if problems:
            failed += 1
            print(f"FAIL: case {idx} ({name}, np {np}, {secs:.1f} s): {'; '.join(problems)}")
            print("  argv:", [a[:80] for a in extra])
            for fname, body in files.values():
                print(f"  {fname}: {body[:160]!r}{' ...' if len(body) > 160 else ''}")
            print("  output:", "\n    ".join(text.strip().splitlines()[-6:]))
runs = sum(codes.values())
print(f"fuzz: {len(cases)} cases, {runs} runs (exit codes {dict(sorted(codes.items(), key=str))}); "
      f"slowest {slowest[0]:.1f} s ({slowest[1]}); {failed} failed")
sys.exit(1 if failed else 0)
