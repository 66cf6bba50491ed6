"""step_model.py's arithmetic: the terms docs/scaling.md's projections are made of."""
import math
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", "scaling"))
import step_model  # noqa: E402
from step_model import Job, Layout, Link, Machine  # noqa: E402


def test_expected_max_of_normals_matches_closed_forms():
    assert step_model.expected_max_of_normals(1) == 0.0
    assert step_model.expected_max_of_normals(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-6)
    assert step_model.expected_max_of_normals(3) == pytest.approx(1.5 / math.sqrt(math.pi), abs=1e-6)
    # Tabulated order statistics of the standard normal distribution.
    assert step_model.expected_max_of_normals(10) == pytest.approx(1.5388, abs=1e-3)
    assert step_model.expected_max_of_normals(512) == pytest.approx(3.04, abs=0.01)


def test_ring_allreduce_moves_twice_the_bytes_less_a_share_and_pays_a_latency_per_step():
    link = Link(latency_s=1e-5, bandwidth=1e9)
    assert step_model.ring_allreduce_s(1e9, 1, link) == 0.0
    assert step_model.ring_allreduce_s(1e9, 2, link) == pytest.approx(1.0 + 2e-5)
    assert step_model.ring_allreduce_s(1e9, 4, link, buffers=10) == pytest.approx(1.5 + 10 * 6e-5)


def test_halving_doubling_pays_log_n_latencies_for_the_rings_bytes():
    link = Link(latency_s=1e-5, bandwidth=1e9)
    ring = step_model.ring_allreduce_s(0, 1024, link, buffers=3)
    halving = step_model.halving_doubling_allreduce_s(0, 1024, link, buffers=3)
    assert ring == pytest.approx(3 * 2 * 1023 * 1e-5)
    assert halving == pytest.approx(3 * 2 * 10 * 1e-5)
    assert step_model.halving_doubling_allreduce_s(1e9, 8, link) - 6 * 1e-5 == pytest.approx(1.75)


def test_hierarchy_crosses_hosts_with_the_whole_share_once_per_host():
    intra, inter = Link(0.0, 100e9), Link(0.0, 1e9)
    nbytes = 8e9
    # 2 hosts x 4 ranks: within the host 2 x 3/4 of the bytes, across 2 x 1/2 of them.
    t = step_model.hierarchical_allreduce_s(nbytes, Layout(2, 4), intra, inter)
    assert t == pytest.approx(2 * 0.75 * 8e9 / 100e9 + 8e9 / 1e9)
    machine = Machine(intra, inter, overlaps_compute=False)
    assert step_model.allreduce_s(nbytes, Layout(1, 4), machine, 1) == pytest.approx(1.5 * 8e9 / 100e9)
    assert step_model.allreduce_s(nbytes, Layout(4, 1), machine, 1) == pytest.approx(1.5 * 8e9 / 1e9)


def job(**changes):
    values = dict(compute_s=0.1, compute_sd_s=0.01, gradient_bytes=10**8, buffers=10, backward_share=0.6)
    values.update(changes)
    return Job(**values)


def test_one_rank_is_its_compute_alone():
    machine = Machine(Link(1e-6, 1e10, 1e-4), Link(1e-5, 1e9, 1e-4), overlaps_compute=False)
    t = step_model.step_time(job(sync_points=40), Layout(1, 1), machine, negotiation_s=0.0)
    assert t.total_s == pytest.approx(0.1)


def test_every_rank_waits_for_the_slowest_unless_waiting_gives_its_core_to_another():
    machine = Machine(Link(1e-6, 1e9), Link(1e-5, 1e9), overlaps_compute=False)
    t = step_model.step_time(job(), Layout(1, 4), machine)
    assert t.lockstep_s == pytest.approx(0.01 * step_model.expected_max_of_normals(4))
    oversubscribed = Machine(Link(1e-6, 1e9), Link(1e-5, 1e9), overlaps_compute=False, cpu_stretch=2.0)
    assert step_model.step_time(job(), Layout(1, 4), oversubscribed).lockstep_s == 0.0


def test_without_overlap_the_whole_allreduce_and_every_sync_point_add_to_the_step():
    machine = Machine(Link(1e-6, 1e9, 2e-4), Link(1e-5, 1e9, 1e-4), overlaps_compute=False, cpu_stretch=2.0)
    t = step_model.step_time(job(sync_points=40), Layout(1, 4), machine, negotiation_s=1e-4)
    # 0.15 s of bytes cannot keep up with 0.06 s of backward: the gradients go in as few
    # fusion buffers as hold them (2 of 64 MiB).
    assert t.allreduce_s == pytest.approx(2.0 * (1.5 * 10**8 / 1e9 + 2 * 6 * 1e-6))
    assert t.sync_s == pytest.approx(40 * 2 * 2e-4 * 2.0)  # two recursive-doubling rounds
    assert t.negotiation_s == pytest.approx(1e-4 + 2 * 1e-6)


def test_overlap_hides_the_allreduce_behind_backward_but_never_the_last_buffer():
    fast = Machine(Link(0.0, 1e12), Link(0.0, 1e12), overlaps_compute=True)
    hidden = step_model.step_time(job(), Layout(1, 8), fast)
    assert hidden.allreduce_s == pytest.approx(1.75 * 10**7 / 1e12)  # the last of 10 buffers
    slow = Machine(Link(0.0, 1e9), Link(0.0, 1e9), overlaps_compute=True)
    exposed = step_model.step_time(job(), Layout(1, 8), slow)
    assert exposed.allreduce_s == pytest.approx(1.75 * 10**8 / 1e9 - 0.06)


def test_buffers_fuse_when_each_allreduce_pays_more_latency_than_a_cycle():
    fast = Machine(Link(1e-6, 1e11), Link(1e-6, 1e11), overlaps_compute=True)
    assert step_model.fused_buffers(job(buffers=40), Layout(1, 4), fast, backward_s=0.06) == 40
    # 2 x 1023 latencies of 10 us each = 20 ms per allreduce; 60 ms of backward holds 2 of
    # them beside the bytes' 1 ms: the gradients go in 2 buffers, not 40.
    slow = Machine(Link(1e-5, 1e11), Link(1e-5, 2e11), overlaps_compute=True)
    assert step_model.fused_buffers(job(buffers=40), Layout(1024, 1), slow, backward_s=0.06) == 2
    # Never fewer than the fusion buffer's size allows.
    huge = job(buffers=40, gradient_bytes=300 << 20)
    assert step_model.fused_buffers(huge, Layout(1024, 1), slow, backward_s=0.001) == 5
