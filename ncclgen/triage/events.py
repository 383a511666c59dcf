"""One kept log line as an event: which signature it matches, when, on which node and rank.

The prefixes read are those the logs really carry: NCCL's `host:pid:tid [dev]`, PyTorch's
`[rankN]:[E0429 13:55:49.384 ...]` and `[Rank N]`, Ray's `(WorkerDict pid=830, ip=10.0.0.2)`,
srun's `srun: error: NODE: task N:`, ncclgen's `node NAME`, and ISO-8601 or glog time stamps.
Times carry no year in glog form, so they sort as month-day-time, which is enough within one job.
"""

from __future__ import annotations

import re
from dataclasses import field

from ..record import dataclass
from . import catalogue, oom
from .reader import Line

# NCCL's "HOST:PID:TID [DEV]" wherever it starts: after mpirun's "[1,0]<stdout>:", pdsh's "node: ", Ray's
# "(Worker pid=1, ip=...)", kubectl's "[pod/...]" or NCCL's own "[date time]" WARN time stamp.
NCCL_PREFIX = re.compile(r"(?:^|(?<=[\s:>\])]))(?P<host>[A-Za-z0-9][\w.-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\]")
# (an actor's own name may hold '/' or '.': AReaL's "(model_worker/12 pid=43581, ip=10.208.16.54)")
RAY_PREFIX = re.compile(r"\((?:\w[\w/.:-]*) pid=(?P<pid>\d+)(?:, ip=(?P<ip>[\d.]+))?[^)]*\)")
TORCH_RANK = re.compile(r"\[rank(?P<rank>\d+)\]:|\[(?:PG [^\]]*)?Rank (?P<rank2>\d+)\]|\brank\s*:\s*(?P<rank3>\d+)")
# Open MPI's own prefixes: "[HOST][[JOBID,VPID],RANK][file:line:func] ..." (opal/mca/btl/tcp/btl_tcp_endpoint.c and
# the other BTLs' error lines) and "[HOST:PID] ..." (opal/util/stacktrace.c, orte's show_help lines)
OMPI_PREFIX = re.compile(r"^\[(?P<node>[A-Za-z0-9][\w.-]*)(?:\]\[\[\d+,\d+\],\d+\]|:\d+\] )")
SRUN = re.compile(r"srun: error: (?P<node>[\w.-]+): tasks? (?P<task>\d+)")
# "node NAME", not English after "node" ("No available node types can fulfill", Ray's autoscaler)
NODE_WORD = re.compile(
    r"\bnode (?!(?:types?|is|was|has|had|and|or|of|in|on|to|the|that|which|with|for|from|manager|resources?|ids?|names?"
    r"|please|only|will|can|cannot|should|must|may|at|as|by|not|configuration|config|count|list|rank|selector"
    r"|affinity|pool|group|labels?|address|state|status|failure|failed|count|running|info|timed)\b)"
    # a host name, not a word of the sentence: a digit, '-', '_' or an inner '.' in it; a sentence's full stop left out
    r"(?P<node>(?=[\w-]*(?:[\d_-]|\.\w))[A-Za-z0-9](?:[\w-]|\.(?=\w))*)"
)
# torchrun's failure table "host      : NAME", not a host:port ("fake-host:1234")
HOST_FIELD = re.compile(r"(?:^|(?<=[\s\[(,]))host\s*:\s*(?P<node>[A-Za-z0-9][\w.-]*)")
ISO = re.compile(r"(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[T ](?P<t>\d\d:\d\d:\d\d(?:[.,]\d+)?)")


def glog_head(levels: str = "IWEF") -> str:
    """glog's line prefix as regex text, 'W0825 11:10:33.595331   331 util_rdma.h:547]' (glog's LogMessage: severity
    of ``levels``, month and day, a year before them since glog 0.7, time, thread id as group 'pid', file:line)."""
    return rf"[{levels}](?:\d{{4}})?\d{{4}} \d\d:\d\d:\d\d\.\d+ +(?P<pid>\d+) [\w./-]+:\d+\]"


