"""The ``cronradar`` command:

    cronradar exec ...                                   run a job and report it
    cronradar apply -f monitors.yaml [--prune] [--dry-run]
    cronradar export [-o FILE] [--format json|yaml]

``exec`` is :func:`cronradar_sdk.cronradar_exec.main` (its arguments are its own);
``apply`` and ``export`` are :mod:`cronradar_sdk.declarative` through the API, at
``--url`` (default ``CRONRADAR_URL``) with ``--api-key`` (default
``CRONRADAR_API_KEY``). Exit status: 0 done, 1 the file or the API refused (the
reason on stderr; what was applied before it is printed), 2 bad arguments.
"""
from __future__ import annotations

import argparse
import os
import sys

from cronradar_sdk import cronradar_exec


def parser() -> argparse.ArgumentParser:
    """The command line of ``apply`` and ``export`` (``exec`` parses its own)."""
    top = argparse.ArgumentParser(prog="cronradar", description="Report jobs to CronRadar "
                                  "and declare its monitors as one file.")
    sub = top.add_subparsers(dest="verb", required=True, metavar="{exec,apply,export}")
    sub.add_parser("exec", help="run a command and report its start, exit status and output "
                                "tail (cronradar exec --help)", add_help=False)
    apply = sub.add_parser("apply", help="make the API key's project what a monitors file "
                                         "declares, printing the diff")
    apply.add_argument("-f", "--file", required=True,
                       help="the monitors file (JSON, or YAML with PyYAML; - for stdin)")
    apply.add_argument("--prune", action="store_true",
                       help="delete what the project has and the file does not declare, of "
                            "each kind the file has a section for")
    apply.add_argument("--dry-run", action="store_true", help="print the diff, change nothing")
    export = sub.add_parser("export", help="write the API key's project as a monitors file")
    export.add_argument("-o", "--output", help="the file to write (default stdout)")
    export.add_argument("--format", choices=("json", "yaml"),
                        help="default: by the output's extension, else yaml when PyYAML is "
                             "installed, else json")
    for verb in (apply, export):
        verb.add_argument("--url", help="the service's base URL (default CRONRADAR_URL)")
        verb.add_argument("--api-key", help="a project API key (default CRONRADAR_API_KEY)")
    return top


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``cronradar`` console script; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["exec"]:
        return cronradar_exec.main(argv)
    args = parser().parse_args(argv)
    _utf8(sys.stdout)
    # imported here: a cron line's `cronradar exec` starts without them
    from cronradar_sdk import declarative
    from cronradar_sdk.client import ApiClient, ApiError

    try:
        client = ApiClient(url=args.url, api_key=args.api_key)
        backend = declarative.HttpBackend(client)
        return apply_file(args, backend) if args.verb == "apply" else export_file(args, backend)
    except (ValueError, ApiError, OSError) as e:  # FileError is a ValueError
        print(f"cronradar {args.verb}: {e}", file=sys.stderr)
        return 1


def apply_file(args, backend) -> int:
    """``cronradar apply``: print each change as it is made, then the counts."""
    from cronradar_sdk import declarative

    if args.file == "-":
        text, fmt = sys.stdin.read(), None
    else:
        with open(args.file, encoding="utf-8") as f:
            text, fmt = f.read(), declarative.format_of(args.file)
    doc = declarative.parse(text, fmt)
    declarative.check(doc)
    doc = declarative.expand(doc, os.environ)

    def report(change):
        for line in change.lines():
            print(line, flush=True)

    changes = declarative.apply(doc, backend, prune=args.prune, dry_run=args.dry_run,
                                report=report)
    print(declarative.summary(changes, args.dry_run))
    return 0


def export_file(args, backend) -> int:
    """``cronradar export``: the file to ``--output`` (or stdout); the variables its
    placeholders need on stderr."""
    from cronradar_sdk import declarative

    fmt = args.format or (args.output and declarative.format_of(args.output)) or _default()
    doc, secrets = declarative.export(backend)
    text = declarative.dump(doc, fmt)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    if secrets:
        print("the channels' credentials are placeholders: set " + ", ".join(sorted(secrets))
              + " before applying the file (or write '***' to keep the stored ones)",
              file=sys.stderr)
    return 0


def _default() -> str:
    try:
        import yaml  # noqa: F401
    except ImportError:
        return "json"
    return "yaml"


def _utf8(stream) -> None:
    """Diff lines carry names and an arrow: never fail on a stream that is not UTF-8."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")


if __name__ == "__main__":
    sys.exit(main())
