//! The `webgpu:` back end's standalone reproducer (issue 30, point 5): a Python script that
//! serves one page on a loopback HTTP server of its own (127.0.0.1, a free port), starts
//! headless Chromium on it with the flags [`super::browser`] uses (WebGPU on SwiftShader, a fresh
//! profile folder, its own process group), and reads back what the page posts: the WGSL as the
//! browser compiled it, every buffer's initial bytes, one dispatch, every buffer read back. The
//! browser is killed and its profile removed however the script ends.

use super::super::vulkan::{Planned, Prepared, repro::args as vk_args};
use crate::repro::{About, Dispatch, Program, py_str, script as shared_script};

/// The [`Dispatch`] of a case the page ran: `prepared` as sent (its buffers before the run
/// in `before`), `source` the WGSL the browser compiled, `observed_mem` the memory read back.
pub fn dispatch(
    r: &crate::Request<'_>,
    prepared: &Prepared,
    before: &[crate::back::vulkan::emit::Buffer],
    source: &str,
    observed_mem: &[u8],
) -> Result<Dispatch, String> {
    let d = &prepared.dispatch;
    let mut shown = d.clone();
    shown.buffers = before.to_vec();
    let args = vk_args(&shown);
    let global = (d.groups.max(1) * d.local_size) as usize;
    let local = d.local_size as usize;
    match &prepared.plan {
        Planned::Mem(plan) => crate::repro::single_dispatch(
            r,
            plan,
            observed_mem,
            (0, 1, d.ret_bytes as usize),
            (
                Program::Wgsl {
                    source: source.to_string(),
                    subgroup_size: None,
                },
                args,
            ),
            (global, local),
        ),
        Planned::Shuffle(plan) => {
            let lowered = crate::back::lower(r).map_err(|e| format!("{e:?}"))?;
            let (checks, unjudged) = crate::repro::shuffle_checks(
                plan,
                &lowered,
                r.state,
                (0, d.ret_bytes as usize),
                None,
            )?;
            Ok(Dispatch {
                program: Program::Wgsl {
                    source: source.to_string(),
                    subgroup_size: Some(plan.width),
                },
                args,
                global,
                local,
                checks,
                unjudged,
                orders: Vec::new(),
            })
        }
    }
}

/// The whole script; `Err` for a program of another back end.
pub fn script(about: &About, d: &Dispatch) -> Result<String, String> {
    let Program::Wgsl {
        source,
        subgroup_size,
    } = &d.program
    else {
        return Err("not a WGSL program (a back-end bug)".into());
    };
    let listing: String = source
        .lines()
        .map(|l| format!("#   {l}\n").replace("#   \n", "#\n"))
        .collect();
    let comment = format!(
        "#\n# The WGSL shader as the browser compiled it (entry point `main`), one dispatch of {} work-group(s):\n{listing}\n",
        d.global / d.local.max(1)
    );
    let host = HOST
        .replace("@SOURCE@", &py_str(source))
        .replace(
            "@SUBGROUP_SIZE@",
            &subgroup_size.map_or("None".to_string(), |n| n.to_string()),
        )
        .replace("@FLAGS@", &flags())
        .replace("@CHROMIUM@", &py_str(super::browser::CHROMIUM));
    Ok(shared_script(about, d, &comment, &host))
}

fn flags() -> String {
    let v: Vec<String> = super::browser::FLAGS.iter().map(|f| py_str(f)).collect();
    format!("[{}]", v.join(", "))
}

/// The host code: the page (the job in it), the loopback server, the browser, the answer.
const HOST: &str = r#"import json, shutil, signal, subprocess, tempfile, threading
from http.server import BaseHTTPRequestHandler, HTTPServer

SOURCE = @SOURCE@
# The sub-group size the shader needs: WebGPU cannot require one, so the adapter must report
# exactly this size (subgroupMinSize == subgroupMaxSize), else the script cannot run (exit 2).
SUBGROUP_SIZE = @SUBGROUP_SIZE@
CHROMIUM = @CHROMIUM@
# The flags atomcts's webgpu:chromium adapter starts the browser with (loopback only).
FLAGS = @FLAGS@
TIMEOUT = 120

