#!/usr/bin/env python3
"""Writes the torch.save .pth cases that tests/io/pth_file_test.cpp reads (io/pth_file.h), into OUT_DIR.

Good cases: archives torch.save writes (an OrderedDict state dict in every storable dtype, views sharing one
storage, a plain dict, a wrapped {"model": ...} dict, a stream-saved archive, a zip64 rewrite), each with a
good_X.safetensors twin holding the same tensors (contiguous copies) to compare with.
Bad cases: hostile or broken archives that PthFile must refuse with an input error; cases.json gives for each
the substrings its message must contain. The hostile pickles are only ever written here, never loaded: the
os.system case would run `touch MARKER` if anything unpickled it, and the test checks that MARKER never appears.

Run it in the reference environment (tools/reference/setup.sh):
  tools/reference/.venv/bin/python tools/reference/pth_cases.py OUT_DIR
then OMNI_PTH_CASES=OUT_DIR build/tests/io/pth_file_test
"""

import collections
import io
import json
import os
import struct
import sys
import uuid
import zipfile
import zlib

import torch
from safetensors.torch import save_file


def state_dict():
    """A model's state dict plus one extra tensor of each kind the reader must handle."""
    torch.manual_seed(11)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16), torch.nn.Linear(16, 4))
    sd = model.state_dict()  # an OrderedDict with a _metadata attribute (pickled through BUILD)
    sd["extra.f16"] = torch.randn(5, 7).half()
    sd["extra.bf16"] = torch.randn(3, 9).bfloat16()
    sd["extra.f64"] = torch.randn(4, 4, dtype=torch.float64)
    sd["extra.i64"] = torch.randint(-(10**12), 10**12, (11,), dtype=torch.int64)
    sd["extra.i32"] = torch.randint(-100000, 100000, (3, 5), dtype=torch.int32)
    sd["extra.i16"] = torch.randint(-30000, 30000, (13,), dtype=torch.int16)
    sd["extra.i8"] = torch.randint(-128, 128, (2, 9), dtype=torch.int8)
    sd["extra.u8"] = torch.randint(0, 256, (17,), dtype=torch.uint8)
    sd["extra.bool"] = torch.randint(0, 2, (19,)).bool()
    sd["extra.f8_e4m3"] = (torch.randn(6, 6) * 4).to(torch.float8_e4m3fn)
    sd["extra.f8_e5m2"] = (torch.randn(10) * 4).to(torch.float8_e5m2)
    sd["extra.scalar"] = torch.tensor(3.5)
    sd["extra.empty"] = torch.zeros(0, 5)
    sd["extra.big"] = torch.randn(600, 600)  # 1.44 MB: ranged reads must touch only their slice
    # Views into one storage at different offsets: torch.save stores the whole 100-element storage once.
    base = torch.randn(100)
    sd["extra.view_a"] = base[10:30].view(4, 5)
    sd["extra.view_b"] = base[50:74].view(2, 3, 4)
    # A size-1 dimension with an unusual stride is still row-major.
    sd["extra.column"] = torch.randn(1, 5).t()
    # Tied weights: one tensor object under two names (pickled once, then fetched from the memo).
    sd["extra.tied"] = sd["0.weight"]
    return sd


def twin(path, tensors):
    save_file({k: v.contiguous().clone() for k, v in tensors.items()}, path)


