"""The ``genfair`` command: inspect a study and try one model outside DVC.

genfair models                      the study's models (from params.yaml)
genfair methodologies               the methodologies genfair implements
genfair config [-o key=value ...]   the composed config (conf/ + overrides), validated
genfair compose [-o key=value ...]  write it to params.yaml (what `dvc exp run -S` does)
genfair try MODEL METHODOLOGY       run one model on one methodology, print its scores
genfair cache stats [URL]           the response cache's entries per model and readings per
                                    instrument (and, for the study's cache, calls sent and
                                    answered from it)
genfair cache copy SRC DST          copy entries (their images, readings) between caches
genfair fill [--models M,..] [--methodologies X,..] [--jobs N]
                                    answer the study's calls into the response cache (on
                                    the study's executor, e.g. a Dask cluster); then `dvc repro`
genfair plan [-o key=value ...] [--json]
                                    what the study would send and cost (no call made)
genfair plan --precision | --target HEADLINE=HALFWIDTH
                                    the intervals and detectable differences it buys
genfair exp -S key=value [...]      `dvc exp run -S ...`, once genfair has validated the overrides

Imported where used: the modules that load pandas or the response cache (`genfair --help`: 0.3 s).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from genfair.errors import EXPECTED
from genfair.frame import EXP_RESTORE, CacheConfig, cache_dir, read_params, usage_ledger
from genfair.io import read_json, read_parquet, write_text
from genfair.logs import printable, setup
from genfair.models.config import OpenAIModelConfig
from genfair.models.speed import measure
from genfair.models.usage import ledger_totals, read_ledger
from genfair.names import check_name
from genfair.study.layout import Layout
from genfair.study.selection import dropped, held, override_problem, partial_blocks, where_to_edit
from genfair.study_params import PARAMS_FILE, ConfigError, StudyParams, load_params
from genfair.yaml_guard import check_override

#: files that mark the repository root (where `dvc repro` and `genfair` run)
ROOT_MARKERS = ("conf/config.yaml", "dvc.yaml")


def find_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above ``start`` (default: the working directory) that holds
    the study (``conf/config.yaml`` and ``dvc.yaml``), or ``None``."""
    start = (start or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if all((folder / marker).is_file() for marker in ROOT_MARKERS):
            return folder
    return None


def compose(overrides: list[str], output: Path, conf: Path = Path("conf")) -> Path:
    """Compose ``conf/`` with Hydra overrides into ``output``, exactly as DVC does."""
    from dvc.utils.hydra import compose_and_dump

    compose_and_dump(output, str(conf.resolve()), None, "config", str(Path.cwd()), overrides)
    return output


def _composed(overrides: list[str]) -> tuple[str, StudyParams]:
    """The composed config's text and validated params. The temporary folder it is composed
    in is removed at once, whatever happens (it may hold a key pasted into a config)."""
    for override in overrides:
        check_override(override)
    with tempfile.TemporaryDirectory(prefix="genfair-") as folder:
        tmp = Path(folder) / PARAMS_FILE
        try:
            compose(overrides, tmp)
        except Exception as exc:  # Hydra's errors: a bad override or a missing config group
            if type(exc).__module__.split(".")[0] not in ("hydra", "omegaconf"):
                raise
            message = _one_line(exc)
            fix = override_problem(message, overrides, lambda: _selected(overrides))
            raise ConfigError(
                fix
                or f"overrides {' '.join(overrides)!r}: {message} (conf/ holds the groups and keys)"
            ) from None
        partial = partial_blocks(read_params(tmp).get("methodologies") or {}, Path("conf"))
        if partial:
            raise ConfigError(f"composed config (conf/ + overrides): {partial}")
        try:
            return tmp.read_text(encoding="utf-8"), load_params(tmp)
        except ConfigError as exc:  # name what the user composed, not a folder that is gone
            raise ConfigError(
                str(exc).replace(str(tmp), "composed config (conf/ + overrides)")
            ) from None


def _selected(overrides: list[str]) -> list[str]:
    """The methodologies ``conf/`` selects with ``overrides`` but those that set a
    methodology's field (the ones Hydra refused)."""
    kept = [o for o in overrides if not o.lstrip("+~").startswith("methodologies.")]
    with tempfile.TemporaryDirectory(prefix="genfair-") as folder:
        composed = compose(kept, Path(folder) / PARAMS_FILE)
        return list(read_params(composed).get("methodologies") or {})


def _one_line(exc: BaseException) -> str:
    """Hydra's message on one line, without its search-path listing."""
    text = str(exc).split("Config search path")[0]
    return (
        " ".join(part.strip() for part in text.splitlines() if part.strip()) or type(exc).__name__
    )


def _positive(value: str) -> int:
    """argparse type: a whole number >= 1."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(
            f"{value} must be at least 1 (omit --limit for every probe)"
        )
    return number


def cmd_models(args: argparse.Namespace) -> None:
    params = load_params(args.params or PARAMS_FILE)
    width = max(map(len, params.models))
    for name, config in params.models.items():
        tag = "  [SIMULATED]" if config.backend == "simulated" else ""
        model_id = printable(config.model_id)  # config text: never a terminal escape
        print(f"{name:<{width}}  {config.modality:<4} {config.backend:<9} {model_id}{tag}")
        if config.description:
            print(f"{'':<{width}}  {printable(config.description)}")
    print(
        "\nmodel configs available in conf/model/: "
        f"{', '.join(sorted(printable(p.stem) for p in Path('conf/model').glob('*.yaml')))}"
    )


def cmd_methodologies(args: argparse.Namespace) -> None:
    from genfair.methodologies import get_methodology, names

    width = max(map(len, names()))
    for name in names():
        method = get_methodology(name)
        doc = type(method).__doc__ or sys.modules[type(method).__module__].__doc__ or ""
        summary = doc.strip().split("\n\n")[0]  # the docstring's first paragraph
        print(f"{name:<{width}}  [{', '.join(method.modalities)}] {' '.join(summary.split())}")


def cmd_config(args: argparse.Namespace) -> None:
    text, _ = _composed(args.override)
    print(text, end="")


def cmd_compose(args: argparse.Namespace) -> None:

    text, params = _composed(args.override)  # validated before anything is overwritten
    _say_dropped(params)
    write_text(text, PARAMS_FILE)  # what compose wrote: composing again would give the same
    print(f"wrote {PARAMS_FILE}; `dvc repro` now uses it (commit it to share the study)")


def _say_dropped(params: StudyParams) -> None:
    """One line when the new composition drops a methodology or model ``params.yaml`` has
    (a selection made by an override lasts one command; conf/study.yaml's last)."""
    try:
        before = read_params(PARAMS_FILE) if Path(PARAMS_FILE).is_file() else {}
    except ConfigError:
        return  # a broken params.yaml is being replaced: nothing in it to keep
    line = dropped(before, {"methodologies": params.methodologies, "models": params.models})
    if line:
        print(f"genfair: note: {line}", file=sys.stderr)


def exp_overrides(dvc_args: list[str]) -> list[str]:
    """The ``-S``/``--set-param`` values of ``dvc exp run`` arguments, read by DVC's own
    argument parser (so every spelling DVC takes, ``--set-par``, ``-fS``, ``--set=``..., is
    read as DVC reads it); :class:`ConfigError` with DVC's reason when DVC cannot read them."""
    import contextlib
    import io

    from dvc.cli import DvcParserError, parse_args

    reasons: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: reasons.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("dvc.cli.parser")
    logger.addHandler(handler)
    logger.propagate = False  # DVC's own handler would print the reason again
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            parsed = parse_args(["exp", "run", *dvc_args])
    except DvcParserError:
        raise ConfigError(
            f"dvc exp run cannot read the arguments {' '.join(dvc_args)!r}: "
            f"{reasons[-1] if reasons else 'parser error'} (see dvc exp run --help)"
        ) from None
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    return list(parsed.set_param or [])


def cmd_exp(args: argparse.Namespace) -> int:
    """Validate the overrides exactly as DVC will compose them, then hand every argument to
    `dvc exp run`: a bad value fails here, before DVC writes params.yaml or removes an output."""
    import subprocess

    _say_dropped(_composed(exp_overrides(args.dvc_args))[1])
    done = subprocess.run(["dvc", "exp", "run", *args.dvc_args], check=False)
    if done.returncode:
        print(
            f"genfair: dvc exp run failed; to put the workspace back as it was: {EXP_RESTORE}",
            file=sys.stderr,
        )
    return done.returncode


def cmd_try(args: argparse.Namespace) -> None:
    from genfair.study.steps import brief, compute_metrics, generate, label, make_probes

    check_name(args.model, "genfair try's MODEL")  # names become output folders: checked first
    check_name(args.methodology, "genfair try's METHODOLOGY")
    setup("try", model=args.model, methodology=args.methodology)
    overrides = [f"scale={args.scale}", *args.override]
    _, params = _composed(overrides)
    params.model(args.model)
    if args.methodology not in params.methodologies:
        raise ConfigError(
            f"methodology {args.methodology!r} is not in the "
            f"study; known: {', '.join(params.methodologies)}"
        )
    params = params.model_copy(
        update={"methodologies": {args.methodology: params.methodologies[args.methodology]}}
    )
    layout = Layout(Path(args.out or ".genfair/try"))
    make_probes(params, args.methodology, layout)
    generate(params, args.model, args.methodology, layout, limit=args.limit)
    label(params, args.model, args.methodology, layout)
    summary = compute_metrics(params, args.model, args.methodology, layout, log_scores=False)
    print(brief(read_parquet(layout.metrics(args.model, args.methodology) / "scores.parquet")))
    print(f"\noutputs under {layout.data}; summary: {summary}")

    if args.speed and isinstance(params.model(args.model), OpenAIModelConfig):
        print("\n" + measure(params.model(args.model)).summary())


def _cache(target: str | None, images: str | None) -> Any:
    """A response cache by URL or path (with its image store), or the study's cache."""
    from genfair.models.cache import ResponseCache, foreign_file_problem
    from genfair.models.images import ImageStore

    params = load_params(PARAMS_FILE) if Path(PARAMS_FILE).is_file() else None
    config = params.cache if params else CacheConfig()
    if target is None:
        return ResponseCache.configured(config)
    store = ImageStore(images, mirror=cache_dir(config.dir) / "images") if images else None
    if "://" not in target:  # a file the user named: even an empty one must be a cache
        problem = foreign_file_problem(Path(target), strict=True)
        if problem:
            raise ConfigError(f"{target}: {problem}; name a new file or an existing cache")
    return ResponseCache(target, images=store)


def cmd_cache_stats(args: argparse.Namespace) -> None:
    with _cache(args.url, None) as cache:
        counts = cache.counts()
        width = max([len("total"), *map(len, counts)])
        print(f"response cache {cache.where}")
        for model, count in counts.items():
            print(f"  {printable(model):<{width}}  {count:>9,}")
        print(
            f"  {'total':<{width}}  {sum(counts.values()):>9,}\n"
            f"  {cache.claims()} calls claimed now"
        )
        readings = cache.reading_counts()
        if readings:
            width = max([len("total"), *map(len, readings)])
            print("instrument readings (measured once per image or text, config and code)")
            for name, count in readings.items():
                print(f"  {printable(name):<{width}}  {count:>9,}")
            print(f"  {'total':<{width}}  {sum(readings.values()):>9,}")
    _print_usage()
    if args.url is None:  # the ledger is the study's cache folder's, not a named cache's
        _print_ledger()


def _print_usage() -> None:
    """The study's runs' usage (each generate's ``usage.json``), when run in a study: the runs
    of ``params.yaml``'s study only (a methodology or model it dropped left its file behind)."""
    from genfair.study.context import runs_methodology

    found = Layout().usages()
    if Path(PARAMS_FILE).is_file():
        params = load_params(PARAMS_FILE)
        found = [
            (model, methodology, path)
            for model, methodology, path in found
            if model in params.models and runs_methodology(params, model, methodology)
        ]
    if not found:
        return
    names = ("calls", "prompt_tokens", "completion_tokens", "images")
    print(
        "\nusage of the study's runs (answers from the cache and sent: "
        "data/responses/<methodology>/<model>/usage.json)"
    )
    print(f"  {'model · methodology':<40}" + "".join(f"{n:>19}" for n in names))
    for model, methodology, path in found:
        usage = read_json(path)
        run = f"{model} · {methodology}"
        print(f"  {run:<40}" + "".join(f"{usage.get(n, 0):>19,}" for n in names))
    rules = sorted({r for *_, path in found for r in read_json(path).get("rules", [])})
    print(f"  counted with: {'; '.join(rules)}")


def _print_ledger() -> None:
    """Per model and methodology, the sent and cached counts of every generate in the
    cache folder's ledger (:func:`genfair.frame.usage_ledger`)."""
    params = load_params(PARAMS_FILE) if Path(PARAMS_FILE).is_file() else None
    ledger = usage_ledger(params.cache if params else CacheConfig())
    totals = ledger_totals(read_ledger(ledger))
    if not totals:
        return
    names = ("calls", "prompt_tokens", "completion_tokens", "images")
    print(f"\nsent and answered from the cache, every generate here ({ledger})")
    print(f"  {'model · methodology':<40}{'':<8}" + "".join(f"{n:>19}" for n in names))
    for (model, methodology), usage in sorted(totals.items()):
        run = printable(f"{model} · {methodology}")
        for source in ("sent", "cached"):
            counts = getattr(usage, source)
            print(f"  {run:<40}{source:<8}" + "".join(f"{getattr(counts, n):>19,}" for n in names))
            run = ""


def cmd_cache_copy(args: argparse.Namespace) -> None:
    from genfair.models.cache import copy_entries

    with _cache(args.src, args.images_from) as src, _cache(args.dst, args.images_to) as dst:
        counts = copy_entries(src, dst)
        print(
            f"copied {counts['copied']:,} of {counts['read']:,} entries "
            f"({counts['images']:,} images) and {counts['readings']:,} instrument readings "
            f"from {src.where} to {dst.where}; "
            f"{counts['skipped']:,} malformed skipped; rerun to resume"
        )


def cmd_fill(args: argparse.Namespace) -> None:
    from genfair.study.fill import fill

    setup("fill")
    params = load_params(args.params or PARAMS_FILE)
    outcome = fill(
        params,
        _names(args.models),
        _names(args.methodologies),
        jobs=args.jobs or (4 if params.generation.executor == "dask" else 1),
    )
    failed = {run: why for run, why in outcome.items() if why != "ok"}
    print(
        f"filled {len(outcome) - len(failed)} of {len(outcome)} "
        "runs; `dvc repro` now replays them from the cache"
    )
    if failed:
        raise ConfigError(
            f"{len(failed)} runs not filled (rerun to resume): "
            + "; ".join(f"{run}: {printable(why)}" for run, why in failed.items())
        )


def cmd_plan(args: argparse.Namespace) -> None:
    import json

    from genfair.study.plan import plan, table, totals

    setup("plan")
    params = load_params(args.params) if args.params else _composed(args.override)[1]
    rows = plan(params, _names(args.models), _names(args.methodologies))
    if args.precision or args.target:
        _print_precision(args, params, rows)
    elif args.json:
        print(
            json.dumps(
                {
                    "runs": [r.to_dict() for r in rows],
                    "total": totals(rows),
                    "model_methodologies": params.model_methodologies,
                },
                indent=2,
                allow_nan=False,
            )
        )
    else:
        print(table(rows, params.generation))

        line = held(params.model_methodologies)
        if line:  # the study's choice, which the rows follow
            print(line)


def _print_precision(args: argparse.Namespace, params: StudyParams, rows: list) -> None:
    """``genfair plan --precision`` / ``--target``: :mod:`genfair.study.precision`."""
    import json

    from genfair.study import precision, targets
    from genfair.study.plan import plan

    target = targets.parse_target(args.target) if args.target else None
    result = precision.forecast(
        params,
        precision.planned(rows),
        methodologies=_names(args.methodologies),
        models=_names(args.models),
        units=precision.planned_units(params, rows),
    )
    if target is None:
        print(json.dumps(result.to_json(), indent=2) if args.json else precision.table(result))
        return
    found = targets.targets(
        params, rows, *target, result, plan_calls=lambda p, m, x: plan(p, [m], [x])[0]
    )
    if args.json:
        print(json.dumps([t.to_dict() for t in found], indent=2))
    else:
        print(targets.target_table(found))


def _names(value: str | None) -> list[str] | None:
    return None if value is None else [n.strip() for n in value.split(",") if n.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    # `exp` passes options it does not know (-S, --temp...) through to DVC, in order
    args, unknown = parser.parse_known_args(argv)
    if unknown and args.command != "exp":
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command == "exp":
        args.dvc_args = _after(argv if argv is not None else sys.argv[1:], "exp")
    debug = os.environ.get("GENFAIR_LOG_LEVEL", "").upper() == "DEBUG"
    try:
        _to_root(args)
        code = args.func(args)
    except KeyboardInterrupt:
        print(
            "genfair: interrupted: everything answered so "
            "far is in the response cache; rerun to resume",
            file=sys.stderr,
        )
        return 130
    except Exception as exc:  # noqa: BLE001 - every error is one line; the traceback on demand
        return _failed(exc, args, debug)
    return code or 0


def _parser() -> argparse.ArgumentParser:
    """The genfair command's parser: one subcommand per job."""
    parser = argparse.ArgumentParser(
        prog="genfair", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _study_commands(sub)
    _call_commands(sub)
    _cache_commands(sub)
    return parser


def _study_commands(sub: Any) -> None:
    """models, methodologies, config, compose, try."""
    p = sub.add_parser("models", help="list the study's models")
    p.add_argument("--params", default=None, help=f"default: {PARAMS_FILE} in the repository root")
    p.set_defaults(func=cmd_models)
    sub.add_parser("methodologies", help="list the methodologies").set_defaults(
        func=cmd_methodologies
    )
    for name, func, text in (
        ("config", cmd_config, "print the composed, validated config"),
        ("compose", cmd_compose, "compose conf/ into params.yaml"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument(
            "-o",
            "--override",
            action="append",
            default=[],
            help="Hydra override, e.g. scale=smoke or '+model@models.qwen=hf_qwen2_5_0_5b'",
        )
        p.set_defaults(func=func)
    p = sub.add_parser("try", help="run one model on one methodology outside DVC")
    p.add_argument("model")
    p.add_argument("methodology")
    p.add_argument("--scale", default="smoke", help="smoke (default), default or paper")
    p.add_argument("--limit", type=_positive, default=None, help="only the first N probes (N >= 1)")
    p.add_argument(
        "--out", default=None, help="where outputs go (default .genfair/try in the repository root)"
    )
    p.add_argument("-o", "--override", action="append", default=[], help="extra Hydra overrides")
    p.add_argument(
        "--no-speed",
        dest="speed",
        action="store_false",
        help="skip the endpoint's speed probe (a few calls at 1 and at its concurrency)",
    )
    p.set_defaults(func=cmd_try)


def _call_commands(sub: Any) -> None:
    """fill and plan: the study's calls, answered or counted."""
    p = sub.add_parser(
        "fill", help="answer the study's calls into the response cache (e.g. on a Dask cluster)"
    )
    p.add_argument("--models", default=None, help="comma-separated models (default: all)")
    p.add_argument(
        "--methodologies", default=None, help="comma-separated methodologies (default: all)"
    )
    p.add_argument(
        "--jobs",
        type=_positive,
        default=None,
        help="runs filled at once (default: 4 on dask, 1 local)",
    )
    p.add_argument("--params", default=None, help=f"default: {PARAMS_FILE} in the repository root")
    p.set_defaults(func=cmd_fill)

    p = sub.add_parser(
        "plan", help="what the study would send and cost, per model and methodology (no call)"
    )
    p.add_argument("-o", "--override", action="append", default=[], help="Hydra override")
    p.add_argument("--models", default=None, help="comma-separated models (default: all)")
    p.add_argument(
        "--methodologies", default=None, help="comma-separated methodologies (default: all)"
    )
    p.add_argument("--json", action="store_true", help="the plan as JSON")
    p.add_argument(
        "--params", default=None, help="plan this params file instead of composing conf/"
    )
    p.add_argument(
        "--precision",
        action="store_true",
        help="forecast each headline's 95%% half-width and each comparison's detectable "
        "difference at the planned size, from earlier runs' labels (the pilot)",
    )
    p.add_argument(
        "--target",
        default=None,
        metavar="HEADLINE=HALFWIDTH",
        help="the units, size knob, calls and cost that give a headline this half-width",
    )
    p.set_defaults(func=cmd_plan)


def _cache_commands(sub: Any) -> None:
    """cache (stats, copy) and exp."""
    cache = sub.add_parser("cache", help="inspect or copy the response cache").add_subparsers(
        dest="action", required=True
    )
    p = cache.add_parser(
        "stats",
        help="entries per model, readings per instrument; for the study's cache, calls sent "
        "and cached",
    )
    p.add_argument(
        "url",
        nargs="?",
        default=None,
        help="sqlite:///path, a file, or postgresql://host/db (default: the study's cache)",
    )
    p.set_defaults(func=cmd_cache_stats)
    p = cache.add_parser("copy", help="copy entries missing in DST (idempotent: rerun to resume)")
    p.add_argument(
        "src",
        help="sqlite:///path, a file, or postgresql://host/db (password: PGPASSWORD / ~/.pgpass)",
    )
    p.add_argument("dst", help="the same kinds of store")
    p.add_argument(
        "--images-from", default=None, help="SRC's image store (default beside a SQLite file)"
    )
    p.add_argument("--images-to", default=None, help="DST's image store, e.g. s3://bucket/images")
    p.set_defaults(func=cmd_cache_copy)

    p = sub.add_parser(
        "exp",
        help="`dvc exp run` with its -S overrides validated first",
        description="Every argument goes to `dvc exp run` (e.g. genfair exp -S scale=paper "
        "--temp); the -S overrides are composed and validated first, so a bad one changes nothing.",
    )
    p.add_argument("dvc_args", nargs="*", help="arguments of `dvc exp run`")
    p.set_defaults(func=cmd_exp)


def _failed(exc: Exception, args: argparse.Namespace, debug: bool) -> int:
    """Say what failed in one line (the traceback too under ``debug``); the exit code."""
    expected = isinstance(exc, EXPECTED)
    what = "error" if expected else f"unexpected {type(exc).__name__}"
    hint = "" if expected or debug else " (GENFAIR_LOG_LEVEL=DEBUG shows the traceback)"
    key = getattr(exc, "config_key", None)  # a model config key at fault: name it in full
    text = (
        f"{PARAMS_FILE}: models.{args.model}.{key}: {exc}"
        if key and getattr(args, "model", None)
        else exc
    )
    # a message's own lines stay (a config error lists one problem a line); any other
    # control character in it (an endpoint's escape code) is escaped; a line naming a key
    # of params.yaml (composed) says which conf/ file sets it

    text = where_to_edit("\n".join(map(printable, str(text).split("\n"))))
    print(f"genfair: {what}: {text}{hint}", file=sys.stderr)
    if debug:
        logging.getLogger("genfair").error("traceback", exc_info=True)
        import traceback

        traceback.print_exc()
    return 2 if expected else 1


def _after(argv: list[str], command: str) -> list[str]:
    """The arguments after ``command``, as given."""
    return argv[argv.index(command) + 1 :]


def _to_root(args: argparse.Namespace) -> None:
    """Run from the repository root: from a subdirectory, change to the root (paths the user
    gave keep their meaning); outside any study, say where to run."""
    root = find_root()
    if root is None and args.command in ("methodologies", "cache"):
        return  # needs no study
    if root is None:
        raise ConfigError(
            f"{Path.cwd()} is not inside a genfair study (no {' and '.join(ROOT_MARKERS)} here or "
            "above): run genfair from the repository root"
        )
    if root == Path.cwd().resolve():
        return
    for name in ("params", "out", "url", "src", "dst", "images_from", "images_to"):
        value = getattr(args, name, None)  # paths the user gave are relative to where the user is
        if value is not None and "://" not in value:
            setattr(args, name, str(Path(value).resolve()))
    print(f"genfair: running from the repository root {root}", file=sys.stderr)
    os.chdir(root)


if __name__ == "__main__":
    sys.exit(main())
