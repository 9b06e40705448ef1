"""Judging: parse every probe's sections into facts, run the rules, build the host report."""