# glog/c10 form: [E321 02:07:08.408271257 ...] is March 21 (month without a leading zero), E1021 October 21
GLOG = re.compile(r"\[?[IWEF](?P<mo>[01]?\d)(?P<d>[0-3]\d) (?P<t>\d\d:\d\d:\d\d(?:\.\d+)?)")
# dmesg -T: "[Sun Jul 28 09:15:27 2024]" (the kernel's Xid and NVRM lines)
DMESG = re.compile(
    r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(?P<d>\d{1,2}) "
    r"(?P<t>\d\d:\d\d:\d\d) \d{4}\]"
)
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
REGENERATE = re.compile(r"Regenerate: (?P<argv>ncclgen .*)$")
# NCCL before 2.9 or so put the source file before the level: "host:pid:tid [0] misc/socket.cc:403 NCCL WARN ...";
# before 2.4 without the word NCCL: "include/socket.h:344 WARN Socket creation failed : ..."
# (a log pasted into an issue or a ticket may carry Markdown around the level: "shm.h:28 **NCCL WARN ...**")
NCCL_LINE = re.compile(
    r"(?:(?P<file>[\w/.-]+\.(?:cc|h|cu|cpp)):(?P<line>\d+) [*`_]*(?:NCCL )?|NCCL )(?P<level>WARN|INFO) (?P<text>.*)"
)
# XLA (JAX) quotes NCCL's last WARN text in its own error (openxla/xla xla/service/gpu/runtime/nccl_api.cc ToStatus:
# "... failed: %s. Last NCCL warning(error) log entry (may be unrelated) '%s'."; ncclMemAlloc: "...: %s"), as
# PyTorch puts it on the line after "Last error:"
XLA_LAST = re.compile(
    r"Last NCCL warning\(error\)(?: log entry \(may be unrelated\))?:? ?(?P<q>'?)(?P<text>.+?)(?P=q)\.?$"
)
# PyTorch's "Last error:" with NCCL's text on the same line (a log whose lines were joined: an issue pasted without
# a code block, a launcher or event stream that flattens them), after the launcher's prefix repeated ("10: ")
LAST_INLINE = re.compile(r"(?:(?P<pre>\[[^\]]*\]:?|\S+:) )?Last error: +(?:(?P=pre) )?(?P<text>\S.*)$")
# Python's traceback header names no error: the exception line that closes the traceback does (CPython
# Lib/traceback.py prints `Type: message` last), so the header is the first failure only when nothing else is.
TRACEBACK = "Traceback (most recent call last)"
# The prefixes launchers and loggers put before a program's own line ('[80746] [rank0]:', Ray's '(pid=1, ip=10.0.0.1) '),
# each after any spaces, and one space after it: what is left keeps the line's own indentation (a traceback's frames)
LOG_PREFIX = re.compile(r"^(?:\s*\[[^\]]*\]:?\s?|\s*\([^)]*\)\s?)*")
# What a launcher or logger puts before a quoted NCCL WARN text whose own "host:pid:tid [dev] NCCL WARN" was
# dropped (Ray's "(Runner pid=1)", PyTorch's "[rank0]:", mpirun's "[1,0]<stdout>:", srun -l's "0: "), and the level word
# a paste keeps when it cuts the "host:pid:tid [dev] NCCL" before it; a glog prefix
BARE_PREFIX = re.compile(
    r"^(?:\s*(?:\(\w[\w/.:-]* pid=\d+[^)]*\)|\[rank\d+\]:|\[\d+,\d+\]<std\w+>:|\d+:"
    # a glog prefix ('W20250825 11:10:33.595331   331 util_rdma.h:547] '): a library reusing NCCL's code and words
    rf"|{glog_head()}))*\s*(?:WARN\s+)?"
)
# Net plugins' own tags on the lines they print through NCCL's logger, and where each plugin's source is
PLUGIN_REPOS = {
    "OFI": "aws/aws-ofi-nccl",
    "FasTrak": "google/nccl-plugin-gpudirect-tcpxo",
    "GPUDirectTCPX": "google/nccl-plugin-gpudirecttcpx",
}
PLUGIN_TAG = re.compile(r"NET/(OFI|FasTrak|GPUDirectTCPX)\b")
WRONG_MAGIC = re.compile(r"wrong magic ([0-9a-f]{1,16}) != ")
OLD_NCCL_WARN = re.compile(r"\.(?:cc|h|cu|cpp):\d+ WARN ")
ERROR_LINE = re.compile(
    r"NCCL WARN|"
    + OLD_NCCL_WARN.pattern
    # (or with its message wrapped whole onto the next line by a paste or terminal: 'AssertionError:' at the end)
    + r"|Traceback \(most recent call last\)|\b\w*(?:Error|Exception)(?:\([\w.]+\))?:(?: |\s*$)"
    # a traceback's last line for an exception raised without a message ('[rank2]: EOFError', Lib/traceback.py
    # prints the type alone), alone on its line or after a log prefix (Ray's and vLLM's '(EngineCore_DP3 pid=34912) ')
    r"|(?:^|\]:?\s|^\s*|\bpid=\d+[^)]{0,80}\)\s+)(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\s*$"
    r"|(?:srun|sbatch|salloc): error:|slurmstepd: error:|Check failed: |terminate called after throwing"
    # a log level's word (MindSpore's '[CRITICAL]' and '[EXCEPTION]' above its ERROR)
    r"|\bFATAL\b|\bERROR\b|\bCRITICAL\b|\[EXCEPTION\]"
    # a compiler's error on a source line (gcc, clang, nvcc: 'FILE.cu:42:5: error: ...'), nvcc's own fatal line: an
    # extension a job builds at run time (DeepSpeed's JIT ops, torch.utils.cpp_extension)
    r"|\.(?:c|cc|cpp|cxx|cu|cuh|h|hpp)(?::\d+){1,2}: (?:fatal )?error: |^nvcc fatal\s*: "
    # (or in a header without an extension, the C++ library's own: '/usr/include/c++/6/tuple:502:1: error: ...')
    r"|/[\w.+-]+:\d+:\d+: (?:fatal )?error: "
    # autoconf's fatal check ('configure: error: no OFED nor kernel OpenIB gen2 headers present'): a build the job
    # or its image runs (a DKMS module, an extension)
    r"|^configure: error: "
    # nccl-tests' and vLLM's check macros, their quoted text wrapped onto the next line by a paste
    r"|\bFailed: (?:NCCL|Cuda) error [\w./-]+:\d+"
    # Python's lower-case socket exceptions (socket.gaierror, socket.herror, socket.timeout)
    r"|\bsocket\.(?:gaierror|herror|timeout): "
    # a library's numbered error ('Error 4126: Unresponsive receiver ...', libfabric's EFA provider)
    r"|\bError \d{1,6}: "
    # c10::Error's stack header (c10/util/Exception.cpp): a C++ exception PyTorch raised, its message lines cut off
    r"|Exception raised from \w+ at "
    # Ascend CANN's error-code lines ('EZ9999: Inner Error!', 'EZ9999[PID: 25038] 2026-03-17-08:21:12.001.372
    # (EZ9999): ...'), alone or after a launcher's prefix
    r"|(?:^|\)\s|\]:?\s?)\s*E[A-Z]\d{4}(?:\[PID: \d+\]|: )"
    # c10's and gloo's ENFORCE macros ('[enforce fail at gloo/transport/tcp/pair.cc:446] op.preamble.length <= ...')
    r"|\[enforce fail at "
    # a CUDA error in any case (a log or a paste that lowered it: 'runtimeerror: cuda error: invalid device ordinal')
    r"|(?i:\b(?:cuda|hip) error: )"
    # a CUDA library's check macro, 'LIB error N at FILE:LINE' (NCCL 1's tests: 'CuRAND error 204 at
    # test/include/test_utilities.h:112'; cuBLAS and cuFFT samples alike) or CUDA samples' helper_cuda.h
    # 'CUDA error at FILE:LINE code=N(NAME)'
    r"|\b(?:[Cc][Uu]\w+|CUDA|HIP|hip\w+) error (?:\d+ )?at [\w./-]+:\d+"
    # a process, container or job reported as ended with a non-zero status (a shell's, an operator's words)
    r"|\b(?:[Ee]xit(?:ed)?(?: with)?(?: error| exit)? (?:[Cc]ode|status)|exit_code)[:=]? ?[1-9]\d*\b"
    # Ray's C++ components (raylet, gcs_server, core workers) log glog-style: '[2025-10-31 17:10:05,847 E 24507 24507]'
    r"|\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [EC] \d+ \d+\]"
    # glog's FATAL severity ('F0824 16:36:33.027580 163127 server_impl.cc:172] ...': LOG(FATAL) aborts the process
    # after it; glog's E lines are not errors by themselves: libraries log benign ones at start-up)
    rf"|(?:^|\]:?\s*|^\s*\[){glog_head('F')}"
    # c10's own FATAL form, without the thread id ('[rank2]:[F205 18:19:06.383067836 ProcessGroupNCCL.cpp:1614]')
    r"|\[F\d{3,4} \d\d:\d\d:\d\d\.\d+ [\w./-]+:\d+\]"
    # Go's logrus (container runtimes, NVIDIA's container toolkit and MIG tools): its text form on a terminal,
    # 'ERRO[0000] ...' (level, seconds since start), and an error or fatal record in logfmt ('level=error msg=...')
    r"|^\s*(?:ERRO|FATA)\[\d{4,}\] |\blevel=(?:error|fatal)\b"
)
# Fatal words of programs that follow none of the forms above (NVSHMEM's 'init.cu:1080: nvshmem initialization failed,
# exiting', 'non-zero status: 7', a library's 'Ctran initialization failed', UCX's 'Caught signal 11'); never on an
# NCCL INFO line, where a plugin that failed to load is normal (NCCL falls back); the kernel's Xid lines only by their
# signatures (Xid 13 is a program's own fault, on any process of the node)
OTHER_FATAL = re.compile(
    r"\b(?:[Ii]nitiali[sz]ation|[Ii]nit) failed\b|failed, exiting|non-zero status: -?\d+|Caught signal \d+"
    # a tool's err(3)-style line, 'PROG: failed to WHAT: strerror' (enroot's helpers, mount, ...)
    r"|^[\w.-]+(?:\[\d+\])?: [Ff]ailed to [^:]{1,120}(?:: [^:]{1,200})?: (?:No such file or directory|Permission denied"
    r"|Operation not permitted|Input/output error|Cannot allocate memory|No space left on device|Read-only file system"
    r"|Connection refused|Exec format error|Invalid argument|Device or resource busy|Too many open files)"
)
# A traceback's frame or code line that a logger printed with its ERROR prefix (vLLM's logger.exception prints
# 'ERROR 04-13 19:52:24 [multiproc_executor.py:800]     self.NCCL_CHECK(' for every line): the exception line
# that closes the traceback is the error, not its frames
LOGGED_FRAME = re.compile(r"\bERROR\b[^\]]{0,80}\] {3,}\S")
# A string literal alone on an indented line: a source line a traceback quotes (pytest shows the code around the
# failing line; a message split over several literals), not a program's output
SOURCE_LITERAL = re.compile(r"""^\s+[rbfu]{0,2}(?:"[^"]*"|'[^']*')\s*[,)]?\s*$""")
# A traceback's quoted `raise` statement ('    raise ValueError("No available memory for the cache blocks. "'):
# its message is the exception line's, a line below (Lib/traceback.py prints the source line under each frame)
QUOTED_RAISE = re.compile(r"^\s+raise\s+[A-Za-z_][\w.]*\(")
# An INFO line is looked up in the table only when it says something failed (the tool's own filter).
INFO_FAILURE = re.compile(
    r"(?i)fail|error|unable|cannot|could not|couldn't|not found|no device|no usable|not supported|no eligible"
)
# The AWS OFI plugin's INFO lines that read like failures but are not one alone (signature ofi-no-provider).
OFI_INFO_ONLY = re.compile(r"NET/OFI No eligible providers were found")


