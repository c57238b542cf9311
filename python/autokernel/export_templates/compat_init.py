"""For `kernels` releases that import build/<variant>/<name>/: the same package, one level up."""
import importlib.util
import pathlib
import sys

_variant = pathlib.Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location(f"{__name__}_variant", _variant / "__init__.py",
                                               submodule_search_locations=[str(_variant)])
_module = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _module
_spec.loader.exec_module(_module)
globals().update({k: v for k, v in vars(_module).items() if not k.startswith("__")})
