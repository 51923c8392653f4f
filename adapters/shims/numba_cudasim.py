#!/usr/bin/env python3
"""Numba's CUDA simulator behind the atomcts adapter protocol, version 2, semantic level
(adapters/PROTOCOL.md).

A third-party implementation nobody here wrote. The runner sends the lowered IR of each valid
instruction (any dialect); each memory access becomes one thread of a one-block kernel that
calls the `numba.cuda.atomic` function with exactly the op's semantics on a NumPy view of the
case's memory, run by Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1). The shim does no
arithmetic: it lays out memory, dispatches, and answers the final memory and each access's
returned value (`accesses`); the runner writes them back into registers.

Mapping (numba.cuda.atomic, documented in Numba's "Supported Atomic Operations"): add, sub,
and_, or_, xor, exch, cas; inc/dec are CUDA's bounded forms (IR inc_bounded/dec_bounded);
min/max on integers, nanmin/nanmax on floats (IEEE minimumNumber/maximumNumber, the IR's
default float min/max rule). Types u32 s32 u64 s64 f32 f64; exchange and a bitwise
compare-exchange of floats move bits through the integer view of the same width.

Not applicable (answered `not_applicable` with the reason, never emulated): the plain
wrapping inc/dec and predec (Numba has only CUDA's bounded forms), 16-bit and f16x2 data,
numeric compare-exchange, stores, shared (threadgroup/SLM) memory outside concurrent cases,
SIMD-group shuffles, accesses outside allocated memory or misaligned.

Concurrent cases (capabilities `concurrent` and `cas_loop`): one launch of one thread block,
every access of every instruction its own thread (in the simulator a Python thread), each
looping over its iterations with the same numba.cuda.atomic call; compare-and-swap loops are
`cuda.atomic.cas` retry loops; shared memory is the block's shared memory. See run_concurrent.

Needs: numba (pip). Run: atomcts run --adapter "cmd:python3 adapters/shims/numba_cudasim.py"
On a real NVIDIA GPU (Numba's CUDA target, numba-cuda): set NUMBA_ENABLE_CUDASIM=0; the shim
then calls itself `numba-cuda` and answers not applicable where Numba's typing refuses a type
(e.g. atomic inc on s32). Its findings: adapters/shims/numba_cuda_gpu.baseline.
"""
import inspect
import os

import atomcts_shim

# The simulator unless the caller asks for a real GPU with NUMBA_ENABLE_CUDASIM=0 (then this
# shim runs Numba's CUDA target: its code generation, the driver and the GPU).
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
SIMULATOR = os.environ["NUMBA_ENABLE_CUDASIM"] != "0"
import numpy as np  # noqa: E402
import warnings  # noqa: E402

# Overflow and NaN warnings of the simulator's host arithmetic are expected (wrapping ints, NaN
# operands): the answer carries the values, stderr stays quiet.
warnings.simplefilter("ignore", RuntimeWarning)
from numba import cuda  # noqa: E402

import numba  # noqa: E402

# What runs behind the shim, for reports (handshake `implementation`). The profile it claims is
# `nvidia-ptx`: it simulates CUDA, which PTX ISA and the CUDA Programming Guide describe.
IMPLEMENTATION = "numba %s CUDA %s (numpy %s)" % (
    numba.__version__, "simulator" if SIMULATOR else "target on a GPU", np.__version__)

TYPES = {"u32": np.uint32, "s32": np.int32, "u64": np.uint64, "s64": np.int64,
         "f32": np.float32, "f64": np.float64}
BITS = {4: np.uint32, 8: np.uint64}
OPS = ["add", "sub", "and", "or", "xor", "exch", "cas", "inc_bounded", "dec_bounded",
       "min", "max", "nanmin", "nanmax"]