@dataclass
class Event:
    line: Line
    sig: catalogue.Signature | None  # None: an error line no signature matches
    groups: dict[str, str] = field(default_factory=dict)
    time: str | None = None  # sortable: MM-DD HH:MM:SS.ffffff
    node: str | None = None
    rank: str | None = None
    seq: int = 0  # reading order
    placed: str | None = None  # an untimed line's place in time: the time of the next timed event of its file

    @property
    def where(self) -> str:
        return f"{self.line.file}:{self.line.lineno}"


def when(line: Line) -> str | None:
    """The line's time: its own, or the one its log collector put before it (reader.collected)."""
    return timestamp(line.stamp) if line.stamp else timestamp(line.text)


def timestamp(text: str) -> str | None:
    if "] " in text and (d := DMESG.search(text)):
        return f"{MONTHS.index(d.group('mon')) + 1:02d}-{int(d.group('d')):02d} {d.group('t')}.000000"
    m = ISO.search(text) or GLOG.search(text)
    if not m:
        return None
    t = m.group("t").replace(",", ".")
    whole, _, frac = t.partition(".")
    return f"{int(m.group('mo')):02d}-{m.group('d')} {whole}.{(frac + '000000')[:6]}"


def seconds(t: str) -> float:
    """A time of timestamp()'s form as seconds (months as 31 days: only differences of hours matter here)."""
    day, clock = t.split(" ")
    month, mday = day.split("-")
    h, m, s = clock.split(":")
    return ((int(month) * 31 + int(mday)) * 24 + int(h)) * 3600 + int(m) * 60 + float(s)


