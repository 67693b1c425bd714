"""`gpufleet report`: the fleet map of a check, as one self-contained HTML page and a Markdown summary."""

from gpufleet.report.html import render_html
from gpufleet.report.model import FleetReport, build_report
from gpufleet.report.sources import report_of, stack_report
from gpufleet.report.summary import summary_markdown

__all__ = ["FleetReport", "build_report", "render_html", "report_of", "stack_report", "summary_markdown"]