# One kernel per op: on a real GPU (NUMBA_ENABLE_CUDASIM=0) Numba compiles a kernel for its
# argument types, so one kernel dispatching on the op would have to type every op's call for
# every type (and_ on f32 does not type). Thread i applies the op to mem[idx[i]].
@cuda.jit
def k_add(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.add(mem, idx[i], b[i])


@cuda.jit
def k_sub(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.sub(mem, idx[i], b[i])


@cuda.jit
def k_and(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.and_(mem, idx[i], b[i])


@cuda.jit
def k_or(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.or_(mem, idx[i], b[i])


@cuda.jit
def k_xor(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.xor(mem, idx[i], b[i])


@cuda.jit
def k_exch(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.exch(mem, idx[i], b[i])


@cuda.jit
def k_cas(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.cas(mem, idx[i], b[i], c[i])


@cuda.jit
def k_inc(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.inc(mem, idx[i], b[i])


@cuda.jit
def k_dec(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.dec(mem, idx[i], b[i])


@cuda.jit
def k_min(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.min(mem, idx[i], b[i])


@cuda.jit
def k_max(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.max(mem, idx[i], b[i])


@cuda.jit
def k_nanmin(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.nanmin(mem, idx[i], b[i])


@cuda.jit
def k_nanmax(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.nanmax(mem, idx[i], b[i])


KERNELS = dict(zip(OPS, [k_add, k_sub, k_and, k_or, k_xor, k_exch, k_cas, k_inc, k_dec,
                         k_min, k_max, k_nanmin, k_nanmax]))


na = atomcts_shim.not_applicable


class Mapped:
    """How one lowered memory instruction runs on Numba: `op` (a key of KERNELS and CALLS), the
    NumPy type of the array it works on (the integer view of the same width for exchange and a
    bitwise compare-exchange) and its width in bytes."""

    def __init__(self, op, ty, dtype, width):
        self.op, self.ty, self.dtype, self.width = op, ty, dtype, width


def mapping(ins, spaces=("global",)):
    """The Mapped instruction, or the `not_applicable` answer saying why Numba has none; the
    memory spaces it may use: `spaces`."""
    if ins["kind"] != "mem":
        return na("SIMD-group shuffles: the CUDA simulator has no warp shuffles this shim maps")
    op, ty, space = ins["op"], ins["type"], ins["space"]
    if ty not in TYPES:
        return na("%s data: no numba.cuda.atomic function takes it" % ty)
    dtype = TYPES[ty]
    width = np.dtype(dtype).itemsize
    is_float = ty.startswith("f")
    bitwise = op == "exch" or (op == "cas" and ins["compare"] == "bitwise")
    if op == "cas" and not bitwise:
        return na("compare-exchange with a numeric compare: numba's cas compares bits")
    if op in ("min", "max") and is_float:
        op = "nan" + op
    if op in ("inc", "dec", "predec"):
        return na("plain wrapping %s: numba has only CUDA's bounded inc/dec" % op)
    if op not in OPS:
        return na("%s: no numba.cuda.atomic function" % op)
    if is_float and op not in ("add", "sub", "nanmin", "nanmax") and not bitwise:
        return na("%s on %s: no numba.cuda.atomic function" % (op, ty))
    if bitwise:
        dtype = BITS[width]
    if space not in spaces:
        return na("%s memory: this shim maps %s memory only" % (space, " and ".join(spaces)))
    if not SIMULATOR and is_float and op in ("add", "sub"):
        # PTX ISA, atom: `.add.f32` rounds to nearest even and flushes subnormal inputs and
        # results; `.add.f64` rounds to nearest even and keeps them. Numba's atomic add compiles
        # to these, so another float environment has no exact primitive here.
        ftz = ins.get("ftz", {})
        want = (bool(ftz.get("inputs")), bool(ftz.get("outputs")), ins.get("round"))
        has = (True, True, "nearest_even") if ty == "f32" else (False, False, "nearest_even")
        if want != has:
            return na("%s %s with flush (inputs, outputs) and rounding %s: numba's atomic "
                      "add on the GPU is PTX atom.add.%s, which has %s" % (op, ty, want, ty, has))
    return Mapped(op, ty, dtype, width)


def operands(acc, k, m):
    """Source operand k of every access, as m.dtype."""
    raw = np.array([int(a["src"][k], 16) for a in acc], dtype=np.uint64)
    return (raw if m.width == 8 else raw.astype(np.uint32)).view(m.dtype)


def run(req):
    if req.get("type") == "run_concurrent":
        return run_concurrent(req)
    if req.get("type") == "repro":
        return repro_concurrent(req) if "instrs" in req else repro(req)
    lowered = req.get("lowered")
    if not lowered:
        return na("no lowered IR")
    ins = lowered["instr"]
    m = mapping(ins)
    if isinstance(m, dict):
        return m
    op, ty, dtype, width = m.op, m.ty, m.dtype, m.width
    acc = ins["accesses"]
    if not acc:
        return {"outcome": "accesses", "memory": req["state"]["memory"], "returned": []}
    laid = atomcts_shim.flat_global(req, acc, width)
    if isinstance(laid, dict):
        return laid
    ranges, flat, idx = laid
    n = len(acc)
    mem = np.frombuffer(bytes(flat), dtype=dtype).copy()

    b, c = operands(acc, 0, m), operands(acc, 1, m)
    out = np.zeros(n, dtype=dtype)
    kernel = KERNELS[op]
    args = (mem, np.array(idx, dtype=np.int64), b, c, out)
    if SIMULATOR:
        kernel[1, n](*args)
    else:
        # On a GPU Numba types the call first: a type its atomic does not take is this
        # target's limitation, answered not applicable with Numba's reason.
        try:
            kernel[1, n](*args)
        except numba.core.errors.TypingError as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else "TypingError"
            return na("numba-cuda has no %s for %s data on this target (%s)" % (
                op, ty, first.replace("\x1b[1m", "").replace("\x1b[0m", "")[:160]))
    final = mem.tobytes()
    raw = out.view(BITS[width])
    returned = [hex(int(v)) for v in raw]
    answer = atomcts_shim.accesses_answer(req, ranges, final, returned)
    if op == "cas":
        answer["ok"] = [int(raw[i]) == int(b.view(BITS[width])[i]) for i in range(n)]
    return answer


def repro(req):
    """The `repro` answer (PROTOCOL.md, "Standalone reproducers"): the op's kernel of KERNELS,
    its source as written here, and the launch run() makes (one block of one thread an access)."""
    lowered = req.get("lowered")
    if not lowered:
        return na("no lowered IR")
    m = mapping(lowered["instr"])
    if isinstance(m, dict):
        return m
    acc = lowered["instr"]["accesses"]
    if not acc:
        return na("no access: nothing to launch")
    kernel = KERNELS[m.op]
    fn = getattr(kernel, "py_func", None) or kernel.fn  # the GPU dispatcher / the simulator's
    source = "import numpy as np\nfrom numba import cuda\n\n\n" + inspect.getsource(fn)
    bits = np.dtype(BITS[m.width]).name
    launch = ("    {k}[1, N](mem, idx, b, c, out)\n"
              "    return observation(mem.tobytes(), out.view(np.{u}), where)\n").format(
                  k=fn.__name__, u=bits)
    return atomcts_shim.repro_answer(
        req, acc, m.width, np.dtype(m.dtype).name, source, launch, ["numpy", "numba"],
        env={"NUMBA_ENABLE_CUDASIM": "1" if SIMULATOR else "0"})


# Concurrent cases (PROTOCOL.md, "Concurrent cases", capabilities `concurrent` and `cas_loop`):
# one launch of one thread block in which every access of every instruction is its own CUDA
# thread, looping over its instruction's iterations with the real numba.cuda.atomic call. One
# block, because the simulator runs the blocks of a grid one after another and the threads of a
# block as Python threads at once; every thread first waits in cuda.syncthreads(), so that all
# instructions start together (the simulator starts its threads one by one). The kernel is
# written out per case shape (the instructions' ops, types and loop updates) and compiled once:
# on a GPU Numba types each branch for its own array type. On a GPU each instruction starts at
# a warp boundary (its own warps); the simulator has no warps.
WARP = 1 if SIMULATOR else 32
MAX_BLOCK = 1024  # threads in one CUDA thread block
# The simulator runs each thread as a Python thread and each atomic call under a Python lock: a
# launch of more atomic calls than this (threads x iterations, all instructions) took over a
# minute on a 2-core machine (16,384 and 17,408 calls: 60 s deadlines missed in CI-like runs), so
# such a case is not applicable to the simulator, with the reason (a limit of this shim's way of
# running it, not a finding). On a GPU there is no such limit.
SIM_MAX_CALLS = 8192
FUNCS = {"add": "add", "sub": "sub", "and": "and_", "or": "or_", "xor": "xor", "exch": "exch",
         "cas": "cas", "inc_bounded": "inc", "dec_bounded": "dec", "min": "min", "max": "max",
         "nanmin": "nanmin", "nanmax": "nanmax"}
# A compare-and-swap loop's desired value from its compare (FORMAT.md, "Compare-and-swap
# loops"), cast back to the array's type (wrapping): the kernel's own arithmetic.
UPDATES = {"add": "T{k}(cmp{k} + p{k}[0])", "sub": "T{k}(cmp{k} - p{k}[0])",
           "and": "T{k}(cmp{k} & p{k}[0])", "or": "T{k}(cmp{k} | p{k}[0])",
           "xor": "T{k}(cmp{k} ^ p{k}[0])", "min": "T{k}(min(cmp{k}, p{k}[0]))",
           "max": "T{k}(max(cmp{k}, p{k}[0]))"}
PLAIN = """
    if s{k} <= t and t < e{k}:
        j{k} = t - s{k}
        for it in range(n{k}):
            o{k}[it, j{k}] = cuda.atomic.{fn}(m{k}, i{k}[j{k}], b{k}[j{k}]{extra})
"""
LOOP = """
    if s{k} <= t and t < e{k}:
        j{k} = t - s{k}
        cmp{k} = b{k}[j{k}]
        for it in range(n{k}):
            tries{k} = 0
            while True:
                tries{k} += 1
                old{k} = cuda.atomic.cas(m{k}, i{k}[j{k}], cmp{k}, {update})
                if old{k} == cmp{k}:
                    break
                cmp{k} = old{k}
            o{k}[it, j{k}] = cmp{k}
            a{k}[it, j{k}] = tries{k}
            cmp{k} = {update}
"""
# Shared memory (MSL threadgroup, vISA SLM: one block, as the documents' one threadgroup) is the
# block's dynamic shared memory: every `cuda.shared.array(0, ...)` of a kernel is the same bytes
# (in the simulator one buffer per block). Copied in from the global buffer `g` before the start
# line, copied out after a second cuda.syncthreads().
SHARED_IN = """
    sh = cuda.shared.array(0, numba.uint64)
    for w in range(t, g.shape[0], cuda.blockDim.x):
        sh[w] = g[w]
"""
SHARED_OUT = """
    cuda.syncthreads()
    for w in range(t, g.shape[0], cuda.blockDim.x):
        g[w] = sh[w]
"""
CONCURRENT_KERNELS = {}


def concurrent_source(space, shape):
    """The kernel's source for a case shape: its memory space, and per instruction (op, NumPy
    type name, loop update or None). Thread t runs instruction k when s_k <= t < e_k, as its
    access t - s_k, n_k iterations; g is the memory as uint64 words. Names T0.. are the
    instructions' Numba types (concurrent_types)."""
    params, arrays, body = ["g"], [], []
    for k, (op, tyname, update) in enumerate(shape):
        params.append("s{k}, e{k}, n{k}, gm{k}, i{k}, b{k}, c{k}, o{k}, a{k}, p{k}".format(k=k))
        arrays.append("    m{k} = {a}\n".format(
            k=k, a="cuda.shared.array(0, T%d)" % k if space == "shared" else "gm%d" % k))
        if update is not None:
            body.append(LOOP.format(k=k, update=UPDATES[update].format(k=k)))
        else:
            extra = ", c{k}[j{k}]".format(k=k) if op == "cas" else ""
            body.append(PLAIN.format(k=k, fn=FUNCS[op], extra=extra))
    shared = space == "shared"
    return "def concurrent(%s):\n    t = cuda.threadIdx.x\n%s%s    cuda.syncthreads()\n%s%s" % (
        ", ".join(params), SHARED_IN if shared else "", "".join(arrays), "".join(body),
        SHARED_OUT if shared else "")


def concurrent_kernel(space, shape):
    """The compiled kernel of concurrent_source, compiled once per case shape."""
    key = (space, shape)
    if key not in CONCURRENT_KERNELS:
        names = {"T%d" % k: getattr(numba, tyname) for k, (_, tyname, _) in enumerate(shape)}
        scope = dict(names, cuda=cuda, numba=numba)
        src = concurrent_source(space, shape)
        exec(compile(src, "<numba_cudasim concurrent kernel>", "exec"), scope)
        CONCURRENT_KERNELS[key] = cuda.jit(scope["concurrent"])
    return CONCURRENT_KERNELS[key]


def concurrent_launch(kernel, space, flat, parts, warp):
    """One launch of a concurrent case (run_concurrent runs it, and a `repro` body holds its
    source): one block; per instruction in `parts` (NumPy type name, width, iterations, each
    access's element index, first and second operands and the loop operand as bit patterns,
    whether it is a compare-and-swap loop, whether a plain compare-exchange) its threads from
    a multiple of `warp`. Returns the final bytes of `flat` and, per instruction, every
    iteration's returned bits (hex), success flags (a plain compare-exchange, else None) and
    attempts (a loop, else None)."""
    import numpy as np
    from numba import cuda
    d_mem = cuda.to_device(np.frombuffer(bytes(flat), dtype=np.uint8).copy())
    args, outs, threads = [d_mem.view(np.uint64)], [], 0
    for dtype, width, iterations, idx, src0, src1, operand, loop, cas in parts:
        bits = np.uint64 if width == 8 else np.uint32
        dt = np.dtype(dtype)
        start = (threads + warp - 1) // warp * warp
        threads = start + len(idx)
        rows = (iterations, len(idx))
        out, att = cuda.to_device(np.zeros(rows, dt)), cuda.to_device(np.zeros(rows, np.int64))
        b = np.array(src0, dtype=np.uint64).astype(bits).view(dt)
        c = np.array(src1, dtype=np.uint64).astype(bits).view(dt)
        p = np.array([operand], dtype=np.uint64).astype(bits).view(dt)
        args += [start, threads, iterations, d_mem.view(dt), np.array(idx, dtype=np.int64), b, c,
                 out, att, p]
        outs.append((out, att, b, bits, loop, cas))
    kernel[1, max(threads, 1), 0, len(flat) if space == "shared" else 0](*args)
    returned, ok, attempts = [], [], []
    for out, att, b, bits, loop, cas in outs:
        raw = out.copy_to_host().view(bits)
        returned.append([[hex(int(v)) for v in row] for row in raw])
        attempts.append([[int(n) for n in row] for row in att.copy_to_host()] if loop else None)
        want = b.view(bits)  # a compare-exchange's compares
        ok.append([[bool(v == w) for v, w in zip(row, want)] for row in raw] if cas else None)
    return d_mem.copy_to_host().tobytes(), returned, ok, attempts


def concurrent_case(req):
    """A concurrent request (`run_concurrent`, or `repro` with its fields) as this shim runs it:
    (space, shape, layout, flat, parts), or the `not_applicable` answer saying why not."""
    instrs = req["instrs"]
    mapped, shape = [], []
    spaces = {i["lowered"]["instr"].get("space") for i in instrs}
    if len(spaces) > 1:
        return na("instructions on %s memory at once: this shim runs one space per case"
                  % " and ".join(sorted(map(str, spaces))))
    space = spaces.pop()
    for k, i in enumerate(instrs):
        m = mapping(i["lowered"]["instr"], ("global", "shared"))
        if isinstance(m, dict):
            return na("instruction %d: %s" % (k, m["why"]))
        loop = i.get("cas_loop")
        if loop is not None and (m.op != "cas" or m.ty.startswith("f")
                                 or loop["update"] not in UPDATES):
            return na("instruction %d: a compare-and-swap loop of %s %s with update %s: this "
                      "shim writes loops of integer cas only" % (k, m.op, m.ty, loop["update"]))
        if loop is not None:  # its own type, not the bits: a signed loop's min/max is signed
            m = Mapped(m.op, m.ty, TYPES[m.ty], m.width)
        mapped.append(m)
        shape.append((m.op, np.dtype(m.dtype).name, loop and loop["update"]))
    flat, layout, threads, parts = None, None, 0, []
    for k, (i, m) in enumerate(zip(instrs, mapped)):
        acc = i["lowered"]["instr"]["accesses"]
        laid = atomcts_shim.flat_global(i, acc, m.width, space)
        if isinstance(laid, dict):
            return na("instruction %d: %s" % (k, laid["why"]))
        if flat is None:
            layout, flat, _ = laid
        threads = (threads + WARP - 1) // WARP * WARP + len(acc)
        loop = i.get("cas_loop")
        mask = (1 << (8 * m.width)) - 1
        parts.append((np.dtype(m.dtype).name, m.width, i["iterations"], list(laid[2]),
                      [int(a["src"][0], 16) & mask for a in acc],
                      [int(a["src"][1], 16) & mask for a in acc],
                      int(loop["operand"], 16) & mask if loop else 0,
                      loop is not None, m.op == "cas" and loop is None))
    if threads > MAX_BLOCK:
        return na("%d threads: one CUDA thread block holds at most %d" % (threads, MAX_BLOCK))
    calls = sum(i["iterations"] * len(i["lowered"]["instr"]["accesses"]) for i in instrs)
    if SIMULATOR and calls > SIM_MAX_CALLS:
        return na("%d atomic calls in one launch: the simulator runs each as a Python thread's "
                  "locked call, over a minute here; this shim runs at most %d" % (calls, SIM_MAX_CALLS))
    return space, tuple(shape), layout, flat, parts


def run_concurrent(req):
    case = concurrent_case(req)
    if isinstance(case, dict):
        return case
    space, shape, layout, flat, parts = case
    kernel = concurrent_kernel(space, shape)
    try:
        final, returned, ok, attempts = concurrent_launch(kernel, space, flat, parts, WARP)
    except numba.core.errors.TypingError as e:
        if SIMULATOR:
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else "TypingError"
        return na("numba-cuda cannot type the concurrent kernel (%s)" % first[:160])
    return {"outcome": "concurrent", "returned": returned, "ok": ok, "attempts": attempts,
            "memory": atomcts_shim.memory_answer(req["instrs"][0]["state"], layout, final, space)}


CONCURRENT_OBSERVE = """def observe():
    flat, where = layout()
    kernel = cuda.jit(concurrent)
    final, returned, ok, attempts = concurrent_launch(kernel, SPACE_OF_BODY, flat, PARTS, WARP)
    seen = observation(final, [], where)
    return {"memory": seen["memory"], "returned": returned, "ok": ok, "attempts": attempts}
"""


def repro_concurrent(req):
    """The `repro` answer of a concurrent case (PROTOCOL.md, "Standalone reproducers"): the
    kernel run_concurrent compiles (concurrent_source), its launch (concurrent_launch, the
    same function), the case's memory and per-instruction arguments, and observe() returning
    what run_concurrent answers."""
    case = concurrent_case(req)
    if isinstance(case, dict):
        return case
    space, shape, _, _, parts = case
    types = "".join("T%d = numba.%s\n" % (k, ty) for k, (_, ty, _) in enumerate(shape))
    rows = "".join("    (%#x, \"%s\"),\n" % (int(r["base"], 16), r["bytes"])
                   for r in req["instrs"][0]["state"]["memory"][space])
    data = ("# The case as the shim ran it: the ranges of %s memory (base, initial bytes); per\n"
            "# instruction (NumPy type, width, iterations, element indices, operands, loop operand,\n"
            "# compare-and-swap loop, plain compare-exchange); the warp its threads align to.\n"
            "SPACE_OF_BODY = \"%s\"\nRANGES = [\n%s]\nPARTS = %r\nWARP = %d\n"
            % (space, space, rows, parts, WARP))
    helpers = atomcts_shim._REPRO_HELPERS.strip("\n")
    body = ("import numba\nimport numpy as np\nfrom numba import cuda\n\n%s\n\n%s\n\n%s\n\n%s\n\n"
            "%s\n\n\n%s" % (types, concurrent_source(space, shape),
                          inspect.getsource(concurrent_launch), data, helpers, CONCURRENT_OBSERVE))
    return {"outcome": "repro", "body": body, "modules": ["numpy", "numba"],
            "env": {"NUMBA_ENABLE_CUDASIM": "1" if SIMULATOR else "0"}}


def main():
    # The shared helper does the handshake, the ids, errors as `error` answers, and pipelining:
    # up to NUMBA_CUDASIM_WINDOW requests in flight (default 64; 1: one at a time).
    atomcts_shim.serve(run, name="numba-cudasim" if SIMULATOR else "numba-cuda", level="semantic", version=2,
                       capabilities=["u64_atomics", "f32_atomic_add", "f64_atomic_add",
                                     "concurrent", "cas_loop", atomcts_shim.REPRO],
                       implementation=IMPLEMENTATION, profile="nvidia-ptx",
                       window=int(os.environ.get("NUMBA_CUDASIM_WINDOW", "64")))


if __name__ == "__main__":
    main()
