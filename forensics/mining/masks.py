"""What a message's variables look like (numbers, hex ids, IPs, paths...), masked before Drain
sees the message and read back as a template's parameters.

Only the first line of a message is mined, capped at `MAX_CHARS` characters and `MAX_TOKENS`
tokens, as Loki does, so one huge line cannot stall Drain."""

from __future__ import annotations

import polars as pl

MAX_CHARS = 2000


MAX_TOKENS = 100


SOURCE_FILE = r"[\w./\-]+\.(?:cc|cpp|cu|h|hpp|c|py|go|rs)"
SOURCE_LOCATION = rf"(?:\.{{0,2}}/)*\b{SOURCE_FILE}:\d+\b"
"""A source location (`transport/net.cc:1302`, `[kv_sweep.c:412]`, `(collect at scheduler.py:412)`,
`/usr/lib/python3/dist-packages/torch/distributed/c10d.py:212`, `../gloo/transport/tcp/pair.cc:144`): one
value, `<SRC>`, file and line, as Loghub-2.0's labels of the full-size sets read it (`[<*>]:`; the
Loghub-2k labels kept the file). The words after it name the statement; the file is still there to
read, as a parameter and, for NCCL, as the event's component; an NCCL error unwinding through
`proxy.cc`, `transport/net.cc`... is one template, `<SRC> -> <NUM>`."""


DEVICE = (
    r"\b(?:(?:eth|en|eno|ens|wlan|wl|awdl|utun|bond|ib|veth|vmnet|p2p|hsn|efa|rdma|bnxt_re|mlx\d+_)\d+"
    r"|en[ps]\d+(?:s\d+)?(?:f\d+)?(?:np\d+)?|wlp\d+s\d+|nvme\d+(?:n\d+)?(?:p\d+)?|(?:sd[a-jl-z]|hd[a-c]|x?vd[a-z])\d*|disk\d+(?:s\d+)*)\b"
)
"""A network interface or a disk as the kernel and drivers name them (`eth0`, `en0`, `wl0`, `ib0`,
`mlx5_1`, `enp3s0f1`, `sda`, `hda2`, `nvme0n1p1`, `disk0s3`): a value, `<DEV>`, the one the line is
about, so the name stays visible as a parameter and the template does not print the first one seen
(`mlx5_0` when `mlx5_1` failed). Loghub-2.0's labels of the full-size sets read them so."""


