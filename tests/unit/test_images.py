"""gateway.output.images.image_size on real encoder output and on broken input.

PNG is built here by hand (zlib); JPEG and WebP come from Chromium's own encoders
(Page.captureScreenshot and canvas.toDataURL, fixtures/capture_events.py) at the
sizes listed in fixtures/images/sizes.json — the sizes that were asked for, not
read back. Chrome writes every WebP in the extended format (VP8X, because it
embeds an ICC profile); the ``simple-*`` files carry the same VP8 / VP8L
bitstreams in the simple format that profile-less encoders write.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.output.images import image_size

IMAGES = Path(__file__).parents[2] / "fixtures" / "images"
SIZES: dict[str, list[object]] = json.loads((IMAGES / "sizes.json").read_text())


def png(width: int, height: int, color_type: int = 2) -> bytes:
    """A complete, valid PNG: signature, IHDR, one IDAT of a gradient, IEND."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    channels = {0: 1, 2: 3, 6: 4}[color_type]
    rows = b"".join(b"\x00" + bytes((x + y) % 256 for x in range(width * channels))
                    for y in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


def webp_chunk_kind(data: bytes) -> bytes:
    return data[12:16]


# ------------------------------------------------------------------ real images


def test_fixture_set_covers_every_container() -> None:
    kinds = {webp_chunk_kind((IMAGES / f).read_bytes()) for f in SIZES if f.endswith(".webp")}
    assert kinds == {b"VP8 ", b"VP8L", b"VP8X"}
    assert {v[0] for v in SIZES.values()} == {"png", "jpeg", "webp"}


@pytest.mark.parametrize("name", sorted(SIZES))
def test_real_encoder_output(name: str) -> None:
    fmt, width, height = SIZES[name]
    assert image_size((IMAGES / name).read_bytes()) == (fmt, width, height)


@pytest.mark.parametrize("name", sorted(SIZES))
def test_every_truncation_of_a_real_image_is_right_or_refused(name: str) -> None:
    """A prefix either still holds the header (right size) or is a ValueError — never a
    wrong size, never another exception."""
    data = (IMAGES / name).read_bytes()
    expected = tuple(SIZES[name])
    for end in range(min(len(data), 1500)):
        try:
            got = image_size(data[:end])
        except ValueError:
            continue
        assert got == expected, end


def test_jpeg_frame_header_follows_icc_and_jfif_segments() -> None:
    data = (IMAGES / "shot.jpeg").read_bytes()
    assert data[2:4] == b"\xff\xe0" and b"ICC_PROFILE" in data[:64]  # APP0, then APP2
    assert image_size(data) == ("jpeg", 321, 123)


# ------------------------------------------------------------------ PNG by hand


@pytest.mark.parametrize(("width", "height", "color_type"), [
    (1, 1, 2), (37, 23, 2), (300, 257, 6), (1, 4097, 0), (70_000, 1, 0)])
def test_png_by_hand(width: int, height: int, color_type: int) -> None:
    assert image_size(png(width, height, color_type)) == ("png", width, height)


def test_png_header_needs_its_ihdr_size_fields() -> None:
    data = png(5, 7)
    assert image_size(data[:24]) == ("png", 5, 7)
    with pytest.raises(ValueError):
        image_size(data[:23])
    with pytest.raises(ValueError):
        image_size(data[:8])


# ------------------------------------------------------------------ JPEG by hand


def jpeg_segments(*segments: bytes) -> bytes:
    return b"\xff\xd8" + b"".join(segments) + b"\xff\xd9"


def segment(marker: int, payload: bytes) -> bytes:
    return bytes((0xFF, marker)) + struct.pack(">H", len(payload) + 2) + payload


def sof(marker: int, width: int, height: int) -> bytes:
    return segment(marker, struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00")


@pytest.mark.parametrize("marker", [0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA,
                                    0xCB, 0xCD, 0xCE, 0xCF])
def test_jpeg_every_frame_marker(marker: int) -> None:
    data = jpeg_segments(segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"),
                         sof(marker, 640, 480))
    assert image_size(data) == ("jpeg", 640, 480)


@pytest.mark.parametrize("marker", [0xC4, 0xC8, 0xCC])
def test_jpeg_tables_that_look_like_frames_are_skipped(marker: int) -> None:
    """DHT (C4), JPG (C8) and DAC (CC) sit in the C0-CF range but are not frame headers."""
    decoy = segment(marker, struct.pack(">BHHB", 8, 1, 1, 1) + b"\x00" * 20)
    assert image_size(jpeg_segments(decoy, sof(0xC0, 33, 44))) == ("jpeg", 33, 44)


def test_jpeg_standalone_markers_are_stepped_over() -> None:
    data = b"\xff\xd8" + b"\xff\x01" + b"\xff\xd0" + sof(0xC2, 1024, 768)
    assert image_size(data) == ("jpeg", 1024, 768)


def test_jpeg_exif_thumbnail_frame_is_not_the_image() -> None:
    """A camera JPEG embeds a thumbnail JPEG (with its own SOF) inside APP1 (Exif)."""
    thumbnail = jpeg_segments(sof(0xC0, 160, 120))
    data = jpeg_segments(segment(0xE1, b"Exif\x00\x00" + thumbnail), sof(0xC0, 4000, 3000))
    assert image_size(data) == ("jpeg", 4000, 3000)


def test_jpeg_without_frame_header() -> None:
    with pytest.raises(ValueError, match="frame header"):
        image_size(jpeg_segments(segment(0xE0, b"JFIF\x00"), segment(0xDB, b"\x00" * 65)))
    with pytest.raises(ValueError):
        image_size(b"\xff\xd8")
    with pytest.raises(ValueError):
        image_size(b"\xff\xd8" + sof(0xC0, 10, 10)[:8])  # cut inside the frame header


def test_jpeg_fill_bytes_before_a_marker() -> None:
    """BUG: ITU T.81 B.1.1.2 lets any marker be preceded by 0xFF fill bytes. image_size
    reads the fill byte as a marker with a length, jumps past the frame header and says
    "JPEG without a frame header". (libjpeg-turbo, Chrome's encoder, writes none, so
    the screenshot tool is not affected.)"""
    data = b"\xff\xd8" + segment(0xE0, b"JFIF\x00") + b"\xff" + sof(0xC0, 200, 100)
    assert image_size(data) == ("jpeg", 200, 100)


# ------------------------------------------------------------------ WebP by hand


def riff(chunk: bytes) -> bytes:
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def test_webp_vp8_ignores_scale_bits() -> None:
    frame = b"\x00\x00\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", 0xC000 | 640, 0x4000 | 480)
    assert image_size(riff(b"VP8 " + struct.pack("<I", 10) + frame)) == ("webp", 640, 480)


def test_webp_vp8l_fields() -> None:
    bits = (16383 - 1) | ((1 - 1) << 14) | (1 << 28)  # alpha hint and version bits above
    data = riff(b"VP8L" + struct.pack("<I", 5) + b"\x2f" + bits.to_bytes(4, "little"))
    assert image_size(data) == ("webp", 16383, 1)


def test_webp_vp8x_canvas_is_24_bit() -> None:
    payload = b"\x10\x00\x00\x00" + (70_000 - 1).to_bytes(3, "little") + (2 - 1).to_bytes(
        3, "little")
    assert image_size(riff(b"VP8X" + struct.pack("<I", 10) + payload)) == ("webp", 70_000, 2)


@pytest.mark.parametrize("data", [
    riff(b"VP8 " + b"\x00" * 9),         # too short for the frame size
    riff(b"VP8L" + b"\x00" * 4),
    riff(b"VP8X" + b"\x00" * 9),
    riff(b"ALPH" + b"\x00" * 30),         # not a bitstream chunk
    b"RIFF\x00\x00\x00\x00WEBP",
    b"RIFF\x00\x00\x00\x00WAVEfmt " + b"\x00" * 30,
])
def test_webp_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        image_size(data)


# ------------------------------------------------------------------ garbage


@pytest.mark.parametrize("data", [
    b"", b"\x89PNG", b"GIF89a" + b"\x00" * 40, b"<svg xmlns='http://www.w3.org/2000/svg'/>",
    b"\x00" * 64, b"BM" + b"\x00" * 60, b"\xff", b"\xd8\xff",
])
def test_garbage_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        image_size(data)


PREFIXES = {b"": None, b"\x89PNG\r\n\x1a\n": "png", b"\xff\xd8": "jpeg",
            b"\xff\xd8\xff": "jpeg", b"RIFF\x00\x00\x00\x00WEBP": "webp",
            b"RIFF\x00\x00\x00\x00WEBPVP8 ": "webp", b"RIFF\x00\x00\x00\x00WEBPVP8L": "webp",
            b"RIFF\x00\x00\x00\x00WEBPVP8X": "webp"}


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(sorted(PREFIXES)), st.binary(max_size=200))
def test_random_bytes_give_a_size_or_value_error(prefix: bytes, tail: bytes) -> None:
    """Only ValueError escapes (the screenshot tool catches that one), and a size comes
    with the format the magic bytes announced."""
    try:
        fmt, width, height = image_size(prefix + tail)
    except ValueError:
        return
    assert fmt == (PREFIXES[prefix] or fmt) and isinstance(width, int) and isinstance(height, int)
