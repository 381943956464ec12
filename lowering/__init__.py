"""Backends that consume the DSL's IR. So far: the NumPy interpreter (``interpreter``)."""