def locate(text: str, groups: dict[str, str]) -> tuple[str | None, str | None]:
    """(node, rank) named by the line's prefixes or the signature's own groups."""
    node = groups.get("node")
    rank = None
    if m := NCCL_PREFIX.search(text):
        node = node or m.group("host")
    if m := RAY_PREFIX.search(text):
        node = node or m.group("ip")
    if m := SRUN.search(text):
        node, rank = node or m.group("node"), m.group("task")
    if node is None and text.startswith("[") and (m := OMPI_PREFIX.match(text)):
        node = m.group("node")
    if m := TORCH_RANK.search(text):
        rank = m.group("rank") or m.group("rank2") or m.group("rank3")
    if node is None and (m := NODE_WORD.search(text) or HOST_FIELD.search(text)):
        node = m.group("node")
    return node, rank


def nccl_event(text: str) -> tuple[catalogue.Signature, dict[str, str]] | None:
    """The class of an NCCL WARN line, or of an INFO line reporting a failure, from nccl-warn.tsv: the format
    string that printed it gives the source file, the file and text give the class (classes.yaml)."""
    m = NCCL_LINE.search(text)
    if m is None or (m.group("level") == "INFO" and not INFO_FAILURE.search(m.group("text"))):
        return None
    level, body = m.group("level"), m.group("text").strip().rstrip("*`_")
    if m.group("file") and catalogue.source_stem(m.group("file")) not in catalogue.nccl_files():
        return _plugin_event(level, body, f"{m.group('file')}:{m.group('line')}")
    found = catalogue.nccl_source(body, level)
    if found is None and level == "INFO":
        return None
    own = f"src/{m.group('file')}:{m.group('line')}" if m.group("file") else None  # the line's own release
    fmt, where = (found[0], own or found[1]) if found else (body, own or "src/?")
    cid = catalogue.class_of(level, fmt, where) if own or not found else found[2]
    event = catalogue.refine_event(cid, body, where)  # the class's own refinement first; else the CUDA error's
    cid = event if event != cid else catalogue.refine(cid, body)
    sig = catalogue.classes()[cid]
    if level == "INFO" and sig.role == "root":
        sig = catalogue.as_role(sig, "suspect")  # reported at INFO: the cause only when a failure follows
    groups = {"text": _with_magic(body)[:300], "file": where.rsplit(":", 1)[0]}
    if own or found:
        groups["nccl_where"] = where
    elif (tag := PLUGIN_TAG.match(body)) is not None:  # a net plugin's own line through NCCL's logger
        groups["plugin_source"] = PLUGIN_REPOS[tag.group(1)]
    return sig, groups


