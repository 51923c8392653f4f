#!/usr/bin/env python3
"""The smallest shim on atomcts_shim.py: it answers every request with the request's own state
(`completed`, nothing changed), for measuring the protocol's throughput (BENCHMARKS.md); the
Python counterpart of runner/examples/echo_shim.rs. ECHO_WINDOW=N offers N requests in flight
(default 256; 1: no pipelining).
"""
import os

import atomcts_shim

atomcts_shim.serve(lambda req: {"outcome": "completed", "state": req["state"]}, name="py-echo",
                   window=int(os.environ.get("ECHO_WINDOW", "256")))
