//! The PTX back end's standalone reproducer (issue 30, point 5): a single-instruction launch
//! ([`super::run::Launch`]: the PTX module, its entry, grid, block and parameters) as a Python
//! script that loads the PTX through `libcuda.so.1` with ctypes on device 0, as atomcts does
//! ([`script`]). Written and checked to be valid Python here; not run on a GPU yet.

use super::run::{Arg as LaunchArg, Launch};
use crate::repro::{About, Arg, Dispatch, Program, py_str, script as shared_script};

/// The parameters of `l`, in order.
pub fn args(l: &Launch) -> Vec<Arg> {
    l.args
        .iter()
        .enumerate()
        .map(|(i, a)| match a {
            LaunchArg::Buffer(b) => Arg::Buffer {
                name: ["mem", "items", "old"]
                    .get(i)
                    .map_or_else(|| format!("param {i}"), |n| (*n).to_string()),
                init: b.clone(),
            },
            LaunchArg::U32(v) => Arg::U32(*v),
            LaunchArg::U64(v) => Arg::U64(*v),
        })
        .collect()
}

/// The program of `l`.
pub fn program(l: &Launch) -> Program {
    Program::Ptx {
        text: l.ptx.clone(),
        entry: l.entry.clone(),
    }
}

/// The whole script for a launch on CUDA device 0; `Err` for a program of another back end.
pub fn script(about: &About, d: &Dispatch) -> Result<String, String> {
    let Program::Ptx { text, entry } = &d.program else {
        return Err("not a PTX program (a back-end bug)".into());
    };
    let listing: String = text
        .lines()
        .map(|l| format!("#   {l}\n").replace("#   \n", "#\n"))
        .collect();
    let comment =
        format!("#\n# The PTX module (entry `{entry}`) as atomcts loaded it:\n{listing}\n");
    let host = HOST
        .replace("@PTX@", &py_str(text))
        .replace("@ENTRY@", &py_str(entry));
    Ok(shared_script(about, d, &comment, &host))
}

/// The host code: the driver API on device 0 (a context, the module JIT-compiled from PTX,
/// device buffers, one launch of `GLOBAL_SIZE / LOCAL_SIZE` blocks, a synchronize, copies back).
const HOST: &str = r#"PTX = @PTX@
ENTRY = @ENTRY@


def run():
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise Unavailable(f"no CUDA driver (libcuda.so.1): {e}")

    def check(status, what):
        if status != 0:
            name = ctypes.c_char_p()
            cu.cuGetErrorName(status, ctypes.byref(name))
            raise RuntimeError(f"{what}: CUresult {status} {(name.value or b'').decode()}")

    r = cu.cuInit(0)
    if r != 0:
        raise Unavailable(f"cuInit: CUresult {r} (no GPU or driver?)")
    dev = ctypes.c_int(0)
    check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    name = ctypes.create_string_buffer(256)
    cu.cuDeviceGetName(name, 256, dev)
    print(f"device: {name.value.decode(errors='replace')}")
    ctx = ctypes.c_void_p()
    check(cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), "cuCtxCreate")
    module = ctypes.c_void_p()
    check(cu.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(PTX.encode())), "cuModuleLoadData (PTX JIT)")
    func = ctypes.c_void_p()
    check(cu.cuModuleGetFunction(ctypes.byref(func), module, ENTRY.encode()), "cuModuleGetFunction")
    values, ptrs = [], []
    for arg in ARGS:
        if arg[0] == "buffer":
            data = arg[2]
            d = ctypes.c_uint64(0)
            check(cu.cuMemAlloc_v2(ctypes.byref(d), ctypes.c_size_t(max(1, len(data)))), "cuMemAlloc")
            if data:
                check(cu.cuMemcpyHtoD_v2(d, data, ctypes.c_size_t(len(data))), "cuMemcpyHtoD")
            values.append(d)
            ptrs.append(d)
        elif arg[0] == "u32":
            values.append(ctypes.c_uint32(arg[1]))
            ptrs.append(None)
        else:
            values.append(ctypes.c_uint64(arg[1]))
            ptrs.append(None)
    params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    check(cu.cuLaunchKernel(func, GLOBAL_SIZE // LOCAL_SIZE, 1, 1, LOCAL_SIZE, 1, 1, 0, None, params, None), "cuLaunchKernel")
    check(cu.cuCtxSynchronize(), "the kernel faulted or failed (cuCtxSynchronize)")
    out = []
    for arg, d in zip(ARGS, ptrs):
        if d is None:
            out.append(None)
            continue
        host = ctypes.create_string_buffer(max(1, len(arg[2])))
        if arg[2]:
            check(cu.cuMemcpyDtoH_v2(host, d, ctypes.c_size_t(len(arg[2]))), "cuMemcpyDtoH")
        out.append(host.raw[:len(arg[2])])
    return out
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;
    use atomcts_reference::Profile;
    use atomcts_reference::ir::Lowering;
    use atomcts_reference::program::{Dialect, Program as Text};
    use atomcts_reference::state::{Reg, State};
    use atomcts_reference::types::ElemType;

    /// A PTX reproducer is written from the emitted kernel and its launch, and is valid
    /// Python (`python3 -m py_compile`); it is not run here (no GPU).
    #[test]
    fn a_ptx_reproducer_is_valid_python() {
        let mut s = State::new(1);
        for (r, v) in [("R2", 0x1000), ("R3", 0), ("R4", 5)] {
            s.regs.insert(
                r.into(),
                Reg {
                    ty: ElemType::B32,
                    elems: vec![v],
                },
            );
        }
        s.global.alloc(0x1000, 8).unwrap();
        s.global.write(0x1000, 4, 3);
        let p = Text::parse(Dialect::Sass, "ATOM.ADD R0, [R2], R4").unwrap();
        let Lowering::Run(lowered) = p.lower(&s, &Profile::default()).unwrap() else {
            panic!("does not lower")
        };
        let plan = Plan::new(&lowered, &s).unwrap();
        let kernel = super::super::emit::emit(&plan, 70, super::super::emit::Plant::None).unwrap();
        let items = super::super::emit::items(&plan);
        let mem = plan.layout().bytes(&s, plan.space);
        let launch = super::super::run::single(&kernel, &items, &mem);
        let (checks, unjudged) =
            crate::repro::single_checks(&plan, &lowered, &s, &mem, (0, 2, 8), 1000).unwrap();
        // The memory word (3 + 5) and the returned old value (3).
        assert_eq!(checks.len(), 2, "{checks:?}");
        assert_eq!(checks[0].allowed, vec![8]);
        assert_eq!(checks[1].allowed, vec![3]);
        let d = Dispatch {
            program: program(&launch),
            args: args(&launch),
            global: launch.block as usize,
            local: launch.block as usize,
            checks,
            unjudged,
            orders: Vec::new(),
        };
        let about = About {
            id: "sass/atom/add::x".into(),
            cite: "a rule".into(),
            adapter: "cuda".into(),
            env: vec![],
            profile: "default".into(),
            status: "fail".into(),
        };
        let text = script(&about, &d).unwrap();
        assert!(
            text.contains("atom.global.add.u32") || text.contains("atom."),
            "{text}"
        );
        let dir = std::env::temp_dir().join(format!("atomcts-ptx-repro-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("x.py");
        std::fs::write(&f, text).unwrap();
        let o = std::process::Command::new("python3")
            .args(["-m", "py_compile"])
            .arg(&f)
            .output()
            .expect("python3");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
