#!/usr/bin/env python3
"""tests/checks/check_misspelt_switch.py: a misspelt switch does not compile.

usage: check_misspelt_switch.py CXX SOURCE_DIR BINARY_DIR

Code names a switch by the symbol its file in variants/switches/ defines
(plan.acts(switches::fused_adamw); the generated variants/config/switch_symbols.h
declares them all), never by a string looked up at run time. This compiles
one snippet twice with the build's compiler (syntax only): spelt as declared
it must compile, misspelt it must fail and the compiler must name the
misspelt symbol.
"""
import subprocess
import sys
import tempfile
from pathlib import Path

CXX, SRC, BIN = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])

SNIPPET = """#include "variants/config/switch_flags.h"
bool top_rung_optimizer(const ladder::Switches& sw) {{ return sw.on(ladder::switches::{name}); }}
"""


def compiles(name, d):
    src = Path(d) / f"{name}.cpp"
    src.write_text(SNIPPET.format(name=name))
    p = subprocess.run([CXX, "-std=c++17", "-fsyntax-only", f"-I{SRC}", f"-I{BIN / 'generated'}", str(src)],
                       capture_output=True, text=True)
    return p.returncode == 0, p.stderr


with tempfile.TemporaryDirectory() as d:
    ok, err = compiles("fused_adamw", d)
    assert ok, f"the correctly spelt switch did not compile:\n{err}"
    ok, err = compiles("fused_adamm", d)
    assert not ok, "switches::fused_adamm compiled: a misspelt switch must not"
    assert "fused_adamm" in err, err
print("switches::fused_adamw compiles; switches::fused_adamm does not:", err.strip().splitlines()[0])