def torch_zip_entries(tensors):
    """(name, bytes) of each record of the archive torch.save writes for `tensors` (archive folder "x")."""
    buf = io.BytesIO()
    torch.save(tensors, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        return [(i.filename, z.read(i.filename)) for i in z.infolist()]


def write_zip(path, entries, method=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=method) as z:
        for name, data in entries:
            z.writestr(zipfile.ZipInfo(name), data, compress_type=method)


def write_zip64(path, entries):
    """A stored zip whose every size and offset is in zip64 extra fields (as torch writes for files over 4 GB),
    with the data padded to 64 bytes like torch does."""
    out = bytearray()
    central = bytearray()
    for name, data in entries:
        name_b = name.encode()
        offset = len(out)
        crc = zlib.crc32(data)
        zip64_local = struct.pack("<HHQQ", 1, 16, len(data), len(data))
        pad = (-(offset + 30 + len(name_b) + len(zip64_local) + 4)) % 64
        local_extra = zip64_local + struct.pack("<HH", 0x4246, pad) + b"Z" * pad
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 0, 0, 0, crc, 0xFFFFFFFF, 0xFFFFFFFF, len(name_b),
                           len(local_extra))
        out += name_b + local_extra + data
        central_extra = struct.pack("<HHQQQ", 1, 24, len(data), len(data), offset)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 0, 0, 0, crc, 0xFFFFFFFF, 0xFFFFFFFF,
                               len(name_b), len(central_extra), 0, 0, 0, 0, 0xFFFFFFFF)
        central += name_b + central_extra
    cd_offset = len(out)
    out += central
    eocd64 = len(out)
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, len(entries), len(entries), len(central), cd_offset)
    out += struct.pack("<IIQI", 0x07064B50, 0, eocd64, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    with open(path, "wb") as f:
        f.write(out)


def replace(entries, suffix, data):
    """entries with the record whose name ends with `suffix` replaced by `data`."""
    return [(n, data if n.endswith(suffix) else d) for n, d in entries]


# A few pickle opcodes, to write the data.pkl of crafted cases by hand.
def p_str(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def p_int(i):
    return b"J" + struct.pack("<i", i)


def p_tensor(storage_key, numel, offset, size, stride):
    """_rebuild_tensor_v2(('storage', torch.FloatStorage, key, 'cpu', numel), offset, size, stride, False, {})"""
    return (b"ctorch._utils\n_rebuild_tensor_v2\n(" + b"(" + p_str("storage") + b"ctorch\nFloatStorage\n" +
            p_str(storage_key) + p_str("cpu") + p_int(numel) + b"tQ" + p_int(offset) + b"(" +
            b"".join(p_int(d) for d in size) + b"t(" + b"".join(p_int(d) for d in stride) + b"t\x89" +
            b"ccollections\nOrderedDict\n)R" + b"tR")


def p_state_dict(items):
    """An OrderedDict of (name, pickled value) items."""
    return b"\x80\x02ccollections\nOrderedDict\n)R(" + b"".join(p_str(k) + v for k, v in items) + b"u."


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: pth_cases.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    cases = []

    def good(name, obj, tensors, big=None):
        torch.save(obj, os.path.join(out, name + ".pth"))
        twin(os.path.join(out, name + ".safetensors"), tensors)
        cases.append({"file": name + ".pth", "kind": "good", "twin": name + ".safetensors", "big": big})

    def bad(name, errors, **extra):
        cases.append({"file": name + ".pth", "kind": "bad", "errors": errors, **extra})

    def path(name):
        return os.path.join(out, name + ".pth")

    sd = state_dict()
    good("good_state_dict", sd, sd, big="extra.big")
    plain = {"a": torch.arange(6, dtype=torch.float32).view(2, 3), "b": torch.ones(4, dtype=torch.int64)}
    good("good_plain_dict", dict(plain), plain)
    good("good_wrapped", {"model": dict(plain)}, plain)
    good("good_empty", collections.OrderedDict(), {})

    # Saved to a stream: the archive folder is "archive", not the file's stem.
    buf = io.BytesIO()
    torch.save(plain, buf)
    with open(path("good_stream"), "wb") as f:
        f.write(buf.getvalue())
    twin(os.path.join(out, "good_stream.safetensors"), plain)
    cases.append({"file": "good_stream.pth", "kind": "good", "twin": "good_stream.safetensors", "big": None})

    # Every size and offset in zip64 fields; checked here with torch's own reader (it is not hostile).
    write_zip64(path("good_zip64"), torch_zip_entries(sd))
    loaded = torch.load(path("good_zip64"), weights_only=True)
    assert all(torch.equal(loaded[k].float(), sd[k].float()) for k in sd), "zip64 rewrite changed the tensors"
    twin(os.path.join(out, "good_zip64.safetensors"), sd)
    cases.append({"file": "good_zip64.pth", "kind": "good", "twin": "good_zip64.safetensors", "big": "extra.big"})

    entries = torch_zip_entries({"w": torch.randn(4, 4), "big": torch.randn(256, 256)})

    # A GLOBAL outside the allow-list, refused when it is read.
    write_zip(path("bad_global_os_system"),
              replace(entries, "/data.pkl", b"\x80\x02cos\nsystem\nq\x00X\n\x00\x00\x00echo pwnedq\x01\x85q\x02R."))
    bad("bad_global_os_system", ["GLOBAL os.system is not allowed"])
    # The same through STACK_GLOBAL (pickle protocol 4).
    write_zip(path("bad_stack_global_eval"),
              replace(entries, "/data.pkl", b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93X\x01\x00\x00\x001\x85R."))
    bad("bad_stack_global_eval", ["GLOBAL builtins.eval is not allowed"])

    # An object whose unpickling would run a shell command, saved by torch.save itself (pickle protocol 2).
    marker = "/tmp/omni_pth_pwned_" + uuid.uuid4().hex

    class Payload:
        def __reduce__(self):
            return (os.system, ("touch " + marker,))

    torch.save({"w": torch.randn(3), "payload": Payload()}, path("bad_reduce_os_system"))
    bad("bad_reduce_os_system", ["GLOBAL " + os.system.__module__ + ".system is not allowed"], marker=marker)

    # Cut in half: no end-of-central-directory record.
    with open(path("good_state_dict"), "rb") as f:
        whole = f.read()
    with open(path("bad_truncated"), "wb") as f:
        f.write(whole[: len(whole) // 2])
    bad("bad_truncated", ["truncated or corrupt zip"])
    with open(path("bad_empty"), "wb") as f:
        pass
    bad("bad_empty", ["truncated or corrupt zip"])
    with open(path("bad_not_zip"), "wb") as f:
        f.write(b"hello, this is not a zip archive\n")
    bad("bad_not_zip", ["not a torch.save archive"])

    # A storage record shorter than the storage (the 256x256 tensor's record cut to half).
    big_key = max(entries, key=lambda e: len(e[1]))[0]
    write_zip(path("bad_short_record"),
              [(n, d[: len(d) // 2] if n == big_key else d) for n, d in entries])
    bad("bad_short_record", ["shorter than its storage", big_key])

    # Compressed records: torch.save never writes them.
    write_zip(path("bad_deflated"), entries, zipfile.ZIP_DEFLATED)
    bad("bad_deflated", ["is compressed (zip method 8)"])

    torch.save(plain, path("bad_legacy"), _use_new_zipfile_serialization=False)
    bad("bad_legacy", ["legacy (pre-1.6, non-zip)", "torch.save(torch.load('", "bad_legacy.zip.pth"])

    torch.save({"w_t": torch.randn(3, 4).t()}, path("bad_noncontiguous"))
    bad("bad_noncontiguous", ["tensor 'w_t': non-contiguous tensor", "tensor.contiguous()"])

    torch.save({"n": torch.randn(3)._neg_view()}, path("bad_neg_bit"))
    bad("bad_neg_bit", ["tensor 'n': has metadata {neg}"])

    torch.save({"w": torch.randn(2), "epoch": 3}, path("bad_non_tensor"))
    bad("bad_non_tensor", ["entry 'epoch' is an int, expected a tensor"])

    write_zip(path("bad_byteorder"), replace(entries, "/byteorder", b"big"))
    bad("bad_byteorder", ["byteorder says 'big'"])

    # Crafted data.pkl files over a 16-byte FloatStorage record data/0.
    crafted = [("x/data.pkl", b""), ("x/byteorder", b"little"), ("x/data/0", bytes(16)), ("x/version", b"3\n")]
    write_zip(path("bad_outside_storage"),
              replace(crafted, "/data.pkl", p_state_dict([("w", p_tensor("0", 4, 2, [4], [1]))])))
    bad("bad_outside_storage", ["tensor 'w': elements [2, +4) are outside its storage x/data/0"])
    write_zip(path("bad_missing_record"),
              replace(crafted, "/data.pkl", p_state_dict([("w", p_tensor("7", 4, 0, [4], [1]))])))
    bad("bad_missing_record", ["record 'x/data/7' is missing"])
    write_zip(path("bad_opcode"), replace(crafted, "/data.pkl", p_state_dict([("w", b"I12\n")])))
    bad("bad_opcode", ["opcode 0x49 at byte"])
    write_zip(path("bad_no_stop"), replace(crafted, "/data.pkl", p_state_dict([])[:-1]))
    bad("bad_no_stop", ["no STOP opcode"])
    write_zip(path("bad_deep_nesting"), replace(crafted, "/data.pkl", b"\x80\x02" + b"]" * 300000 + b"a" * 299999 + b"."))
    bad("bad_deep_nesting", ["data.pkl holds a list, expected a state dict"])
    write_zip(path("bad_self_reference"), replace(crafted, "/data.pkl", b"\x80\x02]q\x00h\x00a."))
    bad("bad_self_reference", ["data.pkl holds a list"])
    write_zip(path("bad_memo"), replace(crafted, "/data.pkl", b"\x80\x02h\x05."))
    bad("bad_memo", ["memo entry 5 was never stored"])
    write_zip(path("bad_two_archives"), crafted + [("y/data.pkl", b"\x80\x02}.")])
    bad("bad_two_archives", ["found 2 <archive>/data.pkl records"])

    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump({"cases": cases}, f, indent=1)
    print(f"{len(cases)} cases in {out}")


if __name__ == "__main__":
    main()
