"""What every method-comparison script shares (experiments.jsrl, .svgg,
.reverse_curriculum): one base experiment run once per method, from a YAML config with
`--set` overrides, `--methods` and `--seeds`, written as results.json, table.md and
curves.png.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from acl.config import apply_overrides, load_yaml
from acl.errors import ConfigError
from acl.results import provenance


def comparison_parser(
    prog: str, default_config: Path, methods: tuple[str, ...], default_out: str | None
) -> argparse.ArgumentParser:
    """The shared flags; a script adds its own before parsing."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--config", default=str(default_config), help="YAML config")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="K=V")
    parser.add_argument("--methods", nargs="+", default=None, choices=methods)
    parser.add_argument("--seeds", type=int, default=None, help="vmapped seeds per method")
    parser.add_argument("--out", default=default_out)
    parser.add_argument("--no-progress", action="store_true")
    return parser


def comparison_data(args: argparse.Namespace) -> dict:
    """The config as a dict: the YAML, then `--set`, `--methods` and `--seeds`.

    Raises ConfigError on a bad file or override."""
    data = apply_overrides(load_yaml(args.config), args.overrides)
    if args.methods:
        data["methods"] = args.methods
    if args.seeds is not None:
        data.setdefault("base", {})["num_seeds"] = args.seeds
    return data


def write_comparison(
    out: Path, data: dict, seeds: list[int], results: list[dict], text: str, plot, **extra
) -> None:
    """results.json (config, provenance, `extra`, results), table.md and curves.png
    (`plot(path)`) in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    payload = {"config": data, **extra, "provenance": provenance(seeds), "results": results}
    (out / "results.json").write_text(json.dumps(payload, indent=1))
    (out / "table.md").write_text(text + "\n")
    plot(out / "curves.png")
    print(f"wrote {out / 'results.json'}, {out / 'table.md'}, {out / 'curves.png'}")


def run_comparison(out: Path, data: dict, config, run, table, plot, **extra) -> None:
    """Run every method of `config` (`run(method) -> result dict`), print `table(results)`
    and write the outputs (`plot(results, path)`)."""
    from acl.results import enable_compilation_cache

    enable_compilation_cache()
    results = [run(method) for method in config.methods]
    text = table(results)
    print(text)
    seeds = [config.base.seed + i for i in range(config.base.num_seeds)]
    write_comparison(out, data, seeds, results, text, lambda path: plot(results, path), **extra)


def comparison_main(args: argparse.Namespace, parse, make_trainer, run_method, table, plot) -> int:
    """A comparison script's whole `main` after its flags: the config (`parse(data)`),
    every method's trainer built once so every config error comes before any
    compilation (exit 2), then `run_comparison` with `run_method(config, method,
    progress)`."""
    try:
        data = comparison_data(args)
        config = parse(data)
        for method in config.methods:
            make_trainer(config, method)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    run_comparison(
        Path(args.out),
        data,
        config,
        lambda method: run_method(config, method, not args.no_progress),
        table,
        plot,
    )
    return 0
