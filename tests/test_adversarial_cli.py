"""Hostile and careless command lines (issue 16): every bad input ends in one sentence on stderr and exit status 2,
never in a traceback and never silently accepted; strict readers refuse bad attempt records naming file and line;
infrastructure failures are counted, never turned into verdicts; ids from a dataset never become paths outside the
logs folder. Everything runs in-process through `swecl.cli.app.main`, on tiny real files, offline."""

import contextlib
import io
import json
import string

import pytest
from conftest import FLAGS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swecl.cli.app import main

MINI_ID = "swecl-mini__textkit-1"
# the fuzzed command lines: a deterministic 50 in every run, 300 with the slow or thorough flag (the same strategy, searched deeper)
N_COMMAND_LINES = 300 if FLAGS & {"slow", "thorough"} else 50


def cli(*argv) -> tuple:
    "(exit status, stdout, stderr) of `swecl *argv` in-process; any exception escaping `main` fails the test."
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


def one_sentence(err: str) -> bool:
    "A single non-empty line naming the command, with no traceback."
    return err.endswith("\n") and err.count("\n") == 1 and err.startswith("swecl") and "Traceback" not in err


def attempt(**kw) -> dict:
    return dict(sequence_id="s", kind="first", i=1, j=1, sample=0, resolved=True, n_tasks=2) | kw


def lines(*records) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


def cell(root, name, text, manifest=True, model="replay:p.jsonl"):
    d = root / "exp" / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "attempts.jsonl").write_text(text)
    if manifest:
        cfg = dict(experiment="exp", dataset="mini", model=model, memory="none", content=None, seed=0)
        (d / "manifest.json").write_text(json.dumps({"config": cfg}))
    return d


@pytest.fixture(scope="module")
def F(tmp_path_factory):
    "A pool of tiny bad (and a few good) inputs, by name."
    d = tmp_path_factory.mktemp("adv")
    f = {"dir": d, "missing": d / "missing.jsonl"}
    texts = {
        "empty.jsonl": "",
        "blank.jsonl": "\n\n",
        "list.jsonl": "[1, 2]\n",
        "nopatch.jsonl": lines({"instance_id": MINI_ID, "model_name_or_path": "m"}),
        "badreply.jsonl": lines({"reply": [1, 2]}),
        "empty.csv": "",
        "header.csv": "task_a_id,task_b_id\n",
        "junk.csv": "\x00\x01\x02garbage,,,\n\n\x7f",
        "bad.yaml": "a: [\n",
        "list.yaml": "- 1\n- 2\n",
        "models5.yaml": "experiment: x\ndataset: mini\nmodels: 5\n",
        "drift_header.csv": "target_difficulty,poisoning_difficulty,drift_score\n",
        "records_list.json": "[[1]]\n",
        "a_string_verdict.jsonl": lines(attempt(resolved="false")),
        "a_bool_position.jsonl": lines(attempt(j=True)),
        "a_negative_sample.jsonl": lines(attempt(sample=-1)),
        "a_conflict.jsonl": lines(attempt(), attempt(resolved=False)),
        "a_torn.jsonl": lines(attempt()) + '{"sequence_id": "s", "j": 2, "kind": "fi',
        "a_list.jsonl": lines(attempt(), "[1]"),
        "a_bad_kind.jsonl": lines(attempt(kind="second")),
        "a_retest_no_i.jsonl": lines(attempt(kind="retest", i=None)),
        "a_good.jsonl": lines(attempt(), attempt(j=2, i=2, resolved=False)),
    }
    for name, text in texts.items():
        (d / name).write_text(text)
        f[name] = d / name
    f["nonutf8.jsonl"] = d / "nonutf8.jsonl"
    f["nonutf8.jsonl"].write_bytes(b"\xff\xfe{\x00}\n")
    # results folders for the report
    for name, text, manifest in [
        ("r_torn", lines(attempt()) + '{"j": 2, "resol', True),
        ("r_string", lines(attempt(resolved="true")), True),
        ("r_conflict", lines(attempt(), attempt(resolved=False)), True),
        ("r_nomanifest", lines(attempt()), False),
    ]:
        cell(d / name, "c1", text, manifest)
        f[name] = d / name
    (d / "r_badmanifest" / "exp" / "c1").mkdir(parents=True)
    (d / "r_badmanifest" / "exp" / "c1" / "attempts.jsonl").write_text(lines(attempt()))
    (d / "r_badmanifest" / "exp" / "c1" / "manifest.json").write_text("{nope")
    f["r_badmanifest"] = d / "r_badmanifest"
    (d / "r_empty").mkdir()
    f["r_empty"] = d / "r_empty"
    return f


