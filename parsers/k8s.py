"""Kubernetes: klog lines, event documents and tables, `describe` events, cluster-info dumps,
and state snapshots (`kubectl get pods|nodes` rows, `kubectl describe pod` fields and
container states, source `k8s-state`).

    I0313 16:02:43.934473    1450 kubelet.go:1778] skipping pod synchronization - [PLEG ...]
    E0413 10:53:52.844381    3263 kubelet.go:2055] "Skipping pod synchronization" err="PLEG ..."
      Warning  Unhealthy  2m (x12 over 3m)  kubelet  Liveness probe failed: ...      # describe
    29m   Warning   FailedScheduling   pod/x   0/1 nodes are available: ...          # get events
    2m (x12 over 14m)   Warning   BackOff   Pod/x   Back-off restarting failed ...    # kubectl events
    ==== START logs for container vllm of pod default/vllm-0 ====                     # dump

Event documents (`kubectl get events -o json|yaml`) are whole-file JSON/YAML and are
parsed by `parse_event_document`; both recorder populations are handled (legacy
`firstTimestamp/lastTimestamp/count` and events.k8s.io `eventTime/series`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import polars as pl

from parsers import schema as s
from parsers._common import (
    as_dict,
    as_list,
    ensure,
    extract_head,
    frac_to_us,
    level_from_letter,
    line_of,
    line_starts,
    no_time,
    to_i32,
    to_i64,
)
from parsers.jsonutil import load_json, without_surrogates

CONTAINER_LOG_NAME = (
    r"(?P<pod>[a-z0-9][a-z0-9.\-]*)_(?P<ns>[a-z0-9][a-z0-9\-]*)_(?P<cont>[a-z0-9][a-z0-9\-]*)-[0-9a-f]{64}\.log"
)
"""A node's `/var/log/containers/<pod>_<namespace>_<container>-<container id>.log`: the kubelet's
links to the CRI files, what log shippers tail and name their records for (Fluent Bit's tag
`kube.var.log.containers.<that>`). Pod names are DNS subdomains, namespaces and containers DNS
labels: lowercase, so a `_` or `-<64 hex>` inside another kind of name does not pass for one."""
DETECT_KLOG = r"^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ "
KLOG = (
    r"^(?P<sev>[IWEF])(?P<mo>\d{2})(?P<d>\d{2}) (?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})\.(?P<us>\d{6}) +"
    r"(?P<tid>\d+) (?P<file>[^\s:\]]+):(?P<lno>\d+)\] (?P<msg>.*)$"
)
DETECT_DESCRIBE = r"^\s{2,}(?:Normal|Warning)\s{2,}\w+\s{2,}"
DESCRIBE = (
    r"^\s{2,}(?P<type>Normal|Warning)\s+(?P<reason>\w+)\s+"
    r"(?P<age>\S+(?: \(x(?P<count>\d+) over (?P<first>\S+)\))?)\s+(?P<src>\S+(?:, \S+)?)\s{2,}(?P<msg>.+)$"
)
_AGE = r"\d+[smhdy]\S*|<unknown>|<invalid>"
"""A listing's age: kubectl's `HumanDuration` (`45s`, `5m2s`, `3h`, `2d4h`, `400d`, `2y3d`), or
what it prints for no time or one in the future."""
DETECT_TABLE = (
    rf"^(?:[a-z0-9][\w.\-]*\s+)?(?:{_AGE})(?: \(x\d+ over \S+\))?\s+(?:Normal|Warning)\s+\w+\s+[A-Za-z][\w.]*/"
)
TABLE = (
    rf"^(?:(?P<ns>[a-z0-9][\w.\-]*)\s+)?(?P<age>{_AGE})(?: \(x(?P<count>\d+) over (?P<first>\S+)\))?\s+"
    r"(?P<type>Normal|Warning)\s+(?P<reason>\w+)\s+(?P<obj>[A-Za-z][\w.]*/\S+)\s+(?P<msg>.*)$"
)
"""`kubectl get events` rows (OBJECT `pod/x`: the kind in lower case), and `kubectl events` rows
(kubectl >= 1.26: OBJECT `Pod/x`, and LAST SEEN `2m (x12 over 14m)` for an event seen 12 times,
first 14 minutes before capture); both with NAMESPACE first under `-A`."""
WIDE_TAIL = (
    r"^(?:(?P<sub>\S*\{\S+\}|spec\.\S+)\s{2,})?(?P<comp>[a-z][\w.\-]*)(?:, (?P<node>[\w.\-]+))?\s{2,}(?P<msg>.+?)"
    rf"\s{{2,}}(?P<first>{_AGE})\s+(?P<count>\d+)\s+(?P<name>\S+)\s*$"
)
"""`kubectl get events -o wide`: after OBJECT come SUBOBJECT (may be empty), SOURCE (`kubelet, node`),
MESSAGE, FIRST SEEN, COUNT and NAME."""
DETECT_TABLE_HEADER = (
    r"^(?:NAMESPACE\s+)?LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+(?:SUBOBJECT\s+SOURCE\s+)?MESSAGE|^\s*Type\s+Reason\s+Age\s+From\s+Message|^\s*----\s+------|^Events:"
    # other `kubectl get` table headers, and the non-pod rows of `kubectl get all`
    r"|^(?:NAMESPACE\s+)?NAME\s+(?:READY|STATUS|DESIRED|TYPE|CLASS|DATA|CAPACITY|ROLES|AGE)\s"
    r"|^(?:[a-z0-9][\w.\-]*\s+)?(?:deployment|replicaset|statefulset|daemonset|service|job|cronjob|horizontalpodautoscaler)(?:\.[\w.]+)?/\S+\s+\S"
)
# `kubectl get pods [-o wide] [-A]`: NAME READY STATUS RESTARTS AGE [IP NODE ...]
DETECT_PODS = r"^(?:[a-z0-9][\w.\-]*\s+)?(?:pod/)?[a-z0-9][a-z0-9.\-]*\s+\d+/\d+\s+[A-Za-z][\w:\-]*\s+\d+(?:\s+\(\w+ ago\))?\s+\d+[smhdy]"
PODS = (
    r"^(?:(?P<ns>[a-z0-9][\w.\-]*)\s+)?(?:pod/)?(?P<pod>[a-z0-9][a-z0-9.\-]*)\s+(?P<ready>\d+)/(?P<want>\d+)\s+"
    r"(?P<status>[A-Za-z][\w:\-]*)\s+(?P<restarts>\d+)(?:\s+\((?P<last>\w+) ago\))?\s+(?P<age>\d+[smhdy]\w*)"
    r"(?:\s+(?P<ip>[\d.]+|<none>)\s+(?P<node>\S+))?"
)
POD_OK = ("Running", "Completed", "Succeeded")
# stern's own notices between the lines it tails (`+ pod › container` when it starts tailing a
# container, `- pod › container` when the container ends or its pod goes): lifecycle, told by
# the collector.
DETECT_STERN_NOTICE = r"^[+-] [a-z0-9][a-z0-9.\-]* › [a-z0-9][a-z0-9\-]*\s*$"
STERN_NOTICE = r"^(?P<sign>[+-]) (?P<pod>\S+) › (?P<cont>\S+)"
# `kubectl get nodes`: NAME STATUS ROLES AGE VERSION
DETECT_NODES = r"^[a-z0-9][\w.\-]*\s+(?:Not)?(?:Ready|Unknown)(?:,\w+)*\s+\S+\s+\d+[smhdy]\w*\s+v\d"
NODES = r"^(?P<node>\S+)\s+(?P<status>\S+)\s+(?P<roles>\S+)\s+(?P<age>\S+)\s+(?P<ver>v\S+)"
# `kubectl describe pod` / `node`: top-level fields (column 0) and a container's State / Last State,
# whose indented Reason / Exit Code / Started / Finished lines fold into it.
DETECT_DESCRIBE_FIELD = (
    r"^(?:Name|Namespace|Priority|Priority Class Name|Service Account|Node|Start Time|Labels|Annotations|Status|"
    r"Reason|Message|IPs?|Controlled By|Init Containers|Containers|Conditions|Volumes|QoS Class|Node-Selectors|"
    r"Tolerations|Nominated Node Name|Runtime Class Name|Topology Spread Constraints|"
    # `kubectl describe node`
    r"Roles|CreationTimestamp|Taints|Unschedulable|Lease|Addresses|Capacity|Allocatable|System Info|PodCIDRs?|"
    r"ProviderID|Non-terminated Pods|Allocated resources):(?:\s|$)"
)
DETECT_CONTAINER_STATE = r"^\s+(?:State|Last State):\s+(?:Running|Waiting|Terminated)\s*$"
_RFC1123 = r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}"
# `kubectl describe node` Conditions rows that say something is wrong (healthy rows fold
# into the `Conditions:` block): Type Status LastHeartbeatTime LastTransitionTime Reason Message.
DETECT_NODE_CONDITION = r"^\s{2}(?:Ready\s+(?:False|Unknown)|[A-Za-z]\w*\s+True)\s+" + _RFC1123
"""A node condition that fails: `Ready` not True, any other True (the pressures, and the
node-problem-detector's KernelDeadlock, ReadonlyFilesystem, ...). `Ready True` also matches
the second form and is refused by `parse_node_condition`."""
NODE_CONDITION = rf"^\s{{2}}(?P<type>\w+)\s+(?P<status>\w+)\s+(?P<hb>{_RFC1123})\s+(?P<tr>{_RFC1123})\s+(?P<reason>\S+)\s*(?P<msg>.*?)\s*$"
DETECT_DUMP = r"^==== (?:START|END) logs for container "
DUMP = r"^==== (?P<what>START|END) logs for container (?P<c>\S+) of pod (?P<ns>[^/\s]+)/(?P<pod>\S+) ===="

KUBELET_FILES = re.compile(r"^(?:kubelet|pleg|kuberuntime|pod_workers|prober|eviction|generic|manager)")

AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "y": 365 * 86400}


def parse_klog(df: pl.DataFrame) -> pl.DataFrame:
    """Parse klog/glog lines. Source: `kubelet` (syslog ident or kubelet files), `torch` (a C++ file,
    or a Python one: PyTorch's own logging, `torch._logging`, writes glog's layout:
    `W1012 22:31:22.267000 140 torch/distributed/elastic/multiprocessing/api.py:858] ...`), else `klog`."""
    m = pl.col("_m").struct.field
    df = extract_head(df, KLOG, "_m")
    f = m("file")
    source = (
        pl.when(m("msg").is_null())
        .then(None)
        .when(
            (pl.col(s.PROCESS) == "kubelet")
            | f.str.contains(r"^(?:kubelet|pleg|kuberuntime|pod_workers|prober|eviction)")
        )
        .then(pl.lit("kubelet"))
        .when(f.str.contains(r"\.(?:cpp|cc|h|py)$"))
        .then(pl.lit("torch"))
        .otherwise(pl.lit("klog"))
    )
    return df.with_columns(
        source.alias(s.SOURCE),
        level_from_letter(m("sev")).alias(s.LEVEL),
        pl.lit(None, pl.Int32).alias("_Y"),
        to_i32(m("mo")).alias("_mo"),
        to_i32(m("d")).alias("_d"),
        to_i32(m("H")).alias("_H"),
        to_i32(m("M")).alias("_M"),
        to_i32(m("S")).alias("_S"),
        frac_to_us(m("us")).alias("_us"),
        pl.coalesce(pl.col("_pid"), m("tid")).alias("_pid"),
        f.alias(s.COMPONENT),
        m("msg").alias(s.MESSAGE),
    ).drop("_m")


def _reason_message(reason: pl.Expr, message: pl.Expr) -> pl.Expr:
    """`Reason: message`, as an event document's row reads (`event_row`): the catalog knows an
    event by both (`ScalingReplicaSet:` is a rollout, `Killing: Container x failed` a probe's
    kill), whichever listing it came from."""
    message = message.str.strip_chars_end()
    return pl.when(reason.is_not_null()).then(pl.concat_str(reason, pl.lit(": "), message)).otherwise(message)


def parse_describe(df: pl.DataFrame) -> pl.DataFrame:
    """`kubectl describe` Events rows; the relative age goes to `_age_s` (resolved by ingest)."""
    m = pl.col("_m").struct.field
    df = df.with_columns(pl.col("body").str.extract_groups(DESCRIBE).alias("_m"))
    return df.with_columns(
        pl.when(m("msg").is_not_null()).then(pl.lit("k8s-event")).alias(s.SOURCE),
        m("msg").is_not_null().alias("_devent"),  # (its object: the block's, `described_objects`)
        pl.when(m("type") == "Warning").then(pl.lit("WARNING")).otherwise(pl.lit("INFO")).alias(s.LEVEL),
        m("type").alias(s.K8S_TYPE),
        m("reason").alias(s.K8S_REASON),
        to_i64(m("count")).fill_null(pl.when(m("msg").is_not_null()).then(1)).alias(s.K8S_COUNT),
        m("src").str.split(", ").list.get(0, null_on_oob=True).alias(s.COMPONENT),
        pl.coalesce(m("src").str.split(", ").list.get(1, null_on_oob=True), pl.col(s.HOST)).alias(s.HOST),
        _reason_message(m("reason"), m("msg")).alias(s.MESSAGE),
        age_seconds(m("age").str.replace(r" \(x.*$", "")).alias("_age_s"),
        *no_time(),
    ).drop("_m")


def parse_table(df: pl.DataFrame) -> pl.DataFrame:
    """`kubectl get events` and `kubectl events` table rows (LAST SEEN TYPE REASON OBJECT MESSAGE).

    The object is named as an event document's row names it (`event_row`: the kind in lower
    case), so `Pod/x` of `kubectl events` is the pod's event as `pod/x` of `get events` is."""
    m = pl.col("_m").struct.field
    w = pl.col("_w").struct.field
    df = extract_head(df, TABLE, "_m")
    df = df.with_columns(m("msg").str.extract_groups(WIDE_TAIL).alias("_w"))
    wide = w("name").is_not_null()
    parts = m("obj").str.splitn("/", 2)
    kind, name = parts.struct.field("field_0"), parts.struct.field("field_1")
    obj = pl.concat_str(kind.str.to_lowercase(), pl.lit("/"), name)
    return df.with_columns(
        pl.when(m("msg").is_not_null()).then(pl.lit("k8s-event")).alias(s.SOURCE),
        # (a node's event is on that node, as an event document's row is)
        pl.when(wide)
        .then(w("node"))
        .when(obj.str.starts_with("node/"))
        .then(name)
        .otherwise(pl.col(s.HOST))
        .alias(s.HOST),
        pl.when(wide).then(w("comp")).alias(s.COMPONENT),
        pl.when(wide).then(w("count")).otherwise(m("count")).cast(pl.Int64, strict=False).alias(s.K8S_COUNT),
        pl.when(m("type") == "Warning").then(pl.lit("WARNING")).otherwise(pl.lit("INFO")).alias(s.LEVEL),
        m("type").alias(s.K8S_TYPE),
        m("reason").alias(s.K8S_REASON),
        obj.alias(s.K8S_OBJECT),
        pl.when(obj.str.starts_with("pod/")).then(name).alias(s.POD),  # (as a document's)
        pl.coalesce(m("ns"), pl.col(s.NAMESPACE) if s.NAMESPACE in df.columns else None).alias(s.NAMESPACE),
        _reason_message(m("reason"), pl.when(wide).then(w("msg")).otherwise(m("msg"))).alias(s.MESSAGE),
        age_seconds(m("age")).alias("_age_s"),
        *no_time(),
    ).drop("_m", "_w")


