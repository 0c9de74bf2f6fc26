#!/usr/bin/env python3
"""Writes the image corpus that tests/io/image_corpus_test.cpp decodes (io::read_image), into OUT_DIR.

Every image is made by Pillow (the pinned one of tools/reference/requirements.txt) from photo-like sources:
smooth gradients, fine texture, sharp edges and a disc, so that JPEG's chroma upsampling and IDCT rounding and
WebP's filters all have work to do. Beside each, the pixels diffusers.utils.load_image gives for it (Image.open,
ImageOps.exif_transpose, convert("RGB")) as raw [H, W, 3] uint8 bytes, which io::read_image must equal exactly.

Covered: JPEG baseline at 4:4:4 / 4:2:2 / 4:2:0 and qualities 50..100, progressive, optimized Huffman tables,
restart markers, grayscale, CMYK (Adobe-inverted, as Pillow writes it, and the same file without its Adobe
marker), EXIF orientation 1..8 (little- and big-endian), XMP orientation; WebP lossy, lossless, lossy and lossless
with alpha, animated (first frame), with EXIF orientation; PNG RGB, RGBA, L, LA, 1-bit, palette, palette with
transparency, 16-bit gray (I;16), 16-bit RGB and RGBA, with eXIf, with ImageMagick's "Raw profile
type exif"; BMP, TGA, PPM/PGM, GIF without transparency; odd sizes (1 px wide, 1 px high, 3 x 5, 4,097 px wide).

Run it in the reference environment (tools/reference/setup.sh):
  tools/reference/.venv/bin/python tools/reference/image_corpus.py OUT_DIR
then OMNI_IMAGE_CORPUS=OUT_DIR build/tests/io/image_corpus_test. OUT_DIR/corpus.json lists the cases.
"""

import io
import json
import struct
import sys
import warnings
import zlib
from pathlib import Path

import numpy as np
import PIL
from diffusers.utils import load_image
from PIL import Image, features