def _plugin_event(level: str, body: str, where: str) -> tuple[catalogue.Signature, dict[str, str]]:
    """A WARN from a source file NCCL does not have (net_fastsocket.cc, nccl_ofi_net.cpp, sharp_plugin.c): a net
    plugin's own line through NCCL's logger. Its words give the class, never its file's name (a plugin's socket file
    is not NCCL's socket.cc); a warning no class names is the plugin's. A suspect either way: a plugin warns of what it
    may recover from ('Maximum retry reached', then 'Connected after 1000 retries'); what it cannot recover from it
    returns to NCCL, which reports it."""
    cid = catalogue.class_of(level, body, "")
    cid = "net-plugin-warn" if cid == "nccl-other" else catalogue.refine(cid, body)
    sig = catalogue.classes()[cid]
    if sig.role == "root":
        sig = catalogue.as_role(sig, "suspect")
    return sig, {"text": body[:300], "file": where.rsplit(":", 1)[0], "plugin_source": f"a net plugin's {where}"}


def _with_magic(body: str) -> str:
    """A socket's 'wrong magic' with the 8 bytes the peer sent read as text where they are printable (NCCL prints
    the little-endian uint64 it received): 'GET /met' is an HTTP probe, not NCCL."""
    m = WRONG_MAGIC.search(body)
    if m is None:
        return body
    sent = bytes.fromhex(m.group(1).zfill(16))[::-1]
    return f"{body}; the peer sent {sent.decode('ascii')!r}" if all(32 <= b < 127 for b in sent) else body


