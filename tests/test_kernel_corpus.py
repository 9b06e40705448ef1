"""Every excerpt of the kernel log corpus raises exactly the findings written next to it."""

from __future__ import annotations

import pytest

from tests.kernel_corpus import CORPUS, samples

MINIMUM_SAMPLES = 40


def test_the_corpus_scores_100_percent(capsys: pytest.CaptureFixture[str]) -> None:
    corpus = samples()
    assert len(corpus) >= MINIMUM_SAMPLES, f"{CORPUS} holds only {len(corpus)} samples"
    failed = {sample.name: sample.misses() for sample in corpus}
    failed = {name: misses for name, misses in failed.items() if misses}
    passed = len(corpus) - len(failed)
    with capsys.disabled():
        print(
            f"\nkernel corpus: {passed}/{len(corpus)} samples ({100 * passed / len(corpus):.1f}%)"
        )
        for name, misses in failed.items():
            print(f"  {name}: " + "; ".join(misses))
    assert not failed


def test_every_sample_records_its_kernel_source_and_format() -> None:
    for sample in samples():
        assert {"kernel", "source", "format"} <= sample.header.keys(), sample.name
