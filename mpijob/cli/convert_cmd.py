"""`mpijob convert -f FILE`: MPI Operator MPIJobs as Trainer TrainJobs (and TrainingRuntimes), with a report.

The objects go to stdout, so `mpijob convert -f job.yaml | kubectl apply -f -` works; the report of
where each MPIJob field went goes to stderr (docs/migration.md). No cluster is contacted.
"""

# No `from __future__ import annotations` in the command modules: typer would evaluate every string
# annotation again on each run.

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from mpijob.api import Obj
from mpijob.cli import output
from mpijob.cli.session import handles_errors

if TYPE_CHECKING:
    from mpijob.api.mpioperator.convert import Conversion

FORMATS = ("yaml", "json")
SECTIONS = (("mapped", "mapped into the TrainJob (or onto the bundled runtime)"),
            ("runtime", "moved to the TrainingRuntime"), ("dropped", "dropped"))

FileOpt = Annotated[list[str], typer.Option(
    "--filename", "-f", help="MPIJob manifest(s), YAML or JSON (`-` for stdin); repeatable; every document is "
    "converted.", show_default=False)]
FormatOpt = Annotated[str, typer.Option(
    "--output", "-o", help="yaml: the objects as YAML documents | json: a List (with --report-only: the report).")]
ReportOnlyOpt = Annotated[bool, typer.Option(
    "--report-only", help="Print only the report, to stdout (as JSON with -o json), not the objects.")]


def read_mpijobs(files: list[str]) -> list[Obj]:
    """The documents of every file, in order (`kind: List` unwrapped); a 400 naming the file otherwise."""
    import yaml

    from mpijob.api.core.errors import ApiError
    from mpijob.client.manifests import read

    docs: list[Obj] = []
    for path in files:
        text, source = read(path)
        try:
            found = [d for d in yaml.safe_load_all(text) if d is not None]
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            raise ApiError(400, "BadRequest", f"{source}: cannot parse YAML{where}: "
                           f"{getattr(exc, 'problem', None) or exc}; fix the syntax") from None
        if not found:
            raise ApiError(400, "BadRequest", f"{source}: contains no objects; it needs at least one MPIJob")
        for doc in found:
            is_list = isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list)
            docs += doc["items"] if is_list else [doc]
    return docs


def report_text(conversions: list["Conversion"]) -> str:
    """The report for people: per MPIJob, what went where, grouped by verdict."""
    out = []
    for conv in conversions:
        name = conv.trainjob["metadata"]["name"]
        ref = conv.trainjob["spec"]["runtimeRef"]
        runs_on = f"{ref.get('kind', 'ClusterTrainingRuntime')} {ref['name']}"
        out.append(f"MPIJob {name} → TrainJob {name} on {runs_on}" + (" (generated)" if conv.runtime else ""))
        for verdict, title in SECTIONS:
            lines = [m for m in conv.report if m.verdict == verdict]
            if not lines:
                continue
            out.append(f"  {title} ({len(lines)}):")
            for m in lines:
                target = f" → {m.to}" if m.to else ""
                out.append(f"    {m.field}{target}" + (f"\n        {m.why}" if m.why else ""))
    return "\n".join(out) + "\n"


@handles_errors
def convert(
    filename: FileOpt,
    output_format: FormatOpt = "yaml",
    report_only: ReportOnlyOpt = False,
) -> None:
    """Convert MPI Operator MPIJobs (kubeflow.org/v2beta1) to Trainer TrainJobs, each with a TrainingRuntime of
    its own when the bundled mpi-distributed does not fit: `mpijob convert -f job.yaml | kubectl apply -f -`.
    The report (mapped, moved to the runtime, dropped, with reasons) goes to stderr. Nothing is printed if
    any document cannot be converted."""
    output.check_format(output_format, FORMATS, "convert")
    from mpijob.api.mpioperator.convert import convert as convert_one

    conversions = [convert_one(doc) for doc in read_mpijobs(filename)]
    if report_only:
        if output_format == "json":
            rows = [{"mpijob": c.trainjob["metadata"]["name"], **vars(m)} for c in conversions for m in c.report]
            sys.stdout.write(json.dumps(rows, indent=4) + "\n")
        else:
            sys.stdout.write(report_text(conversions))
        return
    objects = [o for c in conversions for o in (c.runtime, c.trainjob) if o is not None]
    if output_format == "json":
        output.dump(output.as_list(objects), "json")
    else:
        import yaml

        sys.stdout.write(yaml.safe_dump_all(objects, sort_keys=False, default_flow_style=False))
    sys.stdout.flush()
    sys.stderr.write(report_text(conversions))
