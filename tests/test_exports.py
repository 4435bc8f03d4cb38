import pkgutil

import memfs


def test_all_is_sorted_and_exactly_the_public_names() -> None:
    public = {name for name in vars(memfs) if not name.startswith("_")}
    modules = {module.name for module in pkgutil.iter_modules(memfs.__path__)}  # submodules are not exports
    assert memfs.__all__ == sorted(memfs.__all__)
    assert set(memfs.__all__) == public - modules - {"annotations"}


def test_every_error_has_the_one_root() -> None:
    errors = [getattr(memfs, name) for name in memfs.__all__ if name.endswith(("Error", "NotFound", "Timeout"))]
    assert errors and all(issubclass(e, memfs.MemfsError) for e in errors)
    assert issubclass(memfs.MemoryNotFound, KeyError) and issubclass(memfs.PathError, ValueError)
    assert str(memfs.MemoryNotFound("no memory at x.md")) == "no memory at x.md"


def test_importing_memfs_stays_light() -> None:
    import subprocess
    import sys

    code = "import sys, memfs; print(','.join(m for m in ('click', 'rich', 'watchdog') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
