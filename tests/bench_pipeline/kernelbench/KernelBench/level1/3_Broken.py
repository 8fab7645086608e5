# Test problem written for kblaster's bench pipeline tests, in KernelBench's format (class Model, get_inputs, get_init_inputs).
# Deliberately broken: raises while loading, so the bench records import_failed and goes on.
raise RuntimeError("this problem is broken on purpose")