MASKS: tuple[tuple[str, str], ...] = (
    (
        "TS",
        r"\b(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),? +)?(?:\d{1,2} +)?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,4}"
        r"(?: +\d{1,2})?(?: +\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)(?: +\d{4})?(?: [+-]\d{4}| [A-Z]{3,4})?(?: +\d{4})?\b"
        r"|\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
        r"|\b(?:\d{1,2}/(?:\d{1,2}|[A-Z][a-z]{2})/\d{4}|\d{4}/\d{1,2}/\d{1,2})"
        r"(?:[ :]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?(?: [+-]\d{4})?",
    ),
    ("POD", r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)*-[a-f0-9]{8,10}-[a-z0-9]{5}\b"),
    ("REQ_ID", r"\b(?:chatcmpl|cmpl|chat|req|request|embd|tokn)-[0-9A-Za-z][0-9A-Za-z\-]{7,}"),
    ("UUID", r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
    (
        "IP",
        r"(?:(?:::ffff:)?\b\d{1,3}(?:\.\d{1,3}){3}|\bfe80::[0-9a-fA-F:]+(?:%\w+)?|\b(?:[0-9a-fA-F]{1,4}:){3,7}[0-9a-fA-F]{1,4})(?:<\d+>|:\d{1,5}\b)?",
    ),
    ("SRC", SOURCE_LOCATION),  # (before PATH: `lmcache/integration/vllm/adapter.py:1174` is one location)
    ("PATH", r"(?:\b[A-Za-z][A-Za-z0-9+.\-]*://[\w.\-]+|\b[A-Za-z]:|\b[\w.\-@+~]+)?(?:/[\w.\-@+~]+){2,}/?"),
    (
        "HOST",
        r"\b(?:[A-Za-z0-9][A-Za-z0-9\-]*\.){2,}(?:com|net|org|edu|io|ai|local|internal|cluster|svc|hk|cn|de|uk|jp|us|[a-z]{2})(?::\d{1,5})?\b"
        r"|\b[A-Za-z][A-Za-z0-9]*(?:[.-][A-Za-z0-9]+)+:\d{2,5}\b",
    ),
    ("DEV", DEVICE),
    ("ID", r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*_-?\d{4,}(?:_[A-Za-z0-9]+)*\b"),
    ("NUM", r"\b[vV]?\d+(?:\.\d+)+(?:[eE][+-]?\d+)?\b"),
    ("NUM", r"\b\d{8,}\b"),
    ("HEX", r"\b0x[0-9a-fA-F]+\b|\b[0-9a-fA-F]{8,}\b"),
    ("DUR", r"\b\d+(?:\.\d+)?(?:h\d+m|m\d+(?:\.\d+)?s|ns|us|µs|ms|s|m|h)\b"),
    ("NUM", r"\b\d{1,3}(?:,\d{3})+\b|\b\d+(?:\.\d+)*(?:[eE][+-]?\d+)?(?:[A-Za-z]{1,3})?\b"),
)
"""Named masks, applied in order. Each turns a variable part into `<NAME>`; the template
then reads `block <NUM>` or `peer <IP>`. HEX needs a 0x prefix or 8+ hex digits, so short
words (`added`, `70B`) stay; 8+ decimal digits alone are a number, masked before it (`buffSize
73400320`: `<NUM>`, not a hex id); pod names are masked first, before their hash can look like HEX
and before a model name's `-chat-` can look like a request id; NUM
takes thousands separators (`1,843,200`), versions (`0.10.2`, and `v0.8.5` with its `v`, as
Loghub-2.0's labels of the full-size sets read it: `driver <*>`, not `driver v<*>`) and unit
suffixes (`112.5x`) whole, and no sign, so `gpu-node-3` reads `gpu-node-<NUM>`. A decimal is masked before HEX,
whose 8+ digits would otherwise take its fraction (`0.047113092` read `<NUM>.<HEX>`).

Some values are one variable however many words their parts look like, as their writers
print them and the parsing benchmarks' labels read them:
* a host with its port (`gpu-node-3:29500`, `kv-store-2:8030`): `<HOST>`; a dotted or dashed
  name is required, so `memory:10240` stays a key and its value;
* an id of words and a long number joined by `_` (`job_1733318220417_0042`,
  `KVClient_PREFILL_8812930441_3`): `<ID>`; `\\b` sees no edge inside it, so NUM
  cannot take its digits, and a constant one would stay literal;
* an IPv4 address written as IPv6 (`::ffff:10.0.2.18`, an InfiniBand GID as NCCL prints it): `<IP>`;
* a socket address as Java prints it, `/10.0.0.1:50010` or `host/10.0.0.1:50010`
  (`InetSocketAddress.toString`): `<IP>`, slash and name with it (`SOCKET`);
* a relative path with its first segment (`lmcache/integration/vllm/adapter.py`: `<PATH>`, not
  `lmcache<PATH>`), and a URL's with its scheme and host (`https://huggingface.co/org/model/resolve`:
  `<PATH>`, not `https:/<PATH>`), and so where a mask took the host first (`URL_AT_IP`).
A clock time stays `<NUM>:<NUM>:<NUM>`: the labels split it, and a date-time is `<TS>` anyway."""


SOCKET = r"(^|[\s=:(\[,])(?:[A-Za-z][A-Za-z0-9.\-]*)?/<IP>"
"""A socket address as Java prints it (`/10.0.0.1:50010`, `host/10.0.0.1:50010`), after the IP
mask: the slash and the name before it are part of the one value, not structure around it.
The character before it is kept (a token must start there: `http://10.0.0.1` stays a URL)."""


URL_AT_IP = r"\b[A-Za-z][A-Za-z0-9+.\-]*://<(?:IP|HOST)>(?:<PATH>|/[\w.\-@+~%]*)*"
"""A URL whose host a mask took first (`http://10.0.0.1:8000/v1/models`, `hdfs://10.0.0.1:9000/logs/a.log`):
one value, `<PATH>`, as a URL with a named host already is (`https://huggingface.co/...`), and as
Loghub-2.0's labels of the full-size sets read it; scheme, host and path are not three words."""


SIGNED = r"([=:(\[,]|\s)-<NUM>"
"""A minus sign where a value starts (`auto=-1`, `index:-1`, `offset -24.0`) is the number's:
`<NUM>`, not `-<NUM>`. Inside a word it is a dash (`gpu-node-3` stays `gpu-node-<NUM>`)."""


def _mixed_hex(length: int) -> str:
    """A run of at least `length` of the digits and the letters a-f, both. Polars' regex has no
    lookahead: a digit next to a letter marks "both", placed in each alternative so that the
    run is `length` long."""
    pair = r"(?:\d[a-f]|[a-f]\d)"
    alts = [f"[0-9a-f]{{{i}}}{pair}[0-9a-f]{{{length - 2 - i},}}" for i in range(length - 2)]
    return "(?:" + "|".join([*alts, f"[0-9a-f]{{{length - 2},}}{pair}[0-9a-f]*"]) + r")\b"


SHORT_HEX = rf"([={{@#:]){_mixed_hex(5)}|(^|\s){_mixed_hex(7)}"
"""A hex value too short for HEX (`a2=68cffc`, `Token{c93f4d1`, `@5e0b7a2`, `PopupWindow:ecedc1`: an
object's hash; `be1b2dc 1.0`: a short commit or id): five or more of the digits and the letters a-f,
both, where a value starts; seven or more as a word of its own, so that a driver name such as
`e1000e` stays a word."""


BOOL = r"([=(\[,:] ?)(?:true|false|True|False)\b"
"""A boolean given as a value (`ready=true`, `setLightsOn(false)`, `enabled: True`) is a
variable, `<BOOL>`: two values would otherwise split one statement into an enum of two
templates. A bare `true` in prose stays a word. (Not among the parameters `params_expr`
extracts: it is matched with the character before it.)"""

EMPTY_VALUE = r"=(\s+[A-Za-z_][\w.\-]*=|$)"
"""A key given no value (`peer= rank=3`, `reason= code=7 ...`, `detail =` at the end of the line) is
still a field: its value is a variable that is empty here, `peer=<*>`, as Loghub-2.0's labels of
the full-size sets read it, so a line where it has one (`peer=gpu-node-2`) is the same statement. Only
before another key or the end of the line: `status= ok` is a value after a space."""


REQUEST_LINE = (
    r"""(["'](?:GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS|CONNECT|TRACE) [^\s"']*<[A-Z_]+>[^\s"']*) HTTP/<NUM>(["'])"""
)
"""An HTTP request line as access logs quote it (`"GET /v1/<tenant>/models/detail HTTP/1.1"`), whose
target is a variable: the protocol version is a value too, `"GET <PATH> <PROTO>"`, as Loghub-2.0's
labels of the full-size sets read it (`"GET <*> <*>"`; the Loghub-2k labels took the two as one,
`"GET <*>"`). A constant target keeps its line (`"GET /healthz HTTP/1.1"`): a probe and a client's
call stay apart."""

_PARAM_PATTERN = "|".join(f"(?:{rx})" for _, rx in MASKS)
_NAMES = tuple(dict.fromkeys(name for name, _ in MASKS))
_LISTS = "|".join(f"(<{name}>)(?:[,;]<{name}>)+" for name in _NAMES)
_LIST_KEPT = "".join(f"${{{i}}}" for i in range(1, len(_NAMES) + 1))
"""A list of one kind of value written as one word (`<IP>,<IP>`, `<NUM>;<NUM>`) is one value: one
pass for all names, each alternative capturing its first member, so the replacement (every group,
the others empty) keeps that one. A pass costs a copy of every key: one, not one a name. A list
written as words (`retries, 0, 3, 250, pending`) keeps its values, as the parsing benchmarks' labels
(both sets) read it; its varying length is `drain.merge_by_words`' to join (Loghub-2k corrected PA
0.883 -> 0.890: Android 0.758 -> 0.861; grouping unchanged)."""


_FREE_TEXT_LEAD = r"""(?:(?:prompt|output|text|content)['"]?: |(?:prompt|text)=)"""
FREE_TEXT = rf"""(\b{_FREE_TEXT_LEAD})(?:'(?:[^'\\]|\\.)*(?:'|$)|"(?:[^"\\]|\\.)*(?:"|$))"""
"""A prompt or a model's output, quoted as Python's `%r` prints a string (`prompt: 'Summarise ...'`,
`output: "it's ..."`, `'content': '...'`, a dataclass's `text='...'`), to its closing quote or the
end of the capped line. Request logging writes one a request (vLLM: `Received request %s: prompt:
%r, ...`, `Generated response %s: output: %r, ...`; SGLang: `Receive: obj=GenerateReqInput(...,
text='...', ...)`): as words, every request would be a template of its own (and Drain's leaf scan
quadratic in them). It is `<TEXT>`, masked before the other masks can read numbers in it.
`output` only after `: `: `output="connection refused"` (a kubelet probe's) is an error's text,
which its template must keep."""
_FREE_TEXT_HINT = _FREE_TEXT_LEAD + r"""['"]"""


def has_free_text(messages: pl.Series) -> bool:
    """Whether any of `messages` holds a `FREE_TEXT` value."""
    return bool(messages.str.contains(_FREE_TEXT_HINT).any())


def elide_free_text(messages: pl.Series) -> pl.Series:
    """`messages` with each `FREE_TEXT` value as `<TEXT>`, before the dedup key is taken.

    Masking only the representatives is not enough: every request's prompt differs, so each
    line would be its own dedup key and Drain would see them all. Only the rows that hold one
    are rewritten. The scan costs ~0.1 µs a row, a third of mining on logs without any: the
    miner calls this only when a dedup key's representative has one (`has_free_text`)."""
    rows = messages.str.contains(_FREE_TEXT_HINT).fill_null(False).arg_true()
    if rows.is_empty():
        return messages
    elided = messages.gather(rows).str.replace_all(FREE_TEXT, "${1}<TEXT>")
    return messages.clone().scatter(rows, elided)


def mask_expr(expr: pl.Expr) -> pl.Expr:
    """Apply the named masks to a string expression (vectorised); `<IP>,<IP>` lists become one `<IP>`
    (`_LISTS`); a request line's variable target makes its protocol a value (`REQUEST_LINE`)."""
    expr = expr.str.replace_all(FREE_TEXT, "${1}<TEXT>")
    for name, rx in MASKS:
        expr = expr.str.replace_all(rx, f"<{name}>")
        if name == "IP":
            expr = expr.str.replace_all(SOCKET, "${1}<IP>")
        elif name == "HOST":
            expr = expr.str.replace_all(URL_AT_IP, "<PATH>")
    return (
        expr.str.replace_all(SIGNED, "${1}<NUM>")
        .str.replace_all(SHORT_HEX, "${1}${2}<HEX>")
        .str.replace_all(_LISTS, _LIST_KEPT)  # (after the signs: `-1,-2` is one list)
        .str.replace_all(BOOL, "${1}<BOOL>")
        .str.replace_all(EMPTY_VALUE, "=<*>${1}")
        .str.replace_all(EMPTY_VALUE, "=<*>${1}")  # (twice: a match takes the next key's `=`)
        .str.replace_all(REQUEST_LINE, "${1} <PROTO>${2}")
    )


def first_line(expr: pl.Expr) -> pl.Expr:
    """The first line of a message, capped at `MAX_CHARS` characters.

    Split, not `str.find` + `str.slice`: find counts bytes and slice characters, so a first
    line with any non-ASCII text would run on into the next one.
    """
    head = expr.str.splitn("\n", 2).struct.field("field_0")
    return pl.when(expr.str.contains("\n", literal=True)).then(head).otherwise(expr).str.slice(0, MAX_CHARS)


def params_expr(expr: pl.Expr) -> pl.Expr:
    """The masked values of each message, in order, as a list column (`[88123]`, `[10.0.4.13:44413]`)."""
    return first_line(expr).str.extract_all(_PARAM_PATTERN)
