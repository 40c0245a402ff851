"""Adversarial cases for the memory store's files (issue 16): every fault is made for real on a real store folder
(records.jsonl, vectors.f32, store.json) and real processes are killed with SIGKILL mid-add. Each case asserts the
outcome: a one-sentence `MemoryError_` (an `InfraError`, labelled `memory-corrupt`) that leaves the files as they were,
or, for the torn tail a crash can leave, an exact repair with a warning after which every record still carries its own
vector (no label moved)."""

import json
import random
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

faiss = pytest.importorskip("faiss")  # the memory extra

from swecl.base.core import InfraError  # noqa: E402
from swecl.base.schema import Experience  # noqa: E402
from swecl.memory.experience import MemoryError_, representation  # noqa: E402
from swecl.memory.memory import HashingEmbedder, MemoryStore  # noqa: E402

EMB = HashingEmbedder()
ROW = EMB.dim * 4
ADDS = [1, 1, 1, 1, 1, 3, 2]  # ten records in seven adds (batches of 1, 3 and 2)


def exp(i: int) -> Experience:
    "Experience i: a text of its own words, so its vector is unlike every other's."
    return Experience(f"t{i}", "a/b", f"p{i}", summary=f"task{i} alpha{i} beta{i} gamma{i}", success=i % 2 == 0)


@pytest.fixture
def store(tmp_path) -> Path:
    d, i = tmp_path / "m", 0
    s = MemoryStore(d, EMB)
    for n in ADDS:
        s.add([exp(j) for j in range(i, i + n)])
        i += n
    return d


def load(d: Path):
    "(store, warnings) of a load."
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s = MemoryStore(d, EMB)
    return s, [str(x.message) for x in w]


def labels_hold(s: MemoryStore, ids: list):
    "The store holds exactly experiences `ids`, in order, each under its own vector (its own text finds it at 1.0)."
    assert [r.task_id for r in s.records] == [f"t{i}" for i in ids]
    for i, r in enumerate(s.records):
        np.testing.assert_allclose(s.index.reconstruct(i), EMB.encode([representation(r, "summary")])[0], atol=1e-6)
        top = s.search(representation(r, "summary"), 1)[0]
        assert (top.experience.task_id, round(top.score, 4)) == (r.task_id, 1.0)


def files(d: Path) -> tuple:
    return tuple((d / n).read_bytes() if (d / n).exists() else None for n in ("records.jsonl", "vectors.f32"))


def refused(d: Path, *contains: str):
    "Loading refuses with one sentence holding `contains`, labelled infrastructure, and changes no file."
    before = files(d)
    with pytest.raises(MemoryError_) as e:
        load(d)
    msg = str(e.value)
    assert isinstance(e.value, InfraError) and e.value.reason == "memory-corrupt", e.value.reason
    assert msg.count(". ") == 0 and msg.endswith("."), msg  # one sentence
    for c in contains:
        assert c in msg, msg
    assert "delete" in msg or "restore" in msg, msg  # says what to do
    assert files(d) == before
    return msg


def lines(d: Path) -> list:
    return (d / "records.jsonl").read_bytes().splitlines(keepends=True)


def test_intact_store_loads_silently(store):
    s, w = load(store)
    assert w == []
    labels_hold(s, range(10))


# --- vectors.f32 -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("row", [0, 4, 9])
@pytest.mark.parametrize("bit", [0, 22, 23, 30, 31])  # mantissa low/high, exponent low/high, sign
def test_bit_flip_in_a_vector_is_refused(store, row, bit):
    v = np.fromfile(store / "vectors.f32", "uint32")
    v[row * EMB.dim + 7] ^= np.uint32(1 << bit)
    v.tofile(store / "vectors.f32")
    refused(store, f"vectors.f32 row {row} (task t{row}) does not match its checksum", f"records.jsonl line {row + 1}")


def test_flips_in_several_rows_name_the_first_and_count(store):
    v = np.fromfile(store / "vectors.f32", "uint8")
    for row in (2, 6, 7):
        v[row * ROW + 100] ^= 0x10
    v.tofile(store / "vectors.f32")
    refused(store, "row 2 (task t2)", "(3 row(s) differ)")


def test_garbage_vector_values_are_refused_not_scored(store):
    "The issue's case: a vector of huge values (scores of -1.9e37) must never reach a search."
    v = np.fromfile(store / "vectors.f32", "float32")
    v[3 * EMB.dim : 4 * EMB.dim] = -1.9e37
    v.tofile(store / "vectors.f32")
    refused(store, "row 3 (task t3)")


