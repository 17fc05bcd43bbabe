"""Finding and reading input files: directory walk, decompression, binary sniffing, decoding.

Bad input is normal input here. Nothing in this module raises for a bad file: each
problem becomes a `Skipped` record (file left out, with the reason) or a note on the
file (read, with a caveat such as "truncated gzip").
"""

from __future__ import annotations

import bz2
import errno
import io
import lzma
import os
import re
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa

from forensics.ingestion import limits
from parsers.jsonutil import load_json

GZIP_MAGIC = b"\x1f\x8b"
XZ_MAGIC = b"\xfd7zXZ\x00"
BZIP2_MAGIC = b"BZh"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
LZ4_MAGIC = b"\x04\x22\x4d\x18"
COMPRESSIONS: dict[bytes, tuple[str, Callable[[], object] | None]] = {
    GZIP_MAGIC: ("gzip", lambda: zlib.decompressobj(wbits=31)),
    XZ_MAGIC: ("xz", lzma.LZMADecompressor),
    BZIP2_MAGIC: ("bzip2", bz2.BZ2Decompressor),
    ZSTD_MAGIC: ("zstd", None),
    LZ4_MAGIC: ("lz4", None),
}
"""Compressions read transparently, told by their first bytes (a rotated `vllm.log.1.gz`, a
`.tar.xz` sos report, `journalctl | xz`, logrotate's `compresscmd zstd`, an lz4 frame), with
their stream decompressors: each file is read through one, never unpacked to disk. zstd and lz4
have none in the standard library (zstd's comes with Python 3.14); Arrow's are used
(`_arrow_pieces`)."""
MAGIC_BYTES = 16
"""How much of a file's start `compression` needs to tell it (bzip2's block magic is bytes 4-10)."""
ARROW_READ = 64 * 1024
"""The most decompressed bytes asked of Arrow's zstd or lz4 stream at once. A damaged stream's error
loses what the failing read had decompressed: at 64 KB, no more than zstd's own block loses
(at 1 MB a cut file lost up to 1 MB before the cut, its most valuable lines)."""
_CODEC_ERRORS = (zlib.error, lzma.LZMAError, OSError, EOFError, ValueError, pa.ArrowException)
UTF8_BOM = b"\xef\xbb\xbf"
"""A UTF-8 byte-order mark (Windows editors): dropped, or it would stick to the first line."""
SNIFF_BYTES = 64 * 1024
SEGMENT_CHARS = 16 * 1024 * 1024
"""Files larger than this are parsed in newline-aligned segments to bound memory. At 1 GB,
16 MB pieces peaked at 1.2 GB against 1.8-2.0 GB for 32 MB, and ran as fast: buffers under
glibc's 32 MB mmap ceiling are reused instead of mapped afresh (fewer page faults)."""
ARCHIVE_MAX_BYTES = 64 * 1024**3
"""An archive that would unpack to more than this is skipped (a zip bomb, or the wrong file)."""
ARCHIVE_DEPTH = 2
"""Archives inside archives are unpacked this deep (a support bundle of gzipped tarballs)."""
_UNPACKED: list[tempfile.TemporaryDirectory] = []
"""Where archives were unpacked: kept until the process exits (their files are read later,
possibly by worker processes), then removed by `TemporaryDirectory`'s finalizer."""


@dataclass(frozen=True)
class Skipped:
    """A path that contributed no lines, and why."""

    file: str
    reason: str


@dataclass(frozen=True)
class InputFile:
    """A regular file to read. `rel` is relative to the root it was found under."""

    path: Path
    rel: str
    size: int
    mtime: float