# --- Every bad input: one sentence, exit status 2 -----------------------------------------------------------------

NUMBERS = [  # (argv, what the sentence must say)
    (["solve", "--instance", MINI_ID, "--max-steps", "-1"], "--max-steps: '-1' is not a whole number ≥ 1"),
    (["solve", "--instance", MINI_ID, "--max-steps", "0"], "--max-steps: '0' is not a whole number ≥ 1"),
    (["solve", "--instance", MINI_ID, "--max-cost", "-1"], "--max-cost: '-1' is not a number > 0"),
    (["solve", "--instance", MINI_ID, "--max-seconds", "-1"], "--max-seconds: '-1' is not a number > 0"),
    (["solve", "--instance", MINI_ID, "--max-seconds", "inf"], "--max-seconds: 'inf' is not a number > 0"),
    (["solve", "--instance", MINI_ID, "--timeout", "-5"], "--timeout: '-5' is not a number > 0"),
    (["validate", "--timeout", "-1"], "--timeout: '-1' is not a number > 0"),
    (["validate", "--timeout", "nan"], "--timeout: 'nan' is not a number > 0"),
    (["sandbox", "--instance", MINI_ID, "--timeout", "0", "--", "true"], "--timeout: '0' is not a number > 0"),
    (["bench", "sandbox", "--n", "-1"], "--n: '-1' is not a whole number ≥ 0"),
    (["bench", "memory", "--sizes", "0"], "--sizes: '0' is not a number ≥ 1"),
    (["metrics", "--attempts", "x", "--n-resamples", "0"], "--n-resamples: '0' is not a whole number ≥ 1"),
    (["metrics", "--attempts", "x", "--beta", "0"], "--beta: '0' is not a number > 0"),
    (["metrics", "--attempts", "x", "--seed", "-1"], "--seed: '-1' is not a whole number ≥ 0"),
    (["similarity", "--dataset", "mini", "--per-repo", "-3"], "--per-repo: '-3' is not a whole number ≥ 1"),
    (["run", "--workers", "0"], "--workers: '0' is not a whole number ≥ 1"),
    (["poison", "--n", "0"], "--n: '0' is not a whole number ≥ 1"),
    (["retrieval-study", "--n-resamples", "-1"], "--n-resamples: '-1' is not a whole number ≥ 1"),
    (["build-dataset", "x", "-o", "y", "--min-tasks", "0"], "--min-tasks: '0' is not a whole number ≥ 1"),
    (["build-dataset", "x", "-o", "y", "--max-tasks", "-1"], "--max-tasks: '-1' is not a whole number ≥ 0"),
    (["solve", "--instance", MINI_ID, "--max-steps", "3.5"], "--max-steps: '3.5' is not a whole number ≥ 1"),
    (["stats", "--nope"], "unrecognized arguments: --nope"),
    (["solve"], "the following arguments are required: --instance"),
    (["bench", "disk"], "invalid choice: 'disk'"),
    (
        ["report", "--reproductions", "--results", "results"],
        "or --reproductions for the papers' reproductions, not both",
    ),
    (["report", "--quick"], "--quick belongs to the reproductions report"),
]


@pytest.mark.parametrize("argv,says", NUMBERS, ids=[f"{i}-{a[0]}" for i, (a, _) in enumerate(NUMBERS)])
def test_bad_numbers_and_arguments_are_one_sentence(argv, says):
    rc, out, err = cli(*argv)
    assert (rc, out) == (2, ""), err
    assert one_sentence(err) and says in err, err