@pytest.mark.parametrize("cut_bytes", [ROW, 3, ROW * 4 + 5])
def test_truncated_vectors_are_refused(store, cut_bytes):
    size = (store / "vectors.f32").stat().st_size
    with open(store / "vectors.f32", "r+b") as f:
        f.truncate(size - cut_bytes)
    have = (size - cut_bytes) // ROW
    refused(store, f"holds {have} vectors for the 10 records of records.jsonl", f"rows {have} to 9")


def test_deleted_vectors_are_refused(store):
    "The issue's case: 10 records against 5 vectors (rows cut out of the middle)."
    b = (store / "vectors.f32").read_bytes()
    (store / "vectors.f32").write_bytes(b[: 2 * ROW] + b[7 * ROW :])
    refused(store, "holds 5 vectors for the 10 records")


def test_missing_vector_file_is_refused(store):
    (store / "vectors.f32").unlink()
    refused(store, "holds 0 vectors for the 10 records")


def test_vectors_swapped_between_rows_are_refused(store):
    v = np.fromfile(store / "vectors.f32", "float32").reshape(10, -1)
    v[[1, 2]] = v[[2, 1]]
    v.tofile(store / "vectors.f32")
    refused(store, "row 1 (task t1)", "(2 row(s) differ)")


# --- records.jsonl ---------------------------------------------------------------------------------------------------


def test_torn_middle_line_is_refused(store):
    ls = lines(store)
    ls[3] = ls[3][:40] + b"\n"
    (store / "records.jsonl").write_bytes(b"".join(ls))
    refused(store, "records.jsonl line 4 is not a JSON record")


def test_torn_line_with_a_record_appended_onto_it_is_refused(store):
    "The issue's case: the next record written onto a torn line (one line, two halves) is corrupt, not two records."
    ls = lines(store)
    ls[5] = ls[5][:50] + ls[6]
    del ls[6]
    (store / "records.jsonl").write_bytes(b"".join(ls))
    refused(store, "line 6 is not a JSON record")


@pytest.mark.parametrize("where", [0, 4, 9])
def test_duplicated_record_is_refused(store, where):
    ls = lines(store)
    ls.insert(where + 1, ls[where])
    (store / "records.jsonl").write_bytes(b"".join(ls))
    refused(store, f"line {where + 2} (task t{where}) repeats index {where} of line {where + 1}")


def test_reordered_records_are_refused(store):
    ls = lines(store)
    ls[1], ls[4] = ls[4], ls[1]
    (store / "records.jsonl").write_bytes(b"".join(ls))
    refused(store, "line 2 (task t4) is out of place: it holds index 4 where index 1 belongs")


def test_deleted_middle_record_is_refused(store):
    ls = lines(store)
    del ls[2]
    (store / "records.jsonl").write_bytes(b"".join(ls))
    refused(store, "line 3 (task t3) is out of place")


def test_swapped_labels_are_refused(store):
    "Two records' task ids swapped (each keeps its index and vector checksum): the record checksum catches it."
    ls = [json.loads(x) for x in lines(store)]
    ls[1]["task_id"], ls[2]["task_id"] = ls[2]["task_id"], ls[1]["task_id"]
    (store / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ls))
    refused(store, "line 2 (task t2) was changed after it was written")


def test_edited_outcome_is_refused(store):
    ls = [json.loads(x) for x in lines(store)]
    ls[7]["success"] = not ls[7]["success"]
    (store / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ls))
    refused(store, "line 8 (task t7) was changed")


def test_record_without_vector_entry_among_new_ones_is_refused(store):
    (store / "records.jsonl").open("a").write(json.dumps(exp(10).to_dict()) + "\n")
    refused(store, "line 11 (task t10) has no vector entry")


@pytest.mark.parametrize("key, value", [("index", "3"), ("index", 3.0), ("last", None), ("sha256", 7)])
def test_vector_entry_of_a_wrong_type_is_refused(store, key, value):
    ls = [json.loads(x) for x in lines(store)]
    ls[3]["vector"][key] = value
    (store / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ls))
    refused(store, "line 4 (task t3) has no vector entry (index and checksums)")


def test_unreadable_store_json_is_refused(store):
    (store / "store.json").write_text("{not json")
    with pytest.raises(MemoryError_, match="store.json is not a store description; restore it or delete"):
        MemoryStore(store, EMB)