def parse_pods(df: pl.DataFrame) -> pl.DataFrame:
    """`kubectl get pods` rows: one state event per pod, timed at its last restart when shown.

    A snapshot has no time of its own: `(2m30s ago)` after the restart count dates the last
    restart; otherwise the row is the state at capture time (age 0), resolved like
    `describe` ages against the capture time.
    """
    m = pl.col("_m").struct.field
    df = df.with_columns(pl.col("body").str.extract_groups(PODS).alias("_m"))
    status, restarts = m("status"), to_i64(m("restarts"))
    bad = ~status.is_in(POD_OK) | (m("ready") != m("want")) & (status != "Completed")
    last = pl.when(m("last").is_not_null()).then(pl.lit(", last ") + m("last") + pl.lit(" ago")).otherwise(pl.lit(""))
    return df.with_columns(
        pl.when(m("pod").is_not_null()).then(pl.lit("k8s-state")).alias(s.SOURCE),
        pl.when(bad).then(pl.lit("WARNING")).otherwise(pl.lit("INFO")).alias(s.LEVEL),
        pl.when(bad).then(pl.lit("Warning")).otherwise(pl.lit("Normal")).alias(s.K8S_TYPE),
        status.alias(s.K8S_REASON),
        (pl.lit("pod/") + m("pod")).alias(s.K8S_OBJECT),
        m("pod").alias(s.POD),
        pl.coalesce(m("ns"), pl.col(s.NAMESPACE) if s.NAMESPACE in df.columns else None).alias(s.NAMESPACE),
        pl.coalesce(m("node").replace("<none>", None), pl.col(s.HOST)).alias(s.HOST),
        pl.format(
            "pod {} {}: ready {}/{}, {} restarts{} (kubectl get pods, age {})",
            m("pod"),
            status,
            m("ready"),
            m("want"),
            restarts,
            last,
            m("age"),
        ).alias(s.MESSAGE),
        pl.coalesce(age_seconds(m("last")), pl.lit(0.0)).alias("_age_s"),
        *no_time(),
    ).drop("_m")


