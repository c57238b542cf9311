"""`autokernel export`'s Python half: a package holding a run's kept kernels — their compiled
modules for this device's architecture, their sources and configurations, the problems each was
checked on (kernels.json) — and the runtime that plugs them into a model (a copy of
autokernel/runtime: the custom ops, the graph matching, apply). It needs nothing of autokernel
once installed, only PyTorch.

Two layouts:
- wheel: a pip-installable project (pyproject.toml): `pip install DIR`, then
  `import autokernel_<model>; autokernel_<model>.apply(model, example_inputs)`;
- hf-kernels: the layout the Hugging Face `kernels` package loads
  (build/<variant>/ with metadata.json): `kernels.get_local_kernel(DIR)`.
"""
import json
import pathlib
import re
import shutil

import torch

from .loading import BridgeError
from .runtime.abi import ABI_VERSION

RUNTIME = pathlib.Path(__file__).resolve().parent / "runtime"
TEMPLATES = pathlib.Path(__file__).resolve().parent / "export_templates"


def package_names(name):
    """("autokernel-llama", "autokernel_llama") from a model or package name."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "model"
    dist = slug if slug.startswith("autokernel-") else f"autokernel-{slug}"
    return dist, dist.replace("-", "_")


def _torch_major_minor():
    return "".join(torch.__version__.split("+")[0].split(".")[:2])


def _copy_kernels(manifest, target):
    """Modules and sources (named by absolute path) into the package; the manifest's paths made
    relative to it."""
    (target / "modules").mkdir(parents=True)
    for entry in manifest["kernels"]:
        module = pathlib.Path(entry["module"])
        if not module.is_file():
            raise BridgeError(f"kernel {entry['name']}: its module {module} is missing", usage=False)
        shutil.copy2(module, target / "modules" / f"{entry['name']}{module.suffix}")
        entry["module"] = f"modules/{entry['name']}{module.suffix}"
        source = pathlib.Path(entry["source"])
        sources = target / "sources" / entry["name"]
        sources.mkdir(parents=True)
        shutil.copy2(source, sources / source.name)
        entry["source"] = f"sources/{entry['name']}/{source.name}"
        (sources / "config").write_text((entry.get("config") or "") + "\n")
    manifest["built_with"]["torch"] = torch.__version__
    (target / "kernels.json").write_text(json.dumps(manifest, indent=1) + "\n")


def _copy_runtime(target):
    runtime = target / "runtime"
    runtime.mkdir()
    for source in sorted([*RUNTIME.glob("*.py"), *RUNTIME.glob("*.cpp")]):  # .cpp: the native kernels
        shutil.copy2(source, runtime / source.name)


def _render(template, **values):
    text = (TEMPLATES / template).read_text()
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", str(value))
    return text


def _kernel_table(manifest):
    rows = ["| kernel | op | problem | dtype | plugged in | why |", "|---|---|---|---|---|---|"]
    for k in manifest["kernels"]:
        rows.append(f"| {k['name']} | {k['op']} | {k['problem']} | {k['dtype']} | "
                    f"{'yes' if k.get('use', True) else 'no'} | {k.get('why', '')} |")
    return "\n".join(rows)


def _package(manifest, target, description):
    target.mkdir(parents=True)
    _copy_kernels(manifest, target)
    _copy_runtime(target)
    (target / "__init__.py").write_text(_render("package_init.py", DESCRIPTION=description))


def _wheel(manifest, out, dist, import_name, description):
    _package(manifest, out / import_name, description)
    (out / "pyproject.toml").write_text(_render("pyproject.toml", DIST=dist, IMPORT=import_name,
                                                DESCRIPTION=description))
    (out / "setup.py").write_text(_render("setup.py"))


def _hf_kernels(manifest, out, dist, import_name, description):
    built = manifest["built_with"]
    if built["backend"] == "cuda":  # cu130: the CUDA release the modules were built with
        backend, archs = "cu" + "".join(built.get("cuda", "").split(".")[:2]), [_capability(built["arch"])]
    else:
        backend, archs = "cpu", None
    variant = out / "build" / f"torch{_torch_major_minor()}-{backend}-x86_64-linux"
    _package(manifest, variant, description)
    metadata = {"id": f"{import_name}_{_torch_major_minor()}_{backend}", "name": dist, "version": 1,
                "license": "Apache-2.0", "backend": {"type": "cuda" if backend != "cpu" else "cpu"},
                "python-depends": []}
    if archs:
        metadata["backend"]["archs"] = archs
    (variant / "metadata.json").write_text(json.dumps(metadata, indent=1) + "\n")
    # Older `kernels` releases import build/<variant>/<name>/__init__.py: the same package.
    compat = variant / import_name
    compat.mkdir()
    (compat / "__init__.py").write_text(_render("compat_init.py"))


def _capability(arch):
    """sm_90a -> 9.0a, the `kernels` package's way of naming a CUDA architecture."""
    match = re.fullmatch(r"sm_(\d+)(\d)([a-z]?)", arch)
    return f"{match.group(1)}.{match.group(2)}{match.group(3)}" if match else arch


def export(args, progress):
    manifest = json.loads(pathlib.Path(args.manifest).read_text())
    if manifest.get("built_with", {}).get("abi_version", ABI_VERSION) != ABI_VERSION:
        raise BridgeError("the kernels were built for another kernel ABI than this bridge's")
    out = pathlib.Path(args.out)
    dist, import_name = package_names(args.name)
    model = manifest.get("model", args.name)
    description = (f"{len(manifest['kernels'])} kernels of {model} optimized and checked by autokernel, "
                   f"built for {manifest['built_with']['arch']}")
    layout = {"wheel": _wheel, "hf-kernels": _hf_kernels}[args.format]
    layout(manifest, out, dist, import_name, description)
    (out / "README.md").write_text(_render("README.md", DIST=dist, IMPORT=import_name, DESCRIPTION=description,
                                           KERNELS=_kernel_table(manifest), ARCH=manifest["built_with"]["arch"],
                                           TORCH=torch.__version__))
    summary = {"out": str(out), "format": args.format, "dist": dist, "import": import_name,
               "kernels": [{k: e.get(k) for k in ("name", "op", "problem", "dtype", "use", "why")}
                           for e in manifest["kernels"]]}
    pathlib.Path(args.json_out).write_text(json.dumps(summary, indent=1) + "\n")
    progress(f"wrote the {args.format} package {dist} ({import_name}) to {out}")
    return 0


def add_arguments(parser):
    parser.add_argument("--manifest", required=True, help="kernels.json of the kernels to export")
    parser.add_argument("--out", required=True)
    parser.add_argument("--name", required=True, help="the package's name")
    parser.add_argument("--format", choices=("wheel", "hf-kernels"), default="wheel")
    parser.add_argument("--json-out", required=True, help="where the summary goes")
