"""The aggregate notebook renders through papermill, as `make run` does."""

from pathlib import Path

from conftest import run


def test_report_renders_with_papermill(swecl_bin, data_dir, tmp_path):
    out = tmp_path / "reports"
    r = run(
        swecl_bin,
        "report",
        "--results",
        str(tmp_path / "results"),
        "--out",
        str(out),
        "--quick",
        "--json",
        str(tmp_path / "r.json"),
    )
    assert r.returncode == 0, r.stderr[-2000:]
    index = (out / "README.md").read_text()
    assert "Dataset statistics (Table 1)" in index and "Patch similarity" in index
    for link in ["table1_dataset_stats.md", "similarity_authors_pairs.png", "similarity_sampled_pairs.csv"]:
        assert link in index and (out / link).exists(), link
    assert (out / "aggregate.ipynb").exists()  # the executed notebook is kept beside the report
    assert (out / "similarity_authors_pairs.png").read_bytes()[:4] == b"\x89PNG"