def parse_stern_notice(df: pl.DataFrame) -> pl.DataFrame:
    """stern's `+`/`-` notices as its pod's and container's state events: when stern began and
    stopped tailing the container (a `-` then `+` of one container is its restart)."""
    m = pl.col("_m").struct.field
    df = df.with_columns(pl.col("body").str.extract_groups(STERN_NOTICE).alias("_m"))
    started = m("sign") == "+"
    return df.with_columns(
        pl.lit("k8s-state").alias(s.SOURCE),
        pl.lit("INFO").alias(s.LEVEL),
        m("pod").alias(s.POD),
        m("cont").alias(s.CONTAINER),
        (pl.lit("pod/") + m("pod")).alias(s.K8S_OBJECT),
        pl.when(started)
        .then(pl.format("stern began tailing container {} of pod {} (it started, or was running)", m("cont"), m("pod")))
        .otherwise(
            pl.format("stern stopped tailing container {} of pod {} (it ended, or its pod went)", m("cont"), m("pod"))
        )
        .alias(s.MESSAGE),
        *no_time(),
    ).drop("_m")


def parse_nodes(df: pl.DataFrame) -> pl.DataFrame:
    """`kubectl get nodes` rows: a NotReady or Unknown node is a node failure at capture time."""
    m = pl.col("_m").struct.field
    df = df.with_columns(pl.col("body").str.extract_groups(NODES).alias("_m"))
    bad = ~m("status").str.starts_with("Ready")
    return df.with_columns(
        pl.when(m("node").is_not_null()).then(pl.lit("k8s-state")).alias(s.SOURCE),
        pl.when(bad).then(pl.lit("WARNING")).otherwise(pl.lit("INFO")).alias(s.LEVEL),
        pl.when(bad).then(pl.lit("Warning")).otherwise(pl.lit("Normal")).alias(s.K8S_TYPE),
        pl.when(bad).then(pl.lit("NodeNotReady")).otherwise(m("status")).alias(s.K8S_REASON),
        (pl.lit("node/") + m("node")).alias(s.K8S_OBJECT),
        m("node").alias(s.HOST),
        pl.when(bad)
        .then(pl.format("NodeNotReady: node {} is {} (kubectl get nodes)", m("node"), m("status")))
        .otherwise(pl.format("node {} is {} (kubectl get nodes)", m("node"), m("status")))
        .alias(s.MESSAGE),
        pl.lit(0.0).alias("_age_s"),
        *no_time(),
    ).drop("_m")