def order(ev: Event) -> tuple:
    """Timed events by time (an untimed one at the next timed event of its file: it was printed before that one,
    as a traceback before its logger's time-stamped echo), then untimed ones in reading order."""
    t = ev.time or ev.placed
    return (0, t, ev.seq) if t else (1, "", ev.seq)


def before(a: Event, b: Event) -> bool:
    """Whether ``a`` comes before ``b``. Two lines of one error in one file, within one second, stamped by clocks of
    two forms (one to the millisecond, one finer), keep reading order: an exception's echo by another logger (Ray's
    logging.cc 'Unhandled exception: ... what(): ...' after c10's own line) can carry a stamp behind the line it repeats."""
    ta, tb = a.time, b.time
    same = a.sig is b.sig and a.line.file == b.line.file and ta and tb and ta[:14] == tb[:14]
    if same and ta.endswith("000") != tb.endswith("000"):  # type: ignore[union-attr]
        return a.seq < b.seq
    return order(a) < order(b)


def classify(line: Line, seq: int) -> Event | None:
    """The event for ``line``: the first signature whose key and regex match, else an NCCL WARN (or failing
    INFO) line by its source, else an error line, else None. NCCL's text quoted after "Last error:" on the
    same line is what names the cause, so it is tried first."""
    if line.nccl_text is not None:
        return _classify(line, f"NCCL WARN {line.nccl_text}", seq)
    if "Last error:" in line.text and (m := LAST_INLINE.search(line.text)):
        quoted = _classify(line, "NCCL WARN " + m.group("text"), seq)
        if quoted is not None and quoted.sig is not None:
            return quoted
    return _classify(line, line.text, seq)