PAGE = """<!doctype html><meta charset="utf-8"><title>atomcts reproducer</title><script>
const JOB = __JOB__;
async function main() {
  if (!navigator.gpu) return {unavailable: "navigator.gpu is absent (WebGPU disabled)"};
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) return {unavailable: "navigator.gpu.requestAdapter() gave no adapter"};
  const i = adapter.info || {};
  const want = [];
  if (JOB.subgroup_size !== null) {
    if (!adapter.features.has("subgroups")) return {unavailable: "the adapter has no subgroups feature"};
    if (i.subgroupMinSize !== JOB.subgroup_size || i.subgroupMaxSize !== JOB.subgroup_size)
      return {unavailable: `the adapter's sub-groups are ${i.subgroupMinSize}..${i.subgroupMaxSize} lanes; the case needs exactly ${JOB.subgroup_size} (WebGPU cannot require a size)`};
    want.push("subgroups");
  }
  const l = adapter.limits;
  const limits = {
    maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
    maxComputeWorkgroupSizeX: l.maxComputeWorkgroupSizeX,
    maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
    maxStorageBuffersPerShaderStage: l.maxStorageBuffersPerShaderStage,
    maxComputeWorkgroupsPerDimension: l.maxComputeWorkgroupsPerDimension,
  };
  const device = await adapter.requestDevice({requiredFeatures: want, requiredLimits: limits});
  const about = `${navigator.userAgent}; ${i.vendor} ${i.architecture} ${i.description}; sub-groups ${i.subgroupMinSize}..${i.subgroupMaxSize}`;
  device.pushErrorScope("validation");
  const module = device.createShaderModule({code: JOB.source});
  const info = await module.getCompilationInfo();
  const errors = info.messages.filter((m) => m.type === "error");
  if (errors.length) return {about, error: "shader-creation error: " + errors.map((m) => `${m.lineNum}:${m.linePos}: ${m.message}`).join("; ")};
  const pipe = device.createComputePipeline({layout: "auto", compute: {module, entryPoint: "main"}});
  const bufs = JOB.buffers.map((bytes) => {
    const size = Math.max(4, Math.ceil(bytes.length / 4) * 4);
    const b = device.createBuffer({size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC, mappedAtCreation: true});
    new Uint8Array(b.getMappedRange()).set(bytes);
    b.unmap();
    const r = device.createBuffer({size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST});
    return {b, r, len: bytes.length};
  });
  const group = device.createBindGroup({layout: pipe.getBindGroupLayout(0), entries: bufs.map((x, k) => ({binding: k, resource: {buffer: x.b}}))});
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipe);
  pass.setBindGroup(0, group);
  pass.dispatchWorkgroups(JOB.groups);
  pass.end();
  for (const x of bufs) encoder.copyBufferToBuffer(x.b, 0, x.r, 0, x.r.size);
  device.queue.submit([encoder.finish()]);
  const err = await device.popErrorScope();
  if (err) return {about, error: "validation: " + err.message.split("\\n")[0]};
  const buffers = [];
  for (const x of bufs) {
    await x.r.mapAsync(GPUMapMode.READ);
    buffers.push(Array.from(new Uint8Array(x.r.getMappedRange()).slice(0, x.len)));
  }
  return {about, buffers};
}
main().catch((e) => ({error: "" + e})).then((a) => fetch("/answer", {method: "POST", body: JSON.stringify(a)}));
</script>"""


def run():
    if shutil.which(CHROMIUM) is None:
        raise Unavailable(f"{CHROMIUM} is not on PATH (Debian's chromium package)")
    job = {"source": SOURCE, "subgroup_size": SUBGROUP_SIZE, "groups": GLOBAL_SIZE // LOCAL_SIZE,
           "buffers": [list(a[2]) for a in ARGS]}
    page = PAGE.replace("__JOB__", json.dumps(job)).encode()
    answer, done = {}, threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path != "/":
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(n)
            self.send_response(200)
            self.end_headers()
            if self.path == "/answer" and not done.is_set():
                answer["text"] = body.decode(errors="replace")
                done.set()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    profile = tempfile.mkdtemp(prefix="atomcts-repro-chromium-")
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    browser = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", url],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        if not done.wait(TIMEOUT):
            raise RuntimeError(f"the page posted nothing in {TIMEOUT} s")
    finally:
        try:
            os.killpg(browser.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        browser.wait()
        server.shutdown()
        shutil.rmtree(profile, ignore_errors=True)
    a = json.loads(answer["text"])
    if "about" in a:
        print(f"browser: {a['about']}")
    if "unavailable" in a:
        raise Unavailable(a["unavailable"])
    if "error" in a:
        raise RuntimeError(a["error"])
    got = [bytes(b) for b in a["buffers"]]
    if len(got) != len(ARGS) or any(len(g) != len(x[2]) for g, x in zip(got, ARGS)):
        raise RuntimeError("the page read back buffers of other sizes than it was given")
    return got
"#;
