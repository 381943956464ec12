"""Metadata lives in pyproject.toml; this file only ships ``ascend_dsl_triton.pth``.

The ``.pth`` file lies next to the installed packages (site-packages), so Python runs
its one line at start-up: with ``DSL_TRITON_INTERPRET=1`` in the environment it makes
every Triton kernel launched on CPU tensors run in this project's interpreter, with no
edit to the script (``dsl/triton_compat.py``); without the variable it does nothing.
Both a wheel (``build_py``) and an editable install (``editable_wheel``, which keeps
only the files it is given at the wheel's root) carry it.
"""

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

PTH = "ascend_dsl_triton.pth"


class BuildPyWithPth(build_py):
    def run(self) -> None:
        super().run()
        self.copy_file(PTH, os.path.join(self.build_lib, PTH))

    def get_outputs(self, include_bytecode: bool = True) -> list:
        return super().get_outputs(include_bytecode) + [os.path.join(self.build_lib, PTH)]


class EditableWheelWithPth(editable_wheel):
    def _run_build_commands(self, dist_name, unpacked_wheel, build_lib, tmp_dir):  # noqa: ANN001
        outputs = super()._run_build_commands(dist_name, unpacked_wheel, build_lib, tmp_dir)
        shutil.copy(PTH, os.path.join(unpacked_wheel, PTH))
        return outputs


setup(cmdclass={"build_py": BuildPyWithPth, "editable_wheel": EditableWheelWithPth})
