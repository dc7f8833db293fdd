"""Power datasets, spline GAM and the shipped models' predictions and explanations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.power.dataset import (
    DatasetError,
    default_data_dir,
    load_all,
    load_dataset,
    normalise_benchmark,
)
from kerncast.analysis.power.gam import SplineGAM, spline_basis
from kerncast.server.cli import main

DATA = default_data_dir()  # the repository's own copy (data/power/): these tests always run


def test_benchmark_aliases_merge_spellings() -> None:
    assert normalise_benchmark("Breadth First Search") == normalise_benchmark("BFS") == "bfs"
    assert normalise_benchmark("cdpsmpleQuickSort") == normalise_benchmark("cdpSimpleQuickSort")
    assert normalise_benchmark("NW1") == normalise_benchmark("NW2")
    assert normalise_benchmark("SUM") == normalise_benchmark("Sum")
    assert normalise_benchmark("saxpy2") != normalise_benchmark("saxpy")


def test_malformed_csv_cleaned(tmp_path) -> None:
    (tmp_path / "v100.csv").write_text(
        "Sr No.,Benchmark,Kernel Name,grid_size,block_size,avg_comp_lat,inst_issue_cycles,Power\n"
        "1,a,k,64,256,#DIV/0!,10,50.5\n"
        ",,,,,,,\n"  # blank row
        "2,b,k,64,256,12,#VALUE!,\n"  # no power -> dropped
        "3,saxpy,s,1,32,NaN,5,60\n"
        "1,a,k,64,256,#DIV/0!,10,50.5\n"  # duplicate of row 1 except Sr No.
    )
    ds = load_dataset(tmp_path / "v100.csv")
    assert ds.rows == 3
    assert math.isnan(ds.columns["avg_comp_lat"][0]) and math.isnan(ds.columns["avg_comp_lat"][1])
    # the duplicate and the copied-label saxpy row are excluded from the default model's rows
    assert ds.clean.tolist() == [True, False, False]


def test_powerquant_overflow_unwrapped(tmp_path) -> None:
    (tmp_path / "powerquant_Tesla.csv").write_text(
        "KernelName,GridSize,BlockSize,inst_issue_cycles,avg_shar_lat,Avg\nbfs,2,2,-15835136, NaN,80\n")
    ds = load_dataset(tmp_path / "powerquant_Tesla.csv")
    assert ds.columns["inst_issue_cycles"][0] == 2**32 - 15835136
    assert ds.columns["avg_shar_lat"][0] == 0.0


def test_bad_inputs_give_clear_errors(tmp_path, capsys) -> None:
    with pytest.raises(DatasetError, match="not found"):
        load_all(tmp_path / "nope")
    with pytest.raises(DatasetError, match="no known power dataset"):
        load_all(tmp_path)
    (tmp_path / "v100.csv").write_text("Benchmark,Power\nx,1\n")
    with pytest.raises(DatasetError, match="missing column"):
        load_dataset(tmp_path / "v100.csv")
    assert main(["power", "evaluate", "--data", str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err
    assert "dataset directory not found" in err and "Traceback" not in err


def test_repository_datasets_row_counts_and_gpu_facts() -> None:
    data = load_all()
    # data/power/README.md: 1807 real K20-larger rows (186 trailing blank rows dropped), 767 M60, 627 V100
    assert data["k20_larger"].rows == 1807
    assert data["maxwell_m60"].rows == 767
    assert data["v100"].rows == 627
    assert int((~data["v100"].clean).sum()) == 168  # copied saxpy labels
    assert (data["powerquant_Tesla"].columns["inst_issue_cycles"] >= 0).all()
    assert set(data) == {p.stem for p in DATA.glob("*.csv")}  # every file of the folder is known
    # GPU facts come from the GPU profiles, the one place they are written

    for ds in (data["k20_larger"], data["maxwell_m60"], data["v100"]):
        gpu = load_profile(ds.descriptor["gpu"])
        assert (ds.descriptor["sm_count"], ds.descriptor["tdp_w"], ds.descriptor["idle_w"]) == (
            gpu.sm_count, gpu.tdp_w, gpu.idle_w)
        assert ds.descriptor["floor_w"] == pytest.approx(float(ds.power.min()))


def test_spline_basis_partition_of_unity() -> None:
    x = np.linspace(-1.0, 3.0, 57)
    b = spline_basis(x, -1.0, 3.0)
    assert b.shape == (57, 5)
    np.testing.assert_allclose(b.sum(axis=1), 1.0, atol=1e-9)
    assert (b >= 0).all()


def test_gam_contributions_sum_and_roundtrip() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    X[5, 1] = np.nan
    y = 2 * X[:, 0] - np.nan_to_num(X[:, 1]) ** 2 + rng.normal(scale=0.1, size=200)
    g = SplineGAM(alpha=1.0).fit(X, y)
    base, c = g.contributions(X)
    np.testing.assert_allclose(base + c.sum(axis=1), g.predict(X))
    assert np.corrcoef(g.predict(X), y)[0, 1] > 0.9
    g2 = SplineGAM.from_dict(g.to_dict())
    np.testing.assert_allclose(g2.predict(X), g.predict(X))
    # clipping bounds out-of-range inputs: a huge value predicts like the training maximum
    far = X[:1].copy()
    far[0, 0] = 1e9
    at_hi = X[:1].copy()
    at_hi[0, 0] = g.hi[0]
    assert g.predict(far)[0] == pytest.approx(g.predict(at_hi)[0])