def discover(paths: list[Path], _depth: int = 0, *, outside: bool = False) -> tuple[list[InputFile], list[Skipped]]:
    """Walk `paths` (files or directories) and return regular files sorted by relative path.

    Symlinks are followed, but each real file is read once (CRI's
    `/var/log/containers/*.log` links point at `/var/log/pods/...`: reading both would
    count every line twice) and directory cycles are cut. Archives (`.tar`, `.tar.gz`,
    `.tgz`, `.tar.zst`, `.tar.lz4`, `.zip`: support bundles, must-gathers) are unpacked to a temporary directory
    and their members listed as `<archive>/<member path>`.
    """
    found: dict[str, InputFile] = {}
    skipped: list[Skipped] = []
    seen_real: dict[str, str] = {}
    multi = len(paths) > 1
    # (`outside`: the user asked for links out of the given paths to be followed too)
    inside = None if outside else [os.path.realpath(r) for r in paths]
    for root in paths:
        label = root.name if multi else ""
        if not root.exists():
            reason = "broken symlink" if root.is_symlink() else "does not exist"
            skipped.append(Skipped(printable(str(root)), reason))
            continue
        if root.is_file():
            _add(root, _join(label, root.name) if multi else root.name, found, seen_real, skipped, _depth, inside)
            continue
        visited: set[str] = set()
        stack: list[tuple[Path, int]] = [(root, 0)]
        while stack:  # (depth first, in name order; a stack, not recursion: trees 1,000 deep exist)
            here, level = stack.pop()
            rel = here.relative_to(root).as_posix()
            where = printable(str(root) if rel == "." else _join(label, rel))
            real_dir = os.path.realpath(here)
            if real_dir in visited:
                skipped.append(Skipped(where, "symlink loop: directory already visited"))
                continue
            if inside is not None and not _within(real_dir, inside):
                skipped.append(Skipped(where, _OUTSIDE.format(target=real_dir)))
                continue
            visited.add(real_dir)
            try:
                entries = sorted(os.scandir(here), key=lambda e: e.name)
            except OSError as e:
                skipped.append(Skipped(where, f"cannot list: {e.strerror}"))
                continue
            subdirs, files = [], []
            for e in entries:
                (subdirs if _is_dir(e) else files).append(e)
            names = {e.name for e in files}
            if own := sorted(n for pair in OWN_OUTPUTS if set(pair) <= names for n in pair):
                skipped.append(Skipped(where, f"an earlier forensics run's output ({', '.join(own)}), not logs"))
                continue
            for e in files:
                p = Path(e.path)
                _add(p, _join(label, p.relative_to(root).as_posix()), found, seen_real, skipped, _depth, inside)
            depth = limits.current().dir_depth
            if subdirs and level + 1 > depth:
                skipped.append(
                    Skipped(where, f"directories nested over {depth} deep (--max-depth); the deeper ones are not read")
                )
                continue
            stack.extend((Path(e.path), level + 1) for e in reversed(subdirs))
    skipped.sort(key=lambda s: s.file)
    return sorted(found.values(), key=lambda f: f.rel), skipped


_OUTSIDE = "symlink to {target}, outside the paths given: never read (pass that path itself to read it)"
"""Why a link out of the given paths is not followed: a log bundle from a compromised or careless
host can point at `/etc`, `/proc/self/environ` or another tree, and what is read ends up in the
report."""


