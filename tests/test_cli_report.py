"""`kerncast report --html`: the page a real headless Chromium opens with the network cut off shows the roofline
chart with the kernel's point and the per-line table, loads nothing from outside, and shows everything from the
analysed code as text (no script of the analysed file runs)."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from kerncast.server import cli

from tests.chromium import CHROMIUM, dump_dom, read_png, screenshot

REPO = Path(__file__).resolve().parent.parent
MATMUL = REPO / "examples" / "matmul.cu"
POINT_RGB = (0xD6, 0x27, 0x28)  # roofline_svg.POINT_COLOURS[0], the kernel's point on the report's GPU

needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH to open the page in")


class _Elements(HTMLParser):
    """Tags and their attributes of a serialised DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _elements(dom: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(dom)
    return parser.tags


def _report(tmp_path: Path, source: Path, *extra: str) -> Path:
    out = tmp_path / "report.html"
    assert cli.main(["report", str(source), "--html", str(out), "--gpu", "v100", *extra]) == 0
    return out


@needs_chromium
def test_matmul_page_shows_the_chart_point_and_line_table_and_loads_nothing(tmp_path):
    page = _report(tmp_path, MATMUL)
    dom = dump_dom(page, tmp_path / "profile")
    tags = _elements(dom)
    names = [t for t, _ in tags]
    assert names.count("svg") == 2  # one chart per kernel of the file
    classes = [a.get("class") or "" for _, a in tags]
    assert sum("kernel-point" in c for c in classes) == 2
    assert any(c.startswith("roof roof-sp") for c in classes) and any("error-bar" in c for c in classes)
    assert "sum += A[row * n + k] * B[k * n + col];" in dom  # the per-line table beside the source
    assert any(c == "lines" for c in classes)
    for tag, attrs in tags:  # nothing from outside: no URL in any src or href
        for key in ("src", "href"):
            assert not re.match(r"\s*(https?:)?//", attrs.get(key) or ""), (tag, attrs)
    assert "script" not in names and "link" not in names and "img" not in names

    png = tmp_path / "shot.png"
    screenshot(page, tmp_path / "profile", png, (900, 700))
    image = read_png(png)
    blank = image.pixel(2, 2)  # the page's margin: the background
    assert blank == (255, 255, 255)
    painted = sum(1 for y in range(image.height) for x in range(image.width - 20) if image.pixel(x, y) != blank)
    assert 20_000 < painted < 0.6 * image.width * image.height, painted  # drawn, but not a solid screen
    point = [(x, y) for y in range(image.height) for x in range(image.width)
             if all(abs(a - b) <= 8 for a, b in zip(image.pixel(x, y), POINT_RGB, strict=True))]
    assert len(point) > 40, "the kernel's point is not painted"


HOSTILE = r"""// <script>document.title='PWNED'</script>
// <img src=x onerror="document.title='PWNED'"> <a href="javascript:document.title='PWNED'">click</a>
template <int N>
__global__ void copyKernel(float *out, const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * N; // <script>document.body.innerHTML='PWNED'</script>
}

int main()
{
    float *a, *b;
    copyKernel<(3 > 2)><<<256, 256>>>(a, b, 65536);
    return 0;
}
"""


@needs_chromium
def test_hostile_names_and_comments_show_as_text_and_run_nothing(tmp_path):
    folder = tmp_path / "src"
    folder.mkdir()
    source = folder / "x<img src=x onerror=document.title=1>'javascript:alert(1)'.cu"
    source.write_text(HOSTILE)
    page = _report(tmp_path, source)
    dom = dump_dom(page, tmp_path / "profile")
    names = [t for t, _ in _elements(dom)]
    assert "script" not in names and "img" not in names and "a" not in names
    title = re.search(r"<title>(.*?)</title>", dom, re.S)
    assert title is not None and title.group(1).startswith("Kerncast report:")  # no script changed it
    assert "<body>PWNED" not in dom  # no script rewrote the body
    # the source line with its comment is in the table, as text
    assert "out[i] = in[i] * N; // &lt;script&gt;document.body.innerHTML='PWNED'&lt;/script&gt;" in dom
    assert "x&lt;img src=x onerror=document.title=1&gt;" in dom  # the file name, as text
    assert "copyKernel&lt;" in dom  # the template kernel's name, as text


def test_page_has_no_script_and_a_strict_policy(tmp_path):
    text = _report(tmp_path, MATMUL).read_text()
    assert "<script" not in text.lower()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', text)
    assert policy is not None and "script-src 'none'" in policy.group(1) and "default-src 'none'" in policy.group(1)


def test_several_gpus_add_their_points_and_a_table(tmp_path):
    out = tmp_path / "report.html"
    assert cli.main(["report", str(MATMUL), "--html", str(out), "--gpu", "v100,a100,h100"]) == 0
    text = out.read_text()
    assert text.count('class="other-gpu"') == 4  # two kernels, two other GPUs each
    for name in ("NVIDIA A100", "NVIDIA H100"):
        assert name in text


def test_output_that_is_the_source_is_refused(tmp_path, capsys):
    source = tmp_path / "k.cu"
    shutil.copy(MATMUL, source)
    before = source.read_bytes()
    assert cli.main(["report", str(source), "--html", str(source)]) == 2
    assert source.read_bytes() == before
    assert "analysed file" in capsys.readouterr().err


def test_unknown_gpu_in_the_list_is_a_clear_error(tmp_path, capsys):
    assert cli.main(["report", str(MATMUL), "--html", str(tmp_path / "r.html"), "--gpu", "v100,nosuch"]) == 2
    assert "nosuch" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_analyze_with_two_gpus_gives_both_in_text_and_json(capsys):
    assert cli.main(["analyze", str(MATMUL), "--gpu", "a100,h100"]) == 0
    text = capsys.readouterr().out
    assert "a100" in text and "h100" in text and "kernel matmulNaive" in text
    assert cli.main(["analyze", str(MATMUL), "--gpu", "a100,h100", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gpu"] == "a100" and data["gpus"] == ["a100", "h100"]
    naive = next(k for k in data["kernels"] if k["name"] == "matmulNaive")
    assert [g["gpu"] for g in naive["per_gpu"]] == ["a100", "h100"]
    assert naive["per_gpu"][0]["time_us"] == naive["time"]["us"]  # the main GPU's figures are its own report's
    assert naive["per_gpu"][1]["time_us"] < naive["per_gpu"][0]["time_us"]  # an H100 beats an A100 here
    assert all(g["watts"] and g["energy_uj"] and g["bottleneck"] for g in naive["per_gpu"])


def test_analyze_with_one_gpu_keeps_its_json(capsys):
    assert cli.main(["analyze", str(MATMUL), "--gpu", "a100", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "gpus" not in data and "per_gpu" not in data["kernels"][0]


def test_report_without_html_prints_each_gpus_figures(capsys):
    assert cli.main(["report", str(MATMUL), "--gpu", "v100,h100"]) == 0
    text = capsys.readouterr().out
    naive = text.split("kernel matmulNaive", 1)[1].split("kernel ", 1)[0]
    rows = [ln.split()[0] for ln in naive.strip().splitlines()]
    assert rows == ["v100", "h100"]
    assert all(" W, energy " in ln and "bottleneck " in ln for ln in naive.strip().splitlines())


def test_breakdown_names_the_model_its_terms_belong_to(tmp_path):
    text = _report(tmp_path, MATMUL, "--time-model", "mwp-cwp").read_text()
    assert "the mwp-cwp model gives no split: the thesis scheduler&#x27;s terms" in text
    text = _report(tmp_path, MATMUL).read_text()
    assert "kerncast model: compute and memory lines overlap" in text


def test_page_states_the_launch(tmp_path):
    text = _report(tmp_path, MATMUL).read_text()
    assert "<th>launch</th><td>&lt;&lt;&lt;32x32x1, 32x32x1, 0&gt;&gt;&gt;</td>" in text


def test_several_gpus_take_one_file(tmp_path, capsys):
    assert cli.main(["analyze", str(REPO / "examples"), "--gpu", "a100,h100"]) == 2
    assert "one file" in capsys.readouterr().err
    assert cli.main(["analyze", str(MATMUL), "--gpu", "a100,h100", "--format", "sarif"]) == 2
    assert "text or JSON" in capsys.readouterr().err