def photo(h, w, seed):
    """A photo-like RGB image: lighting gradients, a textured surface, a hard-edged object, sensor noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    fy, fx = y / max(h - 1, 1), x / max(w - 1, 1)
    sky = np.stack([90 + 120 * fy, 140 + 80 * fy, 230 - 60 * fy], -1)
    texture = 18 * np.sin(x / 2.3 + np.cos(y / 3.1) * 2)[..., None] * np.array([1.0, 0.8, 0.5])
    ground = np.stack([120 + 40 * fx, 100 + 30 * np.cos(6 * fx), 60 + 20 * fy], -1) + texture
    horizon = (fy > 0.55 + 0.08 * np.sin(7 * fx))[..., None]
    img = np.where(horizon, ground, sky)
    cy, cx, r = 0.35 * h, 0.62 * w, 0.18 * min(h, w) + 1
    disc = ((y - cy) ** 2 + (x - cx) ** 2 < r * r)[..., None]
    img = np.where(disc, np.array([250.0, 210, 40]), img)
    bar = ((np.abs(x - 0.2 * w) < 0.03 * w + 0.5) & (fy > 0.3))[..., None]
    img = np.where(bar, np.array([20.0, 20, 30]), img)
    img = img + rng.normal(0, 6, img.shape)
    return Image.fromarray(np.clip(np.rint(img), 0, 255).astype(np.uint8))


def alpha_of(img, seed):
    h, w = img.height, img.width
    y, x = np.mgrid[0:h, 0:w]
    a = (255 * (x / max(w - 1, 1)) * (0.5 + 0.5 * np.sin(y / 3.0))).astype(np.uint8)
    a[: h // 3, : w // 3] = 0  # fully transparent corner: its colour must still come through convert("RGB")
    return Image.fromarray(a)


def exif_with_orientation(o, little=True):
    exif = Image.Exif()
    exif[0x0112] = o
    data = exif.tobytes()  # Pillow writes little-endian ("II")
    if not little:  # the same IFD0 in big-endian, by hand: header, one entry (SHORT), next-IFD 0
        data = b"Exif\x00\x00MM\x00\x2a\x00\x00\x00\x08\x00\x01" + struct.pack(">HHIHH", 0x0112, 3, 1, o, 0) + b"\0" * 4
    return data


def xmp_with_orientation(o):
    return (
        '<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/">'
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description '
        f'xmlns:tiff="http://ns.adobe.com/tiff/1.0/" tiff:Orientation="{o}"/></rdf:RDF></x:xmpmeta>'
        '<?xpacket end="w"?>'
    ).encode()


def png_chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def png16(arr, color_type):
    """A 16-bit PNG Pillow cannot write (RGB / RGBA at 16 bits): rows of big-endian samples, filter 0."""
    h, w = arr.shape[:2]
    raw = b"".join(b"\0" + arr[r].astype(">u2").tobytes() for r in range(h))
    ihdr = struct.pack(">IIBBBBB", w, h, 16, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", zlib.compress(raw)) + png_chunk(
        b"IEND", b"")


def insert_png_chunk_before_idat(png, chunk):
    i = png.index(b"IDAT") - 4
    return png[:i] + chunk + png[i:]


def strip_jpeg_segment(jpeg, marker):
    """The JPEG without its APPn segments of `marker` (0xEE: Adobe APP14)."""
    out, pos = bytearray(jpeg[:2]), 2
    while pos + 4 <= len(jpeg):
        m = jpeg[pos + 1]
        if m == 0xDA:
            out += jpeg[pos:]
            break
        n = struct.unpack(">H", jpeg[pos + 2 : pos + 4])[0]
        if m != marker:
            out += jpeg[pos : pos + 2 + n]
        pos += 2 + n
    return bytes(out)


def main():
    # load_image's convert("RGB") of a palette image with a tRNS table warns that RGBA would keep the alpha.
    warnings.filterwarnings("ignore", message="Palette images with Transparency")
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    cases = []

    def add(name, fmt, data_or_save, note=""):
        path = out / name
        if callable(data_or_save):
            data_or_save(path)
        else:
            path.write_bytes(data_or_save)
        ref = np.asarray(load_image(str(path)))
        assert ref.dtype == np.uint8 and ref.ndim == 3 and ref.shape[2] == 3, (name, ref.shape)
        (out / (name + ".rgb")).write_bytes(np.ascontiguousarray(ref).tobytes())
        with Image.open(path) as im:
            mode = im.mode
        cases.append({"file": name, "format": fmt, "mode": mode, "height": int(ref.shape[0]),
                      "width": int(ref.shape[1]), "expected": name + ".rgb", "note": note})

    def save(img, **kw):
        return lambda path: img.save(path, **kw)

    a = photo(61, 97, 1)  # odd sizes: every chroma block edge case of 4:2:0
    b = photo(120, 160, 2)
    odd = {"1x37": photo(37, 1, 3), "23x1": photo(1, 23, 4), "3x5": photo(5, 3, 5), "4097x9": photo(9, 4097, 6)}

    # JPEG
    for sub, tag in ((0, "444"), (1, "422"), (2, "420")):
        for q in (50, 90, 100):
            add(f"a_{tag}_q{q}.jpg", "JPEG", save(a, quality=q, subsampling=sub))
        add(f"b_{tag}_q90_progressive.jpg", "JPEG", save(b, quality=90, subsampling=sub, progressive=True))
    add("b_420_q75_optimized.jpg", "JPEG", save(b, quality=75, optimize=True))
    add("b_420_q90_restart_blocks.jpg", "JPEG", save(b, quality=90, restart_marker_blocks=3))
    add("b_444_q85_restart_rows.jpg", "JPEG", save(b, quality=85, subsampling=0, restart_marker_rows=1))
    add("a_gray_q90.jpg", "JPEG", save(a.convert("L"), quality=90))
    add("b_gray_q70_progressive.jpg", "JPEG", save(b.convert("L"), quality=70, progressive=True))
    cmyk = io.BytesIO()
    b.convert("CMYK").save(cmyk, "JPEG", quality=90)
    add("b_cmyk_adobe.jpg", "JPEG", cmyk.getvalue(), "Adobe APP14 marker, inverted values, as Pillow writes CMYK")
    add("b_cmyk_no_adobe.jpg", "JPEG", strip_jpeg_segment(cmyk.getvalue(), 0xEE),
        "the same scans without the Adobe marker: Pillow still reads them as inverted")
    for name, img in odd.items():
        add(f"odd_{name}_420.jpg", "JPEG", save(img, quality=90, subsampling=2))
        add(f"odd_{name}.png", "PNG", save(img))
    for o in range(1, 9):
        add(f"a_exif_orientation{o}.jpg", "JPEG", save(a, quality=90, exif=exif_with_orientation(o)))
    add("a_exif_orientation6_bigendian.jpg", "JPEG", save(a, quality=90, exif=exif_with_orientation(6, False)))
    add("a_xmp_orientation8.jpg", "JPEG", save(a, quality=90, xmp=xmp_with_orientation(8)),
        "XMP tiff:Orientation, no EXIF")

    # WebP
    if features.check("webp"):
        add("b_lossy_q80.webp", "WebP", save(b, quality=80))
        add("a_lossy_q95.webp", "WebP", save(a, quality=95))
        add("b_lossless.webp", "WebP", save(b, lossless=True))
        rgba = b.copy()
        rgba.putalpha(alpha_of(b, 7))
        add("b_lossy_alpha.webp", "WebP", save(rgba, quality=80))
        add("b_lossless_alpha.webp", "WebP", save(rgba, lossless=True, exact=True))
        add("a_lossy_exif_orientation6.webp", "WebP", save(a, quality=85, exif=exif_with_orientation(6)))
        add("a_animated.webp", "WebP", save(a, save_all=True, append_images=[b.resize(a.size)], duration=100),
            "two frames: load_image gives the first")
        add("odd_3x5.webp", "WebP", save(odd["3x5"], quality=90))

    # PNG and the other lossless formats
    rgba = a.copy()
    rgba.putalpha(alpha_of(a, 8))
    add("a_rgb.png", "PNG", save(a))
    add("a_rgba.png", "PNG", save(rgba))
    add("a_l.png", "PNG", save(a.convert("L")))
    add("a_la.png", "PNG", save(a.convert("LA")))
    add("a_1bit.png", "PNG", save(a.convert("1")))
    add("a_palette.png", "PNG", save(a.convert("P", palette=Image.Palette.ADAPTIVE, colors=200)))
    pal = a.convert("P", palette=Image.Palette.ADAPTIVE, colors=64)
    add("a_palette_transparency.png", "PNG", save(pal, transparency=5))
    pal_alpha = rgba.convert("P", palette=Image.Palette.ADAPTIVE, colors=32)
    pal_alpha.info["transparency"] = bytes(range(0, 256, 8))
    add("a_palette_trns_table.png", "PNG", save(pal_alpha, transparency=bytes(range(0, 256, 8))))
    gray16 = np.asarray(a.convert("L"), dtype=np.uint16) * 257 // 3  # values above 255 too: Pillow clips them
    gray16[0, :10] = np.arange(10)
    add("a_gray16.png", "PNG", save(Image.fromarray(gray16.astype(np.uint16))),
        "I;16: convert('RGB') clips at 255")
    rgb16 = np.asarray(a, dtype=np.uint16) * 257 + np.arange(a.width, dtype=np.uint16)[None, :, None]
    add("a_rgb16.png", "PNG", png16(rgb16, 2), "written by hand: Pillow cannot save 16-bit RGB")
    rgba16 = np.concatenate([rgb16, np.full(rgb16.shape[:2] + (1,), 40000, np.uint16)], -1)
    add("a_rgba16.png", "PNG", png16(rgba16, 6), "written by hand")
    for o in (3, 6):
        add(f"a_exif_orientation{o}.png", "PNG", save(a, exif=exif_with_orientation(o)), "eXIf chunk")
    plain = io.BytesIO()
    a.save(plain, "PNG")
    hexdump = exif_with_orientation(8).hex()
    profile = f"\nexif\n{len(hexdump) // 2:8d}\n" + "\n".join(hexdump[i : i + 72] for i in range(0, len(hexdump), 72))
    ztxt = png_chunk(b"zTXt", b"Raw profile type exif\0\0" + zlib.compress(profile.encode()))
    add("a_raw_profile_orientation8.png", "PNG", insert_png_chunk_before_idat(plain.getvalue(), ztxt),
        "ImageMagick's zTXt 'Raw profile type exif'")
    itxt = png_chunk(b"iTXt", b"XML:com.adobe.xmp\0\0\0\0\0" + xmp_with_orientation(5))
    add("a_xmp_orientation5.png", "PNG", insert_png_chunk_before_idat(plain.getvalue(), itxt), "iTXt XMP")
    add("a.bmp", "BMP", save(a))
    add("a.tga", "TGA", save(a))
    add("a.ppm", "PNM", save(a))
    add("a.pgm", "PNM", save(a.convert("L")))
    add("a_opaque.gif", "GIF", save(a.convert("P", palette=Image.Palette.ADAPTIVE, colors=128)))

    manifest = {"pillow": PIL.__version__, "libjpeg_turbo": features.version("libjpeg_turbo"),
                "libwebp": features.version("webp"), "cases": cases}
    (out / "corpus.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"image_corpus: {len(cases)} images into {out} (Pillow {PIL.__version__}, libjpeg-turbo "
          f"{manifest['libjpeg_turbo']}, libwebp {manifest['libwebp']})")


if __name__ == "__main__":
    main()