def printable(name: str) -> str:
    """A file name as the tables and the report can hold it: bytes that are not UTF-8 (a name
    from another locale, or made to break tools) as `\\xff` escapes, not surrogates that no
    encoder accepts. The file itself is still opened by its real name."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _is_dir(e: os.DirEntry) -> bool:
    try:
        return e.is_dir(follow_symlinks=True)
    except OSError:
        return False


def _within(real: str, roots: list[str]) -> bool:
    """Whether the resolved path `real` is one of `roots` or below one."""
    return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


OWN_OUTPUTS = frozenset({("analysis.json", "postmortem.md"), ("events.parquet", "ingest.json")})
"""The files by which a directory is told as what `forensics analyze` / `ingest --out` wrote: an
output left inside the logs (`--out logs/report`) read back as logs would put the report's
own lines (evidence quoted, the timeline) among them on the next run."""


def _join(prefix: str, rel: str) -> str:
    return f"{prefix}/{rel}" if prefix else rel


def _add(
    p: Path, rel: str, found: dict, seen_real: dict, skipped: list, depth: int = 0, inside: list[str] | None = None
) -> None:
    rel, real = printable(rel), os.path.realpath(p)
    if inside is not None and p.is_symlink() and not _within(real, inside):
        skipped.append(Skipped(rel, _OUTSIDE.format(target=real)))
        return
    try:
        st = p.stat()
    except OSError as e:
        if e.errno == errno.ELOOP:  # (links that lead back to themselves: nothing at the end of them)
            reason = "symlink loop (its links lead back to themselves)"
        else:
            reason = "broken symlink" if p.is_symlink() else f"cannot stat: {e.strerror}"
        skipped.append(Skipped(rel, reason))
        return
    if not stat.S_ISREG(st.st_mode):
        skipped.append(Skipped(rel, "not a regular file"))
        return
    if real in seen_real:
        skipped.append(Skipped(rel, f"same file as {seen_real[real]} (symlink); read once"))
        return
    seen_real[real] = rel
    kind = archive_kind(p)
    if kind and depth < ARCHIVE_DEPTH:
        _unpack(p, rel, kind, found, skipped, depth)
        return
    found[rel] = InputFile(p, rel, st.st_size, st.st_mtime)


def archive_kind(p: Path) -> str | None:
    """`tar`, `tar.gz`, `tar.xz`, `tar.bz2`, `tar.zst`, `tar.lz4` or `zip` by content (a renamed bundle still
    counts), else None."""
    try:
        with open(p, "rb") as fh:
            head = fh.read(512)
            if head[:4] == b"PK\x03\x04":
                return "zip"
            if len(head) >= 262 and head[257:262] == b"ustar":
                return "tar"
            if name := compression(head):
                fh.seek(0)
                inner = next(decompress_pieces(name, fh.read, [], 512, read_size=64 * 1024), b"")
                if len(inner) >= 262 and inner[257:262] == b"ustar":
                    return f"tar.{ {'gzip': 'gz', 'bzip2': 'bz2', 'zstd': 'zst', 'lz4': 'lz4'}.get(name, name) }"
    except _CODEC_ERRORS:
        return None
    return None


def _unpack(p: Path, rel: str, kind: str, found: dict, skipped: list, depth: int) -> None:
    """Unpack an archive's regular files (no links, nothing outside it) and list them under `rel`."""
    tmp = tempfile.TemporaryDirectory(prefix="forensics-unpacked-")
    _UNPACKED.append(tmp)
    dest = Path(tmp.name)
    # Never fill the disk: leave 1 GiB free whatever the archive claims.
    limit = min(ARCHIVE_MAX_BYTES, max(0, shutil.disk_usage(dest).free - (1 << 30)))
    notes: list[str] = []
    try:
        if kind == "zip":
            with zipfile.ZipFile(p) as z:
                members = [m for m in z.infolist() if not m.is_dir()]
                total = sum(m.file_size for m in members)
                if total > limit:
                    skipped.append(
                        Skipped(
                            rel,
                            f"archive would unpack to {total} bytes, over the {limit} allowed (disk space "
                            "or ARCHIVE_MAX_BYTES); unpack it yourself",
                        )
                    )
                    return
                for m in members:
                    z.extract(m, dest)  # zipfile drops `..` and absolute parts itself
        else:
            with _open_tar(p, kind, notes) as tar:
                # Member by member, so a truncated download still yields the members before the cut.
                total = 0
                for m in tar:
                    if m.isdir():
                        continue
                    if m.name.startswith("/") or ".." in Path(m.name).parts:
                        skipped.append(Skipped(f"{rel}/{m.name}", _ESCAPING))
                        continue
                    if not m.isreg():
                        skipped.append(
                            Skipped(f"{rel}/{m.name}", "archive member that is a link or device: not unpacked")
                        )
                        continue
                    total += m.size
                    if total > limit:
                        skipped.append(
                            Skipped(
                                rel,
                                f"archive unpacks to over {limit} bytes (disk space or ARCHIVE_MAX_BYTES); "
                                "read up to there",
                            )
                        )
                        break
                    if hasattr(tarfile, "data_filter"):
                        tar.extract(m, dest, filter="data")
                    else:  # Python < 3.11.4: links and escaping paths were filtered above
                        tar.extract(m, dest)  # noqa: S202
                else:
                    # tarfile stops quietly at a header it cannot read; what follows would be lost
                    # without a word. Past the last member there should be nothing but zero padding.
                    rest = iter(lambda: tar.fileobj.read(1 << 20), b"") if tar.fileobj is not None else ()
                    if tail := sum(len(piece) for piece in rest if piece.strip(b"\0")):
                        skipped.append(
                            Skipped(
                                rel,
                                f"damaged tar archive: {tail} bytes after the last readable member could not be read",
                            )
                        )
            if notes:  # a zstd or lz4 stream's damage is a note (tarfile may end quietly at it)
                skipped.append(Skipped(rel, f"damaged {kind} archive ({notes[0]}); {_KEPT}"))
    except (tarfile.TarError, zipfile.BadZipFile, RuntimeError, *_CODEC_ERRORS) as e:
        # RuntimeError: zipfile's "File ... is encrypted, password required"; zlib.error,
        # LZMAError: a corrupt stream inside a tarball or zip member; a zstd/lz4 stream's damage is
        # in `notes`, and tarfile's error ("unexpected end of data") follows from it.
        note = "encrypted, password required" if "encrypted" in str(e) else f"{type(e).__name__}: {e}"
        skipped.append(Skipped(rel, f"damaged {kind} archive ({notes[0] if notes else note}); {_KEPT}"))
    inner, inner_skipped = discover([dest], depth + 1)
    for f in inner:
        name = f"{rel}/{f.rel}"
        found[name] = InputFile(f.path, name, f.size, f.mtime)
    skipped.extend(Skipped(f"{rel}/{k.file}", k.reason) for k in inner_skipped)