FILES = [  # (argv with {names} from the pool, what the sentence must say)
    (["report", "--results", "/nonexistent", "--out", "{dir}/rep"], "is not a folder"),
    (["report", "--results", "{empty.csv}", "--out", "{dir}/rep"], "is not a folder"),
    (["report", "--results", "{r_torn}", "--out", "{dir}/rep"], "line 2: not a JSON"),
    (
        ["report", "--results", "{r_string}", "--out", "{dir}/rep"],
        "'resolved' is \"true\"",
    ),
    (
        ["report", "--results", "{r_conflict}", "--out", "{dir}/rep"],
        "is also on line 1",
    ),
    (
        ["report", "--results", "{r_nomanifest}", "--out", "{dir}/rep"],
        "no manifest.json",
    ),
    (
        ["report", "--results", "{r_badmanifest}", "--out", "{dir}/rep"],
        "not a readable",
    ),
    (["metrics", "--attempts", "{missing}"], "No attempts.jsonl under"),
    (["metrics", "--attempts", "{a_string_verdict.jsonl}"], "line 1: 'resolved' is \"false\", not true or false"),
    (["metrics", "--attempts", "{a_bool_position.jsonl}"], "line 1: 'j' is true, not a whole number ≥ 1"),
    (["metrics", "--attempts", "{a_negative_sample.jsonl}"], "line 1: 'sample' is -1"),
    (
        ["metrics", "--attempts", "{a_conflict.jsonl}"],
        "line 2: attempt first i=1 j=1 sample=0 of sequence s is also on line 1",
    ),
    (["metrics", "--attempts", "{a_torn.jsonl}"], "line 2: not a JSON object"),
    (["metrics", "--attempts", "{a_list.jsonl}"], "line 2: not a JSON object"),
    (["metrics", "--attempts", "{a_bad_kind.jsonl}"], 'kind "second" is not first, retest or zeroshot'),
    (["metrics", "--attempts", "{a_retest_no_i.jsonl}"], "a retest needs its learning step 'i'"),
    (["metrics", "--attempts", "{a_good.jsonl}", "--zero-shot", "{a_string_verdict.jsonl}"], "'resolved' is \"false\""),
    (["metrics", "--attempts", "{nonutf8.jsonl}"], "line 1: not a JSON object"),
    (["similarity", "--dataset", "mini", "--pairs", "{empty.csv}"], "No pairs to score"),
    (["similarity", "--dataset", "mini", "--pairs", "{header.csv}"], "No pairs to score"),
    (["similarity", "--dataset", "mini", "--pairs", "{dir}"], "Is a directory"),
    (
        ["solve", "--dataset", "mini", "--instance", MINI_ID, "--model", "replay:{list.jsonl}"],
        "line 1: not a JSON object",
    ),
    (["solve", "--dataset", "mini", "--instance", MINI_ID, "--model", "replay:{empty.jsonl}"], "is empty"),
    (["solve", "--dataset", "mini", "--instance", MINI_ID, "--model", "replay:{blank.jsonl}"], "is empty"),
    (
        ["solve", "--dataset", "mini", "--instance", MINI_ID, "--model", "replay:{nopatch.jsonl}"],
        "needs instance_id and model_patch",
    ),
    (
        ["solve", "--dataset", "mini", "--instance", MINI_ID, "--model", "replay:{badreply.jsonl}"],
        "not a recorded reply",
    ),
    (["solve", "--dataset", "mini", "--instance", MINI_ID, "--model", "replay:{missing}"], "does not exist"),
    (["stats", "--dataset", "mini", "--json", "/proc/version"], "Cannot write --json /proc/version"),
    (["stats", "--dataset", "mini", "--json", "{dir}"], "is a folder, not a file to write"),
    (["stats", "--dataset", "mini", "--json", "{empty.csv}/x.json"], "which is not a folder"),
    (["stats", "--dataset", "mini", "--out", "{dir}"], "is a folder, not a file to write"),
    (["stats", "--dataset", "{empty.jsonl}"], "has no task"),
    (["stats", "--dataset", "{list.jsonl}"], "line 1: not a JSON object"),
    (["build-dataset", "{empty.jsonl}", "-o", "{dir}/o.json"], "No repository of"),
    (["poison", "--summarize", "{empty.csv}"], "is not a CSV table"),
    (["poison", "--summarize", "{drift_header.csv}"], "has no rows"),
    (["poison", "--summarize", "{junk.csv}"], "drift table needs"),
    (["validate", "--merge", "{records_list.json}"], "does not hold validation records"),
    (["run", "--plan", "{bad.yaml}", "--out", "{dir}/out"], "not valid YAML"),
    (["run", "--plan", "{list.yaml}", "--out", "{dir}/out"], "mapping"),
    (["run", "--plan", "{models5.yaml}", "--out", "{dir}/out"], "models"),
]