def parse_describe_field(df: pl.DataFrame) -> pl.DataFrame:
    """A top-level `kubectl describe pod` field (`Name:`, `Node:`, `Status:`...): context, level-less."""
    return df.with_columns(
        pl.lit("k8s-state").alias(s.SOURCE),
        pl.lit(None, pl.String).alias(s.LEVEL),
        pl.col("body").str.strip_chars_end().alias(s.MESSAGE),
        *no_time(),
    )


def parse_node_condition(df: pl.DataFrame) -> pl.DataFrame:
    """A failing `kubectl describe node` condition, timed at its LastTransitionTime (when it
    went bad): `NodeNotReady: Ready=Unknown since ...: NodeStatusUnknown: Kubelet stopped
    posting node status.` The node's name comes from the `Name:` field (`node_conditions`)."""
    m = pl.col("_m").struct.field
    df = df.with_columns(pl.col("body").str.extract_groups(NODE_CONDITION).alias("_m"))
    reason = pl.when(m("type") == "Ready").then(pl.lit("NodeNotReady")).otherwise(m("type"))
    healthy = (m("type") == "Ready") & (m("status") == "True")
    return df.with_columns(
        pl.when(~healthy).then(pl.lit("k8s-state")).alias(s.SOURCE),  # (null: refused, `Ready True`)
        pl.lit("WARNING").alias(s.LEVEL),
        pl.lit("Warning").alias(s.K8S_TYPE),
        reason.alias(s.K8S_REASON),
        pl.format(
            "{}: {}={} since {}: {}: {} (kubectl describe node)",
            reason,
            m("type"),
            m("status"),
            m("tr"),
            m("reason"),
            m("msg"),
        ).alias(s.MESSAGE),
        m("tr").str.strptime(pl.Datetime("us", "UTC"), "%a, %d %b %Y %H:%M:%S %z", strict=False).alias("_outer_ts"),
        pl.lit(None, pl.String).alias(s.K8S_OBJECT),
        pl.lit(True).alias("_ncond"),
        *no_time(),
    ).drop("_m")


