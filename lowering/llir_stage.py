"""triton-ascend's Linalg -> LLVM IR step, run in a child process.

``python -m lowering.llir_stage IN.mlir OUT.ll`` calls triton-ascend 3.2.0's
``linalg_to_llir`` unchanged. That function finds ``mlir-opt`` and
``mlir-translate`` through the ``MLIR_ROOT`` and ``LLVM_ROOT`` environment
variables; running it in a child whose environment carries them (see
``lowering.cpu``) leaves this process's environment untouched.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m lowering.llir_stage IN.mlir OUT.ll", file=sys.stderr)
        return 2
    from triton.backends.ascend.compiler import linalg_to_llir

    source, target = (Path(a) for a in argv)
    llir = linalg_to_llir(source.read_text(), {"hash": source.stem}, SimpleNamespace(debug=False))
    target.write_text(llir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
