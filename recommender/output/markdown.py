"""`recommend --output markdown`: GitHub-flavoured tables for a pull request or a chat message."""

from __future__ import annotations

from recommender.output.report import Report
from recommender.output.tables import Table, tables


def cell(text: str) -> str:
    """A table cell: pipes and newlines cannot break the row, `<` cannot start HTML or an autolink, and
    `[`/`]` cannot make a link or image (`[x](javascript:...)` in a reason stays text)."""
    escaped = " ".join(text.split()).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")
    return escaped.replace("[", "\\[").replace("]", "\\]") or " "


def table(t: Table) -> list[str]:
    if not t.rows:
        return [f"### {t.title}", "", "None.", ""]
    align = ["---:" if i in t.numeric else "---" for i in range(len(t.header))]
    lines = [f"### {t.title}", "", "| " + " | ".join(cell(h) for h in t.header) + " |"]
    lines.append("| " + " | ".join(align) + " |")
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in t.rows]
    return [*lines, ""]


def render_markdown(report: Report) -> str:
    shown = tables(report)
    out = ["## podsizer recommendations", "", f"Generated {shown.generated}. {cell(shown.totals)}.", ""]
    out.append("Values are the pod plan's: what the webhook writes (`old -> new`).")
    out.append("")
    for t in shown.tables:
        out += table(t)
    out += [f"- {cell(line)}" if i else cell(line) for i, line in enumerate(shown.basis)]
    return "\n".join(out).rstrip() + "\n"