def _classify(line: Line, text: str, seq: int) -> Event | None:
    if "raise " in text and QUOTED_RAISE.match(LOG_PREFIX.sub("", text, count=1)):
        return None  # the source line a traceback quotes holds the message it raises, not the failure
    if (ev := _by_signature(line, text, seq)) is not None:
        return ev
    if (found := _nccl_text(text)) is not None:
        node, rank = locate(line.text, {})
        return Event(line, found[0], found[1], when(line), node, rank, seq)
    if is_error_line(text):
        node, rank = locate(line.text, {})
        return Event(line, None, {}, when(line), node, rank, seq)
    return None


def _by_signature(line: Line, text: str, seq: int) -> Event | None:
    """The event of the first signature whose key and regex match ``text``."""
    for sig in catalogue.signatures():
        if any(k in text for k in sig.keys) and sig.match and (m := sig.match.search(text)):
            # a line posted in Markdown emphasis ('_..._', '**...**') keeps the marks out of the text
            groups = {k: v.rstrip("*_`") for k, v in m.groupdict().items() if v is not None}
            if sig.refine_cuda and (cid := catalogue.refine("cuda-failure", text)) != "cuda-failure":
                sig = catalogue.classes()[cid]  # 'CUDA error: out of memory' is a GPU memory failure
                groups["text"] = text[:300]
            elif sig.id == "cuda-oom" and (held := oom.held_elsewhere(text)) is not None:
                sig, groups = catalogue.classes()["cuda-oom-elsewhere"], {**groups, **held}
            node, rank = locate(line.text, groups)
            return Event(line, sig, groups, when(line), node, rank, seq)
    return None


def _nccl_text(text: str) -> tuple[catalogue.Signature, dict[str, str]] | None:
    """An NCCL WARN (or failing INFO) text in the line: XLA's quote of it, NCCL's own line, or a bare paste."""
    found = None
    if (xla := XLA_LAST.search(text)) and catalogue.nccl_source(quoted := xla.group("text").strip(" '")) is not None:
        found = nccl_event("NCCL WARN " + quoted)  # a quote cut short by a line break is no NCCL text
    if found is None and ("NCCL " in text or OLD_NCCL_WARN.search(text)):
        found = nccl_event(text)
    if found is None and "NCCL " not in text:
        found = bare_warn(text)
    return found


def is_error_line(text: str) -> bool:
    """An error marker, or another program's fatal words, outside a traceback frame a logger prefixed with ERROR."""
    # (a Python warning, "FILE:N: UserWarning: CUDA initialization: ... initialization failed", is no fatal line)
    fatal = "NCCL INFO" not in text and "Warning: " not in text and OTHER_FATAL.search(text)
    record = text.endswith("{") and "error_handler" in text  # torchelastic's error record opens: its lines say why
    return (
        bool(ERROR_LINE.search(text) or fatal)
        and not LOGGED_FRAME.search(text)
        and not record
        and not SOURCE_LITERAL.match(text)  # a source line a traceback quotes
    )


def bare_warn(text: str) -> tuple[catalogue.Signature, dict[str, str]] | None:
    """An NCCL WARN text quoted without NCCL's prefix (Ray's log dedup, a person's paste): looked up among the
    formats long enough that no other program's words match them by chance; the AWS OFI plugin's failures by
    its NET/OFI tag."""
    body = BARE_PREFIX.sub("", text, count=1)
    if body.startswith("NET/OFI ") and INFO_FAILURE.search(body) and not OFI_INFO_ONLY.match(body):
        return nccl_event("NCCL WARN " + body)  # the AWS OFI plugin's own failure, through NCCL's logger
    if catalogue.nccl_source(body, "WARN", bare=True) is None:
        return None
    return nccl_event("NCCL WARN " + body)