# --- the torn tail a crash leaves: exact repair ------------------------------------------------------------------------


def test_torn_last_line_is_cut_exactly(store):
    ls = lines(store)
    (store / "records.jsonl").write_bytes(b"".join(ls[:-1]) + ls[-1][:30])
    s, w = load(store)
    assert w == [
        f"{store}: a torn add was cut back (1 record(s) of an unfinished add, a torn record line, 2 vector(s) without "
        "records); the 8 records before it are unchanged."
    ]  # t8 and t9 were one add: t9's line torn, so t8 goes too
    labels_hold(s, range(8))
    assert files(store) == (b"".join(ls[:8]), files(store)[1]) and (store / "vectors.f32").stat().st_size == 8 * ROW
    s.add([exp(11)])
    s, w = load(store)
    assert w == []
    labels_hold(s, [*range(8), 11])


def test_vectors_without_records_are_cut(store):
    with open(store / "vectors.f32", "ab") as f:
        f.write(EMB.encode(["an orphan"]).tobytes() + b"\x01\x02")  # a whole row and a torn one
    s, w = load(store)
    assert w == [
        f"{store}: a torn add was cut back (1 vector(s) without records, 2 byte(s) of a torn vector); the 10 records before it are unchanged."
    ]
    labels_hold(s, range(10))
    s.add([exp(12)])
    labels_hold(load(store)[0], [*range(10), 12])


def test_lost_last_add_is_cut_and_labels_hold(store):
    "Records of the last add gone entirely (its vectors stayed): a crash before any record landed."
    ls = lines(store)
    (store / "records.jsonl").write_bytes(b"".join(ls[:8]))
    s, w = load(store)
    assert "(2 vector(s) without records)" in w[0]
    labels_hold(s, range(8))


def test_half_of_an_add_is_cut_whole(store):
    "An add of three (t5, t6, t7) whose last record never landed: the whole add goes, the store is all-or-nothing."
    ls = lines(store)
    (store / "records.jsonl").write_bytes(b"".join(ls[:7]))
    with open(store / "vectors.f32", "r+b") as f:
        f.truncate(8 * ROW)
    s, w = load(store)
    assert "(2 record(s) of an unfinished add, 3 vector(s) without records)" in w[0]
    labels_hold(s, range(5))


# --- old stores ------------------------------------------------------------------------------------------------------


def old_store(d: Path, n_records: int, n_vectors: int):
    "A store as the first format wrote it: records without vector entries."
    d.mkdir()
    (d / "store.json").write_text(json.dumps({"embedder": EMB.name, "dim": EMB.dim, "representation": "summary"}))
    (d / "records.jsonl").write_text("".join(json.dumps(exp(i).to_dict()) + "\n" for i in range(n_records)))
    (d / "vectors.f32").write_bytes(EMB.encode([exp(i).summary for i in range(n_vectors)]).tobytes())


def test_old_store_is_migrated_with_a_warning(tmp_path):
    old_store(tmp_path / "m", 6, 7)
    s, w = load(tmp_path / "m")
    assert len(w) == 2 and "old store without checksums was migrated (6 records; counts checked only)" in w[0]
    assert "(1 vector(s) without records)" in w[1]
    labels_hold(s, range(6))
    s.add([exp(6)])
    s, w = load(tmp_path / "m")
    assert w == []
    labels_hold(s, range(7))


def test_old_store_with_missing_vectors_is_refused(tmp_path):
    old_store(tmp_path / "m", 6, 4)
    msg = refused(
        tmp_path / "m", "old memory store (no checksums) whose labels cannot be trusted (6 records, 4 vectors)"
    )
    assert "delete it and resume the run to rebuild the memory" in msg


def test_old_store_that_once_quarantined_lines_is_refused(tmp_path):
    "The old loader quarantined corrupt lines and kept their vectors: labels after them may be shifted."
    old_store(tmp_path / "m", 6, 6)
    (tmp_path / "m" / "records.jsonl.quarantine").write_text('3\t{"task_id": "t9", "re\n')
    refused(tmp_path / "m", "(lines of it were once quarantined); delete it and resume")


# --- changed under a running store -----------------------------------------------------------------------------------


def test_add_refuses_vectors_changed_while_in_use(store):
    s, _ = load(store)
    with open(store / "vectors.f32", "ab") as f:
        f.write(EMB.encode(["someone else"]).tobytes())
    before = files(store)
    with pytest.raises(MemoryError_, match="holds 11 vectors, not the 10 this store loaded"):
        s.add([exp(13)])
    assert files(store) == before and len(s) == 10


