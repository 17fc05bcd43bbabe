"""Where the stand-alone `replay/` package is: at the top of a checkout, inside the wheel.

Why: `replay` is also the name of an unrelated package on the public index; a wheel that put
ours at the top of site-packages would overwrite it (or be overwritten). The wheel ships it as
`forensics._replay` (pyproject `force-include`), and the checkout keeps the folder where the
design puts it; `replay/` imports itself relatively, so both work. Code in `forensics/` asks
here instead of writing `import replay`.
"""

from __future__ import annotations

import importlib
from types import ModuleType

_ROOTS = ("forensics._replay", "replay")


def replay(name: str = "") -> ModuleType:
    """`replay.<name>` (the package itself without a name), from wherever it is installed."""
    for root in _ROOTS:
        full = f"{root}.{name}" if name else root
        try:
            return importlib.import_module(full)
        except ModuleNotFoundError as e:
            if e.name != root:  # (a module missing inside replay is a real error)
                raise
    raise ModuleNotFoundError("the replay package is not installed", name="replay")
