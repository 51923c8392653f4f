#!/usr/bin/env bash
# Installs every third-party implementation atomcts tests, on Debian 12 (research/implementations.md):
#   tools/install-implementations.sh            everything
#   tools/install-implementations.sh opencl     only some sections (opencl, vulkan, python, nvidia, intel, browser)
# Idempotent: what is already there is kept. Needs root for apt-get (or sudo).
# Each implementation family is one section below, delimited by `# === section: NAME ===`;
# add a new family as a new section and to SECTIONS.
set -euo pipefail
cd "$(dirname "$0")/.."

SECTIONS=(opencl vulkan python nvidia intel browser)
want=("$@")
[ ${#want[@]} -eq 0 ] && want=("${SECTIONS[@]}")
wanted() { local s; for s in "${want[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
for s in "${want[@]}"; do
  case " ${SECTIONS[*]} " in *" $s "*) ;; *) echo "unknown section \`$s\` (have: ${SECTIONS[*]})" >&2; exit 2;; esac
done

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
APT_UPDATED=""
apt_install() {
  local missing=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ -z "$APT_UPDATED" ]; then $SUDO apt-get update -qq; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# === section: opencl ===
# PoCL (CPU), rusticl (Mesa, on llvmpipe) and the oclgrind simulator, behind the ocl-icd loader,
# and Intel's OpenCL CPU runtime from PyPI (intel-opencl-rt; libintelocl.so needs the compiler
# runtime libraries of intel-cmplr-lib-rt beside it) in target/venv/lib. The wheel's own .icd
# file names a build path, so target/opencl-vendors/intel-cpu.icd names the library here; the
# venv's lib is never put on LD_LIBRARY_PATH (its libOpenCL.so.1 would shadow the system loader).
# atomcts selects one driver per process itself (OCL_ICD_VENDORS; RUSTICL_ENABLE=llvmpipe):
#   atomcts run --adapter opencl:pocl | opencl:oclgrind | opencl:rusticl | opencl:intel-cpu
if wanted opencl; then
  apt_install ocl-icd-libopencl1 pocl-opencl-icd mesa-opencl-icd oclgrind python3-venv
  if [ ! -x target/venv/bin/python ]; then python3 -m venv target/venv; fi
  if [ ! -f target/venv/lib/libintelocl.so ]; then
    target/venv/bin/pip install -q --disable-pip-version-check intel-opencl-rt==2026.2.0 intel-cmplr-lib-rt==2026.2.0
  fi
  mkdir -p target/opencl-vendors
  echo "$PWD/target/venv/lib/libintelocl.so" > target/opencl-vendors/intel-cpu.icd
  echo "opencl: $(dpkg-query -W -f='pocl ${Version}' pocl-opencl-icd), $(dpkg-query -W -f='mesa ${Version}' mesa-opencl-icd), $(dpkg-query -W -f='oclgrind ${Version}' oclgrind), intel-opencl-rt $(target/venv/bin/python -c 'import importlib.metadata as m; print(m.version("intel-opencl-rt"))')"
fi

# === section: vulkan ===
# lavapipe (Mesa's Vulkan on llvmpipe) behind the Vulkan loader, spirv-val (the SPIR-V test of
# every emitted module) and the Khronos validation layer (ATOMCTS_VULKAN_VALIDATION=1), and
# SwiftShader (Google's CPU Vulkan driver, the one Chromium falls back to), which Debian ships only
# inside `chromium` (/usr/lib/chromium/libvk_swiftshader.so with vk_swiftshader_icd.json; atomcts
# loads it from that manifest, or through the loader when VK_DRIVER_FILES names it):
#   atomcts run --profile spirv --adapter vulkan:lavapipe | wgsl-naga:lavapipe
#   atomcts run --profile spirv --adapter vulkan:swiftshader | wgsl-naga:swiftshader
if wanted vulkan; then
  apt_install libvulkan1 mesa-vulkan-drivers vulkan-tools spirv-tools vulkan-validationlayers chromium
  echo "vulkan: $(dpkg-query -W -f='mesa-vulkan-drivers ${Version}' mesa-vulkan-drivers), $(dpkg-query -W -f='spirv-tools ${Version}' spirv-tools), $(dpkg-query -W -f='vulkan-validationlayers ${Version}' vulkan-validationlayers), SwiftShader of $(dpkg-query -W -f='chromium ${Version}' chromium)"
fi

# === section: python ===
# target/venv: jsonschema (corpus schema check), Numba (its CUDA simulator, behind
# adapters/shims/numba_cudasim.py), NVIDIA Warp (its CPU device, behind adapters/shims/warp_cpu.py;
# the shim is started once here so that Warp compiles its kernels into ~/.cache/warp now, not
# during a run's handshake), Taichi (CPU and Vulkan backends, adapters/shims/taichi_cpu.py and
# taichi_vulkan.py; 160 MB) and Triton (its interpreter, adapters/shims/triton_interp.py; 1 GB
# installed, mostly its bundled compiler, which the interpreter does not use; no PyTorch).
if wanted python; then
  apt_install python3-venv
  if [ ! -x target/venv/bin/python ]; then python3 -m venv target/venv; fi
  target/venv/bin/pip install -q --disable-pip-version-check jsonschema==4.26.0 numba==0.68.1 numpy==2.4.6 warp-lang==1.19.0 \
    taichi==1.7.4 triton==3.9.0
  target/venv/bin/python adapters/shims/warp_cpu.py </dev/null 2>/dev/null
  echo "python: $(target/venv/bin/python -c 'import numba, jsonschema; import importlib.metadata as m; print(*(f"{p} {m.version(p)}" for p in ("numba", "jsonschema", "warp-lang", "taichi", "triton")))')"
fi

# === section: nvidia ===
# NVIDIA's PTX assembler, ptxas, from PyPI (the wheel ships the binary at
# site-packages/nvidia/cuda_nvcc/bin/ptxas): runner/tests/ptx_backend.rs assembles every kernel
# of the PTX back end with it (sm_50, sm_70, sm_90). The disassembler that made
# reference/tests/data/nvidia is not needed to test (tools/nvidia/regen.py --fetch gets it).
if wanted nvidia; then
  apt_install python3-venv
  if [ ! -x target/venv/bin/python ]; then python3 -m venv target/venv; fi
  if ! ls target/venv/lib/python3*/site-packages/nvidia/cuda_nvcc/bin/ptxas >/dev/null 2>&1; then
    target/venv/bin/pip install -q --disable-pip-version-check nvidia-cuda-nvcc-cu12==12.9.86
  fi
  echo "nvidia: $(target/venv/lib/python3*/site-packages/nvidia/cuda_nvcc/bin/ptxas --version | tail -1)"
fi

# === section: intel ===
# Intel's vISA assembler, verifier and finalizer GenX_IR (Debian libigc-tools, IGC 1.0.12504.6,
# the release the vISA seed documents come from), a text-level implementation under test:
#   atomcts run --adapter visa-asm:SKL | visa-asm:TGLLP | visa-asm:DG2 (docs/visa-asm.md)
# runner/tests/visa_asm.rs needs it under CI=true.
if wanted intel; then
  apt_install libigc-tools
  echo "intel: $(dpkg-query -W -f='libigc-tools ${Version}' libigc-tools)"
fi

# === section: browser ===
# Headless Chromium (Debian's `chromium`), not an implementation under test: it opens the
# conformance page of `atomcts report` the way a person would (tools/check-report-html.sh:
# screenshot, DOM dump), with no network and no script.
if wanted browser; then
  apt_install chromium
  echo "browser: $(chromium --version 2>/dev/null | head -1)"
fi