def fill(text: str, F: dict) -> str:
    "`text` with each {name} of the pool replaced by its path."
    for k, v in F.items():
        text = text.replace("{" + k + "}", str(v))
    return text


@pytest.mark.parametrize("argv,says", FILES, ids=[f"{i}-{a[0]}" for i, (a, _) in enumerate(FILES)])
def test_bad_files_are_one_sentence(F, argv, says):
    rc, out, err = cli(*[fill(a, F) for a in argv])
    assert rc == 2, (rc, out, err)
    assert one_sentence(err) and says in err, err


# --- Infrastructure is counted, never a verdict ---------------------------------------------------------------------


def test_metrics_leave_out_infrastructure_failures(tmp_path):
    up = [attempt(j=1, resolved=True), attempt(j=2, i=2, resolved=False)]
    cell(tmp_path, "up", lines(*up, attempt(j=2, i=2, sample=1, resolved=False, infra_reason="env-build")))
    cell(tmp_path, "down", lines(*[a | {"resolved": False, "exit_reason": "model_error"} for a in up]))
    rc, out, err = cli("metrics", "--attempts", tmp_path, "--n-resamples", "20", "--json", tmp_path / "m.json")
    assert rc == 0, err
    j = json.loads((tmp_path / "m.json").read_text())
    cl_p = {r["cell"]: r["estimate"] for r in j["rows"] if r["metric"] == "CL_P"}
    assert cl_p == {"up": 0.5}  # the env-build failure changed nothing; the down cell has no metric at all (never 0)
    assert "down s: 2 of 2 attempts left out as infrastructure failures (model_error 2); no metrics" in out
    assert "up s: 1 of 3 attempts left out as infrastructure failures (env-build 1); metrics from the rest" in out
    assert [r["left_out"] for r in j["left_out"]] == [2, 1]


def test_report_of_a_down_model_shows_the_count_not_acc_zero(tmp_path):
    down = [attempt(j=j, i=j, resolved=False, exit_reason="model_error") for j in (1, 2)]
    cell(tmp_path / "results", "down", lines(*down), model="openai:http://localhost:9/v1:m")
    rc, out, err = cli("report", "--results", tmp_path / "results", "--out", tmp_path / "rep")
    assert rc == 0, err
    index = (tmp_path / "rep" / "README.md").read_text()
    assert (
        "Left out, and counted as failures" in index and "model_error 2" in index and "none (nothing measured)" in index
    )
    assert "Continual-learning metrics" not in index and not (tmp_path / "rep" / "cl_metrics.csv").exists()


# --- Ids from data never become paths outside the logs folder -----------------------------------------------------


def test_validate_labels_hostile_ids_and_writes_nothing_outside_logs(tmp_path):
    row = dict(repo="swecl-mini/textkit", base_commit="0" * 40, created_at="2024-01-01T00:00:00Z")
    row |= dict(
        problem_statement="p", patch="diff", test_patch="diff", FAIL_TO_PASS=["t"], PASS_TO_PASS=[], version="0.1"
    )
    ids = ["../../escaped", "x" * 300, "a/../../b"]
    (tmp_path / "hostile.jsonl").write_text(lines(*[row | {"instance_id": i} for i in ids]))
    logs = tmp_path / "deep" / "logs"
    rc, out, err = cli(
        "validate",
        "--dataset",
        tmp_path / "hostile.jsonl",
        "--policy",
        "empty",
        "--logs",
        logs,
        "--json",
        tmp_path / "v.json",
    )
    assert rc == 0, err
    recs = json.loads((tmp_path / "v.json").read_text())
    assert [r["infra_reason"] for r in recs] == ["unsafe-id"] * 3
    assert all(r["error"].endswith("; the task was not graded.") and r["resolved"] is False for r in recs)
    assert not (tmp_path / "escaped.log").exists() and not (tmp_path / "b.log").exists()
    assert "3 gradings: 0 as expected, 0 unexpected, 3 labelled with an infrastructure reason" in out