# --- real processes killed with SIGKILL mid-add ----------------------------------------------------------------------

CHILD = """
import os, signal, sys
from swecl.memory import experience
from swecl.memory.memory import HashingEmbedder, MemoryStore
from swecl.base.schema import Experience

where, first, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
real_append = experience.append_jsonl

def killed(path, *records):
    if where == "mid-records":  # half the add's lines reach the file, then the process dies
        data = "".join(__import__("json").dumps(r) + "\\n" for r in records).encode()
        with open(path, "ab") as f:
            f.write(data[: len(data) // 2])
            f.flush()
    os.kill(os.getpid(), signal.SIGKILL)

if where != "none":
    experience.append_jsonl = killed  # SIGKILL at this point of the add
s = MemoryStore(sys.argv[1], HashingEmbedder())
ids = [first + i for i in range(n)]
s.add([Experience(f"t{i}", "a/b", f"p{i}", summary=f"task{i} alpha{i} beta{i} gamma{i}", success=i % 2 == 0) for i in ids])
print("added", flush=True)
"""


def child(tmp_path, d, where, first, n):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return subprocess.run(
        [sys.executable, str(script), str(d), where, str(first), str(n)], capture_output=True, text=True
    )


def test_sigkill_between_vector_and_record_writes(store, tmp_path):
    "The issue's case: after the crash, a retest must not retrieve its own entry under another task's id."
    r = child(tmp_path, store, "between", 10, 1)
    assert r.returncode == -signal.SIGKILL, r.stderr[-2000:]
    assert (store / "vectors.f32").stat().st_size == 11 * ROW and len(lines(store)) == 10  # the torn add is on disk
    s, w = load(store)
    assert "(1 vector(s) without records)" in w[0]
    labels_hold(s, range(10))
    s.add([exp(11)])  # the next task's experience: it must not take t10's orphan vector
    s, w = load(store)
    assert w == []
    labels_hold(s, [*range(10), 11])
    assert all(h.experience.task_id != "t11" for h in s.search(exp(10).summary, 3) if h.score > 0.99)


def test_sigkill_mid_record_write_cuts_the_whole_add(store, tmp_path):
    r = child(tmp_path, store, "mid-records", 10, 4)
    assert r.returncode == -signal.SIGKILL, r.stderr[-2000:]
    s, w = load(store)
    assert w and "a torn add was cut back" in w[0] and "4 vector(s) without records" in w[0]
    labels_hold(s, range(10))
    r = child(tmp_path, store, "none", 10, 4)  # the add done again, by a process that lives
    assert r.returncode == 0 and "added" in r.stdout, r.stderr[-2000:]
    s, w = load(store)
    assert w == []
    labels_hold(s, range(14))


LOOP = """
import sys
import numpy as np
from swecl.memory.memory import HashingEmbedder, MemoryStore
from swecl.base.schema import Experience

s, emb = MemoryStore(sys.argv[1], HashingEmbedder()), HashingEmbedder()
print("ready", flush=True)
while True:
    ids = range(len(s), len(s) + 50)
    xs = [Experience(f"t{i}", "a/b", f"p{i}", summary=f"task{i} alpha{i} beta{i} gamma{i}", success=i % 2 == 0) for i in ids]
    s.add(xs)
"""


@pytest.mark.parametrize("seed", range(4))
def test_sigkill_at_a_random_moment_of_large_adds(tmp_path, seed):
    "A process adding batches of 50 is killed at a random moment: the store loads (repaired or not), whole adds only."
    d, script = tmp_path / "m", tmp_path / "loop.py"
    script.write_text(LOOP)
    p = subprocess.Popen(
        [sys.executable, str(script), str(d)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert p.stdout.readline().strip() == "ready", p.stderr.read()[-2000:]
    time.sleep(random.Random(seed).uniform(0.2, 1.5))
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert p.returncode == -signal.SIGKILL
    s, w = load(d)
    assert len(s) % 50 == 0 and len(s) > 0
    assert all("a torn add was cut back" in x for x in w), w
    ids = list(range(len(s)))
    assert [r.task_id for r in s.records] == [f"t{i}" for i in ids]
    np.testing.assert_allclose(
        np.vstack([s.index.reconstruct(i) for i in ids]),
        EMB.encode([f"task{i} alpha{i} beta{i} gamma{i}" for i in ids]),
        atol=1e-6,
    )