def _field_above(name: str) -> pl.Expr:
    """Per file and `describe` block (from one `Name:` field to the next), the value of its field
    line `name:` at or above each row (the `Name:` / `Node:` of the pod or node block a row
    belongs to); null before the block has one, so no block borrows another's."""
    first = pl.col(s.MESSAGE).str.strip_chars()
    field = pl.col(s.SOURCE) == "k8s-state"
    block = (field & first.str.starts_with("Name:")).cum_sum().over("_fid", order_by="_row")
    return (
        pl.when(field & first.str.starts_with(f"{name}:"))
        .then(first.str.slice(len(name) + 1).str.strip_chars())
        .forward_fill()
        .over(["_fid", block], order_by="_row")
    )


def _described_node() -> pl.Expr:
    """The node of a `describe pod` block (`Node: gpu-node-3/10.0.0.3`): null for a pod no node
    was chosen for (`Node: <none>`, a pending pod)."""
    node = _field_above("Node").str.replace(r"/.*$", "")
    return pl.when(node != "<none>").then(node)


def described_objects(events: pl.DataFrame) -> pl.DataFrame:
    """After folding: a `describe` Events row's object, which the section leaves to its block.

    In `kubectl describe pod` the block's `Name:` is the pod and its `Node:` the node it runs
    on; `describe node` has no `Node:` field, and its `Name:` is the node. An Events section
    alone (no block above it) names nothing.
    """
    if "_devent" not in events.columns:
        return events
    mine = pl.col("_devent").fill_null(False)
    name, node = _field_above("Name"), _described_node()
    of_pod = mine & name.is_not_null() & _field_above("Node").is_not_null()  # (pending too: `Node: <none>`)
    of_node = mine & name.is_not_null() & _field_above("Node").is_null()
    events = ensure(events, {s.POD: pl.String, s.HOST: pl.String, s.NAMESPACE: pl.String, s.K8S_OBJECT: pl.String})
    return events.with_columns(
        pl.when(of_pod).then(pl.coalesce(s.POD, name)).otherwise(pl.col(s.POD)).alias(s.POD),
        pl.when(of_pod)
        .then(pl.coalesce(s.HOST, node))
        .when(of_node)
        .then(pl.coalesce(s.HOST, name))
        .otherwise(pl.col(s.HOST))
        .alias(s.HOST),
        pl.when(of_pod)
        .then(pl.coalesce(pl.col(s.NAMESPACE).cast(pl.String), _field_above("Namespace")))
        .otherwise(pl.col(s.NAMESPACE).cast(pl.String))
        .alias(s.NAMESPACE),
        pl.when(of_pod)
        .then(pl.coalesce(s.K8S_OBJECT, pl.lit("pod/") + name))
        .when(of_node)
        .then(pl.coalesce(s.K8S_OBJECT, pl.lit("node/") + name))
        .otherwise(pl.col(s.K8S_OBJECT))
        .alias(s.K8S_OBJECT),
    ).drop("_devent")


def node_conditions(events: pl.DataFrame) -> pl.DataFrame:
    """After folding: a node condition's host is the `Name:` of the `describe node` block above it."""
    if "_ncond" not in events.columns or not events["_ncond"].any():
        return events
    name = _field_above("Name")
    cond = pl.col("_ncond").fill_null(False)
    return (
        ensure(events, {s.HOST: pl.String, s.K8S_OBJECT: pl.String})
        .with_columns(
            pl.when(cond).then(pl.coalesce(pl.col(s.HOST), name)).otherwise(pl.col(s.HOST)).alias(s.HOST),
            pl.when(cond).then(pl.lit("node/") + name).otherwise(pl.col(s.K8S_OBJECT)).alias(s.K8S_OBJECT),
        )
        .drop("_ncond")
    )


def parse_container_state(df: pl.DataFrame) -> pl.DataFrame:
    """A container's `State:` / `Last State:` line; its details fold in (see `container_states`)."""
    return df.with_columns(
        pl.lit("k8s-state").alias(s.SOURCE),
        pl.lit("INFO").alias(s.LEVEL),
        pl.col("body").str.strip_chars().alias(s.MESSAGE),
        pl.lit(True).alias("_cstate"),
        *no_time(),
    )


STATE_FIELDS = (
    r"(?s)^(?P<which>State|Last State):\s+(?P<state>\w+)"
    r"(?:.*?\n\s*Reason:\s+(?P<reason>\w+))?(?:.*?\n\s*Exit Code:\s+(?P<code>\d+))?"
    r"(?:.*?\n\s*Started:\s+(?P<started>[^\n]+))?(?:.*?\n\s*Finished:\s+(?P<finished>[^\n]+))?"
)
EXIT_MEANING = {"137": "SIGKILL", "139": "SIGSEGV", "143": "SIGTERM", "134": "SIGABRT", "1": "error"}


