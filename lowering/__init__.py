"""Backends that consume the DSL's IR: the NumPy interpreter (``interpreter``), the
lowering to Ascend through triton-ascend and bishengir (``triton_codegen``,
``compiler``, ``blocking``, ``ub``, ``cache``, ``targets``, ``npu``) and compiled-CPU
mode (``cpu``)."""