def test_solve_and_sandbox_refuse_a_hostile_id_they_are_asked_for(tmp_path):
    row = dict(repo="swecl-mini/textkit", base_commit="0" * 40, created_at="2024-01-01T00:00:00Z")
    row |= dict(problem_statement="p", patch="diff", test_patch="diff", FAIL_TO_PASS=["t"], PASS_TO_PASS=[])
    (tmp_path / "hostile.jsonl").write_text(lines(row | {"instance_id": "../../escaped"}))
    for argv in (["solve", "--logs", tmp_path / "logs"], ["sandbox", "--", "true"]):
        rc, out, err = cli(argv[0], "--dataset", tmp_path / "hostile.jsonl", "--instance", "../../escaped", *argv[1:])
        assert rc == 2 and one_sentence(err), err
        assert "'../../escaped' is not one path component" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hostile.jsonl"]


# --- Generated command lines never end in a traceback ---------------------------------------------------------------

NUMBER_TEXT = st.sampled_from(["-1", "0", "1", "2", "-0", "1.5", "nan", "inf", "-inf", "1e400", "abc", "", " ", "0x10"])
JUNK = st.text(alphabet=string.printable, max_size=12)


def templates(F) -> st.SearchStrategy:
    "Command lines of cheap commands, with their value slots drawn from numbers, the file pool and junk."
    path = st.sampled_from([str(v) for v in F.values()] + ["/proc/version", "/dev/null", "", "-", "/"])
    attempts = st.sampled_from([str(F[k]) for k in F if str(k).startswith("a_")] + [str(F["missing"]), str(F["dir"])])
    results = st.sampled_from([str(F[k]) for k in F if str(k).startswith("r_")] + ["/nonexistent", str(F["empty.csv"])])
    replay = st.sampled_from(["empty.jsonl", "blank.jsonl", "list.jsonl", "nopatch.jsonl", "badreply.jsonl", "missing"])
    flag = lambda name, values: st.one_of(st.just([]), values.map(lambda v: [name, v]))
    out = st.just(["--out", str(F["dir"] / "rep")])
    metrics = st.tuples(
        st.just(["metrics", "--attempts"]),
        attempts.map(lambda v: [v]),
        flag("--zero-shot", attempts),
        flag("--n-resamples", NUMBER_TEXT),
        flag("--beta", NUMBER_TEXT),
        flag("--seed", NUMBER_TEXT),
        flag("--json", path),
    )
    report = st.tuples(st.just(["report"]), out, flag("--results", results), flag("--json", path))
    similarity = st.tuples(
        st.just(["similarity", "--dataset", "mini"]),
        flag("--pairs", path),
        flag("--per-repo", NUMBER_TEXT),
        flag("--seed", NUMBER_TEXT),
        flag("--json", path),
    )
    stats = st.tuples(st.just(["stats"]), flag("--dataset", path), flag("--out", path), flag("--json", path))
    solve = st.tuples(
        st.just(["solve", "--dataset", "mini", "--instance", MINI_ID]),
        replay.map(lambda k: ["--model", f"replay:{F[k]}"]),
        flag("--max-steps", NUMBER_TEXT),
        flag("--max-cost", NUMBER_TEXT),
        flag("--max-seconds", NUMBER_TEXT),
        flag("--timeout", NUMBER_TEXT),
    )
    bench = st.tuples(st.just(["bench", "sandbox", "--dataset"]), path.map(lambda v: [v]), flag("--n", NUMBER_TEXT))
    poison = st.tuples(st.just(["poison"]), flag("--summarize", path), flag("--n", NUMBER_TEXT), flag("--cells", JUNK))
    junk = st.tuples(st.sampled_from([["stats"], ["metrics"], ["envs"], ["report"], []]), st.lists(JUNK, max_size=3))
    cmd = st.one_of(metrics, report, similarity, stats, solve, bench, poison, junk)
    return cmd.map(lambda parts: [x for p in parts for x in p])


def test_generated_command_lines_never_end_in_a_traceback(F, monkeypatch):
    monkeypatch.chdir(F["dir"])  # relative paths such as "-" are written there, never into the checkout
    seen = {0: 0, 1: 0, 2: 0}

    @settings(
        max_examples=N_COMMAND_LINES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        derandomize=True,
    )
    @given(templates(F))
    def check(argv):
        rc, out, err = cli(*argv)
        assert rc in (0, 1, 2), (argv, rc, err)
        if rc == 2 and argv:  # (no command at all: the help on stdout, exit 2)
            assert one_sentence(err), (argv, err)
        seen[rc] += 1

    check()
    assert seen[2] > 0 and seen[0] > 0, seen  # both refusals and accepted command lines were generated