def container_states(events: pl.DataFrame) -> pl.DataFrame:
    """After folding: give each container State / Last State event its reason, exit code and time.

    The event is timed at `Finished` (or `Started`), which `describe` prints with its zone,
    and its first line summarises it so signatures can read it:
    `Last State: Terminated (OOMKilled, exit code 137 SIGKILL) container vllm`.
    The pod, node and container come from the nearest `Name:` / `Node:` fields and container
    header above.
    """
    if "_cstate" not in events.columns or not events["_cstate"].any():
        return events
    # Pod, node and container of the describe block, forward-filled per file over the
    # describe output alone (its `Name:` / `Node:` fields and folded container headers).
    events = ensure(events, {s.HOST: pl.String})
    described = events.filter(pl.col(s.SOURCE) == "k8s-state").with_columns(
        _field_above("Name").alias("_dpod"),
        _described_node().alias("_dnode"),
        # the pod's own `Message:` (why it failed as a whole: a node shutdown, an eviction)
        _field_above("Message").alias("_dmsg"),
        pl.col(s.MESSAGE)
        .str.extract(r"(?m)^\s{2}([a-z0-9][a-z0-9\-]*):\s*$", 1)
        .forward_fill()
        .over("_fid")
        .alias("_dcont"),
    )
    m = pl.col("_m").struct.field
    st = described.filter(pl.col("_cstate").fill_null(False)).with_columns(
        pl.col(s.MESSAGE).str.extract_groups(STATE_FIELDS).alias("_m")
    )
    reason = pl.coalesce(m("reason"), m("state"))
    code = m("code")
    sig = code.replace_strict(EXIT_MEANING, default="", return_dtype=pl.String)
    detail = (
        pl.when(code.is_not_null())
        .then(pl.format(", exit code {}", code) + pl.when(sig != "").then(pl.lit(" ") + sig).otherwise(pl.lit("")))
        .otherwise(pl.lit(""))
    )
    bad = reason.is_in(["OOMKilled", "Error", "CrashLoopBackOff", "ContainerCannotRun", "StartError"]) | (
        code.is_not_null() & (code != "0")
    )
    when = (
        pl.coalesce(m("finished"), m("started"))
        .str.strip_chars()
        .str.strptime(pl.Datetime("us", "UTC"), "%a, %d %b %Y %H:%M:%S %z", strict=False)
    )
    st = st.with_columns(
        (
            pl.format("{}: {} ({}", m("which"), m("state"), reason)
            + detail
            + pl.lit(")")
            + pl.when(pl.col("_dcont").is_not_null())
            .then(pl.lit(" container ") + pl.col("_dcont"))
            .otherwise(pl.lit(""))
            + pl.when(pl.col("_dmsg").is_not_null()).then(pl.lit("; the pod: ") + pl.col("_dmsg")).otherwise(pl.lit(""))
            + pl.lit("\n")
            + pl.col(s.MESSAGE)
        ).alias(s.MESSAGE),
        reason.alias(s.K8S_REASON),
        pl.when(bad).then(pl.lit("Warning")).otherwise(pl.lit("Normal")).alias(s.K8S_TYPE),
        pl.when(bad).then(pl.lit("WARNING")).otherwise(pl.lit("INFO")).alias(s.LEVEL),
        pl.coalesce(pl.col(s.POD) if s.POD in events.columns else None, pl.col("_dpod")).alias(s.POD),
        pl.coalesce(pl.col(s.HOST), pl.col("_dnode")).alias(s.HOST),
        pl.coalesce(pl.col(s.CONTAINER) if s.CONTAINER in events.columns else None, pl.col("_dcont")).alias(
            s.CONTAINER
        ),
        pl.coalesce(when, pl.col("_outer_ts")).alias("_outer_ts"),
    ).drop("_m")
    rest = events.filter(~pl.col("_cstate").fill_null(False))
    return (
        pl.concat([rest, st.drop("_dpod", "_dnode", "_dcont", "_dmsg")], how="diagonal_relaxed")
        .sort("_row")
        .drop("_cstate")
    )


def parse_structure(df: pl.DataFrame) -> pl.DataFrame:
    """Header lines of event tables and `describe` sections: parsed, carry no event of their own."""
    return df.with_columns(
        pl.lit("k8s-event").alias(s.SOURCE),
        pl.lit(None, pl.String).alias(s.LEVEL),
        pl.col("body").str.strip_chars().alias(s.MESSAGE),
        pl.lit(True).alias("_structure"),
        *no_time(),
    )


def parse_dump_marker(df: pl.DataFrame) -> pl.DataFrame:
    """`cluster-info dump` START/END markers; `_dump_*` columns are forward-filled by ingest."""
    m = pl.col("_m").struct.field
    df = df.with_columns(pl.col("body").str.extract_groups(DUMP).alias("_m"))
    start = m("what") == "START"
    return df.with_columns(
        pl.when(m("what").is_not_null()).then(pl.lit("k8s-dump")).alias(s.SOURCE),
        pl.lit("INFO").alias(s.LEVEL),
        pl.col("body").str.strip_chars("= ").alias(s.MESSAGE),
        pl.when(start).then(m("pod")).otherwise(pl.lit("")).alias("_dump_pod"),
        pl.when(start).then(m("ns")).otherwise(pl.lit("")).alias("_dump_ns"),
        pl.when(start).then(m("c")).otherwise(pl.lit("")).alias("_dump_container"),
        *no_time(),
    ).drop("_m")


def age_seconds(expr: pl.Expr) -> pl.Expr:
    """`5m2s`, `2d3h`, `45s` -> seconds (Float64); null for `<unknown>` and junk."""
    parts = expr.str.extract_all(r"\d+[smhdy]")
    secs = parts.list.eval(
        pl.element().str.slice(0, pl.element().str.len_chars() - 1).cast(pl.Float64, strict=False)
        * pl.element().str.slice(-1).replace_strict(AGE_UNITS, default=None, return_dtype=pl.Float64)
    ).list.sum()
    return pl.when(parts.list.len() > 0).then(secs)


# --- whole-file event documents ---------------------------------------------------
def sniff_event_document(text: str) -> str | None:
    """'json' or 'yaml' when `text` is a Kubernetes Event / EventList document, else None."""
    head = text[:4096].lstrip()
    if head.startswith("{") and ('"kind": "Event' in head or '"kind":"Event' in head or '"involvedObject"' in head):
        return "json"
    if head.startswith("{") and '"items"' in head and '"kind": "List"' in text[-2048:] + head:
        return "json" if '"involvedObject"' in text[:200_000] else None
    if (
        re.search(r"^(?:apiVersion: v1\s*\n)?(?:items:|kind: (?:Event|EventList|List))", head, re.M)
        and "involvedObject" in text[:200_000]
    ):
        return "yaml"
    return None


