"""The ``genfair`` command: inspect a study and try one model outside DVC.

    genfair models                      the study's models (from params.yaml)
    genfair methodologies               the methodologies genfair implements
    genfair config [-o key=value ...]   the composed config (conf/ + overrides), validated
    genfair compose [-o key=value ...]  write it to params.yaml (what `dvc exp run -S` does)
    genfair try MODEL METHODOLOGY       run one model on one methodology, print its scores
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path


from genfair.config import PARAMS_FILE, ConfigError, StudyParams, load_params


def compose(overrides: list[str], output: Path, conf: Path = Path("conf")) -> Path:
    """Compose ``conf/`` with Hydra overrides into ``output``, exactly as DVC does."""
    from dvc.utils.hydra import compose_and_dump

    compose_and_dump(output, str(conf.resolve()), None, "config", str(Path.cwd()), overrides)
    return output


def _composed(overrides: list[str]) -> tuple[Path, StudyParams]:
    tmp = Path(tempfile.mkdtemp(prefix="genfair-")) / PARAMS_FILE
    compose(overrides, tmp)
    return tmp, load_params(tmp)


def cmd_models(args: argparse.Namespace) -> None:
    params = load_params(args.params)
    width = max(map(len, params.models))
    for name, config in params.models.items():
        tag = "  [SIMULATED]" if config.backend == "simulated" else ""
        print(f"{name:<{width}}  {config.modality:<4} {config.backend:<9} {config.model_id}{tag}")
        if config.description:
            print(f"{'':<{width}}  {config.description}")
    print(f"\nmodel configs available in conf/model/: {', '.join(sorted(p.stem for p in Path('conf/model').glob('*.yaml')))}")


def cmd_methodologies(args: argparse.Namespace) -> None:
    from genfair.methodologies import get_methodology, names

    width = max(map(len, names()))
    for name in names():
        method = get_methodology(name)
        doc = type(method).__doc__ or sys.modules[type(method).__module__].__doc__ or ""
        summary = doc.strip().split("\n\n")[0]  # the docstring's first paragraph
        print(f"{name:<{width}}  [{', '.join(method.modalities)}] {' '.join(summary.split())}")


def cmd_config(args: argparse.Namespace) -> None:
    path, _ = _composed(args.override)
    print(path.read_text(encoding="utf-8"), end="")


def cmd_compose(args: argparse.Namespace) -> None:
    _composed(args.override)  # validate before overwriting anything
    compose(args.override, Path(PARAMS_FILE))
    print(f"wrote {PARAMS_FILE}; `dvc repro` now uses it (commit it to share the study)")


def cmd_try(args: argparse.Namespace) -> None:
    from genfair.logs import setup
    from genfair.io import read_parquet
    from genfair.study.layout import Layout
    from genfair.study.steps import brief, compute_metrics, generate, label, make_probes

    setup("try", model=args.model, methodology=args.methodology)
    overrides = [f"scale={args.scale}", *args.override]
    _, params = _composed(overrides)
    params.model(args.model)
    if args.methodology not in params.methodologies:
        raise ConfigError(f"methodology {args.methodology!r} is not in the study; known: {', '.join(params.methodologies)}")
    params = params.model_copy(update={"methodologies": {args.methodology: params.methodologies[args.methodology]}})
    layout = Layout(Path(args.out))
    make_probes(params, args.methodology, layout)
    generate(params, args.model, args.methodology, layout, limit=args.limit)
    label(params, args.model, args.methodology, layout)
    summary = compute_metrics(params, args.model, args.methodology, layout)
    scores = read_parquet(layout.metrics(args.model, args.methodology) / "scores.parquet")
    print(brief(scores))
    print(f"\noutputs under {layout.data}; summary: {summary}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="genfair", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("models", help="list the study's models")
    p.add_argument("--params", default=PARAMS_FILE)
    p.set_defaults(func=cmd_models)
    sub.add_parser("methodologies", help="list the methodologies").set_defaults(func=cmd_methodologies)
    for name, func, text in (("config", cmd_config, "print the composed, validated config"),
                             ("compose", cmd_compose, "compose conf/ into params.yaml")):
        p = sub.add_parser(name, help=text)
        p.add_argument("-o", "--override", action="append", default=[],
                       help="Hydra override, e.g. scale=smoke or '+model@models.qwen=hf_qwen2_5_0_5b'")
        p.set_defaults(func=func)
    p = sub.add_parser("try", help="run one model on one methodology outside DVC")
    p.add_argument("model")
    p.add_argument("methodology")
    p.add_argument("--scale", default="smoke", help="smoke (default), default or paper")
    p.add_argument("--limit", type=int, default=None, help="only the first N probes")
    p.add_argument("--out", default=".genfair/try", help="where outputs go (default .genfair/try)")
    p.add_argument("-o", "--override", action="append", default=[], help="extra Hydra overrides")
    p.set_defaults(func=cmd_try)

    args = parser.parse_args(argv)
    try:
        args.func(args)
    except (ConfigError, FileNotFoundError, KeyError) as exc:
        print(f"genfair: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
