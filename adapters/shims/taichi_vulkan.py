#!/usr/bin/env python3
"""Taichi on its Vulkan backend (`ti.init(arch=ti.vulkan)`; here Mesa's lavapipe) behind the
atomcts adapter protocol, version 2, semantic level: adapters/shims/taichi_cpu.py on another
backend (its doc says what is mapped and what is not applicable, and why). The shim refuses to
start when Taichi falls back to the CPU.

Needs: taichi (pip), a Vulkan driver. Run:
  atomcts run --profile claimed --adapter "cmd:target/venv/bin/python adapters/shims/taichi_vulkan.py"
"""
import taichi_cpu

if __name__ == "__main__":
    taichi_cpu.main("vulkan")