YAML_ANCHOR = re.compile(r"(?m)(?:^|[\s:\[{,-])&[\w-]+\s")
YAML_ALIAS = re.compile(r"(?m)(?:^|[\s:\[{,-])\*[\w-]+\s*(?:$|[,\]}])")
"""A YAML anchor (`&name`) and an alias of one (`*name`): what an alias bomb is made of."""


def _load(text: str, kind: str, what: str) -> tuple[object, str | None]:
    """A JSON or YAML document, or (None, a note that it is read line by line instead)."""
    try:
        if kind == "json":
            return load_json(text), None
        if YAML_ANCHOR.search(text) and YAML_ALIAS.search(text):
            return None, (
                f"YAML {what} with anchors and aliases, not expanded (kubectl never writes them; a 'billion "
                "laughs' bomb expands them to billions of nodes); parsed line by line instead"
            )
        import yaml

        return without_surrogates(yaml.safe_load(text)), None
    except Exception as e:  # noqa: BLE001 - any decoder error means "not a valid document"
        return None, f"invalid {kind.upper()} {what} ({type(e).__name__}: {str(e)[:120]}); parsed line by line instead"


def _items(text: str, kind: str, what: str) -> tuple[list[tuple[dict, int]], str | None]:
    """A JSON/YAML document's objects (its `items`, or itself), each with the line where its
    name first appears after the previous one's (1 when it has none), or ([], error message)."""
    doc, err = _load(text, kind, f"{what} document")
    if err:
        return [], err
    items = doc.get("items") if isinstance(doc, dict) and "items" in doc else [doc] if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        return [], f"{kind.upper()} document holds no {what} list; parsed line by line instead"
    starts = line_starts(text)
    located: list[tuple[dict, int]] = []
    cursor = 0
    for item in items:
        if not isinstance(item, dict):
            continue
        name = _text(as_dict(item.get("metadata")).get("name")) or ""
        pos = text.find(name, cursor) if name else -1
        if pos >= 0:
            cursor = pos + len(name)
        located.append((item, line_of(starts, pos) if pos >= 0 else 1))
    return located, None


def parse_event_document(text: str, kind: str) -> tuple[list[dict], str | None]:
    """Events of a JSON/YAML document as row dicts (with `line`), or ([], error message)."""
    items, err = _items(text, kind, "event")
    return [event_row(item, line) for item, line in items], err


STATE_KINDS = ("Pod", "PodList", "Node", "NodeList")


def sniff_state_document(text: str) -> str | None:
    """'json' or 'yaml' when `text` is a Pod/Node document or list (`kubectl get pods|nodes -o
    json|yaml`, a cluster-info dump's `pods.json` / `nodes.json`), else None."""
    head = text[:4096].lstrip()
    body = text[:200_000]
    kinds = "|".join(STATE_KINDS)
    if head.startswith("{"):
        named = re.search(rf'"kind":\s*"(?:{kinds})"', head + text[-2048:])
        listed = re.search(r'"kind":\s*"List"', head + text[-2048:]) and re.search(
            r'"(?:containerStatuses|nodeInfo)"', body
        )
        return "json" if named or listed else None
    if re.search(rf"^(?:apiVersion: v1\s*\n)?(?:items:|kind: (?:{kinds}|List))", head, re.M) and re.search(
        r"^\s*(?:containerStatuses|nodeInfo):", body, re.M
    ):
        return "yaml"
    return None


def parse_state_document(text: str, kind: str) -> tuple[list[dict], str | None]:
    """A Pod/Node document's telling states as `k8s-state` rows (with `line`), as `kubectl
    describe` gives them: each container's State / Last State that ended or waits
    (`Last State: Terminated (OOMKilled, exit code 137 SIGKILL) container vllm`, timed at
    `finishedAt`), a pod evicted, a node condition that fails (timed at its
    `lastTransitionTime`). Or ([], error message)."""
    items, err = _items(text, kind, "Pod/Node")
    rows: list[dict] = []
    for item, line in items:
        meta = as_dict(item.get("metadata"))
        name = _text(meta.get("name")) or ""
        status = as_dict(item.get("status"))
        if item.get("kind") == "Node" or "nodeInfo" in status:
            rows += _node_rows(name, status, line)
        else:
            spec = as_dict(item.get("spec"))
            rows += _pod_rows(name, _text(meta.get("namespace")), _text(spec.get("nodeName")), status, line)
    return rows, err


def _text(v: object) -> str | None:
    """A document's scalar as text (what a hand-edited or truncated document holds need not be one)."""
    return None if v is None or isinstance(v, dict | list) else str(v)