_KEPT = "what was unpacked before the damage is read"
_ESCAPING = "archive member with an absolute or `..` path: not unpacked (it would land outside the archive)"


def _open_tar(p: Path, kind: str, notes: list[str]) -> tarfile.TarFile:
    """A tarball open for reading its members in order: tarfile's own decompression, but for
    zstd and lz4 (no `r:zst` before Python 3.14, no lz4 at all), read as a stream through `decompress_pieces`, its
    damage noted in `notes`."""
    if kind not in ("tar.zst", "tar.lz4"):
        return tarfile.open(p, "r:*")
    fh = open(p, "rb")  # noqa: SIM115 (closed with the tarball: the stream reads from it)
    stream = io.BufferedReader(_ReadInto(_reader(fh, notes)), 1 << 20)
    tar = tarfile.open(fileobj=stream, mode="r|")
    close = tar.close

    def close_all() -> None:
        close()
        fh.close()

    tar.close = close_all
    return tar


def read_bytes(f: InputFile) -> tuple[bytes | None, list[str], str | None]:
    """Read a file, transparently decompressing (`COMPRESSIONS`). Returns (data, notes, skip_reason).

    A truncated or corrupt stream yields what was decompressed before the damage, with a
    note: the lines written just before an outage are the valuable ones.
    """
    try:
        with open(f.path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        return None, [], f"unreadable: {e.strerror or e}; check its permissions (chmod, or run as its owner)"
    notes: list[str] = []
    if name := compression(data):
        data = b"".join(decompress_pieces(name, io.BytesIO(data).read, notes))
    return data, notes, None


def read_head(f: InputFile, limit: int) -> bytes:
    """About the first `limit` bytes of a file's text (decompressed), cut at the last newline.

    For the reference-time pass of a sharded run, which needs each file's timestamps,
    not all of its lines. Unreadable or damaged files give what could be read (maybe b"").
    """
    return head_of(f, limit)[0]


def head_of(f: InputFile, limit: int, *, whole_lines: bool = True) -> tuple[bytes, bool]:
    """`read_head`, and whether that is the whole of the file's text; `whole_lines=False`: not
    cut at the last newline (to judge bytes that may hold none, a file of zeros)."""
    try:
        with open(f.path, "rb") as fh:
            pieces, n = [], 0
            for piece in _raw_pieces(fh, [], limit):
                pieces.append(piece)
                n += len(piece)
                if n >= limit:
                    break
            raw = b"".join(pieces)
    except OSError:
        return b"", True
    if len(raw) < limit:
        return raw, True
    raw = raw[:limit]
    return (raw[: raw.rfind(b"\n") + 1] if whole_lines else raw), False


def _raw_pieces(fh: BinaryIO, notes: list[str], size: int) -> Iterator[bytes]:
    """An open file's bytes, decompressed when it is compressed, at most `size` at a time."""
    compressed = compression(fh.read(MAGIC_BYTES))
    fh.seek(0)
    return decompress_pieces(compressed, fh.read, notes, size) if compressed else iter(lambda: fh.read(size), b"")


def compression(head: bytes) -> str | None:
    """The name of the compression (`COMPRESSIONS`) that `head` begins with, else None."""
    if head[1:4] == b"\x2a\x4d\x18" and 0x50 <= head[0] <= 0x5F:
        return "zstd"  # a zstd skippable frame first: `pzstd` writes one before its frames
    for magic, (name, _) in COMPRESSIONS.items():
        if head.startswith(magic):
            # (bzip2's three bytes are also text: its block size digit and block magic follow)
            if magic != BZIP2_MAGIC or (head[3:4].isdigit() and head[4:10] in (b"1AY&SY", b"\x17rE8P\x90", b"")):
                return name
    return None


WHOLE_BINARY_CHECK = 64 * 1024**2
"""A file over this size that would be read whole is first judged binary or not by its head."""


def decompress_pieces(
    name: str, read: Callable[[int], bytes], notes: list[str], size: int = 1 << 20, *, read_size: int | None = None
) -> Iterator[bytes]:
    """The decompressed bytes of a stream compressed with `name` (`COMPRESSIONS`, every member
    or stream of it), at most `size` at a time; `read(n)` gives the compressed input.

    Damage ends the stream with a note, and what was decompressed before it is kept (the
    lines written just before an outage are the valuable ones); bytes after the last member
    that start no other member are ignored. A stream that expands past the limits in force
    (`limits.Limits`: the most bytes, the ratio of a bomb) is cut there, with a note.
    """
    cap = limits.current()
    consumed = kept = 0

    def counted(n: int) -> bytes:
        nonlocal consumed
        data = read(n)
        consumed += len(data)
        return data

    for piece in _decompressed(name, counted, notes, size, read_size=read_size):
        kept += len(piece)
        yield piece
        if kept > cap.decompressed_bytes:
            notes.append(
                f"decompression stopped at {kept:,} bytes, the most read from one compressed file "
                f"(--max-decompressed); the rest is not read"
            )
            return
        if kept > cap.bomb_floor_bytes and kept > cap.bomb_ratio * max(consumed, 1):
            notes.append(
                f"decompression stopped at {kept:,} bytes from {consumed:,} compressed ({kept // max(consumed, 1):,}:1, "
                f"over the {cap.bomb_ratio}:1 no log reaches, --max-ratio): a compression bomb, the rest is not read"
            )
            return


def _decompressed(
    name: str, read: Callable[[int], bytes], notes: list[str], size: int, *, read_size: int | None = None
) -> Iterator[bytes]:
    """`decompress_pieces` without its caps."""
    read_size = read_size or size
    magic, new = next((m, new) for m, (n, new) in COMPRESSIONS.items() if n == name)
    if new is None:
        yield from _arrow_pieces(name, read, notes, size)
        return
    data = read(read_size)
    kept, d = 0, new()
    while True:
        try:
            out = d.decompress(data, size)
        except _CODEC_ERRORS as e:
            notes.append(f"corrupt {name} ({e}); kept the {kept} bytes decompressed before the damage")
            return
        kept += len(out)
        if out:
            yield out
        if d.eof:
            rest = d.unused_data
            while len(rest) < len(magic) and (more := read(read_size)):
                rest += more
            if not rest.startswith(magic):
                return
            d, data = new(), rest
            continue
        # Input still held by the decompressor (when `size` capped its output), else more.
        if hasattr(d, "unconsumed_tail"):  # zlib
            data = d.unconsumed_tail or read(read_size)
        elif not d.needs_input:  # lzma, bz2: held inside, drained by decompressing nothing
            data = b""
            continue
        else:
            data = read(read_size)
        if not data:
            tail = d.flush() if hasattr(d, "flush") else b""  # zlib's output still held
            kept += len(tail)
            for at in range(0, len(tail), size):
                yield tail[at : at + size]
            if not d.eof:
                notes.append(f"truncated {name}: the stream ends early; kept {kept} decompressed bytes")
            return


def _arrow_pieces(name: str, read: Callable[[int], bytes], notes: list[str], size: int) -> Iterator[bytes]:
    """`decompress_pieces` for zstd or lz4, through Arrow's stream decompressor (every frame of
    the stream; `ARROW_READ` at a time). Unlike the others, bytes after the last frame that start
    no other frame are damage, with a note."""

    def readinto(view: memoryview) -> int:
        data = read(len(view))
        view[: len(data)] = data
        return len(data)

    source = pa.PythonFile(_ReadInto(readinto), mode="r")
    stream = pa.CompressedInputStream(source, name)
    kept = 0
    try:
        while out := stream.read(min(size, ARROW_READ)):
            kept += len(out)
            yield out
    except (OSError, pa.ArrowException) as e:
        if "Truncated" in str(e):
            notes.append(f"truncated {name}: the stream ends early; kept {kept} decompressed bytes")
        else:
            notes.append(f"corrupt {name} ({e}); kept the {kept} bytes decompressed before the damage")


class _ReadInto(io.RawIOBase):
    """A `readinto(view) -> int` function (`_reader`) as a readable file (for tarfile, and
    Arrow's streams: `read(n)` comes from `io.RawIOBase`)."""

    def __init__(self, readinto: Callable[[memoryview], int]) -> None:
        super().__init__()
        self._readinto = readinto

    def readable(self) -> bool:
        return True

    def readinto(self, view) -> int:
        return self._readinto(memoryview(view).cast("B"))


BINARY_FORMATS: tuple[tuple[bytes, str], ...] = (
    (
        b"LPKSHHRH",
        "a systemd journal file (binary): export it as text first, `journalctl --file <it> -o short-iso > node.log`",
    ),
    (b"PAR1", "a Parquet file (a table, such as an earlier run's events.parquet)"),
    (b"ARROW1", "an Arrow IPC file (a table)"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"\x7fELF", "an ELF executable or core dump"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"%PDF-", "a PDF document"),
)
"""Binary formats known by their first bytes, with what they are and what to do with them: a
Parquet file is mostly printable (its schema), and would pass for a text of garbage."""


def binary_format(data: bytes) -> str | None:
    """What a known binary format `data` begins with is (`BINARY_FORMATS`), else None."""
    for magic, what in BINARY_FORMATS:
        if data.startswith(magic):
            return what
    return None


def binary_before_reading(f: InputFile) -> str | None:
    """Why `f` is skipped as binary, told by its first bytes (decompressed) before it is read
    whole, which for a node's 4 GB journal file would cost 4 GB to learn that it is one; None
    when its head does not say. A known format is said by name (`binary_format`). A file over
    `WHOLE_BINARY_CHECK` whose head is binary (`is_binary`: a sparse file of zeros, a core dump)
    is too, but for a pickle (a flight-recorder dump: binary, and read)."""
    try:
        head = head_of(f, SNIFF_BYTES if f.size > WHOLE_BINARY_CHECK else 64, whole_lines=False)[0]
    except _CODEC_ERRORS:
        return None
    if what := binary_format(head):
        return f"binary file ({f.size} bytes; {what}), not a text log"
    if f.size > WHOLE_BINARY_CHECK and head and not head.startswith(b"\x80") and is_binary(head):
        return f"binary file ({f.size} bytes), not a text log (judged by its first bytes)"
    return None


def is_binary(data: bytes) -> bool:
    """True when the head of `data` looks like binary rather than text.

    A known binary format is (`binary_format`). Otherwise NUL bytes are set aside first, so
    a text log with NUL padding left by a crash mid-write stays text (`decode` drops the
    NULs). What remains is binary when more than 10% of it is control bytes or 30% is not
    valid UTF-8 (core dumps, images), or when nothing but NULs is left.
    """
    if binary_format(data):
        return True
    head = data[:SNIFF_BYTES]
    if not head or head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False  # empty, or UTF-16 text with its byte-order mark (`decode` handles it)
    rest = head.replace(b"\x00", b"")
    if not rest.strip():
        return len(head) >= 64
    control = sum(rest.count(bytes([b])) for b in (*range(1, 8), *range(14, 27), *range(28, 32)))
    invalid = len(rest) - len(rest.decode("utf-8", "ignore").encode("utf-8"))
    return control > len(rest) * 0.10 or invalid > len(rest) * 0.30


def decode(data: bytes) -> tuple[str, list[str]]:
    """Decode UTF-8, replacing invalid bytes with U+FFFD and dropping NUL padding.

    Returns (text, notes) where notes say what was repaired.
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        # PowerShell's `kubectl logs pod > out.log` writes UTF-16 with a byte-order mark.
        return data.decode("utf-16", errors="replace"), ["UTF-16 text (e.g. a PowerShell redirect) decoded"]
    if order := utf16_without_bom(data):
        text = data.decode(order, errors="replace")
        return _lines_by_cr(text, [f"UTF-16 text without a byte-order mark ({order[-2:].upper()}) decoded"])
    text, nuls, invalid = _decode_utf8(data, head=True)
    return _lines_by_cr(text, _repairs(nuls, invalid))


def utf16_without_bom(data: bytes) -> str | None:
    """`utf-16-le` or `utf-16-be` when `data` reads as UTF-16 with no byte-order mark: mostly
    ASCII text, so NUL in nearly every odd (little-endian) or even byte and in no other.
    Dropping the NULs instead would turn every character past ASCII into garbage."""
    head = data[:SNIFF_BYTES]
    n = len(head) // 2
    if n < 16:
        return None
    even, odd = head[0 : 2 * n : 2], head[1 : 2 * n : 2]
    for order, zeros, text in (("utf-16-le", odd, even), ("utf-16-be", even, odd)):
        if zeros.count(0) >= 0.9 * n and text.count(0) <= 0.01 * n:
            return order
    return None


def _lines_by_cr(text: str, notes: list[str]) -> tuple[str, list[str]]:
    """Classic Mac line endings (CR alone, no LF anywhere) as lines: else a whole file is one line."""
    if "\r" in text and "\n" not in text:
        return text.replace("\r", "\n"), [*notes, "CR-only line endings read as line breaks"]
    return text, notes


def _decode_utf8(data: bytes, *, head: bool) -> tuple[str, int, bool]:
    """(text, NUL bytes dropped, whether invalid bytes were replaced) of a piece of a file;
    `head`: the piece starts the file, where a byte-order mark may sit."""
    if head and data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM) :]  # a UTF-8 byte-order mark (Windows editors) would stick to the first line
    nuls = data.count(b"\x00")
    if nuls:
        data = data.replace(b"\x00", b"")
    try:
        return data.decode("utf-8"), nuls, False
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), nuls, True


def _repairs(nuls: int, invalid: bool) -> list[str]:
    notes = []
    if nuls:
        notes.append(f"{nuls} NUL bytes removed (padding left by an interrupted write?)")
    if invalid:
        notes.append("invalid UTF-8 bytes replaced with U+FFFD")
    return notes


def stream_head(f: InputFile) -> str | None:
    """The head of `f`'s text when `f` is to be read a segment at a time (`text_segments`)
    rather than whole, else None.

    A large log is, plain or compressed: holding its bytes and its text at once costs twice
    its size before a line is parsed (10 GB for a 5 GB journal, more for a gzipped one).
    UTF-16 files, binary files and what may be a document parsed whole (JSON, YAML event
    lists) go the whole-file way, which sorts them out; the caller checks the head for
    the rest.
    """
    if f.size <= SEGMENT_CHARS // 4:
        return None
    try:
        with open(f.path, "rb") as fh:
            compressed = compression(fh.read(MAGIC_BYTES))
    except OSError:
        return None
    if f.size <= (SEGMENT_CHARS // 4 if compressed else 2 * SEGMENT_CHARS):  # (logs compress ~10x)
        return None
    head = read_head(f, SNIFF_BYTES)
    # (a pickle, a flight-recorder dump, starts with 0x80, never a text's first byte; its
    # many path strings can make it pass for text)
    if not head or head.startswith((b"\xff\xfe", b"\xfe\xff", b"\x80")) or is_binary(head):
        return None
    if utf16_without_bom(head) or (b"\r" in head and b"\n" not in head):
        return None  # (decoded whole: `decode` reads UTF-16 with no BOM and CR-only line endings)
    if starts_a_document(head) and not json_lines(head):
        return None
    return _decode_utf8(head, head=True)[0]


DOCUMENT_START = re.compile(rb'\{(?!"log":)|\[\s*(?:[\[{"\]]|$)|apiVersion|items:|kind:')
"""How a JSON or YAML document (events, a log store's export, a flight-recorder dump) begins; a
`[` must open a list: `[2025-05-04 05:25:03,029] LMCache ...`, `[rank0]:` and `[pod/x/c]` begin
logs, which are read a segment at a time however large, as are Docker's JSON lines (`{"log":`)."""


def json_lines(head: bytes) -> bool:
    """Whether `head`'s first two lines are each a JSON object: a record a line (an application's
    or a shipper's JSON log), which is read a segment at a time like any log, not as a document
    that parses only whole (a pretty-printed one opens with `{` alone on its line; a compact one
    is a single line)."""
    lines = head.lstrip(UTF8_BOM + b" \t\r\n").split(b"\n", 2)
    if len(lines) < 3:  # (two whole lines: the head may end inside the second)
        return False
    for line in lines[:2]:
        try:
            if not isinstance(load_json(line), dict):
                return False
        except ValueError:  # (UnicodeDecodeError too)
            return False
    return True


def starts_a_document(head: bytes) -> bool:
    """Whether `head`, a file's first bytes, begins as a document (`DOCUMENT_START`) may."""
    return DOCUMENT_START.match(head[:4096].lstrip(UTF8_BOM + b" \t\r\n")) is not None


def text_segments(f: InputFile, notes: list[str], segment_bytes: int | None = None) -> Iterator[bytes | np.ndarray]:
    """The text of a file (decompressed) in pieces ending at a newline, read and checked one at a time.

    Each piece is valid UTF-8 (invalid bytes replaced, NULs removed, a leading byte-order
    mark dropped), kept as bytes, not decoded: the parser builds its columns from the bytes,
    and a Python string of each piece would only be split and copied again. Each piece ends at
    the first newline at or after `segment_bytes` (`SEGMENT_CHARS`) bytes from its start:
    for ASCII text, where `split_segments` cuts. Pieces end at a newline, so no UTF-8
    sequence is split and the pieces decode to the whole file's text. Repairs are added
    to `notes` once all is read; a read error ends the file, with a note.

    A piece is a numpy array (uint8) when its bytes needed no repair, which is almost
    always: a plain file is read straight into the piece's own buffer (`readinto`), and
    only the few bytes after its last newline are copied, into the next one. Reading into
    a buffer, joining the next read to it and copying the piece out cost ~17 ms per 16 MB,
    three times the read itself.
    """
    segment_bytes = segment_bytes or SEGMENT_CHARS
    nuls, invalid, first = 0, False, True
    chunk = min(segment_bytes, 1 << 16)  # read past the segment's size until a newline

    def text(piece: np.ndarray) -> bytes | np.ndarray:
        nonlocal nuls, invalid, first
        if first and piece[: len(UTF8_BOM)].tobytes() == UTF8_BOM:
            piece = piece[len(UTF8_BOM) :]
        first = False
        if not len(piece) or (piece.min() > 0 and piece.max() < 128):  # ASCII without NULs: as it is
            return piece
        out = piece.tobytes()
        n = out.count(b"\x00")
        out = out.replace(b"\x00", b"") if n else out
        bad = False
        if not out.isascii():
            try:
                str(out, "utf-8")
            except UnicodeDecodeError:
                out, bad = str(out, "utf-8", "replace").encode(), True
        nuls, invalid = nuls + n, invalid or bad
        return out

    buf = np.empty(segment_bytes + chunk, np.uint8)
    filled = 0
    try:
        with open(f.path, "rb") as fh:
            read = _reader(fh, notes)
            while True:
                want = segment_bytes - filled if filled < segment_bytes else chunk
                if filled + want > len(buf):  # a line longer than the chunk read so far: room for more
                    buf = np.concatenate([buf[:filled], np.empty(max(want, len(buf)), np.uint8)])
                got = read(memoryview(buf)[filled : filled + want])
                if not got:
                    break
                # The segment ends at the first newline at or after `segment_bytes`.
                seen = max(filled, segment_bytes)
                filled += got
                if filled <= segment_bytes:
                    continue
                at = np.flatnonzero(buf[seen:filled] == 10)
                if not len(at):
                    continue
                cut = seen + int(at[0]) + 1
                rest = np.empty(segment_bytes + chunk, np.uint8)
                rest[: filled - cut] = buf[cut:filled]
                seg = text(buf[:cut])
                buf, filled = rest, filled - cut
                if len(seg):  # (a byte-order mark alone, or NULs, decode to nothing)
                    yield seg
                del seg
    except OSError as e:
        notes.append(f"read error ({e.strerror or e}); kept the lines read before it")
    last = text(buf[:filled]) if filled else b""
    if len(last):
        yield last
    notes.extend(_repairs(nuls, invalid))


def _reader(fh: BinaryIO, notes: list[str]) -> Callable[[memoryview], int]:
    """`readinto` for an open file's bytes, decompressed when it is compressed: fills as much
    of the view as it can, returns how much (0 at the end)."""
    compressed = compression(fh.read(MAGIC_BYTES))
    fh.seek(0)
    if not compressed:

        def read_plain(view: memoryview) -> int:
            n = 0
            while n < len(view):
                got = fh.readinto(view[n:])
                if not got:
                    break
                n += got
            return n

        return read_plain
    pieces = decompress_pieces(compressed, fh.read, notes)
    held, used = b"", 0

    def read_decompressed(view: memoryview) -> int:
        nonlocal held, used
        n = 0
        while n < len(view):
            if used == len(held):
                held, used = next(pieces, b""), 0
                if not held:
                    break
            take = min(len(held) - used, len(view) - n)
            view[n : n + take] = memoryview(held)[used : used + take]
            used += take
            n += take
        return n

    return read_decompressed


def split_segments(text: str, segment_chars: int | None = None) -> Iterator[str]:
    """Yield pieces of `text` of about `segment_chars` (`SEGMENT_CHARS`), each ending at a newline."""
    segment_chars = segment_chars or SEGMENT_CHARS
    n = len(text)
    start = 0
    while start < n:
        end = start + segment_chars
        nl = text.find("\n", end) if end < n else -1
        if nl == -1:
            yield text[start:]
            return
        yield text[start : nl + 1]
        start = nl + 1
