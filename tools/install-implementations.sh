#!/usr/bin/env bash
# Installs every third-party implementation atomcts tests, on Debian 12 (research/implementations.md):
#   tools/install-implementations.sh            everything
#   tools/install-implementations.sh opencl     only some sections (opencl, vulkan, python)
# Idempotent: what is already there is kept. Needs root for apt-get (or sudo).
# Each implementation family is one section below, delimited by `# === section: NAME ===`;
# add a new family as a new section and to SECTIONS.
set -euo pipefail
cd "$(dirname "$0")/.."

SECTIONS=(opencl vulkan python)
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
# PoCL (CPU), rusticl (Mesa, on llvmpipe) and the oclgrind simulator, behind the ocl-icd loader.
# atomcts selects one driver per process itself (OCL_ICD_VENDORS; RUSTICL_ENABLE=llvmpipe):
#   atomcts run --adapter opencl:pocl | opencl:oclgrind | opencl:rusticl
if wanted opencl; then
  apt_install ocl-icd-libopencl1 pocl-opencl-icd mesa-opencl-icd oclgrind
  echo "opencl: $(dpkg-query -W -f='pocl ${Version}' pocl-opencl-icd), $(dpkg-query -W -f='mesa ${Version}' mesa-opencl-icd), $(dpkg-query -W -f='oclgrind ${Version}' oclgrind)"
fi

# === section: vulkan ===
# lavapipe (Mesa's Vulkan on llvmpipe) behind the Vulkan loader, spirv-val (the SPIR-V test of
# every emitted module) and the Khronos validation layer (ATOMCTS_VULKAN_VALIDATION=1):
#   atomcts run --profile spirv --adapter vulkan:lavapipe | wgsl-naga:lavapipe
if wanted vulkan; then
  apt_install libvulkan1 mesa-vulkan-drivers vulkan-tools spirv-tools vulkan-validationlayers
  echo "vulkan: $(dpkg-query -W -f='mesa-vulkan-drivers ${Version}' mesa-vulkan-drivers), $(dpkg-query -W -f='spirv-tools ${Version}' spirv-tools), $(dpkg-query -W -f='vulkan-validationlayers ${Version}' vulkan-validationlayers)"
fi

# === section: python ===
# target/venv: jsonschema (corpus schema check) and Numba (its CUDA simulator, behind
# adapters/shims/numba_cudasim.py).
if wanted python; then
  apt_install python3-venv
  if [ ! -x target/venv/bin/python ]; then python3 -m venv target/venv; fi
  target/venv/bin/pip install -q --disable-pip-version-check jsonschema==4.26.0 numba==0.68.1
  echo "python: $(target/venv/bin/python -c 'import numba, jsonschema; import importlib.metadata as m; print("numba", numba.__version__, "jsonschema", m.version("jsonschema"))')"
fi