def _pod_rows(pod: str, ns: str | None, node: str | None, status: dict, line: int) -> list[dict]:
    base = {s.SOURCE: "k8s-state", s.HOST: node, s.POD: pod or None, s.NAMESPACE: ns, s.LINE: line}
    base[s.K8S_OBJECT] = f"pod/{pod}"
    rows = []
    if status.get("reason") == "Evicted":
        # Timed at its conditions' last transition (DisruptionTarget / Ready=False: the eviction).
        changed = [_parse_time(as_dict(c).get("lastTransitionTime")) for c in as_list(status.get("conditions"))]
        when = max((t for t in changed if t is not None), default=None)
        said = f"Evicted: {_text(status.get('message')) or ''}".strip()
        rows.append(base | _state_fields("Evicted", True, when, said))
    for cs in [*as_list(status.get("initContainerStatuses")), *as_list(status.get("containerStatuses"))]:
        if not isinstance(cs, dict):
            continue
        container = _text(cs.get("name"))
        for which, key in (("Last State", "lastState"), ("State", "state")):
            for phase, d in as_dict(cs.get(key)).items():
                phase = str(phase)
                if phase == "running" or not isinstance(d, dict):
                    continue
                reason = _text(d.get("reason")) or phase.title()
                code = d.get("exitCode") if isinstance(d.get("exitCode"), int) else None
                if phase == "terminated" and reason == "Completed" and code in (0, None):
                    continue
                detail = ""
                if code is not None:
                    sig = EXIT_MEANING.get(str(code), "")
                    detail = f", exit code {code}" + (f" {sig}" if sig else "")
                msg = f"{which}: {phase.title()} ({reason}{detail}) container {container}"
                if _text(d.get("message")):
                    msg += f": {_text(d['message']).strip()}"
                bad = phase == "waiting" or reason in ("OOMKilled", "Error") or (code not in (None, 0))
                # (a wait starts when the last run ended)
                ended = as_dict(as_dict(cs.get("lastState")).get("terminated")) if phase == "waiting" else d
                when = _parse_time(ended.get("finishedAt") or ended.get("startedAt"))
                rows.append(base | {s.CONTAINER: container} | _state_fields(reason, bad, when, msg))
    return rows


def _node_rows(node: str, status: dict, line: int) -> list[dict]:
    rows = []
    for c in as_list(status.get("conditions")):
        if not isinstance(c, dict):
            continue
        ctype, cstat = _text(c.get("type")), _text(c.get("status"))
        if ctype is None:
            continue
        failing = cstat != "True" if ctype == "Ready" else cstat == "True"  # (as `DETECT_NODE_CONDITION`)
        if not failing:
            continue
        reason = "NodeNotReady" if ctype == "Ready" else ctype
        since = c.get("lastTransitionTime")
        msg = f"{reason}: {ctype}={cstat} since {since}: {c.get('reason')}: {c.get('message') or ''} (kubectl get node)"
        rows.append(
            {s.SOURCE: "k8s-state", s.HOST: node or None, s.K8S_OBJECT: f"node/{node}", s.LINE: line}
            | _state_fields(reason, True, _parse_time(since), msg)
        )
    return rows


def _state_fields(reason: str, bad: bool, when: datetime | None, message: str) -> dict:
    return {
        s.TS: when,
        s.LEVEL: "WARNING" if bad else "INFO",
        s.K8S_TYPE: "Warning" if bad else "Normal",
        s.K8S_REASON: reason,
        s.MESSAGE: message,
    }


def event_row(ev: dict, line: int) -> dict:
    """An event object (core/v1 or events.k8s.io/v1, as `-o json` lists it or a log store keeps
    it) as an events-table row: time, involved pod or node, reporter, `Reason: message`, reason,
    type, object and count."""
    obj = as_dict(ev.get("involvedObject") or ev.get("regarding"))
    # events.k8s.io/v1 shows an event a core/v1 client (the kubelet, most controllers) created
    # with its old fields renamed `deprecated*` and a null eventTime.
    src = as_dict(ev.get("source") or ev.get("deprecatedSource"))
    series = as_dict(ev.get("series"))
    ts_str = (
        series.get("lastObservedTime")
        or ev.get("lastTimestamp")
        or ev.get("deprecatedLastTimestamp")
        or ev.get("eventTime")
        or ev.get("firstTimestamp")
        or ev.get("deprecatedFirstTimestamp")
        or as_dict(ev.get("metadata")).get("creationTimestamp")
    )
    count = ev.get("count") or series.get("count") or ev.get("deprecatedCount") or 1
    reporter = _text(src.get("component") or ev.get("reportingComponent") or ev.get("reportingController"))
    kind = (_text(obj.get("kind")) or "").lower()
    name = _text(obj.get("name"))
    etype = _text(ev.get("type")) or "Normal"
    reason = _text(ev.get("reason"))
    message = (_text(ev.get("message") or ev.get("note")) or "").strip()
    return {
        s.TS: _parse_time(ts_str),
        s.SOURCE: "k8s-event",
        s.LEVEL: "WARNING" if etype == "Warning" else "INFO",
        s.HOST: _text(src.get("host"))
        or (name if kind == "node" else None)
        or (_text(ev.get("reportingInstance")) if reporter == "kubelet" else None),  # the kubelet's: its node
        s.POD: name if kind == "pod" else None,
        s.NAMESPACE: _text(obj.get("namespace") or as_dict(ev.get("metadata")).get("namespace")),
        s.CONTAINER: _container_of(_text(obj.get("fieldPath"))),
        s.COMPONENT: reporter,
        s.MESSAGE: f"{reason}: {message}" if reason else message,
        s.K8S_REASON: reason,
        s.K8S_TYPE: etype,
        s.K8S_OBJECT: f"{kind}/{name}" if kind else name,
        s.K8S_COUNT: int(count) if str(count).isdigit() and len(str(count)) < 12 else 1,
        s.LINE: line,
    }


def _container_of(field_path: str | None) -> str | None:
    if not field_path:
        return None
    m = re.search(r"containers\{([^}]+)\}", field_path)
    return m.group(1) if m else None


def _parse_time(v) -> datetime | None:
    if v is None:
        return None
    if isinstance(v, datetime):
        return v.astimezone(UTC) if v.tzinfo else v.replace(tzinfo=UTC)
    try:
        t = datetime.fromisoformat(str(v).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)
