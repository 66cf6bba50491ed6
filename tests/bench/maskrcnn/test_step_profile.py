"""step_profile.py's summary of a profiler trace, on hand-made traces in Kineto's format."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", "maskrcnn"))
import step_profile  # noqa: E402


def annotation(name, ts, dur, tid=1):
    return {"ph": "X", "cat": "user_annotation", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid}


def launch(correlation, ts, name="cudaLaunchKernel", dur=2, tid=1):
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid,
            "args": {"correlation": correlation}}


def kernel(correlation, ts, dur, name="k", cat="kernel"):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 0, "tid": 7,
            "args": {"correlation": correlation}}


def one_step(offset, correlation):
    """A step of 1000 us: a backbone kernel, an RPN kernel after a host wait, a backward kernel
    launched from autograd's thread, an optimizer copy; kernels overlap once."""
    o, c = offset, correlation
    return [
        annotation("bench.step", o, 1000),
        annotation("bench.forward", o + 10, 400),
        annotation("mask_rcnn.backbone", o + 20, 100),
        launch(c, o + 30), kernel(c, o + 40, 200, name="conv"),
        annotation("mask_rcnn.rpn", o + 150, 200),
        launch(c + 1, o + 160, name="cudaStreamSynchronize", dur=90),
        launch(c + 2, o + 300), kernel(c + 2, o + 220, 100, name="nms"),  # overlaps conv by 20 us
        annotation("bench.backward", o + 420, 400),
        launch(c + 3, o + 500, tid=2), kernel(c + 3, o + 510, 300, name="conv_backward"),
        annotation("bench.optimizer", o + 830, 100),
        launch(c + 4, o + 840, name="cudaMemcpyAsync"), kernel(c + 4, o + 850, 50, name="copy", cat="gpu_memcpy"),
    ]


def test_summarize_attributes_gpu_work_to_steps_and_phases():
    events = one_step(0, 100) + one_step(5000, 200)
    # Work outside any step (warm-up, inference) is not counted.
    events += [launch(900, 3000), kernel(900, 3010, 500, name="outside")]
    summary = step_profile.summarize(events)
    assert summary["steps"] == 2
    assert summary["wall_ms"] == pytest.approx(1.0)
    # conv 40..240 and nms 220..320 overlap: 280 us, plus 300 + 50.
    assert summary["gpu_busy_ms"] == pytest.approx(0.63)
    assert summary["gpu_idle_ms"] == pytest.approx(0.37)
    assert summary["kernels"] == 3
    assert summary["copies"] == 1
    assert summary["syncs"] == 1
    assert summary["sync_ms"] == pytest.approx(0.09)
    phases = summary["phases"]
    assert phases["mask_rcnn.backbone"] == {"host_ms": pytest.approx(0.1), "gpu_ms": pytest.approx(0.2), "kernels": 1}
    assert phases["mask_rcnn.rpn"]["gpu_ms"] == pytest.approx(0.1)
    # Launched by another thread while the step's thread was inside bench.backward.
    assert phases["bench.backward"]["kernels"] == 1
    assert phases["bench.backward"]["gpu_ms"] == pytest.approx(0.3)
    assert phases["bench.optimizer"]["kernels"] == 0 and phases["bench.optimizer"]["gpu_ms"] == pytest.approx(0.05)
    # bench.forward's own host time excludes the model phases nested in it.
    assert phases["bench.forward"]["host_ms"] == pytest.approx(0.1)
    assert [k["name"] for k in summary["top_kernels"]] == ["conv_backward", "conv", "nms"]
    assert "outside" not in [k["name"] for k in summary["top_kernels"]]


def test_summarize_names_a_trace_without_steps():
    with pytest.raises(ValueError, match="no 'bench.step' range"):
        step_profile.summarize([launch(1, 0), kernel(1, 5, 10)])


def test_main_reports_each_configuration_side_by_side(tmp_path, capsys):
    for side in ("torchvision", "dtrain", "dtrain-channels_last"):
        (tmp_path / f"{side}_4_bfloat16.json").write_text(json.dumps({"traceEvents": one_step(0, 1)}))
    (tmp_path / "notes.txt").write_text("not a trace")
    out_json = tmp_path / "summary.json"
    assert step_profile.main([str(tmp_path), "--json", str(out_json)]) == 0
    report = capsys.readouterr().out
    assert "### 4 images, bfloat16" in report
    header = next(line for line in report.splitlines() if line.startswith("| |"))
    assert header == "| | torchvision | dtrain | dtrain-channels_last |"
    assert "| kernels / copies / fills | 3 / 1 / 0 | 3 / 1 / 0 | 3 / 1 / 0 |" in report
    assert set(json.loads(out_json.read_text())["4 images, bfloat16"]) == {"torchvision", "dtrain",
                                                                          "dtrain-channels_last"}


def test_main_fails_naming_a_broken_trace(tmp_path, capsys):
    (tmp_path / "dtrain_2_off.json").write_text("{not json")
    assert step_profile.main([str(tmp_path)]) == 1
    assert "dtrain_2_off.json" in capsys.readouterr().err
